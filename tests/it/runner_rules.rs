//! The runner's rules, each driven through the real binary on a tiny corpus the test writes:
//! `post` never refills from visible chunks, selection never picks a leaking cell, any valid
//! grid runs (a hybrid alone), TREC ids are single tokens, restricted-answer cases and golden
//! tags are reported.

use crate::common::{matrix, row, Fixture};
use predicates::prelude::PredicateBooleanExt;
use serde_json::Value;

const SALARY_DOCS: [(&str, &str); 2] = [
    (
        "salarios.md",
        "---\ntitle: Salários\nacl: [rh]\n---\n## Tabela\nA tabela de salários e o reajuste de salários da diretoria.\n\n## Outros\nTexto sem relação.\n",
    ),
    (
        "beneficios.md",
        "---\ntitle: Benefícios\n---\n## Reajuste\nO reajuste anual dos benefícios segue a tabela de salários.\n\n## Vale\nVale refeição e vale transporte.\n",
    ),
];

#[test]
fn post_drops_restricted_chunks_and_never_refills_on_a_chunked_corpus() {
    let golden = r#"[{"id": "q1", "question": "tabela de salários reajuste salários", "relevant": ["beneficios#Reajuste"], "groups": ["vendas"], "split": "tuning"}]"#;
    let f = Fixture::new(
        &SALARY_DOCS,
        golden,
        "name = \"post\"\nunit = \"section\"\nk = [1, 2]\nmetrics = [\"hit\"]\nfilter = [\"in_query\", \"post\"]\nlatency_cases = 0\n[[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let m = matrix(&f.run());
    let in_query = row(&m, "filter", "in_query");
    let post = row(&m, "filter", "post");
    assert_eq!(in_query["metrics"]["hit@1"]["value"], 1.0);
    assert_eq!(in_query["short_lists"]["@1"], 0);
    assert_eq!(post["metrics"]["hit@1"]["value"], 0.0, "the unfiltered top 1 was restricted: nothing is left");
    assert_eq!(post["short_lists"]["@1"], 1);
    assert_eq!(post["leaks"], 0);
    assert_eq!(in_query["leaks"], 0);
}

#[test]
fn a_leaking_cell_is_never_selected_when_the_grid_filters() {
    // Both cells find the answer first; the open cell also returns the restricted document
    // (a leak) and wins the tie on tuning by grid order unless leaks make it ineligible.
    let golden = r#"[{"id": "q1", "question": "reajuste anual dos benefícios tabela de salários", "relevant": ["beneficios"], "groups": ["vendas"], "split": "tuning"},
                     {"id": "q2", "question": "vale refeição", "relevant": ["beneficios"], "groups": ["vendas"], "split": "reserved"}]"#;
    let f = Fixture::new(
        &SALARY_DOCS,
        golden,
        "name = \"select\"\nunit = \"doc\"\nk = [1, 2]\nmetrics = [\"ndcg\"]\nfilter = [\"none\", \"in_query\"]\nselect = \"ndcg@1\"\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let m = matrix(&run);
    let open = row(&m, "filter", "none");
    assert!(open["leaks"].as_u64().unwrap() > 0, "the open cell returned the restricted document");
    assert_eq!(open["metrics"]["ndcg@1"]["value"], row(&m, "filter", "in_query")["metrics"]["ndcg@1"]["value"]);
    let selection = &m["selection"];
    assert_eq!(selection["cell"], row(&m, "filter", "in_query")["cell"]);
    assert_eq!(selection["excluded"][0][0], open["cell"]);
    assert_eq!(selection["cells"], 1);
}

#[test]
fn a_hybrid_without_a_dense_cell_runs_and_latency_times_the_scored_depth() {
    let golden = r#"[{"id": "q1", "question": "vale transporte", "relevant": ["beneficios#Vale"]},
                     {"id": "q2", "question": "tabela de salários", "relevant": ["beneficios#Reajuste"]}]"#;
    let f = Fixture::new(
        &[SALARY_DOCS[1]],
        golden,
        "name = \"hybrid\"\nunit = \"section\"\nk = [1, 3]\nlatency_cases = 2\n[[chunkers]]\nkind = \"recursive\"\nsize = 40\noverlap = 0\n[[retrievers]]\nkind = \"hybrid\"\nanalyzer = \"pt\"\nmodel = \"minilm-l6\"\nfusion = [\"rrf\", \"dbsf\"]\n[[retrievers]]\nkind = \"dense\"\nmodel = \"e5-small\"\nindex = [\"exact\", \"hnsw\"]\n",
    );
    let run = f.run();
    let m = matrix(&run);
    assert_eq!(m["rows"].as_array().unwrap().len(), 4, "2 hybrid and 2 dense cells, all cases tuning");
    for r in m["rows"].as_array().unwrap() {
        assert_eq!(r["latency"]["n"], 2, "{}", r["cell"]);
    }
    // The runner checks every timed call against its scored call's depth; the scored
    // depths are in per_query.jsonl: collapsing units start at 4 × max k.
    let per_query = std::fs::read_to_string(run.join("per_query.jsonl")).unwrap();
    for line in per_query.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["depth"].as_u64().unwrap() >= 12, "{line}");
    }
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    let models: Vec<&str> = manifest["models"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(models, ["minilm-l6", "e5-small"]);
}

#[test]
fn trec_files_of_section_units_have_six_fields_and_reversible_ids() {
    let golden = r#"[{"id": "caso com espaço", "question": "vale refeição", "relevant": ["beneficios#Vale"]}]"#;
    let f = Fixture::new(
        &[SALARY_DOCS[1]],
        golden,
        "name = \"trec\"\nunit = \"section\"\nk = [3]\nlatency_cases = 0\n[[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let trec = std::fs::read_to_string(run.join("runs/c01.trec")).unwrap();
    assert!(!trec.is_empty());
    for line in trec.lines() {
        assert_eq!(line.split_whitespace().count(), 6, "{line}");
    }
    let first: Vec<&str> = trec.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(first[0], "caso%20com%20espa\u{e7}o");
    assert_eq!(ragsweep::output::trec::decode_id(first[0]), "caso com espaço");
    assert_eq!(ragsweep::output::trec::decode_id(first[2]), "beneficios#Vale");
    let per_query = std::fs::read_to_string(run.join("per_query.jsonl")).unwrap();
    assert!(per_query.contains("\"top\":[\"beneficios#Vale\""), "{per_query}");
}

#[test]
fn restricted_answer_cases_are_unanswerable_and_counted_when_returned() {
    let golden = r#"[{"id": "r1", "question": "tabela de salários da diretoria", "answerable": false, "relevant": ["salarios"], "groups": ["vendas"], "tags": ["sigiloso"], "meta": {"autor": "ana"}},
                     {"id": "a1", "question": "vale refeição", "relevant": ["beneficios"], "groups": ["vendas"], "tags": ["sigiloso", "beneficio"]}]"#;
    let f = Fixture::new(
        &SALARY_DOCS,
        golden,
        "name = \"restricted\"\nunit = \"doc\"\nk = [1, 2]\nreserved_fraction = 0.0\nfilter = [\"none\", \"in_query\", \"post\"]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let m = matrix(&run);
    assert_eq!(row(&m, "filter", "none")["restricted_hits"], 1);
    assert_eq!(row(&m, "filter", "in_query")["restricted_hits"], 0);
    assert_eq!(row(&m, "filter", "post")["restricted_hits"], 0);
    for r in m["rows"].as_array().unwrap() {
        assert_eq!(r["unanswerable"], 1);
        assert_eq!(r["metrics"]["ndcg@2"]["n"], 1, "the restricted case is not scored by retrieval metrics");
    }
    let slices = std::fs::read_to_string(run.join("slices.csv")).unwrap();
    assert!(slices.lines().any(|l| l.starts_with("c01,tuning,tag:sigiloso,2,")), "{slices}");
    assert!(slices.lines().any(|l| l.starts_with("c01,tuning,tag:beneficio,1,")), "{slices}");
    let cases = std::fs::read_to_string(run.join("cases.jsonl")).unwrap();
    assert!(cases.contains(r#""meta":{"autor":"ana"}"#), "{cases}");
    assert!(cases.contains(r#""restricted":true"#), "{cases}");

    // A restricted-answer case whose label its user may see contradicts itself.
    let visible =
        r#"[{"id": "r1", "question": "vale", "answerable": false, "relevant": ["beneficios"], "groups": ["vendas"]}]"#;
    let f = Fixture::new(
        &SALARY_DOCS,
        visible,
        "name = \"x\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("\"r1\"").and(predicates::str::contains("visible to its groups")));

    // Unknown fields stay errors and say where extra data goes.
    let unknown = r#"[{"id": "u", "question": "vale", "relevant": ["beneficios"], "autor": "ana"}]"#;
    let f = Fixture::new(
        &SALARY_DOCS,
        unknown,
        "name = \"x\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    f.cmd().args(["validate", "exp.toml"]).assert().failure().stderr(predicates::str::contains("under `meta`"));
}

#[test]
fn rare_words_are_tagged_from_twenty_documents_and_meta_must_be_an_object() {
    let docs: Vec<(String, String)> = (0..20)
        .map(|i| {
            let extra = if i == 7 { " O teletrabalho exige aprovação do gestor." } else { "" };
            (format!("d{i:02}.md"), format!("## Política {i}\nRegras gerais da empresa número {i}.{extra}\n"))
        })
        .collect();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let golden = r#"[{"id": "q1", "question": "quem aprova o teletrabalho?", "relevant": ["d07"]}]"#;
    let experiment = "name = \"rare\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n";
    let fixture = Fixture::new(&docs, golden, experiment);
    let run = fixture.run();
    let cases: Value =
        serde_json::from_str(std::fs::read_to_string(run.join("cases.jsonl")).unwrap().lines().next().unwrap())
            .unwrap();
    let terms = cases["exact_terms"].as_array().unwrap();
    assert!(
        terms.iter().any(|t| t["text"] == "teletrabalho" && t["tags"].as_array().unwrap().contains(&"rare".into())),
        "{cases}"
    );
    let slices = std::fs::read_to_string(run.join("slices.csv")).unwrap();
    assert!(slices.lines().any(|l| l.starts_with("c01,tuning,rare,1,")), "{slices}");

    let not_object = r#"[{"id": "q1", "question": "teletrabalho", "relevant": ["d07"], "meta": "ana"}]"#;
    let f = Fixture::new(&docs, not_object, experiment);
    f.cmd().args(["validate", "exp.toml"]).assert().failure().stderr(
        predicates::str::contains("golden.json:1:").and(predicates::str::contains("`meta` must be a JSON object")),
    );
}
