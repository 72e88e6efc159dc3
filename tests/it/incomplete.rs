//! A long run that meets a failing cell keeps the others: every other cell's rows and per-case
//! lines are written, the failed cell is named in the matrix, the summary and the manifest, and
//! the exit status (3) says the run is incomplete. A whole-document dense cell with budgets and
//! a latency pass (where a question embedded alone once searched less deep than in its batch)
//! completes.

use crate::common;

use crate::common::{matrix, Fixture};
use serde_json::Value;

fn fixture() -> Fixture {
    let docs: Vec<(String, String)> = (0..30)
        .map(|i| {
            let body: Vec<String> = (0..12)
                .map(|p| {
                    format!("## Parte {p}\nO item {i} da seção {p} fala do prazo {} e da regra {}.\n", i + p, i * p)
                })
                .collect();
            (format!("d{i:02}.md"), format!("# Documento {i}\n{}", body.join("")))
        })
        .collect();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let cases: Vec<String> = (0..20)
        .map(|i| {
            format!(r#"{{"id": "q{i:02}", "question": "o item {i} e a regra {}", "relevant": ["d{i:02}"]}}"#, i * 3)
        })
        .collect();
    Fixture::new(
        &docs,
        &format!("[{}]", cases.join(",")),
        "name = \"long\"\nunit = \"doc\"\nk = [1, 10]\nbudget = [256, 1024]\nlatency_cases = 10\nreserved_fraction = 0.0\n\
         [[chunkers]]\nkind = \"none\"\n[[chunkers]]\nkind = \"markdown\"\n\
         [[retrievers]]\nkind = \"bm25\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\n",
    )
}

#[test]
fn a_failed_cell_leaves_the_other_cells_written_and_the_run_marked_incomplete() {
    let f = fixture();
    // The whole grid completes first: whole documents embedded and timed at budgets.
    f.run_cmd().assert().success();
    let out = f.run_cmd().env("RAGSWEEP_TEST_FAIL_CELLS", "c02").assert().code(3);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("the run is incomplete: c02 failed"), "{stderr}");
    // The incomplete run, whatever second each run began in.
    let runs = common::runs_in(&f.path().join("out/long"));
    let run = runs.iter().find(|r| matrix(r)["failed"].is_array()).expect("the incomplete run");
    let m = matrix(run);
    let cells: Vec<&str> = m["rows"].as_array().unwrap().iter().map(|r| r["cell"].as_str().unwrap()).collect();
    assert!(cells.contains(&"c01") && cells.contains(&"c03") && cells.contains(&"c04"), "{cells:?}");
    assert!(!cells.contains(&"c02"));
    assert_eq!(m["failed"][0][0], "c02");
    let per_query = std::fs::read_to_string(run.join("per_query.jsonl")).unwrap();
    let lines: Vec<Value> = per_query.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3 * 20, "three cells × twenty cases");
    assert!(lines.iter().all(|l| l["cell"] != "c02"));
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("INCOMPLETE: cell c02 failed"), "{summary}");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["failed_cells"][0][0], "c02");
}
