//! Decisions you can defend (issues 13 and 33), through the real binary: where each cell stands
//! against the best (equivalent, undecided, worse), selection by preference among the
//! equivalent ones, `require` constraints, `plan`, the gate's alpha and several gates at once,
//! and golden-set health.

use crate::common;

use crate::common::{matrix, Fixture};
use predicates::prelude::*;
use serde_json::Value;

/// 40 documents, one per question; BM25 on `pt` finds each, `simple` on a stop-word-heavy
/// variant of the question too, and a bad `b` misses a few.
fn fixture(prefer: &str) -> Fixture {
    let docs: Vec<(String, String)> = (0..40)
        .map(|i| {
            (
                format!("d{i:02}.md"),
                format!("# Documento {i}\nO código NV-{i:03} trata da regra número {i} e do prazo {i}.\n"),
            )
        })
        .collect();
    let cases: Vec<String> = (0..40)
        .map(|i| {
            format!(
                r#"{{"id": "q{i:02}", "question": "regra número {i} código NV-{i:03}", "relevant": ["d{i:02}"], "split": "{}"}}"#,
                if i < 30 { "tuning" } else { "reserved" }
            )
        })
        .collect();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    Fixture::new(
        &docs,
        &format!("[{}]", cases.join(",\n")),
        &format!(
            "name = \"decide\"\nunit = \"doc\"\nk = [1, 5]\nmetrics = [\"hit\", \"ndcg\"]\nselect = \"ndcg@5\"\nprefer = \"{prefer}\"\nlatency_cases = 5\n\
             [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = [\"pt\", \"simple\"]\nb = [0.4, 0.75]\n\
             [[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\n"
        ),
    )
}

#[test]
fn every_row_says_where_it_stands_against_the_best_and_prefer_picks_among_the_equivalent() {
    let f = fixture("latency");
    let run = f.run();
    let m = matrix(&run);
    let rows = m["rows"].as_array().unwrap();
    for r in rows {
        let p = r["p_vs_best"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&p), "{r}");
        let (lo, hi) = (r["diff_vs_best"]["lo"].as_f64().unwrap(), r["diff_vs_best"]["hi"].as_f64().unwrap());
        match r["vs_best"].as_str().unwrap() {
            "best" => assert_eq!((p, lo, hi), (1.0, 0.0, 0.0), "{r}"),
            "equivalent" => assert!(lo > -0.02 && hi < 0.02, "inside the default margin: {r}"),
            "worse" => assert!(p <= 0.05 && !(lo > -0.02 && hi < 0.02), "{r}"),
            "undecided" => assert!(p > 0.05 && !(lo > -0.02 && hi < 0.02), "{r}"),
            other => panic!("{other}"),
        }
    }
    let s = &m["selection"];
    let tied: Vec<&str> = s["equivalent"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert!(tied.len() > 1, "BM25 variants that find every document are equivalent: {s}");
    assert!(tied.contains(&s["best"].as_str().unwrap()));
    assert!(tied.contains(&s["cell"].as_str().unwrap()), "the selected cell is one of the equivalent");
    // Latency preference: the selected cell's tuning p50 is within the timing noise of the
    // fastest equivalent cell (10% or 0.05 ms, whichever is larger).
    let p50 = |cell: &str| -> f64 {
        rows.iter().find(|r| r["cell"] == cell && r["split"] == "tuning").unwrap()["latency"]["p50_ms"]
            .as_f64()
            .unwrap()
    };
    let chosen = p50(s["cell"].as_str().unwrap());
    let fastest = tied.iter().map(|c| p50(c)).fold(f64::INFINITY, f64::min);
    assert!(chosen <= fastest + (0.1 * fastest).max(0.05), "{s}");
    assert_eq!(s["prefer"], "latency");
    let csv = std::fs::read_to_string(run.join("matrix.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains(",p_vs_best,vs_best,diff_vs_best_lo,diff_vs_best_hi,"), "{csv}");
    let md = std::fs::read_to_string(run.join("matrix.md")).unwrap();
    assert!(md.lines().next().unwrap().contains("| vs best | p vs best |"), "{md}");
}

#[test]
fn plan_check_alpha_fail_on_and_health() {
    let f = fixture("quality");
    // Two stubs `init` drafted, their questions still the drafts: left out, and waiting.
    let path = f.path().join("golden.json");
    let mut golden: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for i in 0..2 {
        let draft = format!("O que diz a regra número {i}?");
        golden
            .push(serde_json::json!({"id": format!("draft-{i}"), "question": draft, "relevant": [format!("d{i:02}")],
            "meta": {"draft": true, "drafts": [draft]}}));
    }
    std::fs::write(&path, serde_json::to_string(&golden).unwrap()).unwrap();
    f.cmd()
        .args(["validate", "--models"])
        .arg(common::repo().join("models"))
        .arg("exp.toml")
        .assert()
        .success()
        .stdout(predicate::str::contains("golden set: 40 cases: tuning 30 (30 answerable, 0 unanswerable) · reserved 10 (10 answerable, 0 unanswerable)"))
        .stdout(predicate::str::contains("warning: reserved: 10 answerable cases (fewer than 30): a mean's 95% interval can be ±0.31 wide"))
        .stdout(predicate::str::contains("warning: tuning: 0 unanswerable cases"));
    let run = f.run();
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert!(manifest["golden"]["health"].as_array().unwrap().len() >= 3);
    // Three questions a chat model drafted wait beside the golden set; a kept one does not.
    let drafts: String = ["pending", "pending", "kept", "pending"]
        .iter()
        .enumerate()
        .map(|(i, status)| {
            serde_json::json!({"id": format!("d{i:04}"), "question": format!("Q{i}?"), "quote": "a b c",
                "relevant": "d01", "page": "d01", "heading": "", "by": "model:m", "status": status})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(f.path().join("drafts.jsonl"), drafts).unwrap();

    f.cmd()
        .arg("plan")
        .arg(&run)
        .args(["--metric", "hit@1", "--delta", "0.1", "--split", "all", "--cell", "c01", "--vs", "c05"])
        .assert()
        .success()
        .stdout(predicate::str::contains("hit@1 on all splits, cell c01"))
        .stdout(predicate::str::is_match(r"\| c05 \| [^|]+ \| 40 \| [-+]\d\.\d{4} \| \d\.\d{3} \| \d+ \| ").unwrap())
        .stdout(predicate::str::contains("width of a mean's 95% interval"))
        // The line that closes the loop: what separating the closest rival takes, and what there is.
        .stdout(
            predicate::str::is_match(r"to separate c01 and c05 \(observed difference [-+]\d\.\d{4}\): (about \d+ questions|not reachable \(> \d+ cases\)); you have 40; 2 drafts wait for review in the golden set; 3 questions drafted by a chat model wait in drafts.jsonl \(ragsweep review\)")
                .unwrap(),
        );
    // By default plan counts on tuning, where selection decides; it takes the run commands' dirs.
    f.cmd()
        .arg("plan")
        .arg(&run)
        .args(["--cache", "cache", "--models"])
        .arg(common::repo().join("models"))
        .assert()
        .success()
        .stdout(predicate::str::contains("on the tuning split"));

    let check = |extra: &[&str]| {
        let mut cmd = f.cmd();
        cmd.arg("check").arg(&run).arg("--baseline").arg(&run).args(extra);
        cmd.assert()
    };
    check(&["--fail-on", "ndcg@5:0.01,hit@1:0.02"])
        .code(0)
        .stdout(predicate::str::contains("PASS: ndcg@5"))
        .stdout(predicate::str::contains("PASS: hit@1"));
    let summary = run.join("summary.md");
    check(&["--metric", "ndcg@5", "--summary", summary.to_str().unwrap()]).code(0);
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.starts_with("### decide:"), "the run's summary stays first: {text}");
    assert!(text.contains("### ragsweep check: PASS") && text.contains("PASS: ndcg@5"), "{text}");
    check(&["--fail-on", "ndcg@5"]).code(2).stderr(predicate::str::contains("expected METRIC@K:MARGIN"));
    check(&["--alpha", "0"]).code(2);
}

#[test]
fn unknown_prefer_and_missing_acl_values_are_located_errors() {
    for (key, line) in [("prefer = \"speed\"\n", 7), ("[permissions]\nmissing_acl = \"maybe\"\n", 8)] {
        let f = fixture("quality");
        let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
        let exp = exp.replace("prefer = \"quality\"\n", "").replacen("[corpus]", &format!("{key}[corpus]"), 1);
        std::fs::write(f.path().join("exp.toml"), exp).unwrap();
        f.cmd()
            .args(["validate", "--models"])
            .arg(common::repo().join("models"))
            .arg("exp.toml")
            .assert()
            .code(2)
            .stderr(predicate::str::is_match(format!(r"exp\.toml:{line}:\d+: unknown variant")).unwrap());
    }
}

/// `require` constrains a selection: without `select` it is a located error naming `select`,
/// and the run writes nothing (it was silently ignored).
#[test]
fn require_without_select_is_a_located_error_naming_select() {
    let f = fixture("quality");
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    let exp = exp.replace("select = \"ndcg@5\"\n", "require = [\"hit@1 >= 0.5\"]\n");
    std::fs::write(f.path().join("exp.toml"), exp).unwrap();
    f.run_cmd().assert().code(2).stderr(
        predicate::str::is_match(r#"exp\.toml:5:\d+: `require` constrains the selection.*add `select = "hit@5"`"#)
            .unwrap(),
    );
    assert!(!f.path().join("out").exists(), "nothing written");
}

/// 40 documents and questions with a BM25-only grid given by `grid` (its `[[retrievers]]`).
fn bm25_fixture(grid: &str) -> Fixture {
    let f = fixture("quality");
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    let (top, _) = exp.split_once("[[retrievers]]").unwrap();
    std::fs::write(f.path().join("exp.toml"), format!("{top}{grid}")).unwrap();
    f
}

/// Runs the fixture `n` times into one output folder; the run directories, oldest first.
fn runs(f: &Fixture, n: usize) -> Vec<std::path::PathBuf> {
    for _ in 0..n {
        f.run_cmd().assert().success();
    }
    let mut dirs: Vec<_> = common::runs_in(&f.path().join("out/decide"));
    dirs.sort();
    dirs
}

#[test]
fn identical_reruns_preferring_latency_select_the_same_cell_and_say_why() {
    let f = bm25_fixture("[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\nk1 = [0.9, 1.2, 1.5]\nb = [0.4, 0.75]\n");
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(f.path().join("exp.toml"), exp.replace("prefer = \"quality\"", "prefer = \"latency\"")).unwrap();
    let dirs = runs(&f, 3);
    let selections: Vec<Value> = dirs.iter().map(|d| matrix(d)["selection"].clone()).collect();
    assert_eq!(selections[0]["cells"], 6);
    for s in &selections {
        assert_eq!(s["cell"], selections[0]["cell"], "identical reruns select the same cell: {selections:#?}");
        let rule = s["rule"].as_str().unwrap();
        assert!(rule.contains("within the timing noise of the fastest"), "{rule}");
    }
    let summary = std::fs::read_to_string(dirs[0].join("summary.md")).unwrap();
    assert!(summary.contains("prefer = latency:"), "the summary says which rule chose: {summary}");
}

#[test]
fn check_matches_cells_by_configuration_not_by_id() {
    let f = bm25_fixture("[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\nb = [0.4, 0.75]\n");
    let both = runs(&f, 1).remove(0);
    // The grid loses b = 0.4: b = 0.75 moves from c02 to c01.
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(f.path().join("exp.toml"), exp.replace("b = [0.4, 0.75]", "b = [0.75]")).unwrap();
    let dirs = runs(&f, 1);
    let one = dirs.iter().find(|d| **d != both).unwrap();
    let check = |run: &std::path::Path, baseline: &std::path::Path| {
        let mut cmd = f.cmd();
        cmd.arg("check").arg(run).arg("--baseline").arg(baseline).args(["--cell", "c01", "--metric", "ndcg@5"]);
        cmd.assert()
    };
    check(one, &both)
        .code(0)
        .stdout(predicate::str::is_match(r"A  c02 b=0\.75 .*\n +none bm25\(pt,k1=0\.9,b=0\.75\)\n").unwrap())
        .stdout(predicate::str::is_match(r"B  c01 none bm25\(pt,k1=0\.9,b=0\.75\) ").unwrap());
    check(&both, one)
        .code(2)
        .stderr(predicate::str::contains("no cell has the configuration of c01 (none bm25(pt,k1=0.9,b=0.4))"))
        .stderr(predicate::str::contains("among: c01 (none bm25(pt,k1=0.9,b=0.75))"));
}

/// `n` one-code documents and questions, plus two traps that BM25's length normalisation
/// decides: with b = 0 the tie goes to the smaller id, with b = 0.75 to the shorter document.
/// Cell c01 (b = 0) misses trap B, c02 (b = 0.75) misses trap A, so their means are equal;
/// c02 always answers with the short document, so it sends fewer context tokens (cheaper).
fn equivalence_fixture(n: usize, extra: &str) -> Fixture {
    let filler = "palavra ".repeat(100);
    let mut docs: Vec<(String, String)> = (0..n)
        .map(|i| (format!("d{i:04}.md"), format!("# Documento {i}\nO código NV{i:04} trata da regra número {i}.\n")))
        .collect();
    docs.push(("a-rel.md".into(), format!("zeta omega {filler}\n")));
    docs.push(("z-dis.md".into(), "zeta omega\n".into()));
    docs.push(("a-dis2.md".into(), format!("psi chi {filler}\n")));
    docs.push(("z-rel2.md".into(), "psi chi\n".into()));
    let mut cases: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"id": "q{i:04}", "question": "código NV{i:04}", "relevant": ["d{i:04}"]}}"#))
        .collect();
    cases.push(r#"{"id": "trap-a", "question": "zeta omega", "relevant": ["a-rel"]}"#.into());
    cases.push(r#"{"id": "trap-b", "question": "psi chi", "relevant": ["z-rel2"], "tags": ["exact"]}"#.into());
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    Fixture::new(
        &docs,
        &format!("[{}]", cases.join(",\n")),
        &format!(
            "name = \"equiv\"\nunit = \"doc\"\nk = [1]\nmetrics = [\"hit\"]\nselect = \"hit@1\"\nreserved_fraction = 0.0\nlatency_cases = 0\n{extra}\
             [cost]\nllm_usd_per_1m_input_tokens = 1.0\ntokenizer = \"words\"\n\
             [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\nb = [0.0, 0.75]\n"
        ),
    )
}

fn tuning_row<'m>(m: &'m Value, cell: &str) -> &'m Value {
    m["rows"].as_array().unwrap().iter().find(|r| r["cell"] == cell && r["split"] == "tuning").unwrap()
}

#[test]
fn a_cheaper_cell_shown_equivalent_on_many_cases_is_preferred_and_on_few_it_is_not() {
    // 400 cases: the paired difference is 0 ± a few thousandths, inside ±0.02.
    let f = equivalence_fixture(400, "prefer = \"cost\"\n");
    let run = f.run();
    let m = matrix(&run);
    let (c01, c02) = (tuning_row(&m, "c01"), tuning_row(&m, "c02"));
    assert_eq!(c01["metrics"]["hit@1"]["value"], c02["metrics"]["hit@1"]["value"]);
    assert!(c02["usd_per_1k_queries"]["@1"].as_f64().unwrap() < c01["usd_per_1k_queries"]["@1"].as_f64().unwrap());
    assert_eq!(c01["vs_best"], "best");
    assert_eq!(c02["vs_best"], "equivalent", "{c02}");
    let s = &m["selection"];
    assert_eq!((s["best"].as_str(), s["cell"].as_str()), (Some("c01"), Some("c02")), "{s}");
    assert!(s["rule"].as_str().unwrap().contains("1 of 2 equivalent cells cost the least"), "{s}");
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("1 equivalent (95% interval of the paired difference within ±0.02)"), "{summary}");

    // 20 cases: the same two misses leave an interval far wider than ±0.02: undecided, and
    // the preference cannot apply; the best is chosen and the summary says how many would.
    let f = equivalence_fixture(20, "prefer = \"cost\"\n");
    let run = f.run();
    let m = matrix(&run);
    assert_eq!(tuning_row(&m, "c02")["vs_best"], "undecided");
    let s = &m["selection"];
    assert_eq!(s["cell"], "c01", "{s}");
    assert_eq!(s["undecided"], serde_json::json!(["c02"]));
    let rule = s["rule"].as_str().unwrap();
    assert!(rule.contains("prefer = cost could not apply: no other eligible cell is shown equivalent"), "{rule}");
    assert!(regex_lite_match(rule, "would need about ", " tuning cases to be shown equivalent (it has 22)"), "{rule}");
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("could not apply"), "{summary}");

    // A wider margin is the user's to set: with ±0.2 the 22 cases show c02 equivalent.
    let f = equivalence_fixture(20, "prefer = \"cost\"\nmargin = 0.2\n");
    let m = matrix(&f.run());
    assert_eq!(tuning_row(&m, "c02")["vs_best"], "equivalent");
    assert_eq!(m["selection"]["cell"], "c02");
}

/// Whether `text` holds `before`, a number, then `after`.
fn regex_lite_match(text: &str, before: &str, after: &str) -> bool {
    text.split(before).skip(1).any(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        !digits.is_empty() && rest[digits.len()..].starts_with(after)
    })
}

#[test]
fn a_require_constraint_excludes_the_best_cell_and_says_why() {
    let f = equivalence_fixture(20, "require = [\"tag:exact:hit@1 >= 1\", \"leaks == 0\"]\n");
    let run = f.run();
    let m = matrix(&run);
    let s = &m["selection"];
    assert_eq!(s["cell"], "c02", "c01 misses the exact-term question: {s}");
    assert_eq!(s["excluded"], serde_json::json!([["c01", "tag:exact:hit@1 >= 1 (is 0)"]]));
    assert_eq!(tuning_row(&m, "c01")["vs_best"], Value::Null);
    assert_eq!(tuning_row(&m, "c02")["vs_best"], "best");
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("c01 (tag:exact:hit@1 >= 1 (is 0))"), "{summary}");
    assert!(summary.contains("| ineligible |"), "the table marks it: {summary}");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["experiment"]["require"][0]["text"], "tag:exact:hit@1 >= 1");

    // A constraint on a column no row has is a located error, before any work.
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(f.path().join("exp.toml"), exp.replace("\"leaks == 0\"", "\"p95 <= 50\"")).unwrap();
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::is_match(r"exp\.toml:\d+:\d+: .*`p95 <= 50`: no such column").unwrap());
}

/// A `post` cell is cheaper than its `in_query` twin only because the late filter drops context
/// after retrieving it: even when equivalent, a preference never picks it over the twin.
#[test]
fn a_preference_never_picks_a_late_filter_over_its_in_query_twin() {
    let mut docs: Vec<(String, String)> = (0..40)
        .map(|i| (format!("d{i:02}.md"), format!("# Documento {i}\nO código NV{i:04} e a regra {i}.\n")))
        .collect();
    let codes: Vec<String> = (0..40).map(|i| format!("NV{i:04}")).collect();
    docs.push(("rh.md".into(), format!("---\nacl: [rh]\n---\n# RH\nTabela interna: {}\n", codes.join(" "))));
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let cases: Vec<String> = (0..40)
        .map(|i| {
            format!(r#"{{"id": "q{i:02}", "question": "código NV{i:04}", "relevant": ["d{i:02}"], "groups": ["ti"]}}"#)
        })
        .collect();
    let f = Fixture::new(
        &docs,
        &format!("[{}]", cases.join(",")),
        "name = \"twins\"\nunit = \"doc\"\nk = [2]\nmetrics = [\"hit\"]\nselect = \"hit@2\"\nprefer = \"cost\"\nreserved_fraction = 0.0\nlatency_cases = 0\nfilter = [\"in_query\", \"post\"]\n\
         [cost]\nllm_usd_per_1m_input_tokens = 1.0\ntokenizer = \"words\"\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n",
    );
    let m = matrix(&f.run());
    let (in_query, post) = (tuning_row(&m, "c01"), tuning_row(&m, "c02"));
    assert_eq!(post["config"]["filter"], "post");
    assert_eq!(post["vs_best"], "equivalent", "{post}");
    assert!(
        post["usd_per_1k_queries"]["@2"].as_f64().unwrap() < in_query["usd_per_1k_queries"]["@2"].as_f64().unwrap()
    );
    let s = &m["selection"];
    assert_eq!(s["cell"], "c01", "{s}");
    assert!(s["rule"].as_str().unwrap().contains("`post` twins of `in_query` cells"), "{s}");
}

/// A `require` no cell meets: the run still writes everything, says in matrix.json, the
/// summary and the report that nothing is eligible and why (each rule with the best any cell
/// reached), exits 4, and `check` fails on it.
#[test]
fn a_selection_with_no_eligible_cell_says_why_and_fails_the_gate() {
    let f = equivalence_fixture(20, "require = [\"hit@1 >= 2\", \"leaks == 0\"]\n");
    let out = f.run_cmd().output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("no selection: no cell is eligible on"), "{stderr}");
    let run = common::runs_in(&f.path().join("out").read_dir().unwrap().next().unwrap().unwrap().path())[0].clone();
    let m = matrix(&run);
    assert_eq!(m["selection"], Value::Null);
    let none = &m["no_selection"];
    assert_eq!(none["rules"][0][0], "require hit@1 >= 2", "{none}");
    assert!(none["rules"][0][1].as_str().unwrap().starts_with("best: c0"), "{none}");
    assert_eq!(none["excluded"].as_array().unwrap().len(), 2, "{none}");
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("no selection: no cell is eligible"), "{summary}");
    assert_eq!(summary.matches("| ineligible |").count(), 2, "the table marks every cell: {summary}");
    let report = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(report.contains("\"no_selection\":{"), "the report's data carries it");
    f.cmd()
        .args(["check"])
        .arg(&run)
        .args(["--baseline"])
        .arg(&run)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL: no selection"));
}

/// The terminal table keeps `vs best` whatever else it must drop to fit 100 columns: long
/// configurations lose their intervals and p50 first, then go on lines of their own.
#[test]
fn the_terminal_table_always_says_where_each_cell_stands() {
    let f = fixture("quality");
    let exp = f.path().join("exp.toml");
    let text = std::fs::read_to_string(&exp)
        .unwrap()
        .replace("b = [0.4, 0.75]\n", "b = [0.4, 0.75]\nk1 = [0.9, 1.2]\n")
        .replace("kind = \"none\"\n", "kind = \"none\"\ntitle = true\n[[chunkers]]\nkind = \"recursive\"\nsize = 300\noverlap = 60\ntitle = true\n");
    std::fs::write(&exp, text).unwrap();
    let out = f
        .cmd()
        .args(["run", "exp.toml", "--models"])
        .arg(common::repo().join("models"))
        .arg("--cache")
        .arg(f.path().join("cache"))
        .arg("--out")
        .arg(f.path().join("out"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let header = stdout.lines().find(|l| l.contains("configuration")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(header.contains("vs best"), "{header}\n{stdout}");
    assert!(stdout.lines().all(|l| l.chars().count() <= 100), "{stdout}");
    assert!(stdout.lines().any(|l| l.contains(" best")), "{stdout}");
}
