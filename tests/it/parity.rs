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
                Item {
                    key: doc.to_string(),
                    score: *score as f32,
                    gain,
                    new: u32::from(gain > 0.0),
                    chunk: 0,
                    judged: true,
                }
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

/// `ragsweep explain` on a SciFact BM25 run: for 20 cases, each explained item's contributions
/// add up to its score, its rank is the TREC file's (whose score column encodes the rank), and
/// the first item's score is the one `per_query.jsonl` recorded (as f32, bit for bit).
#[test]
fn scifact_bm25_explanations_add_up_to_the_trec_scores() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/scifact");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("exp.toml"),
        format!(
            "name = \"explain\"\nunit = \"doc\"\nk = [10, 100]\nlatency_cases = 0\n[corpus]\npath = {shared:?}\n[golden]\npath = {shared:?}\ntuning = [\"test\"]\n[[chunkers]]\nkind = \"none\"\ntitle = true\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"en\"\n"
        ),
    )
    .unwrap();
    let run_cmd = |args: &[&str]| {
        let mut cmd = assert_cmd::Command::cargo_bin("ragsweep").unwrap();
        cmd.current_dir(dir.path()).args(args).arg("--cache").arg(crate::common::shared_cache().path());
        cmd
    };
    run_cmd(&["run", "-q", "--out", "out", "exp.toml"]).assert().success();
    let run = std::fs::read_dir(dir.path().join("out/explain")).unwrap().next().unwrap().unwrap().path();
    let trec = std::fs::read_to_string(run.join("runs/c01.trec")).unwrap();
    let mut scores: HashMap<(String, String), (u32, f64)> = HashMap::new();
    let mut cases: Vec<String> = Vec::new();
    for line in trec.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if !cases.iter().any(|c| c == f[0]) {
            cases.push(f[0].to_string());
        }
        scores.insert((f[0].to_string(), f[2].to_string()), (f[3].parse().unwrap(), f[4].parse().unwrap()));
    }
    let top_scores: HashMap<String, f64> = std::fs::read_to_string(run.join("per_query.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["cell"] == "c01" && !l["top_score"].is_null())
        .map(|l| (ragsweep::output::trec::encode_id(l["case"].as_str().unwrap()), l["top_score"].as_f64().unwrap()))
        .collect();
    let mut args: Vec<String> = vec!["explain".into(), run.display().to_string(), "--cell".into(), "c01".into()];
    for case in cases.iter().take(20) {
        args.extend(["--case".into(), case.clone()]);
    }
    args.push("--json".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_cmd(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (mut compared, mut relevant, mut exact) = (0, 0, 0);
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        for item in e["items"].as_array().unwrap() {
            let b = &item["bm25"];
            let score = b["score"].as_f64().unwrap();
            let sum: f64 = b["terms"].as_array().unwrap().iter().map(|t| t["contribution"].as_f64().unwrap()).sum();
            assert!((sum - score).abs() <= 1e-6 * score.max(1.0), "{item}");
            let Some(&(rank, trec_score)) =
                scores.get(&(e["case"].as_str().unwrap().into(), item["key"].as_str().unwrap().into()))
            else {
                continue; // ranked below the TREC file's depth
            };
            // The TREC file's score encodes the rank: n, n − 1, …, 1 for the case's n lines (the
            // real scores are explain's and per_query.jsonl's).
            if rank == 1 {
                let top = top_scores[e["case"].as_str().unwrap()];
                assert_eq!(score as f32, top as f32, "{}: explain {score} vs per_query {top}", e["case"]);
            }
            let listed = scores.keys().filter(|(c, _)| c == e["case"].as_str().unwrap()).count();
            assert_eq!(item["rank"].as_u64(), Some(u64::from(rank)), "{} {}", e["case"], item["key"]);
            assert_eq!(trec_score, (listed as u32 + 1 - rank) as f64, "{} {}", e["case"], item["key"]);
            exact += 1;
            compared += 1;
            relevant += usize::from(item["relevant"] == true);
        }
    }
    assert!(compared >= 25 && relevant >= 15, "{compared} items compared, {relevant} relevant");
    assert_eq!(exact, compared);
}
