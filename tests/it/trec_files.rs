//! The TREC files a run writes, read by the scorers other people use: pytrec_eval (trec_eval's
//! C code) and ir_measures, from the test venv `scripts/install-models.sh` makes. A run with
//! tied BM25 scores and a question whose list is empty: every per-question value equals
//! `per_query.jsonl`, every mean equals the matrix with the convention the README documents
//! (a question in `queries.txt` that the run file does not list scores 0), and judged@k equals
//! ir_measures' Judged@k on lists of k items or more (on a shorter list ir_measures 0.4.3
//! divides by the list's length, SPEC §9 by k).

use crate::common;

use std::collections::BTreeMap;

use crate::common::{matrix, Fixture};
use serde_json::Value;

const SCORE: &str = r#"
import json, sys
import ir_measures, pytrec_eval
qrels_path, run_path = sys.argv[1], sys.argv[2]
qrels = {}
for line in open(qrels_path):
    q, _, d, g = line.split()
    qrels.setdefault(q, {})[d] = int(g)
run = {}
for line in open(run_path):
    q, _, d, _, s, _ = line.split()
    run.setdefault(q, {})[d] = float(s)
measures = {"ndcg_cut_3", "ndcg_cut_5", "recall_5", "recip_rank"}
out = {"pytrec_eval": pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run), "judged": {}}
for m in ir_measures.iter_calc([ir_measures.Judged @ 3, ir_measures.Judged @ 5], list(ir_measures.read_trec_qrels(qrels_path)), list(ir_measures.read_trec_run(run_path))):
    out["judged"].setdefault(m.query_id, {})[str(m.measure)] = m.value
print(json.dumps(out))
"#;

#[test]
fn trec_files_are_scored_by_pytrec_eval_and_ir_measures_as_the_matrix_scores_them() {
    let docs = [
        ("lei.md", "# Lei\nO prazo de férias é de trinta dias corridos.\n"),
        // Two copies: their BM25 scores tie exactly.
        ("copia1.md", "# Cópia\nFérias vencidas e férias proporcionais.\n"),
        ("copia2.md", "# Cópia\nFérias vencidas e férias proporcionais.\n"),
        ("frota.md", "# Frota\nCaminhões elétricos da frota urbana.\n"),
        ("ponto.md", "# Ponto\nO ponto eletrônico registra a jornada.\n"),
    ];
    let golden = r#"[
      {"id": "q1", "question": "férias vencidas proporcionais", "relevant": ["copia2", "lei"]},
      {"id": "q2", "question": "xyzzy quux", "relevant": ["ponto"]},
      {"id": "q3", "question": "jornada no ponto eletrônico", "relevant": ["ponto"]},
      {"id": "q 4", "question": "caminhões elétricos", "relevant": ["frota"]}
    ]"#;
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"trec\"\nunit = \"doc\"\nk = [3, 5]\nmetrics = [\"ndcg\", \"recall\", \"mrr\"]\nreserved_fraction = 0.0\n\
         latency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let per_query = crate::common::jsonl(&run.join("per_query.jsonl"));
    let q1 = per_query.iter().find(|l| l["case"] == "q1").unwrap();
    let tied: Vec<&str> = q1["top"].as_array().unwrap().iter().take(2).map(|t| t.as_str().unwrap()).collect();
    assert!(tied[0].starts_with("copia1") && tied[1].starts_with("copia2"), "the tie, broken by id: {q1}");
    let q2 = per_query.iter().find(|l| l["case"] == "q2").unwrap();
    assert!(q2["top"].as_array().unwrap().is_empty(), "q2 finds nothing: {q2}");

    // Every evaluated case is listed, with its split and whether it is answerable.
    let queries = std::fs::read_to_string(run.join("runs/queries.txt")).unwrap();
    let mut listed: Vec<&str> = queries.lines().collect();
    listed.sort();
    assert_eq!(listed, ["q%204 tuning 1", "q1 tuning 1", "q2 tuning 1", "q3 tuning 1"]);

    let qrels = f.path().join("qrels.txt");
    let golden: Vec<Value> = serde_json::from_str(golden).unwrap();
    let mut text = String::new();
    for case in &golden {
        for doc in case["relevant"].as_array().unwrap() {
            let id = ragsweep::output::trec::encode_id(case["id"].as_str().unwrap());
            text.push_str(&format!("{id} 0 {} 1\n", doc.as_str().unwrap()));
        }
    }
    std::fs::write(&qrels, text).unwrap();
    let python = common::repo().join("models/.venv/bin/python");
    assert!(python.is_file(), "no {}: run scripts/install-models.sh (it makes the test venv)", python.display());
    let out = std::process::Command::new(&python)
        .args(["-c", SCORE])
        .arg(&qrels)
        .arg(run.join("runs/c01.trec"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let theirs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = matrix(&run);
    let row = &m["rows"][0];
    let columns = [("ndcg_cut_3", "ndcg@3"), ("ndcg_cut_5", "ndcg@5"), ("recall_5", "recall@5")];
    let mut sums: BTreeMap<&str, f64> = BTreeMap::new();
    for line in queries.lines() {
        let qid = line.split(' ').next().unwrap();
        let case = ragsweep::output::trec::decode_id(qid);
        let ours = per_query.iter().find(|l| l["case"] == case.as_str()).unwrap();
        for (measure, column) in columns {
            // The convention: a question the run does not list scores 0.
            let value = theirs["pytrec_eval"][qid][measure].as_f64().unwrap_or(0.0);
            let mine = ours["metrics"][column].as_f64().unwrap();
            assert!((value - mine).abs() < 1e-9, "{case} {column}: pytrec_eval {value}, ours {mine}");
            *sums.entry(column).or_default() += value;
        }
        let returned = ours["top"].as_array().unwrap().len();
        for k in [3, 5] {
            // ir_measures 0.4.3 divides a list shorter than k by its length; SPEC §9 by k.
            let theirs = theirs["judged"][qid][format!("Judged@{k}")].as_f64().unwrap_or(0.0);
            let value = theirs * returned.min(k) as f64 / k as f64;
            let mine = ours["metrics"][format!("judged@{k}")].as_f64().unwrap();
            assert!(
                (value - mine).abs() < 1e-9,
                "{case} judged@{k}: ir_measures {theirs} ({returned} items), ours {mine}"
            );
            *sums.entry(if k == 3 { "judged@3" } else { "judged@5" }).or_default() += value;
        }
    }
    for (column, sum) in sums {
        let mean = sum / 4.0;
        let matrix_value = row["metrics"][column]["value"].as_f64().unwrap();
        assert!((mean - matrix_value).abs() < 1e-9, "{column}: mean {mean}, matrix {matrix_value}");
    }
}
