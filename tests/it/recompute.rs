//! Every number of a run recomputes from its files (README, `per_query.jsonl`): a grid of
//! filters (none, in_query, post) × k × budgets × chunkers on a corpus where the late filter
//! leaves short lists and the budgets pack deeper than the largest k. Each case's metric at
//! each k is recomputed from that k's list (`top_at`, else the first k of `top`) and the golden
//! set, each budget's from the first `packed_items` of `top`, each matrix mean from the case
//! values, and the TREC run file trec_eval reads at each k starts with the list at that k.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{matrix, Fixture};
use serde_json::Value;

const WORDS: [&str; 8] = ["contrato", "prazo", "multa", "férias", "salário", "reajuste", "benefício", "senha"];
const K: [usize; 3] = [1, 3, 10];
const BUDGETS: [usize; 2] = [30, 160];

fn docs() -> Vec<(String, String)> {
    (0..30)
        .map(|i: usize| {
            let acl = match i % 3 {
                0 => "acl: [rh]\n",
                1 if i % 2 == 1 => "acl: [vendas]\n",
                _ => "",
            };
            let words: Vec<&str> = (0..WORDS.len())
                .filter(|j| (i * 7 + j * 3) % 5 < 2 || *j == i % WORDS.len())
                .map(|j| WORDS[j])
                .collect();
            (
                format!("d{i:02}.md"),
                format!("---\ntitle: Doc {i}\n{acl}---\n# Doc {i}\n{} contrato.\n", words.join(" ")),
            )
        })
        .collect()
}

/// The golden set: per case its relevant documents (visible to `vendas`), or none when
/// unanswerable.
fn golden() -> Vec<(String, String, Vec<String>)> {
    let visible = |i: usize| !i.is_multiple_of(3);
    (0..12)
        .map(|q: usize| {
            let question = format!("{} {} contrato", WORDS[q % WORDS.len()], WORDS[(q * 5 + 1) % WORDS.len()]);
            let relevant = if q == 11 {
                Vec::new()
            } else {
                (0..30).filter(|&d| visible(d) && (d + q).is_multiple_of(7)).map(|d| format!("d{d:02}")).collect()
            };
            (format!("q{q}"), question, relevant)
        })
        .collect()
}

fn metric(name: &str, list: &[String], relevant: &BTreeSet<&str>, k: usize) -> f64 {
    let gains: Vec<f64> = list.iter().take(k).map(|d| f64::from(u8::from(relevant.contains(d.as_str())))).collect();
    let r = relevant.len() as f64;
    let first = gains.iter().position(|&g| g > 0.0);
    match name {
        "hit" => f64::from(u8::from(first.is_some())),
        "mrr" => first.map_or(0.0, |p| 1.0 / (p + 1) as f64),
        "recall" => gains.iter().sum::<f64>() / r,
        "precision" => gains.iter().sum::<f64>() / k as f64,
        "ap" => {
            let mut hits = 0.0;
            gains
                .iter()
                .enumerate()
                .filter(|(_, &g)| g > 0.0)
                .map(|(i, _)| {
                    hits += 1.0;
                    hits / (i + 1) as f64
                })
                .sum::<f64>()
                / r
        }
        "ndcg" => {
            let dcg: f64 = gains.iter().enumerate().map(|(i, g)| g / (i as f64 + 2.0).log2()).sum();
            let idcg: f64 = (0..relevant.len().min(k)).map(|i| 1.0 / (i as f64 + 2.0).log2()).sum();
            dcg / idcg
        }
        _ => unreachable!("{name}"),
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

#[test]
fn every_metric_at_every_k_and_budget_recomputes_from_per_query_and_the_trec_files() {
    let docs = docs();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let golden = golden();
    let golden_json: Vec<Value> = golden
        .iter()
        .map(|(id, q, rel)| {
            if rel.is_empty() {
                serde_json::json!({"id": id, "question": q, "answerable": false, "groups": ["vendas"]})
            } else {
                serde_json::json!({"id": id, "question": q, "relevant": rel, "groups": ["vendas"]})
            }
        })
        .collect();
    let f = Fixture::new(
        &docs,
        &serde_json::to_string(&golden_json).unwrap(),
        "name = \"recompute\"\nunit = \"doc\"\nk = [1, 3, 10]\nbudget = [30, 160]\n\
         metrics = [\"ndcg\", \"recall\", \"mrr\", \"hit\", \"precision\", \"ap\"]\n\
         filter = [\"none\", \"in_query\", \"post\"]\nreserved_fraction = 0.5\nlatency_cases = 0\n\
         [cost]\ntokenizer = \"words\"\n\
         [[chunkers]]\nkind = \"none\"\n[[chunkers]]\nkind = \"fixed\"\nsize = 8\noverlap = 0\n\
         [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let relevant: BTreeMap<&str, BTreeSet<&str>> =
        golden.iter().map(|(id, _, rel)| (id.as_str(), rel.iter().map(String::as_str).collect())).collect();
    let lines: Vec<Value> = std::fs::read_to_string(run.join("per_query.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (mut checked, mut own_lists, mut deeper_budgets) = (0, 0, 0);
    // (cell, split, column) → the recomputed case values.
    let mut values: BTreeMap<(String, String, String), Vec<f64>> = BTreeMap::new();
    // (cell, k) → case → the list at k, which the run file trec_eval reads at k must start with.
    let mut trec_lists: BTreeMap<(String, usize), BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for line in &lines {
        let (cell, case, split) =
            (line["cell"].as_str().unwrap(), line["case"].as_str().unwrap(), line["split"].as_str().unwrap());
        let top = strings(&line["top"]);
        let at = |k: usize| match line["top_at"].get(format!("@{k}")) {
            Some(own) => strings(own),
            None => top.iter().take(k).cloned().collect(),
        };
        let rel = &relevant[case];
        if line["top_at"].get("@10").is_some() {
            own_lists += 1;
        }
        for k in K {
            trec_lists.entry((cell.to_string(), k)).or_default().insert(case.to_string(), at(k));
        }
        let first = at(10).iter().position(|d| rel.contains(d.as_str())).map(|p| p as u64 + 1);
        assert_eq!(line["first_relevant"].as_u64(), first, "{cell} {case}: first_relevant of the list at 10");
        if rel.is_empty() {
            continue;
        }
        for name in ["ndcg", "recall", "mrr", "hit", "precision", "ap"] {
            for k in K {
                let column = format!("{name}@{k}");
                let (mine, theirs) = (metric(name, &at(k), rel, k), line["metrics"][&column].as_f64().unwrap());
                assert!(
                    (mine - theirs).abs() < 1e-12,
                    "{cell} {case} {column}: {theirs} written, {mine} from its list"
                );
                values.entry((cell.into(), split.into(), column)).or_default().push(mine);
                checked += 1;
            }
        }
        for b in BUDGETS {
            let n = line["packed_items"][format!("@{b}t")].as_u64().unwrap_or_else(|| panic!("{line}")) as usize;
            deeper_budgets += usize::from(n > at(10).len());
            let packed = &top[..n];
            for name in ["hit", "mrr", "recall"] {
                let column = format!("{name}@{b}t");
                let (mine, theirs) = (metric(name, packed, rel, n), line["metrics"][&column].as_f64().unwrap());
                assert!((mine - theirs).abs() < 1e-12, "{cell} {case} {column}: {theirs} written, {mine} from top");
                checked += 1;
            }
        }
    }
    assert!(own_lists > 0, "some post list at 10 is shorter than the budget's ranking: the case under test");
    assert!(deeper_budgets > 0, "some budget packs deeper than the list at 10");
    assert_eq!(checked, 11 * 6 * (6 * 3 + 2 * 3), "every answerable case × cell × column");
    let m = matrix(&run);
    for row in m["rows"].as_array().unwrap() {
        let (cell, split) = (row["cell"].as_str().unwrap(), row["split"].as_str().unwrap());
        for (column, v) in row["metrics"].as_object().unwrap() {
            let Some(case_values) = values.get(&(cell.into(), split.into(), column.clone())) else { continue };
            let mean = case_values.iter().sum::<f64>() / case_values.len() as f64;
            let written = v["value"].as_f64().unwrap();
            assert!((mean - written).abs() < 1e-9, "{cell} {split} {column}: matrix {written}, cases {mean}");
        }
    }
    // At each k, trec_eval reads the first k of the run file of k (`<cell>@k.trec`, written
    // where some list at k is its own), else of the largest k's (`<cell>.trec`, which holds
    // exactly the lists at 10).
    let mut own_files = 0;
    for ((cell, k), lists) in trec_lists {
        let own = run.join("runs").join(format!("{cell}@{k}.trec"));
        own_files += usize::from(own.exists());
        let file = if own.exists() { own } else { run.join("runs").join(format!("{cell}.trec")) };
        let mut read: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for l in std::fs::read_to_string(&file).unwrap().lines() {
            let fields: Vec<&str> = l.split_whitespace().collect();
            read.entry(fields[0].to_string()).or_default().push(fields[2].to_string());
        }
        for (case, list) in lists {
            let listed = read.remove(&case).unwrap_or_default();
            let first_k: Vec<String> = listed.iter().take(k).cloned().collect();
            assert_eq!(first_k, list, "{cell} {case}: {} at {k}", file.display());
            if k == 10 {
                assert_eq!(listed, list, "{cell} {case}: the run file at 10 holds the list at 10");
            }
        }
        assert!(read.is_empty(), "{cell}: no other case in {}", file.display());
    }
    assert!(own_files > 0, "a post cell's list at a smaller k is its own, in its own run file");
}
