//! A reranker (`rerank = "<model>"`) through the binary: what it returns, how the matrix names
//! it, what it is blamed for, how `explain` shows it, and the declarations it refuses.

use std::collections::HashMap;
use std::path::Path;

use crate::common::{matrix, Fixture};
use predicates::prelude::*;
use serde_json::Value;

/// Every document and question shares the word "regra", so BM25 returns every document and a
/// reranker that reads them all orders them as the dense scan does.
const DOCS: [(&str, &str); 5] = [
    ("clausula.md", "# Cláusula\nRegra 55-J: o estacionamento e as vagas da garagem.\n"),
    ("ferias.md", "# Férias\nRegra geral: trinta dias de férias por ano, marcados com o gestor.\n"),
    ("viagem.md", "# Viagem\nRegra da casa: descanso, viagem e tempo livre nas férias de verão.\n"),
    ("carro.md", "# Carro\nRegra do prédio: onde deixo o carro quando chego ao escritório?\n"),
    ("salario.md", "# Salário\nRegra do pagamento: o salário cai no quinto dia útil do mês.\n"),
];

const GOLDEN: &str = r#"[{"id": "q1", "question": "regra 55-J férias", "relevant": ["clausula"]},
    {"id": "q2", "question": "regra para estacionar o automóvel", "relevant": ["clausula"]},
    {"id": "q3", "question": "regra 55-J descanso viagem", "relevant": ["clausula"]},
    {"id": "q4", "question": "regra dos dias de folga remunerada", "relevant": ["ferias"]},
    {"id": "q5", "question": "regra do dia do pagamento do salário", "relevant": ["salario"]},
    {"id": "q6", "question": "regra 55-J vagas", "relevant": ["clausula"]}]"#;

const GRID: &str = "name = \"rerank\"\nunit = \"doc\"\nk = [1, 3]\nlatency_cases = 3\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\nrerank = [\"none\", \"minilm-l6\"]\n[[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\n";

fn rows(run: &Path, file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(run.join(file)).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The cell id of the row whose label starts with `label`, after the chunker.
fn cell(m: &Value, label: &str) -> String {
    let rows = m["rows"].as_array().unwrap();
    let row = rows.iter().find(|r| r["label"].as_str().unwrap().split_once(' ').unwrap().1.starts_with(label));
    row.unwrap_or_else(|| panic!("no cell labelled {label}: {}", m["rows"]))["cell"].as_str().unwrap().into()
}

/// Per case of `cell`: its top keys and the rank of its first relevant item.
fn lists(run: &Path, cell: &str) -> HashMap<String, (Vec<String>, Option<u64>)> {
    rows(run, "per_query.jsonl")
        .into_iter()
        .filter(|v| v["cell"] == cell)
        .map(|v| {
            let top = v["top"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
            (v["case"].as_str().unwrap().to_string(), (top, v["first_relevant"].as_u64()))
        })
        .collect()
}

#[test]
fn a_reranked_list_is_its_candidates_in_the_models_order_and_its_losses_are_rerank_misses() {
    let f = Fixture::new(&DOCS, GOLDEN, GRID);
    let run = f.run();
    let m = matrix(&run);
    let (bm25, reranked, dense) = (cell(&m, "bm25("), cell(&m, "rerank(minilm-l6)(n=100; bm25("), cell(&m, "dense("));
    let (bm25, reranked, dense) = (lists(&run, &bm25), lists(&run, &reranked), lists(&run, &dense));
    assert_eq!(reranked.len(), 6);
    for (case, (top, _)) in &reranked {
        assert_eq!(top, &dense[case].0, "{case}: every document is a candidate, so the order is the dense scan's");
    }
    assert!(reranked.iter().any(|(c, l)| l.0 != bm25[c].0), "precondition: reranking changes some list");

    // The matrix names the reranker and its candidates, and times it as a stage of its own.
    let row = m["rows"].as_array().unwrap().iter().find(|r| r["config"]["rerank"] == "minilm-l6").unwrap();
    assert_eq!(row["config"]["rerank_candidates"], "100");
    assert_eq!(row["config"]["retriever"], "bm25", "the family is the reranked retriever's");
    let stages = row["latency"]["stages_ms"].as_object().unwrap();
    let names: Vec<&str> = stages.keys().map(String::as_str).collect();
    assert!(names.contains(&"rerank(minilm-l6)") && names.contains(&"embed"), "{names:?}");
    let csv = std::fs::read_to_string(run.join("matrix.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert!(header.contains(&"rerank") && header.contains(&"rerank_candidates"), "{header:?}");

    // A case BM25 answered at rank 1 and the reranker moved down is the reranker's miss.
    let misses: Vec<csv::StringRecord> =
        csv::Reader::from_path(run.join("misses.csv")).unwrap().records().map(Result::unwrap).collect();
    let reranked_id = cell(&m, "rerank(");
    let lost: Vec<&String> =
        reranked.iter().filter(|(c, l)| bm25[*c].1 == Some(1) && l.1 != Some(1)).map(|(c, _)| c).collect();
    assert!(!lost.is_empty(), "precondition: the reranker loses a case BM25 ranked first: {reranked:?}");
    for case in &lost {
        let miss = misses.iter().find(|r| r[0] == *reranked_id && r[2] == ***case && &r[3] == "1").unwrap();
        assert_eq!((&miss[7], &miss[5]), ("rerank", "1"), "{miss:?}");
        assert!(miss[6].contains("before reranking it is rank 1; after rerank(minilm-l6): rank"), "{miss:?}");
    }
    for miss in misses.iter().filter(|r| r[0] == *reranked_id && &r[7] == "rerank") {
        assert_eq!(bm25[&miss[2]].1, Some(1), "only a loss of what the first stage had within k: {miss:?}");
    }

    // explain: the reranker's score on top of the tree, the BM25 score and rank below it.
    let case = lost[0];
    let out = f.explain(&run, &["--cell", &reranked_id, "--case", case, "--json"]);
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    let relevant = e["items"].as_array().unwrap().iter().find(|i| i["role"] == "best relevant").unwrap();
    let tree = &relevant["score_tree"];
    assert_eq!(tree["name"], "rerank(minilm-l6) of the first 100");
    assert_eq!(tree["rank"], relevant["rank"]);
    assert!((tree["value"].as_f64().unwrap() - relevant["score"].as_f64().unwrap()).abs() < 1e-6, "{tree}");
    let first = tree["children"].as_array().unwrap().last().unwrap();
    assert!(first["name"].as_str().unwrap().starts_with("bm25("), "{tree}");
    assert_eq!(first["rank"], 1, "BM25 ranked it first: {tree}");
}

#[test]
fn a_reranker_with_another_model_reads_its_own_question_vector() {
    let grid = "name = \"two\"\nunit = \"doc\"\nk = [1, 3]\nlatency_cases = 2\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nmodel = [\"e5-small\", \"minilm-l6\"]\n[[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\nrerank = \"e5-small\"\n[[retrievers]]\nkind = \"hybrid\"\nanalyzer = \"pt\"\nmodel = \"minilm-l6\"\nfusion = \"rrf\"\nrerank = \"e5-small\"\n";
    let f = Fixture::new(&DOCS, GOLDEN, grid);
    let run = f.run();
    let m = matrix(&run);
    let e5 = lists(&run, &cell(&m, "dense(e5-small"));
    let minilm = lists(&run, &cell(&m, "dense(minilm-l6"));
    assert!(e5.iter().any(|(c, l)| l.0 != minilm[c].0), "precondition: the two models order some case apart");
    // Every document is a candidate of both first stages: reranked, they are e5's lists.
    for first in ["rerank(e5-small)(n=100; dense(minilm-l6", "rerank(e5-small)(n=100; hybrid("] {
        let reranked = lists(&run, &cell(&m, first));
        assert_eq!(reranked.len(), 6);
        for (case, (top, _)) in &reranked {
            assert_eq!(top, &e5[case].0, "{first}, {case}: reranked by e5, in e5's order");
        }
    }
    // Both models' work is the cell's: embedding cost adds up, the question is embedded twice.
    let rows = m["rows"].as_array().unwrap();
    let row = |label: &str| rows.iter().find(|r| r["label"].as_str().unwrap().contains(label)).unwrap();
    let tokens = |label: &str| row(label)["cost"]["tokens_embedded"].as_u64().unwrap();
    let both = tokens("; dense(minilm-l6");
    assert_eq!(both, tokens(" dense(e5-small") + tokens(" dense(minilm-l6"), "{both}");
    let stages = row("; dense(minilm-l6")["latency"]["stages_ms"].as_object().unwrap();
    let names: Vec<&str> = stages.keys().map(String::as_str).collect();
    assert_eq!(names, ["embed", "judge", "rerank(e5-small)", "search dense(minilm-l6,exact)"], "(JSON keys sort)");
}

#[test]
fn explain_gives_a_reranked_graph_the_exact_rank_of_the_list_it_reorders() {
    // 300 short documents and a graph searched as poorly as hnsw_rs allows, reranked by another
    // model: the exact-scan rank `explain` reports is the one in MiniLM's exact list (what the
    // graph approximates), not in that list reranked by e5.
    let topics = ["rio", "montanha", "cidade", "floresta", "praia", "deserto", "ilha", "vale", "lago", "campo"];
    let things = ["casa", "ponte", "escola", "igreja", "mercado", "hospital", "fazenda", "porto", "museu", "parque"];
    let mut docs = Vec::new();
    let mut cases = Vec::new();
    for (i, (t, th, c)) in topics
        .iter()
        .flat_map(|t| things.iter().flat_map(move |th| ["azul", "verde", "vermelho"].map(|c| (t, th, c))))
        .enumerate()
    {
        docs.push((format!("d{i:03}.md"), format!("# {t}\nA {th} {c} perto do {t}, número {i}.\n")));
        if i % 30 == 0 {
            cases.push(format!(r#"{{"id": "q{i}", "question": "{th} {c} no {t}", "relevant": ["d{i:03}"]}}"#));
        }
    }
    let docs: Vec<(&str, &str)> = docs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let grid = "name = \"graph\"\nunit = \"doc\"\nk = [10]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\nrerank = [\"none\", \"e5-small\"]\n[[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\nindex = \"hnsw\"\nm = 2\nef_construction = 2\nef_search = 1\nrerank = \"e5-small\"\n";
    let f = Fixture::new(&docs, &format!("[{}]", cases.join(",")), grid);
    let run = f.run();
    let m = matrix(&run);
    let exact = lists(&run, &cell(&m, "dense(minilm-l6,exact)"));
    let reranked_exact = lists(&run, &cell(&m, "rerank(e5-small)(n=100; dense(minilm-l6,exact)"));
    let graph = cell(&m, "rerank(e5-small)(n=100; dense(minilm-l6,hnsw");
    let mut args = vec!["--cell", &graph, "--json"];
    for case in exact.keys() {
        args.extend(["--case", case]);
    }
    let out = f.explain(&run, &args);
    let (mut checked, mut apart) = (0, 0);
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let case = e["case"].as_str().unwrap();
        for item in e["items"].as_array().unwrap() {
            let doc = item["doc"].as_str().unwrap();
            let rank_in = |l: &(Vec<String>, Option<u64>)| l.0.iter().position(|d| d == doc).map(|p| p as u64 + 1);
            let Some(want) = rank_in(&exact[case]) else { continue };
            assert_eq!(item["dense"]["exact_rank"].as_u64(), Some(want), "{case} {doc}: {item}");
            checked += 1;
            apart += usize::from(rank_in(&reranked_exact[case]) != Some(want));
        }
    }
    assert!(checked > 0 && apart > 0, "precondition: e5 reorders some explained item ({checked} checked)");
}

#[test]
fn rerank_declarations_that_cannot_mean_anything_are_refused_at_their_key() {
    let head = "name = \"r\"\nunit = \"doc\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\n";
    for (retriever, line, message) in [
        (
            "kind = \"dense\"\nmodel = \"minilm-l6\"\nrerank = \"minilm-l6\"\n",
            13,
            "already in \"minilm-l6\"'s cosine order: rerank it with another model",
        ),
        ("kind = \"bm25\"\nrerank_candidates = 50\n", 12, "`rerank_candidates` needs a reranker"),
        ("kind = \"bm25\"\nrerank = \"minilm-l6\"\nrerank_candidates = 0\n", 13, "must be at least 1"),
        ("kind = \"bm25\"\nrerank = 3\n", 12, "takes a model name or \"none\""),
    ] {
        let f = Fixture::new(&DOCS, GOLDEN, &format!("{head}{retriever}"));
        f.cmd()
            .args(["validate", "exp.toml"])
            .assert()
            .failure()
            .stderr(predicate::str::contains(format!("exp.toml:{line}:")).and(predicate::str::contains(message)));
    }
}
