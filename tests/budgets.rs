//! Context budgets through the binary: a whole-document chunker that wins at equal k loses at
//! an equal budget, and the budget metrics of a 3-document corpus equal hand-computed values
//! (tokens counted as words, so they can be counted by eye).

mod common;

use common::{matrix, Fixture};
use serde_json::Value;

const FILLER: &str = "um dois tres quatro cinco seis sete oito nove dez";

fn docs() -> Vec<(&'static str, String)> {
    vec![
        (
            "a.md",
            "# Manual\n## Intro\nalfa beta gama delta epsilon zeta eta teta iota kapa lambda mu nu xi omicron pi rho sigma tau upsilon\n## Prazo\nprazo ferias trinta dias\n".into(),
        ),
        ("b.md", format!("# Outro\n## Regra\nprazo ferias trinta dias alfa\n## Resto\n{}\n", FILLER.repeat(20))),
        ("c.md", "# Nada\n## Texto\nomega psi chi phi\n".into()),
    ]
}

const QUESTION: &str = "prazo ferias trinta dias alfa";

fn fixture(unit: &str, labels: &str) -> Fixture {
    let docs = docs();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let golden = format!(r#"[{{"id": "q1", "question": "{QUESTION}", {labels}}}]"#);
    Fixture::new(
        &docs,
        &golden,
        &format!(
            "name = \"budgets\"\nunit = \"{unit}\"\nk = [1]\nbudget = [15]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
             [cost]\ntokenizer = \"words\"\n\
             [[chunkers]]\nkind = \"none\"\n[[chunkers]]\nkind = \"markdown\"\n\
             [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n"
        ),
    )
}

fn value(m: &Value, chunker: &str, column: &str) -> f64 {
    let row = m["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"].as_str().unwrap().starts_with(chunker))
        .unwrap_or_else(|| panic!("no {chunker} row"));
    row["metrics"][column]["value"].as_f64().unwrap_or_else(|| panic!("{column}: {}", row["metrics"]))
}

fn ctx(m: &Value, chunker: &str, cut: &str) -> f64 {
    let row = m["rows"].as_array().unwrap().iter().find(|r| r["label"].as_str().unwrap().starts_with(chunker)).unwrap();
    row["ctx_tokens"][cut].as_f64().unwrap()
}

#[test]
fn a_whole_document_wins_at_equal_k_and_loses_at_an_equal_budget() {
    let f = fixture("section", r#""relevant": ["a#Prazo"]"#);
    let run = f.run();
    let m = matrix(&run);
    // At k = 1 the whole of a.md holds the Prazo section; the Markdown chunker ranks b's
    // Regra section (all five query words, shorter) above a's Prazo section.
    assert_eq!(value(&m, "none", "recall@1"), 1.0);
    assert_eq!(value(&m, "markdown", "recall@1"), 0.0);
    // At 15 words: a.md cut after its first 15 words ("Manual Intro alfa … lambda") holds
    // nothing of Prazo; Regra (6 words: Regra prazo ferias trinta dias alfa) and Prazo (5 words)
    // fit whole, then Intro is cut after 4 words.
    assert_eq!(value(&m, "none", "recall@15t"), 0.0);
    assert_eq!(value(&m, "markdown", "recall@15t"), 1.0);
    assert_eq!((ctx(&m, "none", "@15t"), ctx(&m, "markdown", "@15t")), (15.0, 15.0));
    // Token level, T = the Prazo section: 5 words (Prazo prazo ferias trinta dias).
    assert_eq!(value(&m, "none", "tok_recall@15t"), 0.0);
    assert_eq!(value(&m, "markdown", "tok_recall@15t"), 1.0);
    assert!((value(&m, "markdown", "tok_precision@15t") - 5.0 / 15.0).abs() < 1e-12);
    assert!((value(&m, "markdown", "tok_iou@15t") - 5.0 / 15.0).abs() < 1e-12);
    // precision@Bt divides by the packed items: Regra, Prazo, Intro (cut) → 1 of 3.
    assert!((value(&m, "markdown", "precision@15t") - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(value(&m, "markdown", "mrr@15t"), 0.5);
    let page = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(page.contains(r#""cuts":["1","15t"]"#), "the report can pick the budget");

    // Selecting at the budget picks the Markdown chunker, at k the whole document.
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(
        f.path().join("exp.toml"),
        exp.replace("latency_cases = 0\n", "latency_cases = 0\nselect = \"recall@15t\"\n"),
    )
    .unwrap();
    f.run_cmd().assert().success();
    let runs: Vec<_> = common::runs_in(&f.path().join("out/budgets"));
    let newest = runs.iter().max().unwrap();
    let selected = matrix(newest)["selection"]["label"].as_str().unwrap().to_string();
    assert!(selected.starts_with("markdown"), "{selected}");
}

#[test]
fn evidence_unit_budget_measures_by_hand() {
    // The evidence "trinta dias" occurs in a.md (Prazo) and b.md (Regra): T = 2 + 2 words.
    let f = fixture("evidence", r#""evidence": ["trinta dias"]"#);
    let m = matrix(&f.run());
    // Markdown at 15 words: Regra (covers the span: relevant, rank 1), Prazo (a duplicate:
    // not a new source), Intro cut at 4 words. T ∩ C = 4 words of 15.
    assert_eq!(value(&m, "markdown", "recall@15t"), 1.0);
    assert_eq!(value(&m, "markdown", "tok_recall@15t"), 1.0);
    assert!((value(&m, "markdown", "tok_precision@15t") - 4.0 / 15.0).abs() < 1e-12);
    assert!((value(&m, "markdown", "tok_iou@15t") - 4.0 / 15.0).abs() < 1e-12);
    // Whole documents: a.md cut at 15 words holds neither occurrence.
    assert_eq!(value(&m, "none", "recall@15t"), 0.0);
    assert_eq!(value(&m, "none", "tok_iou@15t"), 0.0);
}

fn row_of<'m>(m: &'m Value, key: &str, value: &str) -> &'m Value {
    m["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["config"][key] == value)
        .unwrap_or_else(|| panic!("no {key}={value}"))
}

#[test]
fn ndcg_at_a_budget_is_divided_by_the_ideal_packed_context() {
    // Art1 and Art2 (5 words each with their headings) both fit in 10 words: the ideal context
    // holds both, IDCG = 1 + 1/log2(3). The whole chapter cut at 10 words holds Art1 only.
    let chapter = "# Cap\n## Art1\nalfa beta gama delta\n## Meio\num dois tres quatro cinco seis sete oito\n## Art2\nepsilon zeta eta teta\n";
    let f = Fixture::new(
        &[("ch.md", chapter)],
        r#"[{"id": "q1", "question": "alfa beta gama delta epsilon zeta eta teta", "relevant": ["ch#Art1", "ch#Art2"]}]"#,
        "name = \"ideal\"\nunit = \"section\"\nk = [1]\nbudget = [10]\nmetrics = [\"recall\", \"ndcg\"]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
         [cost]\ntokenizer = \"words\"\n\
         [[chunkers]]\nkind = \"none\"\n[[chunkers]]\nkind = \"markdown\"\n\
         [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n",
    );
    let m = matrix(&f.run());
    let idcg = 1.0 + 1.0 / 3f64.log2();
    assert_eq!(value(&m, "none", "recall@10t"), 0.5);
    assert!((value(&m, "none", "ndcg@10t") - 1.0 / idcg).abs() < 1e-9, "{}", value(&m, "none", "ndcg@10t"));
    assert_eq!(value(&m, "markdown", "ndcg@10t"), 1.0, "both articles packed whole");
    // At a budget with the section unit the decision metric is tok_recall (SPEC §3).
    assert_eq!(m["decision_metric"], "tok_recall@10t");
}

#[test]
fn a_late_filter_that_empties_the_context_is_a_short_list_with_undefined_precision() {
    let docs = [
        ("sec.md", "---\nacl: [rh]\n---\n# Sec\n## Regra\nprazo ferias trinta dias\n"),
        ("pub.md", "# Pub\n## Prazo\nprazo ferias\n## Outro\nnada aqui mesmo\n"),
    ];
    let f = Fixture::new(
        &docs,
        r#"[{"id": "q1", "question": "prazo ferias trinta dias", "relevant": ["pub#Prazo"], "groups": ["ti"]}]"#,
        "name = \"late\"\nunit = \"section\"\nk = [1]\nbudget = [5]\nreserved_fraction = 0.0\nlatency_cases = 0\nfilter = [\"post\", \"in_query\"]\n\
         [cost]\ntokenizer = \"words\"\n\
         [[chunkers]]\nkind = \"markdown\"\n\
         [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n",
    );
    let run = f.run();
    let m = matrix(&run);
    // Unfiltered, sec's Regra (5 words) fills the budget; `post` then drops it: nothing is left.
    let post = row_of(&m, "filter", "post");
    assert_eq!(post["ctx_tokens"]["@5t"], 0.0);
    assert_eq!(post["short_lists"]["@5t"], 1, "the user may see more than the empty context: {post}");
    assert_eq!(post["metrics"]["tok_precision@5t"]["value"], Value::Null, "undefined, not 0");
    assert_eq!(post["metrics"]["tok_precision@5t"]["n"], 0);
    assert_eq!(post["metrics"]["tok_recall@5t"]["value"], 0.0);
    let in_query = row_of(&m, "filter", "in_query");
    // In the query, BM25 returns the one visible match (3 words): short too, but not empty.
    assert_eq!((in_query["short_lists"]["@5t"].as_u64(), in_query["ctx_tokens"]["@5t"].as_f64()), (Some(1), Some(3.0)));
    assert_eq!(in_query["metrics"]["tok_recall@5t"]["value"], 1.0);
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(run.join("per_query.jsonl"))
            .unwrap()
            .lines()
            .find(|l| l.contains(&format!("\"cell\":\"{}\"", post["cell"].as_str().unwrap())))
            .unwrap(),
    )
    .unwrap();
    assert!(line.to_string().contains("\"tok_precision@5t\":null"), "{line}");
}
