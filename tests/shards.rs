//! Three shards plus `merge` give the run an unsharded run gives, apart from timings.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::{repo, run_dir, without_timing};

fn ragsweep() -> Command {
    Command::cargo_bin("ragsweep").unwrap()
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap()
}

#[test]
fn three_shards_merge_into_the_unsharded_run() {
    let experiment = repo().join("tests/fixtures/sweep.toml");
    let whole = tempfile::tempdir().unwrap();
    ragsweep().args(["run", "-q", "--out"]).arg(whole.path()).arg(&experiment).assert().success();
    let whole = run_dir(whole.path(), "sweep");

    let sharded = tempfile::tempdir().unwrap();
    for i in 1..=3 {
        ragsweep()
            .args(["run", "-q", "--shard", &format!("{i}/3"), "--out"])
            .arg(sharded.path())
            .arg(&experiment)
            .assert()
            .success();
    }
    let shards: Vec<PathBuf> = {
        let mut v: Vec<_> =
            std::fs::read_dir(sharded.path().join("sweep")).unwrap().map(|e| e.unwrap().path()).collect();
        v.sort();
        v
    };
    assert_eq!(shards.len(), 3);
    let shard_rows = read(&shards[0], "matrix.csv").lines().count() - 1;
    assert_eq!(shard_rows, 4, "12 cells over 3 shards");

    // Two shards are not the whole grid.
    let partial = tempfile::tempdir().unwrap();
    ragsweep()
        .arg("merge")
        .arg(&experiment)
        .args(&shards[..2])
        .arg("--out")
        .arg(partial.path())
        .assert()
        .failure()
        .stderr(predicates::str::contains("merge needs every shard"));

    let merged = tempfile::tempdir().unwrap();
    ragsweep().arg("merge").arg(&experiment).args(&shards).arg("--out").arg(merged.path()).assert().success();
    let merged = run_dir(merged.path(), "sweep");

    assert_eq!(without_timing(&read(&merged, "matrix.csv")), without_timing(&read(&whole, "matrix.csv")));
    assert_eq!(read(&merged, "per_query.jsonl"), read(&whole, "per_query.jsonl"));
    for cell in 1..=12 {
        let f = format!("runs/c{cell:02}.trec");
        assert_eq!(read(&merged, &f), read(&whole, &f), "{f}");
    }
    assert_eq!(read(&merged, "matrix.md"), read(&whole, "matrix.md"));
}
