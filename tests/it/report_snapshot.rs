//! The Markdown matrix of a fixed experiment on the demo corpus, pinned as a snapshot.

use std::path::Path;

use ragsweep::experiment::Experiment;
use ragsweep::output::matrix::{Exporter, Markdown};
use ragsweep::runner::{prepare, run, RunOptions};

#[test]
fn sweep_matrix_markdown() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep.toml");
    let exp = Experiment::load(&path).unwrap();
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let prepared = prepare(&exp, &models).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let options = RunOptions {
        progress: false,
        models_dir: models,
        cache_dir: cache.path().to_path_buf(),
        engines_dir: cache.path().join("engines"),
    };
    let outcome = run(&exp, &prepared, &options, &mut |_| Ok(())).unwrap();
    let result = ragsweep::output::result(&exp, &prepared, outcome, "snapshot");
    let mut out = Vec::new();
    Markdown { compact: false }.write(&result, &mut out).unwrap();
    insta::assert_snapshot!(String::from_utf8(out).unwrap());
}
