//! Commands that flow into each other: `results/<name>/latest` and run-id prefixes name runs,
//! a run remembers its models and cache, cells are labelled by what varies in the grid, and
//! the summary ends with the next commands, filled in.

use crate::common;

use predicates::prelude::*;

use crate::common::{repo, Fixture};

const DOCS: [(&str, &str); 3] = [
    ("ferias.md", "# Férias\nTrinta dias de férias por ano, em até três períodos.\n"),
    ("ponto.md", "# Ponto\nO ponto é registrado no aplicativo até as dez horas.\n"),
    ("vpn.md", "# VPN\nA VPN corporativa usa o cliente WireGuard com o código NV-S310-X.\n"),
];

const GOLDEN: &str = r#"[
  {"id": "q1", "question": "quantos dias de férias", "relevant": ["ferias"]},
  {"id": "q2", "question": "onde registro o ponto", "relevant": ["ponto"]},
  {"id": "q3", "question": "NV-S310-X", "relevant": ["vpn"]},
  {"id": "q4", "question": "períodos de descanso anual", "relevant": ["ferias"]}
]"#;

/// BM25 with two `b` and two analyzers beside one dense model: what varies is the retriever,
/// the analyzer and `b`; k1, the chunker and the model do not.
const GRID: &str =
    "name = \"flow\"\nunit = \"doc\"\nk = [1, 3]\nreserved_fraction = 0.0\nlatency_cases = 2\nselect = \"hit@1\"\n\
    [[chunkers]]\nkind = \"none\"\ntitle = true\n\
    [[retrievers]]\nkind = \"bm25\"\nanalyzer = [\"pt\", \"simple\"]\nk1 = 1.2\nb = [0.4, 0.75]\n\
    [[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\n";

#[test]
fn cells_are_labelled_by_what_varies_in_every_output() {
    let f = Fixture::new(&DOCS, GOLDEN, GRID);
    let assert = f.run_cmd().assert().success();
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    for label in ["bm25 analyzer=pt b=0.4", "bm25 analyzer=simple b=0.75", "dense"] {
        assert!(stdout.contains(label), "terminal: {label:?} missing:\n{stdout}");
    }
    let table: Vec<&str> = stdout.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())).collect();
    assert_eq!(table.len(), 5, "{stdout}");
    assert!(
        table.iter().all(|l| !l.contains("k1=") && !l.contains("model=")),
        "a value that does not vary is not in a label:\n{stdout}"
    );
    assert!(!stdout.lines().nth(1).unwrap().contains("reserved"), "no reserved split, no reserved column:\n{stdout}");
    assert!(stdout.lines().all(|l| l.chars().count() <= 100), "{stdout}");
    let run = common::runs_in(&f.path().join("out/flow")).pop().unwrap();
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("| bm25 analyzer=pt b=0.4 |"), "{summary}");
    let page = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(page.contains("\"short\":\"bm25 analyzer=simple b=0.4\""), "the report's cells carry the varying label");
    assert!(
        page.contains("\"varying\":[\"retriever\",\"analyzer\",\"b\"]"),
        "{}",
        &page[page.find("\"varying\"").unwrap()..][..80]
    );
    f.cmd()
        .args(["diff", "c01", "c04", "--run", "out/flow/latest"])
        .assert()
        .success()
        .stdout(predicate::str::contains("A  c01 bm25 analyzer=pt b=0.4"))
        .stdout(predicate::str::contains("none+title bm25(pt,k1=1.2,b=0.4)"))
        .stdout(predicate::str::contains("hit@1 on all splits"));
}

#[test]
fn latest_and_id_prefixes_name_runs_and_a_run_remembers_its_models() {
    let f = Fixture::new(&DOCS, GOLDEN, GRID);
    // The models under a name no default would find.
    let models = f.path().join("elsewhere/models");
    std::fs::create_dir_all(models.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(repo().join("models"), &models).unwrap();
    let run = |f: &Fixture| {
        let mut cmd = f.cmd();
        cmd.env_remove("RAGSWEEP_MODELS").env_remove("RAGSWEEP_CACHE");
        cmd.args(["run", "-q", "--models"]).arg(&models).args(["--cache", "my-cache", "--out", "out", "exp.toml"]);
        cmd.assert().success()
    };
    let first = String::from_utf8(run(&f).get_output().stdout.clone()).unwrap();
    run(&f);
    let runs = common::runs_in(&f.path().join("out/flow"));
    assert_eq!(runs.len(), 2);
    let newest =
        runs.iter().max_by_key(|r| std::fs::metadata(r.join("manifest.json")).unwrap().modified().unwrap()).unwrap();
    assert_eq!(
        std::fs::canonicalize(f.path().join("out/flow/latest")).unwrap(),
        std::fs::canonicalize(newest).unwrap()
    );
    assert!(first.contains("next:\n  ragsweep "), "the summary ends with the next commands:\n{first}");

    // From another directory, with no --models, no --cache and no environment: the run's own.
    let elsewhere = tempfile::tempdir().unwrap();
    let latest = f.path().join("out/flow/latest");
    let bare = |args: &[&str]| {
        let mut cmd = assert_cmd::Command::cargo_bin("ragsweep").unwrap();
        cmd.current_dir(elsewhere.path()).env_remove("RAGSWEEP_MODELS").env_remove("RAGSWEEP_CACHE").args(args);
        cmd
    };
    let dense = "c05";
    bare(&["explain", latest.to_str().unwrap(), "--cell", dense, "--case", "q3"])
        .assert()
        .success()
        .stdout(predicate::str::contains("cell c05"));
    bare(&["contexts", latest.to_str().unwrap(), "--cell", dense, "--k", "1"]).assert().success();
    // A trailing slash (what a shell completes a link to a folder with) names the same run.
    bare(&["contexts", &format!("{}/", latest.display()), "--cell", dense, "--k", "1"]).assert().success();
    assert!(!elsewhere.path().join("cache").exists(), "the run's cache was used, not a new one here");
    assert!(f.path().join("my-cache").is_dir());

    // The folder alone means its latest run; a prefix naming one run is that run; an ambiguous
    // prefix lists the candidates.
    let folder = f.path().join("out/flow");
    bare(&["plan", folder.to_str().unwrap()]).assert().success();
    let id = newest.file_name().unwrap().to_str().unwrap();
    let unique = folder.join(&id[..id.len() - 2]);
    bare(&["diff", "c01", "c02", "--run", unique.to_str().unwrap()]).assert().success();
    let common_prefix = folder.join("20");
    bare(&["plan", common_prefix.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("2 runs start with \"20\""));
    bare(&["plan", folder.join("nothing-like-it").to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no run id starts with"));
}

/// The end of a run's output is its decision: what the readers read (one line, in counts, with
/// 30 skipped files) comes before the summary, whose last lines close the output; the full list
/// is in manifest.json.
#[test]
fn the_last_screen_of_a_run_is_the_decision_and_the_readers_line_is_one_line_before_it() {
    let mut docs: Vec<(String, String)> = (0..3)
        .map(|i| (format!("d{i}.md"), format!("# Documento {i}\nO prazo {i} do contrato número {i}.\n")))
        .collect();
    docs.extend((0..30).map(|i| (format!("notes{i:02}.xyz"), "not a known format".to_string())));
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let f = Fixture::new(
        &docs,
        r#"[{"id": "q0", "question": "prazo 0 do contrato", "relevant": ["d0"]},
            {"id": "q1", "question": "contrato número 1", "relevant": ["d1"]}]"#,
        "name = \"screen\"\nunit = \"doc\"\nk = [1]\nselect = \"hit@1\"\nreserved_fraction = 0.0\nlatency_cases = 0\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let log = std::fs::File::create(f.path().join("log")).unwrap();
    let status = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
        .current_dir(f.path())
        .args(["run", "-q", "--cache", "cache", "--out", "out", "exp.toml"])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(f.path().join("log")).unwrap();
    let corpus = text.lines().position(|l| l.starts_with("corpus: ")).expect(&text);
    let line = text.lines().nth(corpus).unwrap();
    assert!(line.contains("read 3 .md; skipped 30") && line.len() < 160, "{line}");
    let decision = text.lines().position(|l| l.contains("Selected on tuning")).expect(&text);
    assert!(corpus < decision, "the readers' line comes before the decision:\n{text}");
    let access = text.lines().position(|l| l.starts_with("access: ")).unwrap();
    assert!(access < decision, "{text}");
    let run = common::runs_in(&f.path().join("out/screen")).pop().unwrap();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    let read = manifest["corpus"]["read"].as_str().unwrap();
    assert!(read.contains("skipped 30: notes00.xyz (.xyz: not a known format)"), "{read}");
}
