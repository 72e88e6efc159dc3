//! Metric parity with trec_eval: ragsweep's metrics over a SciFact BM25 run equal what
//! pytrec_eval computed for the same run and qrels (fixture made by scripts/parity.sh).

use std::collections::HashMap;
use std::path::Path;

use ragsweep::evaluate::label::{Item, Judged};
use ragsweep::evaluate::metrics::{Metric, MetricAt};

#[test]
fn scifact_run_scores_match_pytrec_eval_to_1e6() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scifact-parity");
    let qrels_text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/scifact/qrels/test.tsv"))
            .expect("SciFact qrels in ../shared/corpora");
    let mut qrels: HashMap<&str, HashMap<&str, u32>> = HashMap::new();
    for line in qrels_text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        qrels.entry(f[0]).or_default().insert(f[1], f[2].parse().unwrap());
    }
    let run_text = std::fs::read_to_string(fixture.join("run.trec")).unwrap();
    let mut runs: HashMap<&str, Vec<(&str, f64)>> = HashMap::new();
    for line in run_text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        runs.entry(f[0]).or_default().push((f[2], f[4].parse().unwrap()));
    }
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("pytrec_eval.json")).unwrap()).unwrap();
    let measures = expected["measures"].as_object().unwrap();
    let per_query = expected["per_query"].as_object().unwrap();
    assert_eq!(per_query.len(), 300);

    let mut checked = 0;
    for (qid, want) in per_query {
        let grades = &qrels[qid.as_str()];
        let mut ranked = runs.get(qid.as_str()).cloned().unwrap_or_default();
        // trec_eval's order: score descending (the fixture has no ties).
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        let items = ranked
            .iter()
            .map(|(doc, score)| {
                let gain = f64::from(grades.get(doc).copied().unwrap_or(0));
                Item { key: doc.to_string(), score: *score as f32, gain, new: u32::from(gain > 0.0), chunk: 0 }
            })
            .collect();
        let mut ideal: Vec<f64> = grades.values().filter(|&&g| g > 0).map(|&g| f64::from(g)).collect();
        ideal.sort_by(|a, b| b.total_cmp(a));
        let judged = Judged { items, relevant: ideal.len(), ideal, returned: Vec::new() };
        for (measure, column) in measures {
            let at: MetricAt = column.as_str().unwrap().parse().unwrap();
            let ours = at.metric.at(&judged, at.k).unwrap();
            let theirs = want[measure].as_f64().unwrap();
            assert!((ours - theirs).abs() <= 1e-6, "{qid} {measure}: ours {ours} vs pytrec_eval {theirs}");
            checked += 1;
        }
    }
    assert_eq!(checked, 300 * 5);
    assert!(measures.values().any(|c| c.as_str().unwrap().starts_with(Metric::Ap.name())));
}
