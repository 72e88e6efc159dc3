//! The tools behind the scaling benchmarks, through the binary: `synth` writes a corpus that a
//! grid runs on, a `kind = "random"` model gives dense cells without ONNX Runtime, `vectors`
//! exports what a dense cell searched and `bench-ann` measures search on it.

use crate::common;

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

fn ragsweep() -> Command {
    Command::cargo_bin("ragsweep").unwrap()
}

fn synth(dir: &Path, documents: &str) {
    ragsweep().arg("synth").arg(dir).args(["--documents", documents, "--questions", "40"]).assert().success();
}

/// A models folder holding only a random model: no ONNX Runtime, no model files.
fn random_models(root: &Path) -> std::path::PathBuf {
    let models = root.join("models");
    fs::create_dir_all(models.join("random-64")).unwrap();
    fs::write(models.join("random-64/model.toml"), "id = \"random-64\"\nkind = \"random\"\ndim = 64\n").unwrap();
    models
}

fn experiment(root: &Path, corpus: &Path) -> std::path::PathBuf {
    let path = root.join("exp.toml");
    let c = corpus.display();
    fs::write(
        &path,
        format!(
            "name = \"synthetic\"\nunit = \"doc\"\nk = [10]\nmetrics = [\"ndcg\", \"recall\"]\n\
             [corpus]\npath = \"{c}\"\n[golden]\npath = \"{c}\"\ntuning = [\"train\"]\nreserved = [\"test\"]\n\
             [[chunkers]]\nkind = \"none\"\ntitle = true\n[[retrievers]]\nkind = \"bm25\"\n\
             [[retrievers]]\nkind = \"dense\"\nmodel = \"random-64\"\nindex = [\"exact\", \"hnsw\"]\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn synth_writes_the_same_beir_corpus_for_the_same_seed() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    synth(&a, "300");
    synth(&b, "300");
    for file in ["corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"] {
        assert_eq!(fs::read(a.join(file)).unwrap(), fs::read(b.join(file)).unwrap(), "{file}");
    }
    let corpus = fs::read_to_string(a.join("corpus.jsonl")).unwrap();
    let docs: Vec<Value> = corpus.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(docs.len(), 300);
    assert!(docs.iter().all(|d| d["_id"].is_string() && !d["title"].as_str().unwrap().is_empty()));
    let words: usize = docs.iter().map(|d| d["text"].as_str().unwrap().split(' ').count()).sum();
    assert!((150..260).contains(&(words / 300)), "mean body length {}", words / 300);
    let train = fs::read_to_string(a.join("qrels/train.tsv")).unwrap();
    let test = fs::read_to_string(a.join("qrels/test.tsv")).unwrap();
    assert_eq!((train.lines().count(), test.lines().count()), (21, 21), "a header and 20 questions each");
    assert!(fs::read_to_string(a.join("SOURCE.txt")).unwrap().contains("seed = 0"));
    let other = root.path().join("other");
    ragsweep()
        .arg("synth")
        .arg(&other)
        .args(["--documents", "300", "--questions", "40", "--seed", "1"])
        .assert()
        .success();
    assert_ne!(fs::read(other.join("corpus.jsonl")).unwrap(), corpus.as_bytes());
}

#[test]
fn a_grid_runs_on_a_synthetic_corpus_with_a_random_model_and_its_vectors_export() {
    let root = tempfile::tempdir().unwrap();
    let corpus = root.path().join("corpus");
    synth(&corpus, "400");
    let models = random_models(root.path());
    let exp = experiment(root.path(), &corpus);
    let out = root.path().join("out");
    ragsweep()
        .args(["run", "-q", "--models"])
        .arg(&models)
        .arg("--cache")
        .arg(root.path().join("cache"))
        .arg("--out")
        .arg(&out)
        .arg(&exp)
        .assert()
        .success();
    let run = common::run_dir(&out, "synthetic");
    let matrix: Value = serde_json::from_str(&fs::read_to_string(run.join("matrix.json")).unwrap()).unwrap();
    let ndcg = |cell: &str| {
        matrix["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["cell"] == cell && r["split"] == "tuning")
            .map(|r| r["metrics"]["ndcg@10"]["value"].as_f64().unwrap())
            .unwrap()
    };
    // The questions are words of their document: BM25 finds them, random vectors do not.
    assert!(ndcg("c01") > 0.8, "bm25 {}", ndcg("c01"));
    assert!(ndcg("c02") < 0.2 && ndcg("c03") < 0.2, "random {} {}", ndcg("c02"), ndcg("c03"));
    let manifest: Value = serde_json::from_str(&fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["models"][0]["id"], "random-64");

    let vectors = root.path().join("vectors");
    ragsweep()
        .arg("vectors")
        .arg(&exp)
        .arg("--out")
        .arg(&vectors)
        .arg("--models")
        .arg(&models)
        .arg("--cache")
        .arg(root.path().join("cache"))
        .assert()
        .success()
        .stdout(predicates::str::contains("passages.npy (400 × 64) and queries.npy (40 × 64), with their ids"));
    let out = ragsweep()
        .arg("bench-ann")
        .arg(vectors.join("passages.npy"))
        .arg(vectors.join("queries.npy"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (line["passages"].as_u64(), line["queries"].as_u64(), line["dim"].as_u64()),
        (Some(400), Some(40), Some(64))
    );
    assert!(line["hnsw_recall"].as_f64().unwrap() > 0.9, "{line}");
    assert!(line["exact_qps"].as_f64().unwrap() > 0.0 && line["hnsw_qps"].as_f64().unwrap() > 0.0);

    // bench-ann refuses vectors that are not unit length, naming the rule.
    fs::write(root.path().join("bad.npy"), b"not numpy").unwrap();
    ragsweep()
        .arg("bench-ann")
        .arg(root.path().join("bad.npy"))
        .arg(vectors.join("queries.npy"))
        .assert()
        .failure()
        .stderr(predicates::str::contains("not a .npy file"));
}
