//! Context budgets through the binary: a whole-document chunker that wins at equal k loses at
//! an equal budget, and the budget metrics of a 3-document corpus equal hand-computed values
//! (tokens counted as words, so they can be counted by eye).

use crate::common;

use crate::common::{matrix, Fixture};
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
    // `misses --budget` compares on hit@Bt: whole documents miss what the Markdown sections find.
    f.cmd()
        .arg("misses")
        .arg(&run)
        .args(["--cell", "c01", "--vs", "c02", "--budget", "15"])
        .assert()
        .success()
        .stdout(predicates::str::contains("c01 missed 1 case that c02 found on hit@15t"));
    // A cell is never compared with itself.
    f.cmd()
        .arg("misses")
        .arg(&run)
        .args(["--cell", "c01", "--vs", "c01", "--budget", "15"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("c01 would be compared with itself"));

    // Selecting at the budget picks the Markdown chunker, at k the whole document.
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(
        f.path().join("exp.toml"),
        exp.replace("latency_cases = 0\n", "latency_cases = 0\nselect = \"recall@15t\"\n"),
    )
    .unwrap();
    f.run_cmd().assert().success();
    // The other run (run ids start with the second a run began: two can share it).
    let runs: Vec<_> = common::runs_in(&f.path().join("out/budgets"));
    let newest = runs.iter().find(|r| **r != run).unwrap();
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
    let run = f.run();
    let m = matrix(&run);
    let idcg = 1.0 + 1.0 / 3f64.log2();
    assert_eq!(value(&m, "none", "recall@10t"), 0.5);
    assert!((value(&m, "none", "ndcg@10t") - 1.0 / idcg).abs() < 1e-9, "{}", value(&m, "none", "ndcg@10t"));
    assert_eq!(value(&m, "markdown", "ndcg@10t"), 1.0, "both articles packed whole");
    // At a budget with the section unit the decision metric is tok_recall (SPEC §3).
    assert_eq!(m["decision_metric"], "tok_recall@10t");

    // `explain --budget` ranks in the packed context the budget metrics judged: the cut chapter
    // holds Art1 only.
    let cell = m["rows"].as_array().unwrap().iter().find(|r| r["label"].as_str().unwrap().starts_with("none")).unwrap()
        ["cell"]
        .as_str()
        .unwrap()
        .to_string();
    let out = f
        .cmd()
        .arg("explain")
        .arg(&run)
        .args(["--cell", &cell, "--case", "q1", "--budget", "10", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((e["budget"].as_u64(), e["depth"].as_u64()), (Some(10), Some(1)), "{e}");
    let per_query = std::fs::read_to_string(run.join("per_query.jsonl")).unwrap();
    let line = per_query.lines().find(|l| l.contains(&format!("\"cell\":\"{cell}\""))).unwrap();
    let line: Value = serde_json::from_str(line).unwrap();
    assert_eq!(e["searched"], line["depth"], "the depth per_query.jsonl reports");
    assert_eq!(line["packed_items"]["@10t"], 1);
    let items = e["items"].as_array().unwrap();
    assert_eq!(items[0]["key"], "ch#Art1");
    assert_eq!(items[0]["rank"], 1);
    let text =
        f.cmd().arg("explain").arg(&run).args(["--cell", &cell, "--case", "q1", "--budget", "10"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("at budget 10 tokens: 1 items packed"), "{text}");
    f.cmd().arg("explain").arg(&run).args(["--cell", &cell, "--case", "q1", "--budget", "11"]).assert().code(2);
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

#[test]
fn a_budget_decision_is_auditable_from_the_exported_lists_and_contexts() {
    // 12 documents of 30 words in 8-word chunks; a 60-word budget packs ~8 chunks from several
    // documents, far deeper than k = 1.
    let docs: Vec<(String, String)> = (0..12)
        .map(|i| {
            let words: Vec<String> = (0..30).map(|w| format!("w{}", (i * 7 + w) % 40)).collect();
            (format!("d{i:02}.md"), format!("{} prazo{}\n", words.join(" "), i % 3))
        })
        .collect();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let cases: Vec<String> = (0..6)
        .map(|i| {
            format!(
                r#"{{"id": "q{i}", "question": "w{} w{} prazo{}", "relevant": ["d{i:02}", "d{:02}"]}}"#,
                i * 7,
                i * 7 + 3,
                i % 3,
                i + 6
            )
        })
        .collect();
    let f = Fixture::new(
        &docs,
        &format!("[{}]", cases.join(",")),
        "name = \"audit\"\nunit = \"doc\"\nk = [1]\nbudget = [60]\nmetrics = [\"hit\", \"recall\", \"mrr\", \"precision\"]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
         [cost]\ntokenizer = \"words\"\n\
         [[chunkers]]\nkind = \"fixed\"\nsize = 40\noverlap = 0\n\
         [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n",
    );
    let run = f.run();
    let golden: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(f.path().join("golden.json")).unwrap()).unwrap();
    let relevant = |case: &str| -> Vec<String> {
        let g = golden.iter().find(|g| g["id"] == case).unwrap();
        g["relevant"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_string()).collect()
    };
    let trec = std::fs::read_to_string(run.join("runs/c01.trec")).unwrap();
    let mut deeper = 0;
    for line in std::fs::read_to_string(run.join("per_query.jsonl")).unwrap().lines() {
        let l: Value = serde_json::from_str(line).unwrap();
        let case = l["case"].as_str().unwrap();
        let top: Vec<String> = l["top"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
        // The TREC file lists the list at the largest k (the first of `top`), not the packed one.
        let ranked: Vec<&str> =
            trec.lines().filter(|t| t.starts_with(&format!("{case} "))).map(|t| t.split(' ').nth(2).unwrap()).collect();
        assert_eq!(ranked, top[..1], "{case}");
        // The packed items, scored by hand (doc unit, linear gain), equal the run's budget metrics.
        let n = l["packed_items"]["@60t"].as_u64().unwrap() as usize;
        deeper += usize::from(n > 1);
        let (items, rel) = (&top[..n], relevant(case));
        let hits: Vec<bool> = items.iter().map(|i| rel.contains(i)).collect();
        let found = hits.iter().filter(|h| **h).count() as f64;
        let metric = |m: &str| l["metrics"][format!("{m}@60t")].as_f64().unwrap();
        assert_eq!(metric("hit"), f64::from(u8::from(found > 0.0)), "{case}");
        assert!((metric("recall") - found / rel.len() as f64).abs() < 1e-9, "{case}");
        assert!((metric("precision") - found / n as f64).abs() < 1e-9, "{case}");
        let mrr = hits.iter().position(|h| *h).map_or(0.0, |p| 1.0 / (p + 1) as f64);
        assert!((metric("mrr") - mrr).abs() < 1e-9, "{case}");
    }
    assert!(deeper >= 3, "the budget packs past k = 1 for most cases");

    // `contexts --budget` writes the packed pieces: their documents in order are the packed
    // items, their words the context tokens the run counted.
    f.cmd().arg("contexts").arg(&run).args(["--cell", "c01", "--budget", "60"]).assert().success();
    let contexts = std::fs::read_to_string(run.join("contexts.jsonl")).unwrap();
    let per_query = std::fs::read_to_string(run.join("per_query.jsonl")).unwrap();
    for line in contexts.lines() {
        let c: Value = serde_json::from_str(line).unwrap();
        assert_eq!(c["budget"], 60);
        let case = c["case"].as_str().unwrap();
        let l: Value =
            serde_json::from_str(per_query.lines().find(|l| l.contains(&format!("\"case\":\"{case}\""))).unwrap())
                .unwrap();
        let mut units: Vec<String> = Vec::new();
        let mut words = 0;
        for item in c["items"].as_array().unwrap() {
            let unit = item["unit"].as_str().unwrap().to_string();
            if !units.contains(&unit) {
                units.push(unit);
            }
            words += item["text"].as_str().unwrap().split_whitespace().count();
        }
        let n = l["packed_items"]["@60t"].as_u64().unwrap() as usize;
        let top: Vec<String> = l["top"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
        assert_eq!(units, top[..n], "{case}");
        assert_eq!(words as f64, l["ctx_tokens"]["@60t"].as_f64().unwrap(), "{case}");
    }
    f.cmd().arg("contexts").arg(&run).args(["--cell", "c01", "--budget", "61"]).assert().code(2);
    f.cmd().arg("contexts").arg(&run).args(["--cell", "c01"]).assert().code(2);
}

/// A section chunk equal to its labelled section recalls all of it: the blank lines before the
/// next heading are not relevant text (with a BPE tokenizer they are tokens of their own).
#[test]
fn a_chunk_equal_to_its_section_recalls_all_of_it() {
    let f = Fixture::new(
        &[("a.md", "# A\n\n## Prazo\n\nO prazo de férias é de trinta dias\n\n\n## Outro\n\nNada a declarar.\n")],
        r#"[{"id": "q1", "question": "prazo de férias", "relevant": ["a#Prazo"]}]"#,
        "name = \"whole\"\nunit = \"section\"\nk = [1]\nbudget = [1024]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
         [cost]\ntokenizer = \"o200k_base\"\n[[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let m = matrix(&f.run());
    assert_eq!(value(&m, "markdown", "tok_recall@1024t"), 1.0, "{}", m["rows"][0]["metrics"]);
}

/// When recall@Bt and tok_recall@Bt put different chunkers first, the warning names them by
/// their labels, as every other line does.
#[test]
fn the_chunker_warning_names_chunkers_by_their_labels() {
    let filler = "palavra comum de enchimento sem relação alguma com a pergunta feita ".repeat(8);
    let f = Fixture::new(
        &[
            ("a.md", &format!("# A\n## Prazo\nprazo ferias trinta dias. {filler}\n")),
            ("b.md", &format!("# B\n## Outro\n{filler}\n")),
        ],
        r#"[{"id": "q1", "question": "prazo ferias trinta dias", "relevant": ["a#Prazo"]}]"#,
        "name = \"labels\"\nunit = \"section\"\nk = [1]\nbudget = [120]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
         [cost]\ntokenizer = \"words\"\n[[chunkers]]\nkind = \"recursive\"\nsize = 200\noverlap = 0\n\
         [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n",
    );
    let run = f.run();
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("put different chunkers first (recursive(200,0) by c01, markdown by c02)"), "{summary}");
}

/// A miss at a budget is diagnosed like a miss at k: a row of misses.csv with its budget, a
/// line of `explain --budget`, and the cause `budget` when the ranking held the answer.
#[test]
fn a_miss_at_a_budget_is_diagnosed_in_misses_csv_and_explain() {
    let f = fixture("section", r#""relevant": ["a#Prazo"]"#);
    let run = f.run();
    let m = matrix(&run);
    let cell = |chunker: &str| {
        m["rows"].as_array().unwrap().iter().find(|r| r["label"].as_str().unwrap().starts_with(chunker)).unwrap()
            ["cell"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (whole, sections) = (cell("none"), cell("markdown"));
    let csv = std::fs::read_to_string(run.join("misses.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.ends_with(",unjudged_above,budget"), "{header}");
    let rows: Vec<&str> = csv.lines().filter(|l| l.starts_with(&format!("{whole},"))).collect();
    // The whole document holds Prazo at rank 1 (no miss at k = 1), but 15 words of it do not.
    assert_eq!(rows.len(), 1, "{csv}");
    assert!(rows[0].starts_with(&format!("{whole},tuning,q1,,budget,1,")), "{csv}");
    assert!(rows[0].contains("cut its chunk before the relevant text") && rows[0].ends_with(",15"), "{csv}");
    // Markdown sections: missed at k = 1 (ranking or cutoff), found at the budget.
    let rows: Vec<&str> = csv.lines().filter(|l| l.starts_with(&format!("{sections},"))).collect();
    assert!(rows.iter().all(|r| r.split(',').nth(3) == Some("1") && r.ends_with(',')), "{csv}");

    let out =
        f.cmd().arg("explain").arg(&run).args(["--cell", &whole, "--case", "q1", "--budget", "15"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("misses:\n  @15t: budget — the ranking holds a relevant unit at rank 1"), "{text}");
    let out = f.cmd().arg("explain").arg(&run).args(["--cell", &whole, "--case", "q1"]).output().unwrap();
    assert!(!String::from_utf8(out.stdout).unwrap().contains("misses:"), "no miss at k = 1");
}
