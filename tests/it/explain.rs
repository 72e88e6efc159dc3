//! `explain` reports the run it explains: for every cell of a mixed grid (BM25, exact, HNSW,
//! convex, rrf and dbsf hybrids; no filter, in-query and post filters) and 20 cases, every
//! rank and score it prints equals the cell's `per_query.jsonl` and `runs/<cell>.trec`.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::Fixture;
use serde_json::Value;

fn corpus() -> (Vec<(String, String)>, String) {
    let topics = ["férias", "salário", "ponto", "benefícios", "viagem", "senha", "contrato", "reembolso"];
    let mut docs = Vec::new();
    for (i, topic) in topics.iter().enumerate() {
        for part in 0..4 {
            let acl = if part == 3 { "---\nacl: [rh]\n---\n" } else { "" };
            let text = format!(
                "{acl}# {topic} {part}\nRegras gerais de {topic} na empresa.\n## Prazo {part}\nO prazo de {topic} é de {} dias úteis.\n## Pedido {part}\nO pedido de {topic} é feito no portal {part}.\n",
                10 + i * 3 + part
            );
            docs.push((format!("{topic}-{part}.md"), text));
        }
    }
    let mut cases = Vec::new();
    for n in 0..20 {
        let (topic, part) = (topics[n % topics.len()], n % 4);
        let (section, question) = if n % 2 == 0 {
            (format!("Prazo {part}"), format!("qual o prazo de {topic}?"))
        } else {
            (format!("Pedido {part}"), format!("onde faço o pedido de {topic}?"))
        };
        let groups = if n % 3 == 0 { r#"["rh"]"# } else { r#"["suporte"]"# };
        let answerable = if part == 3 && n % 3 != 0 { r#", "answerable": false"# } else { "" };
        cases.push(format!(
            r#"{{"id": "q{n:02}", "question": "{question}", "relevant": ["{topic}-{part}#{section}"], "groups": {groups}{answerable}}}"#
        ));
    }
    (docs, format!("[{}]", cases.join(",\n")))
}

/// Runs the fixture's experiment `name` with `models` and returns its run directory.
fn run(f: &Fixture, name: &str, models: &Path) -> PathBuf {
    let out = f.path().join("out");
    let mut cmd = f.cmd();
    cmd.args(["run", "-q", "--models"]).arg(models).arg("--cache").arg(f.path().join("cache"));
    cmd.arg("--out").arg(&out).arg("exp.toml").assert().success();
    out.join(name).join("latest")
}

#[test]
fn explain_ranks_and_scores_equal_the_run_for_every_cell_kind_and_filter() {
    let (docs, golden) = corpus();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let f = Fixture::new(
        &docs,
        &golden,
        "name = \"explain\"\nunit = \"section\"\nk = [1, 3, 5]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
         filter = [\"none\", \"in_query\", \"post\"]\n\
         [[chunkers]]\nkind = \"recursive\"\nsize = 60\noverlap = 0\n\
         [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n\
         [[retrievers]]\nkind = \"dense\"\nmodel = \"random-16\"\nindex = [\"exact\", \"hnsw\"]\n\
         [[retrievers]]\nkind = \"hybrid\"\nmodel = \"random-16\"\nfusion = [\"convex\", \"rrf\", \"dbsf\"]\ncandidates = 8\n",
    );
    let models = f.path().join("models");
    fs::create_dir_all(models.join("random-16")).unwrap();
    fs::write(models.join("random-16/model.toml"), "id = \"random-16\"\nkind = \"random\"\ndim = 16\n").unwrap();
    let run = run(&f, "explain", &models);
    let manifest: Value = serde_json::from_str(&fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    let cells: Vec<String> =
        manifest["cells"].as_array().unwrap().iter().map(|c| c["cell"].as_str().unwrap().to_string()).collect();
    assert_eq!(cells.len(), 18);
    let per_query: Vec<Value> = fs::read_to_string(run.join("per_query.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cases: Vec<String> = (0..20).map(|n| format!("q{n:02}")).collect();
    let mut checked = 0;
    for cell in &cells {
        // (case, rank) → (item, score) from the cell's TREC run.
        let trec: HashMap<(String, u32), (String, f64)> = fs::read_to_string(run.join(format!("runs/{cell}.trec")))
            .unwrap()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let key = ragsweep::output::trec::decode_id(f[2]);
                ((ragsweep::output::trec::decode_id(f[0]), f[3].parse().unwrap()), (key, f[4].parse().unwrap()))
            })
            .collect();
        let mut cmd = f.cmd();
        cmd.arg("explain").arg(&run).args(["--cell", cell, "--json", "--models"]).arg(&models);
        cmd.arg("--cache").arg(f.path().join("cache"));
        for case in &cases {
            cmd.args(["--case", case]);
        }
        let output = cmd.output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            let e: Value = serde_json::from_str(line).unwrap();
            let case = e["case"].as_str().unwrap();
            let top: Vec<&str> = per_query.iter().find(|l| l["cell"] == cell.as_str() && l["case"] == case).unwrap()
                ["top"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            let listed = trec.keys().filter(|(c, _)| c == case).count();
            for item in e["items"].as_array().unwrap() {
                let key = item["key"].as_str().unwrap();
                match item["rank"].as_u64() {
                    Some(rank) => {
                        let (trec_key, trec_score) = &trec[&(case.to_string(), rank as u32)];
                        assert_eq!(trec_key, key, "{cell} {case}: rank {rank}");
                        assert_eq!(top.get(rank as usize - 1).copied(), Some(key), "{cell} {case}: per_query top");
                        // The TREC file's score encodes the rank: n, n − 1, …, 1 (see trec.rs).
                        assert_eq!(*trec_score, (listed as u64 + 1 - rank) as f64, "{cell} {case} {key}: TREC score");
                        score_tree_adds_up(&item["score_tree"], item, rank, &format!("{cell} {case} {key}"));
                        if let Some(dense_rank) = item["dense"]["rank"].as_u64() {
                            if item["hybrid"].is_null() {
                                assert_eq!(dense_rank, rank, "{cell} {case}: a dense cell's dense rank is its rank");
                            }
                        }
                        checked += 1;
                    }
                    None => assert!(
                        !trec.iter().any(|((c, _), (k, _))| c == case && k == key) && listed <= 5,
                        "{cell} {case}: {key} unranked by explain but in the TREC run"
                    ),
                }
                if item["visible_to_user"] == false && e["filter"] != "none" {
                    assert!(item["rank"].is_null(), "{cell} {case}: a filtered cell ranked a restricted item: {item}");
                }
            }
        }
    }
    assert!(checked > 18 * 20, "every cell and case explained: {checked}");
}

/// An item's score tree: for a fused cell the fusion at the root with the fused score and a node
/// per source whose parts of the fused score sum to it; for one source the source's own score.
/// BM25's term contributions sum to the BM25 score. The root's rank is the item's rank.
fn score_tree_adds_up(tree: &Value, item: &Value, rank: u64, what: &str) {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-4 * b.abs().max(1.0);
    let value = |node: &Value| node["value"].as_f64().unwrap();
    assert_eq!(tree["rank"].as_u64(), Some(rank), "{what}: {tree}");
    let sources: Vec<&Value> = if item["hybrid"].is_null() {
        assert!(close(value(tree), item["score"].as_f64().unwrap()), "{what}: {tree}");
        vec![tree]
    } else {
        assert_eq!(tree["name"], item["hybrid"]["fusion"], "{what}: the fusion at the root");
        let children = tree["children"].as_array().unwrap();
        assert_eq!(children.len(), 2, "{what}: a node per source: {tree}");
        let parts: f64 = children
            .iter()
            .map(|c| {
                let part = c["children"].as_array().unwrap().iter().find(|n| n["name"] == "part of the fused score");
                value(part.expect("each source's part of the fused score"))
            })
            .sum();
        assert!(close(parts, value(tree)), "{what}: parts {parts} of {tree}");
        children.iter().collect()
    };
    for source in sources.iter().filter(|s| s["name"].as_str().unwrap().starts_with("bm25")) {
        let terms: f64 = source["children"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["name"].as_str().unwrap().starts_with("term "))
            .map(value)
            .sum();
        if let Some(score) = source["value"].as_f64() {
            assert!(close(terms, score), "{what}: terms {terms} of {source}");
        }
    }
}

/// A case whose best relevant item is the cell's first item is shown once, as the top, and is
/// never said to have no relevant item.
#[test]
fn a_relevant_top_item_is_not_reported_as_missing() {
    let f = Fixture::new(
        &[
            ("ferias.md", "# Férias\nO prazo de férias é de 30 dias.\n"),
            ("ponto.md", "# Ponto\nO ponto é eletrônico.\n"),
        ],
        r#"[{"id": "q1", "question": "qual o prazo de férias?", "relevant": ["ferias"]}]"#,
        "name = \"top\"\nunit = \"doc\"\nk = [1, 2]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = run(&f, "top", &f.path().join("models"));
    let output = f
        .cmd()
        .args(["explain"])
        .arg(run)
        .args(["--cell", "c01", "--case", "q1", "--cache"])
        .arg(f.path().join("cache"))
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(text.contains("top (#1, relevant): ferias"), "{text}");
    assert!(!text.contains("no relevant item"), "{text}");
}
