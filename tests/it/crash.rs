//! A run killed with SIGKILL midway leaves no results, keeps the work it flushed, and a rerun
//! completes with the matrix an uninterrupted run gives.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{repo, run_dir, run_experiment, stable_rows};

fn segments(cache: &Path) -> usize {
    let Ok(models) = std::fs::read_dir(cache.join("embeddings")) else { return 0 };
    models
        .flat_map(|m| std::fs::read_dir(m.unwrap().path()).unwrap())
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "seg"))
        .count()
}

fn matrix(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(run_dir(out, "dense").join("matrix.json")).unwrap()).unwrap()
}

#[test]
fn killed_run_resumes_from_the_cache_with_the_same_matrix() {
    let cache = tempfile::tempdir().unwrap();
    let killed_out = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
        .args(["run", "-q", "--models"])
        .arg(repo().join("models"))
        .arg("--cache")
        .arg(cache.path())
        .arg("--out")
        .arg(killed_out.path())
        .arg(repo().join("tests/fixtures/dense.toml"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while segments(cache.path()) == 0 {
        assert!(child.try_wait().unwrap().is_none(), "the run finished before any vectors were flushed");
        assert!(started.elapsed() < Duration::from_secs(300), "no vectors flushed in 5 minutes");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let flushed = segments(cache.path());
    let finished: Vec<_> = std::fs::read_dir(killed_out.path().join("dense"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| !n.starts_with('.')).collect()
        })
        .unwrap_or_default();
    assert!(finished.is_empty(), "a killed run must not leave a finished run directory: {finished:?}");

    let resumed_out = tempfile::tempdir().unwrap();
    let assert = run_experiment("tests/fixtures/dense.toml", resumed_out.path(), cache.path());
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.lines().any(|l| l.starts_with("embed ") && !l.contains(" 0 reused")),
        "the rerun reuses the {flushed} flushed segment(s):\n{stderr}"
    );

    // The uninterrupted run: on the process's shared cache (content-keyed, the same vectors).
    let fresh_out = tempfile::tempdir().unwrap();
    run_experiment("tests/fixtures/dense.toml", fresh_out.path(), crate::common::shared_cache().path());
    assert_eq!(stable_rows(&matrix(resumed_out.path())), stable_rows(&matrix(fresh_out.path())));
}
