//! Gates on answers read each column's direction from one table, refuse thresholds outside a
//! column's range, and restricted text in a context is marked and never a valid citation.

use std::path::{Path, PathBuf};

use crate::common::{ragsweep, Fixture};
use predicates::prelude::*;

const DOCS: &[(&str, &str)] = &[
    ("ferias.md", "# Férias\nTodo empregado tem direito a trinta dias de férias por ano.\n"),
    ("ponto.md", "# Ponto\nO registro de ponto é feito pelo aplicativo no celular.\n"),
    ("salarios.md", "---\nacl: [rh]\n---\n# Salários\nTabela de salários e férias da diretoria.\n"),
];

const GOLDEN: &str = r#"[
  {"id": "q1", "question": "quantos dias de férias por ano?", "relevant": ["ferias"], "groups": ["suporte"]},
  {"id": "q2", "question": "como registro o ponto no celular?", "relevant": ["ponto"], "groups": ["suporte"]},
  {"id": "q3", "question": "qual a tabela de salários da diretoria?", "answerable": false, "groups": ["suporte"]}
]"#;

const EXPERIMENT: &str = "name = \"gates\"\nunit = \"doc\"\nk = [3]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
    filter = \"none\"\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n";

/// The fixture's run with `contexts.jsonl` at k = 3 written.
fn run_with_contexts(f: &Fixture) -> PathBuf {
    let run = f.run();
    ragsweep()
        .current_dir(f.path())
        .arg("contexts")
        .arg(&run)
        .args(["--cell", "c01", "--k", "3", "--cache"])
        .arg(f.path().join("cache"))
        .assert()
        .success();
    run
}

/// A copy of `run` with `answers` scored into it.
fn scored(run: &Path, name: &str, answers: &str) -> PathBuf {
    let copy = run.parent().unwrap().join(name);
    assert!(std::process::Command::new("cp").arg("-r").arg(run).arg(&copy).status().unwrap().success());
    let file = copy.join("answers-in.jsonl");
    std::fs::write(&file, answers).unwrap();
    ragsweep().arg("answers").arg(&copy).arg(&file).assert().success();
    copy
}

const ANSWERED: &str = "{\"id\": \"q1\", \"answer\": \"Trinta dias.\", \"citations\": [\"ferias\"]}\n\
    {\"id\": \"q2\", \"answer\": \"Pelo aplicativo.\", \"citations\": [\"ponto\"]}\n\
    {\"id\": \"q3\", \"answer\": \"Não sei.\", \"refused\": true}\n";
const REFUSED: &str = "{\"id\": \"q1\", \"answer\": \"Não sei.\", \"refused\": true}\n\
    {\"id\": \"q2\", \"answer\": \"Não sei.\", \"refused\": true}\n\
    {\"id\": \"q3\", \"answer\": \"Não sei.\", \"refused\": true}\n";

#[test]
fn a_rise_in_a_lower_is_better_column_fails_the_gate_and_a_fall_passes() {
    let f = Fixture::new(DOCS, GOLDEN, EXPERIMENT);
    let run = run_with_contexts(&f);
    let good = scored(&run, "good", ANSWERED);
    let bad = scored(&run, "bad", REFUSED);
    let gate = |current: &Path, baseline: &Path| {
        let mut cmd = ragsweep();
        cmd.arg("check").arg(current).arg("--baseline").arg(baseline);
        cmd.args(["--answers", "--fail-on", "refusal_wrong:0.05", "--alpha", "1", "--split", "tuning"]);
        cmd.assert()
    };
    // Wrong refusals 0.00 → 1.00: worse.
    gate(&bad, &good).code(1).stdout(predicate::str::contains("FAIL: refusal_wrong rose 1.0000"));
    // 1.00 → 0.00: better.
    gate(&good, &bad).code(0).stdout(predicate::str::contains("PASS: refusal_wrong"));

    let require = |run: &Path, spec: &str| ragsweep().arg("check").arg(run).args(["--require", spec]).assert();
    require(&good, "refusal_wrong=0").code(0).stdout(predicate::str::contains("PASS: refusal_wrong = 0.0000 ≤ 0"));
    require(&bad, "refusal_wrong=0")
        .code(1)
        .stdout(predicate::str::contains("FAIL: refusal_wrong = 1.0000, required ≤ 0 (lower is better)"))
        .stdout(predicate::str::contains("q1 (1.000); q2 (1.000)"));
    for bad_value in ["NaN", "-1", "2", "inf"] {
        require(&good, &format!("citation_valid={bad_value}"))
            .code(2)
            .stderr(predicate::str::contains("outside citation_valid's range [0, 1]"));
    }
    ragsweep()
        .arg("check")
        .arg(&good)
        .arg("--baseline")
        .arg(&bad)
        .args(["--answers", "--fail-on", "refusal_wrong:-0.1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("margin -0.1 must be a finite number in [0, 1]"));
}

#[test]
fn restricted_text_in_a_context_is_marked_and_citing_it_is_not_valid() {
    let f = Fixture::new(DOCS, GOLDEN, EXPERIMENT);
    let run = run_with_contexts(&f);
    let contexts = std::fs::read_to_string(run.join("contexts.jsonl")).unwrap();
    let q3: serde_json::Value = contexts
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .find(|c: &serde_json::Value| c["case"] == "q3")
        .unwrap();
    let items = q3["items"].as_array().unwrap();
    let salary = items.iter().find(|i| i["doc"] == "salarios").expect("a filter = none cell returns the salary table");
    assert_eq!(salary["visible_to_user"], false, "{salary}");
    assert!(items.iter().filter(|i| i["doc"] != "salarios").all(|i| i["visible_to_user"] == true));

    let citing = "{\"id\": \"q3\", \"answer\": \"A tabela diz...\", \"citations\": [\"salarios\"]}\n";
    let leaked = scored(&run, "leaked", citing);
    let answers = std::fs::read_to_string(leaked.join("answers.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(answers.lines().next().unwrap()).unwrap();
    assert_eq!(line["values"]["cited_restricted"], 1.0, "{line}");
    assert_eq!(line["values"]["citation_valid"], 0.0, "a restricted item is never a valid citation: {line}");
    ragsweep()
        .arg("check")
        .arg(&leaked)
        .args(["--require", "cited_restricted=0"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL: cited_restricted = 1.0000, required ≤ 0"));
}
