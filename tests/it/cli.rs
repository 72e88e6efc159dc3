//! Runs the real `ragsweep` binary end to end.

use std::path::{Path, PathBuf};

use crate::common::{ragsweep, repo, run_dir, run_experiment, walk, without_timing};
use predicates::prelude::*;

#[test]
fn quickstart_writes_every_output() {
    let quickstart = crate::common::quickstart_run();
    let stdout = &quickstart.stdout;
    assert!(
        stdout.contains("quickstart: 15 cells · tuning 33 / reserved 18 · ranked by ndcg@10 on tuning"),
        "{stdout}"
    );
    // Intervals give way to `vs best` when the configuration is long.
    let best = predicate::str::is_match(
        r"\n1  c01  markdown\+title\+headings bm25 analyzer=pt b=0\.4 +0\.9423 +0\.8895 best\n",
    );
    assert!(best.unwrap().eval(stdout.as_str()), "{stdout}");
    assert!(stdout.contains("next:\n  ragsweep explain "), "{stdout}");
    assert!(stdout.contains("no prices declared"), "{stdout}");
    let out = &quickstart.out;
    let dir = run_dir(out.path(), "quickstart");
    for f in [
        "matrix.csv",
        "matrix.json",
        "matrix.md",
        "per_query.jsonl",
        "slices.csv",
        "cases.jsonl",
        "manifest.json",
        "report.html",
        "summary.md",
        "runs/c01.trec",
        "runs/c15.trec",
    ] {
        assert!(dir.join(f).is_file(), "missing {f}");
    }
    let matrix: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("matrix.json")).unwrap()).unwrap();
    let rows = matrix["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 30, "15 cells x 2 splits");
    let n: u64 =
        rows.iter().filter(|r| r["cell"] == "c01").map(|r| r["metrics"]["ndcg@10"]["n"].as_u64().unwrap()).sum();
    assert_eq!(n, 39, "51 cases, 12 unanswerable ones left out of retrieval metrics");
    for row in rows {
        let a = &row["abstain"];
        assert_eq!(a["calibrated"], true, "abstain_below = \"calibrate\" in quickstart.toml");
        assert!(a["rates"]["ok"].is_number() && a["rates"]["wrong"].is_number(), "{a}");
        let ci = &row["metrics"]["ndcg@10"]["ci"];
        let v = row["metrics"]["ndcg@10"]["value"].as_f64().unwrap();
        assert!(ci["lo"].as_f64().unwrap() <= v && v <= ci["hi"].as_f64().unwrap(), "{ci} around {v}");
    }
    let slices = std::fs::read_to_string(dir.join("slices.csv")).unwrap();
    assert!(slices.lines().any(|l| l.starts_with("c01,reserved,exact_term,")), "{slices}");
    let per_query = std::fs::read_to_string(dir.join("per_query.jsonl")).unwrap();
    assert_eq!(per_query.lines().count(), 15 * 51);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["corpus"]["documents"], 24);
    assert!(manifest["experiment"]["config_hash"].as_str().unwrap().len() == 16);
    let leftovers: Vec<_> = walk(out.path()).into_iter().filter(|p| p.to_string_lossy().contains("tmp-")).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn k1_b_and_chunker_sweep_gives_twelve_rows_and_repeats_exactly() {
    let mut csvs = Vec::new();
    for _ in 0..2 {
        let out = tempfile::tempdir().unwrap();
        ragsweep()
            .args(["run", "-q", "--out"])
            .arg(out.path())
            .arg(repo().join("tests/fixtures/sweep.toml"))
            .assert()
            .success();
        let csv = std::fs::read_to_string(run_dir(out.path(), "sweep").join("matrix.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + 12 * 2, "12 cells × 2 splits: {csv}");
        csvs.push(csv);
    }
    assert_eq!(without_timing(&csvs[0]), without_timing(&csvs[1]), "two runs give identical matrices");
    let header = csvs[0].lines().next().unwrap();
    for col in ["cell", "chunker", "k1", "b", "split", "ndcg@5", "ndcg@5_n", "recall@1"] {
        assert!(header.split(',').any(|h| h == col), "missing column {col} in {header}");
    }
}

#[test]
fn two_timed_runs_differ_only_in_timing_columns() {
    let mut csvs = Vec::new();
    for _ in 0..2 {
        let out = tempfile::tempdir().unwrap();
        let cache = crate::common::shared_cache();
        run_experiment("experiments/demo-exact-terms.toml", out.path(), cache.path());
        csvs.push(std::fs::read_to_string(run_dir(out.path(), "demo-exact-terms").join("matrix.csv")).unwrap());
    }
    assert!(csvs[0].lines().next().unwrap().contains("p95_ms"));
    assert_ne!(csvs[0], csvs[1], "timing columns are measured, not constant");
    assert_eq!(without_timing(&csvs[0]), without_timing(&csvs[1]));
}

/// Runs `ragsweep run` on a broken experiment and checks it fails, names the place, and
/// leaves the output directory empty.
fn fails_cleanly(experiment: &Path, expected: &str) {
    let out = tempfile::tempdir().unwrap();
    ragsweep()
        .args(["run", "-q", "--out"])
        .arg(out.path())
        .arg(experiment)
        .assert()
        .failure()
        .stderr(predicate::str::contains(expected));
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "nothing may be written");
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const GOOD: &str = r#"name = "bad"
k = [5]

[corpus]
path = "corpus.jsonl"

[golden]
path = "golden.json"

[[chunkers]]
kind = "none"

[[retrievers]]
kind = "bm25"
"#;

fn bad_dir(corpus: &str, golden: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "corpus.jsonl", corpus);
    write(dir.path(), "golden.json", golden);
    dir
}

const CORPUS: &str = "{\"id\": \"a\", \"text\": \"prazo de 30 dias\"}\n{\"id\": \"b\", \"text\": \"multa de 2%\"}\n";

#[test]
fn unknown_key_names_file_line_and_column() {
    let dir = bad_dir(CORPUS, "[]");
    let exp = write(dir.path(), "exp.toml", &GOOD.replace("k = [5]", "k = [5]\nmetricz = [\"ndcg\"]"));
    fails_cleanly(&exp, "exp.toml:3:1: unknown field `metricz`");
}

#[test]
fn wrong_type_names_file_line_and_column() {
    let dir = bad_dir(CORPUS, "[]");
    let exp = write(dir.path(), "exp.toml", &GOOD.replace("k = [5]", "k = \"five\""));
    fails_cleanly(&exp, "exp.toml:2:5:");
    let exp = write(dir.path(), "exp2.toml", &GOOD.replace("kind = \"bm25\"", "kind = \"bm25\"\nb = true"));
    fails_cleanly(&exp, "exp2.toml:15:5: `b` must be a number");
}

#[test]
fn a_chunker_is_read_by_its_kind_with_located_errors() {
    let dir = bad_dir(CORPUS, "[]");
    let chunker = |kind: &str| GOOD.replace("kind = \"none\"", kind);
    let exp = write(dir.path(), "exp.toml", &chunker("kind = \"fixed\"\nsize = 100\noverlap = 100"));
    fails_cleanly(&exp, "exp.toml:13:11: `overlap` must be smaller than `size`");
    let exp = write(dir.path(), "exp2.toml", &chunker("kind = \"recursive\"\nsize = 0"));
    fails_cleanly(&exp, "exp2.toml:12:8: `size` must be at least 1");
    let exp = write(dir.path(), "exp3.toml", &chunker("kind = \"sentence\"\nmax_chars = 50\nlists = 4"));
    fails_cleanly(&exp, "exp3.toml:13:9: unknown parameter `lists` for kind \"sentence\" (expected one of: max_chars, overlap, title, headings)");
    let exp = write(dir.path(), "exp4.toml", &chunker("kind = \"semantic\""));
    fails_cleanly(
        &exp,
        "exp4.toml:11:8: unknown chunker kind \"semantic\" (expected none, fixed, sentence, recursive, markdown, langchain_recursive, chroma_fixed_token, llamaindex_sentence, brought)",
    );
}

#[test]
fn broken_corpus_line_is_located() {
    let dir = bad_dir("{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"text\" \"y\"}\n", "[]");
    let exp = write(dir.path(), "exp.toml", GOOD);
    fails_cleanly(&exp, "corpus.jsonl:2:");
}

#[test]
fn golden_case_naming_an_unknown_document_is_located() {
    let golden = "[\n  {\"question\": \"prazo?\", \"relevant\": [\"a\"]},\n  {\"question\": \"multa?\", \"relevant\": [\"zzz\"]}\n]";
    let dir = bad_dir(CORPUS, golden);
    let exp = write(dir.path(), "exp.toml", GOOD);
    fails_cleanly(&exp, "golden.json:3:3:");
    fails_cleanly(&exp, "unknown document or section \"zzz\"");
}

#[test]
fn validate_command_summarises_without_writing() {
    ragsweep()
        .arg("validate")
        .arg("--models")
        .arg(repo().join("models"))
        .arg(repo().join("experiments/quickstart.toml"))
        .assert()
        .success()
        .stdout(predicate::str::contains("15 cells, 24 documents, 51 cases (12 unanswerable)"));
}

/// The demo's selected cell as the baseline: the same configuration passes the gate, a
/// deliberately worse one fails it with the questions that broke; `diff` and `misses` read
/// the same runs.
#[test]
fn check_gate_diff_and_misses_on_the_demo() {
    let (out, cache) = (tempfile::tempdir().unwrap(), crate::common::shared_cache());
    run_experiment("experiments/quickstart.toml", out.path(), cache.path());
    let base = run_dir(out.path(), "quickstart");
    let again = tempfile::tempdir().unwrap();
    run_experiment("experiments/quickstart.toml", again.path(), cache.path());
    let same = run_dir(again.path(), "quickstart");
    run_experiment("experiments/demo-worse.toml", out.path(), cache.path());
    let worse = run_dir(out.path(), "demo-worse");

    let check = |run: &Path| {
        let mut cmd = ragsweep();
        cmd.arg("check").arg(run).arg("--baseline").arg(&base).args(["--metric", "ndcg@10", "--margin", "0.01"]);
        cmd
    };
    check(&same).assert().code(0).stdout(predicate::str::contains("PASS: ndcg@10"));
    check(&worse)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("ndcg@10 on reserved split"))
        .stdout(predicate::str::contains("FAIL: ndcg@10 fell"))
        .stdout(predicate::str::is_match(r"broke \(hit → miss\): [1-9]").unwrap())
        .stdout(predicate::str::contains("nv-02        rank  1 → –"));

    // c01 is BM25 (pt) on Markdown sections, c05 e5 dense on the same chunks.
    ragsweep()
        .args(["diff", "c01", "c05", "--metric", "hit@3", "--split", "all", "--run"])
        .arg(&base)
        .assert()
        .success()
        .stdout(predicate::str::contains("broke (hit → miss): 3"))
        .stdout(predicate::str::contains("nv-11        rank  1 → 9"))
        .stdout(predicate::str::contains("paired randomisation p = "));
    ragsweep()
        .args(["misses"])
        .arg(&base)
        .args(["--cell", "c05", "--vs", "c01", "--metric", "hit@3", "--models"])
        .arg(repo().join("models"))
        .assert()
        .success()
        .stdout(predicate::str::contains("term \"§4.2\" [code]: occurs in the relevant text"))
        .stdout(predicate::str::contains("bm25 analyzer pt: \"§4.2\" → \"4.2\""))
        .stdout(predicate::str::contains("e5-small tokens: ▁§ 4.2"));
}

/// `COMMAND --help`, its words joined by single spaces (clap wraps long lines).
fn help_words(command: &str) -> String {
    let out = ragsweep().args([command, "--help"]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Help that names metrics is made from the registries: every metric and column a gate reads is
/// named by `diff --help` and `check --help`.
#[test]
fn help_names_every_metric_of_the_registry() {
    let (diff, check) = (help_words("diff"), help_words("check"));
    for name in ragsweep::evaluate::columns::names() {
        assert!(diff.contains(name) && check.contains(name), "{name} missing from --help");
    }
}

/// Help that names what an experiment can declare is made from the registries: every chunker
/// and retriever kind, fusion method, engine's served index (with every key it reads) and metric
/// is named by `run --help` and `validate --help`.
#[test]
fn help_names_every_kind_an_experiment_can_declare() {
    let (run, validate) = (help_words("run"), help_words("validate"));
    let kinds = ragsweep::experiment::kinds();
    assert_eq!(kinds.len(), 6);
    for (what, names) in kinds {
        let names: Vec<&str> = names.split(", ").map(|n| n.split(' ').next().unwrap()).collect();
        assert!(names.len() >= 2, "{what}: {names:?}");
        for name in names {
            assert!(run.contains(name) && validate.contains(name), "{what} {name} missing from --help");
        }
    }
    for name in ["recursive", "llamaindex_sentence", "hybrid", "fulltext", "dbsf", "ndcg", "tok_iou"] {
        assert!(run.contains(name), "{name} missing from run --help");
    }
    for served in ["pg table (id_field ", " force_index iterative_scan)", "milvus collection (", "chroma collection ("]
    {
        assert!(run.contains(served), "{served} missing from run --help");
    }
}

/// Help that lists engines is made from the engine registry: every engine `engines install`
/// accepts is named by `engines --help`, `engines install --help`, `engines serve --help` and
/// `run --help`.
#[test]
fn help_names_every_engine_of_the_registry() {
    let help = |args: &[&str]| {
        let out = ragsweep().args(args).arg("--help").output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let install = help(&["engines", "install"]);
    let values = install.split("[possible values: ").nth(1).and_then(|v| v.split(']').next()).expect("possible values");
    let names: Vec<&str> = values.split(", ").collect();
    assert!(names.len() >= 3, "{names:?}");
    for name in &names {
        assert!(help(&["engines"]).contains(name), "engines --help lacks {name}");
        assert!(install.split("[possible values").next().unwrap().contains(name), "install's own line lacks {name}");
        assert!(help(&["run"]).contains(&format!("\"{name}\"")), "run --help lacks {name}");
        assert!(help(&["engines", "serve"]).contains(name), "engines serve --help lacks {name}");
    }
}
