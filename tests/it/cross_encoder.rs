//! A cross-encoder of the user's own (issue 46) through the real binary: `models add
//! --cross-encoder` on a tiny model the test generates (a sentence model's BERT body with a
//! seeded random classification head, `scripts/cross_encoder_fixture.py`), `rerank = "NAME"`
//! reordering BM25's list by its scores, which equal Python ONNX Runtime's on the same pairs;
//! its latency stage and explain node; and the errors around it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use crate::common::repo;
use assert_cmd::Command;
use serde_json::Value;

const DOCS: [(&str, &str); 6] = [
    ("d1.md", "Adults need about 0.8 grams of protein per kilogram of body weight each day."),
    ("d2.md", "Vitamin D deficiency is associated with bone loss in older adults."),
    ("d3.md", "Protein supplements did not change muscle mass in the trial of older adults."),
    ("d4.md", "The shell expands variables before it runs a command."),
    ("d5.md", "Na rescisão, os sensores locados devem ser devolvidos em até 30 dias."),
    ("d6.md", "High protein diets and kidney function in adults: a cohort study."),
];

fn python() -> PathBuf {
    let python = repo().join("models/.venv/bin/python");
    assert!(python.is_file(), "no {}: run scripts/install-models.sh (it makes the test venv)", python.display());
    python
}

/// A generated cross-encoder with `logits` outputs in `dir`.
fn make_model(dir: &Path, logits: u32) {
    std::fs::create_dir_all(dir).unwrap();
    let out = Process::new(python())
        .arg(repo().join("scripts/cross_encoder_fixture.py"))
        .arg("make")
        .arg(repo().join("models/minilm-l6"))
        .arg(dir)
        .arg(logits.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A models folder holding only ONNX Runtime (linked from the repo's).
fn models_dir(root: &Path) -> PathBuf {
    let models = root.join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(repo().join("models/onnxruntime"), models.join("onnxruntime")).unwrap();
    models
}

fn add(models: &Path, source: &Path, name: &str) -> std::process::Output {
    Command::cargo_bin("ragsweep")
        .unwrap()
        .args(["models", "add"])
        .arg(source)
        .args(["--name", name, "--cross-encoder", "--max-length", "128", "--models"])
        .arg(models)
        .output()
        .unwrap()
}

fn experiment(dir: &Path, retrievers: &str) {
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    for (name, text) in DOCS {
        std::fs::write(dir.join("docs").join(name), text).unwrap();
    }
    std::fs::write(
        dir.join("golden.json"),
        r#"[{"id": "q1", "question": "how much protein do adults need", "relevant": ["d1"]},
            {"id": "q2", "question": "protein and older adults", "relevant": ["d3"]}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("exp.toml"),
        format!(
            "name = \"ce\"\nk = [3]\nreserved_fraction = 0.0\nlatency_cases = 2\n[corpus]\npath = \"docs\"\n\
             [golden]\npath = \"golden.json\"\n[[chunkers]]\nkind = \"none\"\n{retrievers}"
        ),
    )
    .unwrap();
}

fn run(dir: &Path, models: &Path) -> std::process::Output {
    Command::cargo_bin("ragsweep")
        .unwrap()
        .current_dir(dir)
        .args(["run", "-q", "--out", "out", "--cache", "cache", "--models"])
        .arg(models)
        .arg("exp.toml")
        .output()
        .unwrap()
}

#[test]
fn a_cross_encoder_reranks_bm25_with_the_scores_python_onnxruntime_gives() {
    let root = tempfile::tempdir().unwrap();
    let models = models_dir(root.path());
    for logits in [1, 2] {
        let name = format!("ce{logits}");
        let export = root.path().join(format!("export{logits}"));
        make_model(&export, logits);
        let out = add(&models, &export, &name);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let toml = std::fs::read_to_string(models.join(&name).join("model.toml")).unwrap();
        assert!(toml.contains("kind = \"cross-encoder\"") && !toml.contains("dim"), "{toml}");
        assert!(models.join(&name).join("installed.json").is_file(), "an install record, so damage is found");

        let dir = root.path().join(format!("run{logits}"));
        experiment(
            &dir,
            &format!("[[retrievers]]\nkind = \"bm25\"\nrerank = \"{name}\"\nrerank_candidates = 6\n[[retrievers]]\nkind = \"bm25\"\n"),
        );
        let validated = Command::cargo_bin("ragsweep")
            .unwrap()
            .current_dir(&dir)
            .args(["validate", "exp.toml", "--models"])
            .arg(&models)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&validated.stdout);
        assert!(said.contains(&format!("cross-encoder {name}: loaded with ONNX Runtime, scores a pair")), "{said}");
        let out = run(&dir, &models);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let run_dir = common::run_dir(&dir.join("out"), "ce");
        let m = common::matrix(&run_dir);
        let reranked = m["rows"].as_array().unwrap().iter().find(|r| r["cell"] == "c01").unwrap();
        assert_eq!(reranked["config"]["rerank"], name.as_str());
        assert!(reranked["latency"]["stages_ms"][format!("rerank({name})")].as_f64().unwrap() > 0.0, "{reranked}");

        // Every (question, chunk) pair the cell returned, scored again by Python ONNX Runtime.
        let lines: Vec<Value> = std::fs::read_to_string(run_dir.join("per_query.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|l: &Value| l["cell"] == "c01")
            .collect();
        let question =
            |case: &str| if case == "q1" { "how much protein do adults need" } else { "protein and older adults" };
        let mut pairs = Vec::new();
        let mut ours = Vec::new();
        for line in &lines {
            let hits = line["hits"].as_array().unwrap();
            assert_eq!(hits.len(), 3, "{line}");
            let scores: Vec<f64> = hits.iter().map(|h| h[1].as_f64().unwrap()).collect();
            assert!(scores.windows(2).all(|w| w[0] >= w[1]), "ordered by the cross-encoder: {scores:?}");
            for hit in hits {
                let doc = hit[0].as_str().unwrap().split('@').next().unwrap();
                let text = DOCS.iter().find(|(n, _)| n.trim_end_matches(".md") == doc).unwrap().1;
                pairs.push([question(line["case"].as_str().unwrap()), text]);
                ours.push(hit[1].as_f64().unwrap());
            }
        }
        let pairs_file = root.path().join("pairs.json");
        std::fs::write(&pairs_file, serde_json::to_string(&pairs).unwrap()).unwrap();
        let out = Process::new(python())
            .arg(repo().join("scripts/cross_encoder_fixture.py"))
            .arg("score")
            .arg(models.join(&name))
            .arg("128")
            .arg(&pairs_file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let theirs: Vec<f64> = serde_json::from_slice(&out.stdout).unwrap();
        let max_diff = ours.iter().zip(&theirs).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        println!("{name}: {} pairs, max |ragsweep − onnxruntime| = {max_diff:.2e}", ours.len());
        assert!(max_diff < 1e-4, "{ours:?} against {theirs:?}");

        let explained = Command::cargo_bin("ragsweep")
            .unwrap()
            .current_dir(&dir)
            .args(["explain"])
            .arg(&run_dir)
            .args(["--cell", "c01", "--case", "q2", "--models"])
            .arg(&models)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&explained.stdout);
        assert!(text.contains(&format!("rerank({name}) of the first 6")), "{text}");
        assert!(text.contains(&format!("{name}'s score of the question read with the chunk's text")), "{text}");
    }
}

#[test]
fn a_cross_encoder_is_refused_where_it_cannot_work() {
    let root = tempfile::tempdir().unwrap();
    let models = models_dir(root.path());
    // Three outputs per pair: neither a score nor (not relevant, relevant).
    let three = root.path().join("three");
    make_model(&three, 3);
    let out = add(&models, &three, "ce3");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("one logit per pair, or two"), "{said}");
    assert!(!models.join("ce3").exists(), "nothing added");

    let two = root.path().join("two");
    make_model(&two, 2);
    assert!(add(&models, &two, "ce").status.success());
    // A cross-encoder does not embed.
    let dir = root.path().join("dense");
    experiment(&dir, "[[retrievers]]\nkind = \"dense\"\nmodel = \"ce\"\n");
    let out = run(&dir, &models);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("model ce is a cross-encoder") && said.contains("rerank = \"ce\""), "{said}");
    assert!(!dir.join("out/ce").exists() || common::runs_in(&dir.join("out/ce")).is_empty(), "no results");
    // A cross-encoder has no vectors: `dim` in its model.toml is an error at the key.
    let toml_path = models.join("ce/model.toml");
    let toml = std::fs::read_to_string(&toml_path).unwrap();
    std::fs::write(&toml_path, format!("{toml}dim = 384\n")).unwrap();
    let dir = root.path().join("dim");
    experiment(&dir, "[[retrievers]]\nkind = \"bm25\"\nrerank = \"ce\"\n");
    let out = run(&dir, &models);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    let line = toml.lines().count() + 1;
    assert!(said.contains(&format!("model.toml:{line}:")) && said.contains("takes no `dim`"), "{said}");
}
