//! Progress without a terminal (a CI log): a line per stage now and then with done/total and the
//! time left, and nothing with `--quiet`. `RAGSWEEP_PROGRESS_SECONDS` sets the interval
//! (default 30 s); the test sets it to 0 so that a short run writes its lines.

use crate::common;

#[test]
fn a_run_without_a_terminal_writes_progress_lines_and_quiet_writes_none() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::ragsweep()
        .arg("synth")
        .arg(root.join("corpus"))
        .args(["--documents", "3000", "--questions", "300", "--vocabulary", "5000"])
        .assert()
        .success();
    std::fs::write(
        root.join("exp.toml"),
        "name = \"log\"\nunit = \"doc\"\nk = [10]\nlatency_cases = 0\n[corpus]\npath = \"corpus\"\n[golden]\npath = \"corpus\"\nreserved = [\"test\"]\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\nk1 = [0.9, 1.2, 1.5, 2.0]\n",
    )
    .unwrap();
    let run = |quiet: bool| {
        let mut cmd = common::ragsweep();
        cmd.current_dir(root).env("RAGSWEEP_PROGRESS_SECONDS", "0").args(["run", "--out", "out", "--cache", "cache"]);
        if quiet {
            cmd.arg("-q");
        }
        let out = cmd.arg("exp.toml").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let log = run(false);
    let lines: Vec<&str> = log.lines().filter(|l| l.starts_with("retrieve: ")).collect();
    assert!(!lines.is_empty(), "{log}");
    assert!(lines.iter().any(|l| l.contains(" of 600")), "done of total: {log}");
    // Lines carry the time spent and, once a case is done, the time left.
    assert!(lines.iter().any(|l| l.contains(" s, about ") && l.ends_with(" s left")), "{log}");
    assert!(!log.contains('\r') && !log.contains('\u{1b}'), "no bar drawing in a log: {log:?}");
    let quiet = run(true);
    assert!(!quiet.contains("retrieve: "), "{quiet}");
}
