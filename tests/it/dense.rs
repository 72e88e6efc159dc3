//! Dense retrieval with the installed models (scripts/install-models.sh) on the demo corpus.

use std::path::Path;

use crate::common::{repo, run_dir, run_experiment, stable_rows};
use assert_cmd::Command;
use predicates::prelude::*;

fn run(out: &Path, cache: &Path) -> (String, serde_json::Value) {
    let assert = run_experiment("tests/fixtures/dense.toml", out, cache);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    let dir = run_dir(out, "dense");
    let matrix = serde_json::from_slice(&std::fs::read(dir.join("matrix.json")).unwrap()).unwrap();
    (stderr, matrix)
}

fn value(matrix: &serde_json::Value, label: &str, column: &str) -> f64 {
    let row =
        matrix["rows"].as_array().unwrap().iter().find(|r| r["label"].as_str().unwrap().ends_with(label)).unwrap();
    row["metrics"][column]["value"].as_f64().unwrap()
}

#[test]
fn second_run_embeds_nothing_and_models_retrieve_sensibly() {
    let cache = tempfile::tempdir().unwrap();
    let (out1, out2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (first, matrix) = run(out1.path(), cache.path());
    assert!(first.contains("51 texts, 0 reused, 51 embedded"), "first run embeds the 51 questions:\n{first}");
    let (second, matrix2) = run(out2.path(), cache.path());
    for line in second.lines().filter(|l| l.starts_with("embed ")) {
        assert!(line.contains(", 0 embedded"), "second run must embed nothing: {line}");
    }
    let built = |log: &str| {
        log.lines()
            .filter(|l| l.starts_with("chunk ") || l.starts_with("index "))
            .map(|l| l.contains(": built") || l.contains("chunks, built"))
            .collect::<Vec<_>>()
    };
    assert_eq!(built(&first), [true; 4], "first run builds the chunk set, two graphs and the BM25 index:\n{first}");
    assert_eq!(built(&second), [false; 4], "second run builds no chunk set and no index:\n{second}");
    assert_eq!(stable_rows(&matrix), stable_rows(&matrix2), "cached vectors give the same matrix");

    // Multilingual e5 on Portuguese questions typed with typos and slang.
    let e5 = value(&matrix, "dense(e5-small,exact)", "hit@5");
    let minilm = value(&matrix, "dense(minilm-l6,exact)", "hit@5");
    assert!(e5 >= 0.8, "e5-small hit@5 on the demo set: {e5}");
    assert!(e5 > minilm, "the multilingual model beats the English one on Portuguese: {e5} vs {minilm}");
    // HNSW on 100-odd chunks must find what the exact scan finds.
    let hnsw = value(&matrix, "dense(e5-small,hnsw,m=16,efc=200,ef=128)", "ndcg@5");
    assert!((hnsw - value(&matrix, "dense(e5-small,exact)", "ndcg@5")).abs() < 1e-9);
}

#[test]
fn missing_model_names_the_install_command() {
    let out = tempfile::tempdir().unwrap();
    Command::cargo_bin("ragsweep")
        .unwrap()
        .args(["run", "-q", "--models", "/nonexistent", "--out"])
        .arg(out.path())
        .arg(repo().join("tests/fixtures/dense.toml"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("scripts/install-models.sh"));
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

#[test]
fn embedder_matches_an_independent_python_onnxruntime_path() {
    use ragsweep::stages::embed::{find_model, Embedder, Role};
    let fixture: serde_json::Value =
        serde_json::from_slice(&std::fs::read(repo().join("tests/fixtures/embeddings.json")).unwrap()).unwrap();
    let models = repo().join("models");
    for (model, rows) in fixture.as_object().unwrap() {
        let info = find_model(&models, model).unwrap();
        let embedder = Embedder::load(&models, &info, 2).unwrap();
        for row in rows.as_array().unwrap() {
            let role = if row["role"] == "query" { Role::Query } else { Role::Passage };
            let got = &embedder.embed_batch(&[row["text"].as_str().unwrap()], role).unwrap()[0];
            let want: Vec<f32> = row["vector"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
            let cosine: f32 = got.iter().zip(&want).map(|(a, b)| a * b).sum();
            assert!(cosine >= 0.9999, "{model} {:?}: cosine {cosine}", row["text"]);
        }
    }
}

/// The exact-term question "o que diz o §4.2 …" is missed at rank 1 by e5 alone and found by
/// the hybrid with BM25 (the seeds' lesson, on the Portuguese demo set).
#[test]
fn hybrid_finds_the_clause_number_dense_misses() {
    let out = tempfile::tempdir().unwrap();
    let cache = crate::common::shared_cache();
    run_experiment("experiments/demo-exact-terms.toml", out.path(), cache.path());
    let dir = run_dir(out.path(), "demo-exact-terms");
    let per_query = std::fs::read_to_string(dir.join("per_query.jsonl")).unwrap();
    let hit1 = |cell: &str| {
        per_query
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|r| r["case"] == "nv-11" && r["cell"] == cell)
            .unwrap()["metrics"]["hit@1"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(hit1("c02"), 0.0, "dense e5 alone misses §4.2 at rank 1");
    assert_eq!(hit1("c01"), 1.0, "BM25 finds it");
    assert_eq!(hit1("c04"), 1.0, "hybrid (dbsf) finds it");
}

/// The demo corpus's documents embedded with `model` (passages, ragsweep's embedder).
fn demo_vectors(model: &str) -> Vec<Vec<f32>> {
    use ragsweep::stages::embed::{find_model, Embedder, Role};
    let models = repo().join("models");
    let corpus =
        ragsweep::input::corpus::Corpus::load(&repo().join("corpora/nuvem-verde/docs"), None, &Default::default())
            .expect("the demo corpus");
    let texts: Vec<&str> = corpus.docs.iter().map(|d| d.text.as_str()).collect();
    let embedder = Embedder::load(&models, &find_model(&models, model).unwrap(), 2).unwrap();
    texts.chunks(8).flat_map(|batch| embedder.embed_batch(batch, Role::Passage).unwrap()).collect()
}

fn min_cosine(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>()).fold(f32::INFINITY, f32::min)
}

#[test]
fn the_fused_e5_graph_gives_the_unfused_vectors_and_int8_stays_close() {
    let unfused = demo_vectors("e5-small");
    let fused = demo_vectors("e5-small-fused");
    assert_eq!(unfused.len(), 24);
    let cos = min_cosine(&unfused, &fused);
    assert!(cos >= 0.9999, "fused fp32 e5: minimum cosine {cos}");
    let int8 = min_cosine(&fused, &demo_vectors("e5-small-int8"));
    assert!((0.95..0.9999).contains(&int8), "int8 e5 is close but not equal to fp32: {int8}");
    let minilm = min_cosine(&demo_vectors("minilm-l6-fp32"), &demo_vectors("minilm-l6-int8"));
    assert!((0.95..0.9999).contains(&minilm), "int8 MiniLM against its fp32 graph: {minilm}");
}
