//! The Markdown matrix of a fixed experiment on the demo corpus, pinned as a snapshot.

use std::path::Path;

use ragsweep::experiment::Experiment;
use ragsweep::report::{Exporter, Markdown};
use ragsweep::runner::{prepare, run, RunOptions};

#[test]
fn sweep_matrix_markdown() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep.toml");
    let exp = Experiment::load(&path).unwrap();
    let prepared = prepare(&exp, std::path::Path::new("models")).unwrap();
    let result = run(&exp, &prepared, &RunOptions::default(), &mut |_| Ok(())).unwrap();
    let mut out = Vec::new();
    Markdown { compact: false }.write(&exp, &result, &mut out).unwrap();
    insta::assert_snapshot!(String::from_utf8(out).unwrap());
}
