//! Judging (issue 32, SPEC §9) through the real binary: judged@k, the `unjudged` miss cause,
//! the pool `judge` builds (order, union, nothing judged asked again), a session that saves
//! every answer and resumes, `--export`/`--import`, `rescore` equal to a fresh run with the same
//! judgments, and `check` refusing runs scored with different judgments.

use crate::common;
use predicates::prelude::PredicateBooleanExt;

use crate::common::{matrix, runs_in, without_timing, Fixture};
use serde_json::Value;

/// Three documents; `b#Pagamentos` answers q1 as well as the labelled `a#Cláusula 1` and ranks
/// above it (only it says "corridos"), but nobody labelled it.
fn fixture() -> Fixture {
    let docs = [
        ("a.md", "# Contrato A\n\n## Cláusula 1\n\nO prazo de pagamento é de 30 dias.\n\n## Cláusula 2\n\nA multa por atraso é de 2%.\n"),
        ("b.md", "# Manual B\n\n## Pagamentos\n\nO prazo de pagamento é de 30 dias corridos.\n\n## Outros\n\nNada a declarar sobre o pagamento.\n"),
        ("c.md", "# Guia C\n\n## Multas\n\nA multa por atraso no pagamento é de 2%.\n\n## Juros\n\nJuros de mora de 1% ao mês.\n"),
    ];
    let golden = r#"[
      {"id": "q1", "question": "prazo de pagamento em dias corridos", "relevant": ["a#Cláusula 1"], "split": "tuning"},
      {"id": "q2", "question": "multa por atraso", "relevant": ["a#Cláusula 2"], "split": "tuning"},
      {"id": "q3", "question": "juros de mora ao mês", "relevant": ["c#Juros"], "split": "tuning"}
    ]"#;
    Fixture::new(
        &docs,
        golden,
        "name = \"judging\"\nunit = \"section\"\nk = [1, 3]\nmetrics = [\"hit\", \"recall\"]\nlatency_cases = 2\n\
         [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = [\"pt\", \"simple\"]\n",
    )
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn case_line<'a>(run: &'a [Value], cell: &str, case: &str) -> &'a Value {
    run.iter().find(|l| l["cell"] == cell && l["case"] == case).unwrap()
}

#[test]
fn judging_grows_the_labels_and_rescore_equals_a_fresh_run() {
    let f = fixture();
    let first = f.run();
    let per_query = lines(&first.join("per_query.jsonl"));
    let q1 = case_line(&per_query, "c01", "q1");
    assert!(q1["top"][0].as_str().unwrap().starts_with("b@"), "the unlabelled answer ranks first: {q1}");
    assert_eq!(q1["metrics"]["judged@1"], 0.0);
    assert_eq!(q1["unjudged"][0]["id"], "b#Pagamentos", "{q1}");
    let misses = std::fs::read_to_string(first.join("misses.csv")).unwrap();
    let q1_miss = misses.lines().find(|l| l.starts_with("c01,tuning,q1,1,")).unwrap();
    // The pipeline's cause is the cause; the unjudged item above the cut is a flag beside it.
    assert!(!q1_miss.contains(",unjudged,") && q1_miss.contains("1 of the top 1 unjudged"), "{q1_miss}");
    assert!(q1_miss.ends_with(",1,"), "unjudged_above, then no budget: {q1_miss}");
    let report = std::fs::read_to_string(first.join("report.html")).unwrap();
    assert!(report.contains(r#""unjudged":[{"cells":["c01","c02"],"id":"b#Pagamentos"}"#), "the report's panel data");
    let m = matrix(&first);
    assert!(m["rows"][0]["metrics"]["judged@3"]["value"].as_f64().unwrap() < 1.0, "{}", m["rows"][0]);

    // The pool of both cells at k = 3: each unit once, returned-by-both first.
    let pool_path = f.path().join("pool.jsonl");
    f.cmd()
        .args(["judge", first.to_str().unwrap(), "--cells", "c01,c02", "--k", "3", "--order", "returned", "--export"])
        .arg(&pool_path)
        .assert()
        .success();
    let pool = lines(&pool_path);
    let ids: Vec<(String, String)> =
        pool.iter().map(|p| (p["case"].as_str().unwrap().into(), p["id"].as_str().unwrap().into())).collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "a unit is pooled once per case: {ids:?}");
    let first_q1 = pool.iter().find(|p| p["case"] == "q1").unwrap();
    assert_eq!(first_q1["id"], "b#Pagamentos");
    assert_eq!(first_q1["cells"].as_array().unwrap().len(), 2, "{first_q1}");
    for case in ["q1", "q2", "q3"] {
        let counts: Vec<usize> =
            pool.iter().filter(|p| p["case"] == case).map(|p| p["cells"].as_array().unwrap().len()).collect();
        assert!(counts.windows(2).all(|w| w[0] >= w[1]), "most-returned first: {case} {counts:?}");
    }
    assert!(pool.iter().all(|p| !(p["case"] == "q1" && p["id"] == "a#Cláusula 1")), "labelled units are not pooled");

    // A session: judge the first unit not relevant, quit; the next session starts after it.
    let judgments = f.path().join("judgments.jsonl");
    let shown = f
        .cmd()
        .args(["judge", first.to_str().unwrap(), "--k", "3", "--order", "returned", "--who", "ana"])
        .write_stdin("0 no\nq\n")
        .assert()
        .success();
    let out = String::from_utf8(shown.get_output().stdout.clone()).unwrap();
    let total = pool.len();
    assert!(out.contains(&format!("[1, {} left] case q1", total - 1)) && out.contains("unit: b#Pagamentos"), "{out}");
    let saved = lines(&judgments);
    assert_eq!(saved.len(), 1);
    assert_eq!(
        (saved[0]["case"].as_str(), saved[0]["id"].as_str(), saved[0]["grade"].as_u64()),
        (Some("q1"), Some("b#Pagamentos"), Some(0))
    );
    assert_eq!((saved[0]["who"].as_str(), saved[0]["note"].as_str()), (Some("ana"), Some("no")));
    let again = f
        .cmd()
        .args(["judge", first.to_str().unwrap(), "--k", "3", "--order", "returned"])
        .write_stdin("q\n")
        .assert()
        .success();
    let out = String::from_utf8(again.get_output().stdout.clone()).unwrap();
    assert!(
        out.contains(&format!("[1, {} left]", total - 2)) && !out.contains("unit: b#Pagamentos"),
        "grade 0 is never asked again: {out}"
    );

    // A note longer than a judgments file may carry is refused at import, nothing added.
    let long = f.path().join("long.jsonl");
    let note = "x".repeat(5000);
    std::fs::write(
        &long,
        format!("{{\"case\": \"q1\", \"id\": \"b#Pagamentos\", \"grade\": 1, \"note\": \"{note}\"}}\n"),
    )
    .unwrap();
    let before = std::fs::read_to_string(&judgments).unwrap_or_default();
    f.cmd()
        .args(["judge", first.to_str().unwrap(), "--import"])
        .arg(&long)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("long.jsonl:1: a note or name of 5000 characters: at most 4096"));
    assert_eq!(std::fs::read_to_string(&judgments).unwrap_or_default(), before);

    // Judged relevant after all (the last line wins), through --import.
    let judged = f.path().join("judged.jsonl");
    std::fs::write(&judged, "{\"case\": \"q1\", \"id\": \"b#Pagamentos\", \"grade\": 1}\n{\"case\": \"q2\", \"id\": \"c#Multas\", \"grade\": null}\n").unwrap();
    // An import ends as a session does: what became relevant, and the misses it turns into hits.
    f.cmd()
        .args(["judge", first.to_str().unwrap(), "--import"])
        .arg(&judged)
        .assert()
        .success()
        .stdout(predicates::str::contains("q1: newly relevant b#Pagamentos"))
        .stdout(predicates::str::contains("become hits when it is rescored"));
    assert_eq!(lines(&judgments).len(), 2, "an ungraded line adds nothing");

    // Recorded rankings edited after the run (the relevant chunk moved up) are refused.
    let per_query_path = first.join("per_query.jsonl");
    let recorded = std::fs::read_to_string(&per_query_path).unwrap();
    let runs_before = runs_in(first.parent().unwrap()).len();
    std::fs::write(&per_query_path, recorded.replacen("\"top\":[\"b@", "\"top\":[\"a@", 1)).unwrap();
    f.cmd()
        .args(["rescore", first.to_str().unwrap(), "--cache"])
        .arg(f.path().join("cache"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("per_query.jsonl is not what the run wrote"));
    assert_eq!(runs_in(first.parent().unwrap()).len(), runs_before, "nothing written");
    std::fs::write(&per_query_path, recorded).unwrap();

    f.cmd().args(["rescore", first.to_str().unwrap(), "--cache"]).arg(f.path().join("cache")).assert().success();
    let folder = first.parent().unwrap();
    let rescored = runs_in(folder).into_iter().find(|r| r.to_string_lossy().ends_with("-rescored")).unwrap();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(rescored.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["golden"]["judgments"]["judged"], 1);
    assert_eq!(manifest["golden"]["judgments"]["relevant"], 1);
    let after = lines(&rescored.join("per_query.jsonl"));
    assert_eq!(case_line(&after, "c01", "q1")["metrics"]["hit@1"], 1.0, "the unlabelled answer now counts");

    f.run_cmd().assert().success();
    let fresh = runs_in(folder).into_iter().find(|r| r != &first && r != &rescored).unwrap();
    let read = |r: &std::path::Path| without_timing(&std::fs::read_to_string(r.join("matrix.csv")).unwrap());
    assert_eq!(read(&rescored), read(&fresh), "rescore equals a fresh run with the same judgments");
    // Warnings about how labels were written are about the golden set's own, not judgments.
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(fresh.join("manifest.json")).unwrap()).unwrap();
    let health = manifest["golden"]["health"].to_string();
    assert!(health.contains("a#Cláusula 1") && !health.contains("b#Pagamentos"), "{health}");

    // Scored with other judgments: another golden set for the gate.
    let gate = f
        .cmd()
        .args(["check", fresh.to_str().unwrap(), "--cell", "c01", "--baseline", first.to_str().unwrap()])
        .assert()
        .code(2);
    let output = gate.get_output();
    let out = String::from_utf8(output.stdout.clone()).unwrap() + &String::from_utf8(output.stderr.clone()).unwrap();
    assert!(out.contains("NOT COMPARABLE") && out.contains("judgments"), "{out}");
    assert!(!out.contains("PASS") && !out.contains("FAIL"), "refused first, never compared: {out}");
    let same = f
        .cmd()
        .args(["check", fresh.to_str().unwrap(), "--cell", "c01", "--baseline", rescored.to_str().unwrap()])
        .assert();
    let output = same.get_output();
    let out = String::from_utf8(output.stdout.clone()).unwrap() + &String::from_utf8(output.stderr.clone()).unwrap();
    assert!(!out.contains("NOT COMPARABLE"), "rescored with the same judgments: comparable\n{out}");
}

#[test]
fn a_judgment_that_cannot_stand_stops_the_run_at_its_line() {
    let f = fixture();
    std::fs::write(
        f.path().join("judgments.jsonl"),
        "{\"case\": \"q1\", \"id\": \"b#Pagamentos\", \"grade\": 1}\n{\"case\": \"q9\", \"id\": \"b\", \"grade\": 1}\n{\"case\": \"q2\", \"id\": \"a#Cláusula 2\", \"grade\": 0}\n",
    )
    .unwrap();
    let failed = f.run_cmd().assert().failure();
    let err = String::from_utf8(failed.get_output().stderr.clone()).unwrap();
    assert!(err.contains("judgments.jsonl:2") && err.contains("no case \"q9\""), "{err}");
    assert!(err.contains("judgments.jsonl:3") && err.contains("labels \"a#Cláusula 2\""), "{err}");
    assert!(
        !f.path().join("out").join("judging").exists() || runs_in(&f.path().join("out").join("judging")).is_empty()
    );
}

/// Sparse labels (a benchmark's one label per question): every miss keeps its pipeline cause,
/// the matrix counts causes by the pipeline (no `unjudged` count), and the summary says once
/// what judged@k means there.
#[test]
fn sparse_labels_keep_pipeline_causes_and_say_what_judged_means() {
    let f = fixture();
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(f.path().join("exp.toml"), exp.replace("[golden]\n", "[golden]\nlabels = \"sparse\"\n")).unwrap();
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(f.path().join("exp.toml"), exp.replace("k = [1, 3]\n", "k = [1, 3]\nselect = \"hit@1\"\n")).unwrap();
    let run = f.run();
    let m = matrix(&run);
    for row in m["rows"].as_array().unwrap() {
        let counts = row["misses"].to_string();
        assert!(!counts.contains("unjudged"), "causes by the pipeline: {counts}");
    }
    let misses = std::fs::read_to_string(run.join("misses.csv")).unwrap();
    assert!(misses.lines().skip(1).all(|l| !l.contains(",unjudged,")), "{misses}");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["golden"]["labels"], "sparse");
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert_eq!(summary.matches("labels are sparse").count(), 1, "{summary}");
    assert!(!summary.contains("labels are thin"), "{summary}");
}

/// Experiment `name` over a short contract and `manual.md` holding `manual`, at section level
/// with BM25 at k = 2, asking where the payment term is (labelled on the contract).
fn long_manual(name: &str, manual: &str) -> Fixture {
    Fixture::new(
        &[("a.md", "# Contrato\n\n## Cláusula\n\nA multa é de 2%.\n"), ("manual.md", manual)],
        r#"[{"id": "q1", "question": "prazo de pagamento corridos", "relevant": ["a#Cláusula"]}]"#,
        &format!(
            "name = \"{name}\"\nunit = \"section\"\nk = [2]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
             [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n"
        ),
    )
}

/// An exported unit longer than the export carries is never cut silently: its line holds the
/// passage where the question's words are densest (its rare words, not the first common one:
/// "prazo" is on every line of the filler), marked where it was cut, and how much was left out.
#[test]
fn a_long_unit_is_exported_around_the_question_with_what_was_left_out() {
    let filler = "O prazo do texto de preenchimento sem relação. ".repeat(1500);
    let long = format!("# Manual\n\n## Capítulo\n\n{filler}O prazo de pagamento é de 30 dias corridos.\n{filler}\n");
    let f = long_manual("long", &long);
    let run = f.run();
    // An export or trace over an input of the run (its golden set, its experiment, a file in its
    // corpus) is refused with the path; the input is left as it was.
    let golden = std::fs::read(f.path().join("golden.json")).unwrap();
    for (flag, over) in
        [("--export", "golden.json"), ("--trace", "golden.json"), ("--export", "exp.toml"), ("--export", "docs/new.md")]
    {
        f.cmd().args(["judge", run.to_str().unwrap(), flag, over]).write_stdin("").assert().failure().stderr(
            predicates::str::contains(format!("{over} is the run's"))
                .and(predicates::str::contains("never replaces an input")),
        );
    }
    assert_eq!(std::fs::read(f.path().join("golden.json")).unwrap(), golden);
    assert!(!f.path().join("docs/new.md").exists());
    let pool = f.path().join("pool.jsonl");
    f.cmd().args(["judge", run.to_str().unwrap(), "--export"]).arg(&pool).assert().success();
    let lines = lines(&pool);
    let unit = lines.iter().find(|l| l["id"] == "manual#Capítulo").unwrap_or_else(|| panic!("{lines:?}"));
    let text = unit["text"].as_str().unwrap();
    assert!(text.contains("O prazo de pagamento é de 30 dias corridos."), "the answer is shown");
    assert!(text.starts_with("[… ") && text.contains("characters before]"), "{}", &text[..80]);
    assert!(text.ends_with("characters after]"), "{}", &text[text.len() - 80..]);
    assert!(unit["left_out"].as_u64().unwrap() > 0, "{unit}");
    assert_eq!(unit["scale"], "0 not relevant, 1 relevant, 2 highly relevant");
    // Every place the question's words occur in the whole unit, rarest first.
    let matches: Vec<(String, u64, usize)> = unit["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (m["term"].as_str().unwrap().to_string(), m["count"].as_u64().unwrap(), m["at"].as_array().unwrap().len())
        })
        .collect();
    assert_eq!(
        matches,
        [("corridos".into(), 1, 1), ("pagamento".into(), 1, 1), ("prazo".into(), 3001, 50)],
        "{}",
        unit["matches"]
    );
}

/// A section longer than an export line is exported in parts of its paragraphs, each a line
/// with its place in the unit, that together hold the whole text; the part holding the answer
/// lists the question's rare word. A graded part grades the unit: relevant when one part is,
/// not relevant only when every part is graded 0 (else nothing is written).
#[test]
fn a_long_unit_is_exported_in_parts_and_its_grade_is_its_parts_best() {
    let paragraph =
        |i: usize| format!("Parágrafo {i} do texto de preenchimento sem relação com a pergunta. ").repeat(40);
    let mut body: Vec<String> = (0..60).map(paragraph).collect();
    body[41].push_str("O prazo de pagamento é de 30 dias corridos.");
    let long = format!("# Manual\n\n## Capítulo\n\n{}\n", body.join("\n\n"));
    let f = long_manual("parts", &long);
    let run = f.run();
    let pool = f.path().join("pool.jsonl");
    f.cmd().args(["judge", run.to_str().unwrap(), "--export"]).arg(&pool).assert().success();
    let parts: Vec<Value> = lines(&pool).into_iter().filter(|l| l["id"] == "manual#Capítulo").collect();
    let of = parts.len();
    assert!(of >= 3, "{of} parts");
    let mut end = 0;
    for (i, part) in parts.iter().enumerate() {
        let p = &part["part"];
        assert_eq!((p["index"].as_u64(), p["of"].as_u64()), (Some(i as u64 + 1), Some(of as u64)), "{p}");
        assert_eq!(p["start"].as_u64().unwrap(), end, "the parts follow each other");
        end = p["end"].as_u64().unwrap();
        assert_eq!(part["left_out"], 0, "a part of paragraphs is whole");
        assert!(part["text"].as_str().unwrap().chars().count() <= 20_000);
    }
    let unit_chars = long[long.find("## Capítulo").unwrap()..].trim_end().chars().count() as u64;
    assert!((unit_chars..=unit_chars + 2).contains(&end), "the parts hold the whole unit: {end} of {unit_chars}");
    let answer = parts.iter().position(|p| p["text"].as_str().unwrap().contains("30 dias corridos")).unwrap();
    let rare = |p: &Value| p["matches"].as_array().is_some_and(|m| m.iter().any(|m| m["term"] == "corridos"));
    assert!(rare(&parts[answer]) && parts.iter().filter(|p| rare(p)).count() == 1, "{}", parts[answer]["matches"]);

    // At the terminal the unit is read part by part: the screen names the part that holds the
    // question's rare word, and `n`, `p` and `#N` turn to a part (other units skip the keys).
    let session = |keys: &str| -> String {
        let answers = keys.repeat(8) + "q\n";
        let out = f.cmd().args(["judge", run.to_str().unwrap(), "--order", "returned"]).write_stdin(answers).assert();
        String::from_utf8_lossy(&out.success().get_output().stdout).into_owned()
    };
    let first = session("n\n#3\np\ns\n");
    let said = first.lines().find(|l| l.starts_with("a long unit: ")).unwrap_or_else(|| panic!("{first}"));
    let (_, tail) = said.split_once("corridos ×1 in #").unwrap_or_else(|| panic!("{said}"));
    let holding: usize = tail.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap();
    let screen_parts: usize = said.split(" characters in ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    for shown in [1, 3, 2] {
        assert!(first.contains(&format!("---- part {shown} of {screen_parts}\n")), "{first}");
    }
    let turned = session(&format!("#{holding}\ns\n"));
    let part =
        turned.split(&format!("---- part {holding} of {screen_parts}\n")).nth(1).unwrap_or_else(|| panic!("{turned}"));
    assert!(part.split("\n----").next().unwrap().contains("30 dias «corridos»"), "{part}");

    let graded = |grades: &[(usize, u32)]| -> String {
        let mut out = String::new();
        for (i, part) in parts.iter().enumerate() {
            let mut line = part.clone();
            if let Some((_, g)) = grades.iter().find(|(p, _)| *p == i) {
                line["grade"] = (*g).into();
            }
            out.push_str(&format!("{line}\n"));
        }
        out
    };
    let judged = f.path().join("judged.jsonl");
    let judgments = f.path().join("judgments.jsonl");
    // One part graded 0, the others left: the unit is not judged, and nothing is written.
    std::fs::write(&judged, graded(&[(0, 0)])).unwrap();
    f.cmd().args(["judge", run.to_str().unwrap(), "--import"]).arg(&judged).assert().failure().stderr(
        predicates::str::contains(format!("1 of its {of} parts graded, all 0"))
            .and(predicates::str::contains("judged.jsonl:")),
    );
    assert!(!judgments.exists() || !std::fs::read_to_string(&judgments).unwrap().contains("Capítulo"));
    // The answer's part graded 1, another 0: the unit is relevant, one judgment.
    std::fs::write(&judged, graded(&[(0, 0), (answer, 1)])).unwrap();
    f.cmd().args(["judge", run.to_str().unwrap(), "--import"]).arg(&judged).assert().success();
    let written: Vec<Value> = lines(&judgments).into_iter().filter(|j| j["id"] == "manual#Capítulo").collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0]["grade"], 1);
}

/// `cases` questions, each answered by a short labelled section and drowned by a long
/// unlabelled decoy that repeats the question's word: BM25 without length normalisation (c01)
/// ranks every decoy first, with it (c02) every answer. Only c01's decoys are pooled at k = 1.
/// The first `elsewhere` questions are labelled with another section of their document, and a
/// judgments file says their answer section is not relevant: c02 misses them, judged.
fn decoys(cases: usize, elsewhere: usize) -> Fixture {
    let filler = "texto comum sem relação alguma com nada ".repeat(40);
    let docs: Vec<(String, String)> = (0..cases)
        .map(|i| {
            let word = format!("zeta{i}");
            let text = format!(
                "# Documento {i}\n\n## Resposta\n\nFica em {word}.\n\n## Ruído\n\n{w} {w} {w} {w} {w} {filler}\n\n## Outro\n\nOutro assunto.\n",
                w = word
            );
            (format!("d{i}.md"), text)
        })
        .collect();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let golden: Vec<String> = (0..cases)
        .map(|i| {
            let label = if i < elsewhere { "Outro" } else { "Resposta" };
            format!(
                r#"{{"id": "q{i}", "question": "onde fica zeta{i}", "relevant": ["d{i}#{label}"], "split": "tuning"}}"#
            )
        })
        .collect();
    let f = Fixture::new(
        &docs,
        &format!("[{}]", golden.join(",\n")),
        "name = \"decoys\"\nunit = \"section\"\nk = [1]\nmetrics = [\"hit\"]\nselect = \"hit@1\"\nlatency_cases = 0\n\
         [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\nk1 = 3.0\nb = 0.0\n\
         [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\nk1 = 1.2\nb = 1.0\n",
    );
    let judged: String = (0..elsewhere)
        .map(|i| format!("{{\"case\": \"q{i}\", \"id\": \"d{i}#Resposta\", \"grade\": 0, \"who\": \"ana\"}}\n"))
        .collect();
    std::fs::write(f.path().join("judgments.jsonl"), judged).unwrap();
    f
}

#[test]
fn decision_order_stops_when_the_units_left_cannot_change_the_pick() {
    let f = decoys(10, 0);
    let run = f.run();
    let m = matrix(&run);
    assert_eq!(m["selection"]["cell"], "c02", "{}", m["selection"]);
    let run_arg = run.to_str().unwrap();

    // All ten decoys relevant would tie c01 with c02 (and the tie goes to c01): open. One decoy
    // judged not relevant and no outcome of the nine left picks c01: settled, and it stops.
    let trace = f.path().join("trace.jsonl");
    let session = f
        .cmd()
        .args(["judge", run_arg, "--who", "ana", "--trace"])
        .arg(&trace)
        .write_stdin("0\n0\n0\n0\n")
        .assert()
        .success();
    let out = String::from_utf8(session.get_output().stdout.clone()).unwrap();
    let err = String::from_utf8(session.get_output().stderr.clone()).unwrap();
    assert!(err.contains("decision on tuning (hit@1): c02"), "{err}");
    assert!(out.contains("[1, 9 left] case q"), "{out}");
    assert!(out.contains("settled: the 9 units left cannot change the decision (c02)"), "{out}");
    assert!(out.contains("1 judged, 0 skipped, 9 left in the pool."), "{out}");
    assert_eq!(lines(&f.path().join("judgments.jsonl")).len(), 1, "one answer, then the rule spoke");
    let steps = lines(&trace);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!((steps[0]["verdict"].as_str(), steps[0]["left"].as_u64()), (Some("open"), Some(10)));
    assert_eq!((steps[1]["verdict"].as_str(), steps[1]["pick"].as_str()), (Some("settled"), Some("c02")));
    // Whether c01 is shown worse still depends on the units left (all relevant would tie it):
    // the rule says so, in the message and the trace.
    assert!(out.contains("; the outcomes differ on whether c01 is shown worse: judging on"), "{out}");
    assert_eq!(steps[1]["open"], serde_json::json!(["c01"]), "{out}");

    // A pool of some cells' units says what it is and never that the decision is settled: the
    // units of the other cells were never asked about.
    for restriction in [["--cells", "c02"], ["--cases", "q1"]] {
        let session = f.cmd().args(["judge", run_arg]).args(restriction).write_stdin("q\n").assert().success();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&session.get_output().stdout),
            String::from_utf8_lossy(&session.get_output().stderr)
        );
        assert!(said.contains(&format!("a pool restricted by {}", restriction[0])), "{said}");
        assert!(!said.contains("settled:") && !said.contains("confident:"), "{said}");
    }

    // The most valuable units first: an export limited to three holds three of c01's decoys.
    let pool = f.path().join("pool.jsonl");
    f.cmd().args(["judge", run_arg, "--limit", "3", "--export"]).arg(&pool).assert().success();
    let exported = lines(&pool);
    assert_eq!(exported.len(), 3);
    assert!(exported.iter().all(|p| p["id"].as_str().unwrap().ends_with("#Ruído")), "{exported:?}");

    // The whole pool judged (the pool's own order never stops): the pick is the one the rule
    // settled on.
    f.cmd()
        .args(["judge", run_arg, "--order", "returned"])
        .write_stdin("0\n".repeat(9))
        .assert()
        .success()
        .stdout(predicates::str::contains("9 judged, 0 skipped, 0 left in the pool."));
    f.cmd().args(["rescore", run_arg]).assert().success();
    let rescored = runs_in(run.parent().unwrap()).into_iter().find(|r| r.to_string_lossy().ends_with("-rescored"));
    assert_eq!(matrix(&rescored.unwrap())["selection"]["cell"], "c02");
}

/// A decision-order session of `run` answering `answers`: what it printed, and its trace (one
/// line per answer) written to `trace` in the fixture.
fn traced_session(f: &Fixture, run: &std::path::Path, answers: &str, trace: &str) -> (String, Vec<Value>) {
    let out = f
        .cmd()
        .args(["judge", run.to_str().unwrap(), "--who", "ana", "--trace"])
        .arg(f.path().join(trace))
        .write_stdin(answers)
        .assert()
        .success();
    (String::from_utf8(out.get_output().stdout.clone()).unwrap(), lines(&f.path().join(trace)))
}

/// Twenty decoys, c02 right on 16 questions: only if 16 or more decoys were relevant would c01
/// catch up, so the bound ("all relevant": c01) stays open for four answers, but after a few
/// decoys judged not relevant no completion drawn from those grades comes near: confident,
/// and it stops. A session resumed after quitting knows the grades given before it.
#[test]
fn decision_order_is_confident_before_the_bound_settles_and_remembers_earlier_grades() {
    let f = decoys(20, 4);
    let run = f.run();
    assert_eq!(matrix(&run)["selection"]["cell"], "c02");
    let run_arg = run.to_str().unwrap();
    let (out, steps) = traced_session(&f, &run, &"0\n".repeat(20), "trace.jsonl");
    let last = steps.last().unwrap();
    assert_eq!((last["verdict"].as_str(), last["pick"].as_str()), (Some("confident"), Some("c02")), "{steps:?}");
    let needed = last["judged"].as_u64().unwrap();
    assert!((1..4).contains(&needed), "before the bound settles (4 answers): {needed}");
    assert!(out.contains("confident: the decision (c02) holds in all 32 completions"), "{out}");
    assert!(out.contains("(all relevant: c01)"), "{out}");
    assert!(steps[..steps.len() - 1].iter().all(|s| s["verdict"] == "open"), "{steps:?}");

    // The same grades given in an earlier session (in the pool's own order, which has no stop
    // rule): a session in decision order starts from them and is confident before it asks.
    let judgments = f.path().join("judgments.jsonl");
    let before = std::fs::read_to_string(&judgments).unwrap().lines().take(4).collect::<Vec<_>>().join("\n") + "\n";
    std::fs::write(&judgments, before).unwrap();
    let earlier = format!("{}q\n", "0\n".repeat(needed as usize));
    f.cmd().args(["judge", run_arg, "--order", "returned"]).write_stdin(earlier).assert().success();
    let (_, resumed) = traced_session(&f, &run, &"0\n".repeat(20), "resumed.jsonl");
    assert_eq!(
        (resumed[0]["verdict"].as_str(), resumed[0]["judged"].as_u64()),
        (Some("confident"), Some(0)),
        "{resumed:?}"
    );

    // The whole pool judged not relevant: the pick is the one the rule was confident of.
    f.cmd().args(["judge", run_arg, "--order", "returned"]).write_stdin("0\n".repeat(20)).assert().success();
    f.cmd().args(["rescore", run_arg]).assert().success();
    let rescored = runs_in(run.parent().unwrap()).into_iter().find(|r| r.to_string_lossy().ends_with("-rescored"));
    assert_eq!(matrix(&rescored.unwrap())["selection"]["cell"], "c02");
}

/// A grade taken back and given again counts once in what the stop rule learns: a session that
/// answers 1 and goes back five times, then answers 0, speaks after as many answers as one that
/// answered 0.
#[test]
fn a_grade_given_again_replaces_the_first_in_the_stop_rule() {
    let speaks_after = |answers: &str| {
        let f = decoys(20, 4);
        let (_, steps) = traced_session(&f, &f.run(), answers, "trace.jsonl");
        let last = steps.last().unwrap().clone();
        assert_eq!(last["verdict"], "confident", "{steps:?}");
        last["judged"].as_u64().unwrap()
    };
    let straight = speaks_after(&"0\n".repeat(20));
    let corrected = speaks_after(&format!("{}{}", "1\nb\n".repeat(5), "0\n".repeat(20)));
    assert_eq!(corrected, straight);
}

/// A chapter with subsections is judged as its own text, each subsection as a unit of its own;
/// a chapter judged relevant credits its own text, not its subsections'.
#[test]
fn a_section_with_subsections_is_judged_without_them() {
    let manual = "# Manual\n\n## Capítulo\n\nEste capítulo trata do prazo de pagamento em geral.\n\n\
                  ### Prazo\n\nO prazo de pagamento é de 30 dias corridos.\n\n### Juros\n\nJuros de mora de 1% ao mês.\n";
    let f = Fixture::new(
        &[("a.md", "# Contrato\n\n## Cláusula\n\nA multa é de 2%.\n"), ("manual.md", manual)],
        r#"[{"id": "q1", "question": "prazo de pagamento corridos", "relevant": ["a#Cláusula"], "split": "tuning"}]"#,
        "name = \"nested\"\nunit = \"section\"\nk = [3]\nmetrics = [\"hit\"]\nlatency_cases = 0\n\
         [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let pool = f.path().join("pool.jsonl");
    f.cmd().args(["judge", run.to_str().unwrap(), "--order", "returned", "--export"]).arg(&pool).assert().success();
    let units = lines(&pool);
    let unit = |id: &str| units.iter().find(|u| u["id"] == id).unwrap_or_else(|| panic!("{id} not pooled: {units:?}"));
    let chapter = unit("manual#Capítulo")["text"].as_str().unwrap().to_string();
    assert!(chapter.contains("trata do prazo") && !chapter.contains("30 dias"), "its own text only: {chapter}");
    assert_eq!(unit("manual#Capítulo")["left_out"], 0);
    assert!(unit("manual#Prazo")["text"].as_str().unwrap().contains("30 dias corridos"));
    assert_eq!(unit("manual#Prazo")["heading"], "Manual › Capítulo › Prazo");

    // The chapter judged relevant: the chunk of its subsection `Prazo` stays not relevant.
    let judged = f.path().join("judged.jsonl");
    std::fs::write(&judged, "{\"case\": \"q1\", \"id\": \"manual#Capítulo\", \"grade\": 1}\n").unwrap();
    f.cmd().args(["judge", run.to_str().unwrap(), "--import"]).arg(&judged).assert().success();
    f.run_cmd().assert().success();
    let fresh = runs_in(run.parent().unwrap()).into_iter().find(|r| r != &run).unwrap();
    let line = lines(&fresh.join("per_query.jsonl")).into_iter().find(|l| l["case"] == "q1").unwrap();
    let top: Vec<&str> = line["top"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let prazo_rank = top.iter().position(|t| t.starts_with("manual@") && !t.contains("Capítulo")).map(|r| r + 1);
    assert!(top.contains(&"manual#Capítulo"), "the chapter's own chunk is relevant: {top:?}");
    assert!(prazo_rank.is_some(), "the subsection's chunk is listed as its own chunk, not credited: {top:?}");
}

/// A PDF without headings is judged by its pages, never as one document.
#[test]
fn a_headingless_pdf_is_judged_by_pages() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::new();
    for page in 1..=3 {
        let topic = ["multa por atraso", "prazo de pagamento corridos", "juros de mora"][page - 1];
        body.push_str(&format!(
            "<p>Página {page}: o relatório trata de {topic} em detalhe, com exemplos do setor.</p><div style=\"break-after: page\"></div>"
        ));
    }
    std::fs::write(dir.path().join("r.html"), format!("<html lang=\"pt\"><body>{body}</body></html>")).unwrap();
    let f = Fixture::new(
        &[("a.md", "# Contrato\n\n## Cláusula\n\nA multa é de 2%.\n")],
        r#"[{"id": "q1", "question": "prazo de pagamento corridos", "relevant": ["a#Cláusula"], "split": "tuning"}]"#,
        "name = \"pages\"\nunit = \"section\"\nk = [3]\nmetrics = [\"hit\"]\nlatency_cases = 0\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    common::print_pdf(&dir.path().join("r.html"), &f.path().join("docs/relatorio.pdf"), &dir.path().join("profile"));
    let run = f.run();
    let pool = f.path().join("pool.jsonl");
    f.cmd().args(["judge", run.to_str().unwrap(), "--order", "returned", "--export"]).arg(&pool).assert().success();
    let ids: Vec<String> = lines(&pool).iter().map(|u| u["id"].as_str().unwrap().to_string()).collect();
    assert!(ids.iter().any(|id| id.starts_with("relatorio#p")), "{ids:?}");
    assert!(!ids.contains(&"relatorio".to_string()), "never the whole document: {ids:?}");

    // A 30-page section under one heading is exported by page, the answer's page listing the
    // question's words.
    let mut manual = String::from("<h1>Manual do shell</h1>");
    for page in 1..=30 {
        let answer =
            if page == 23 { " Com set -o pipefail o status de um pipeline é o do último que falhou." } else { "" };
        let filler = "Este texto descreve o que o shell faz com um comando e seus argumentos. ".repeat(25);
        manual.push_str(&format!("<p>Página {page}. {filler}{answer}</p><div style=\"break-after: page\"></div>"));
    }
    std::fs::write(dir.path().join("m.html"), format!("<html lang=\"pt\"><body>{manual}</body></html>")).unwrap();
    common::print_pdf(&dir.path().join("m.html"), &f.path().join("docs/manual.pdf"), &dir.path().join("profile"));
    std::fs::write(
        f.path().join("golden.json"),
        r#"[{"id": "q1", "question": "o que faz pipefail no status", "relevant": ["a#Cláusula"], "split": "tuning"}]"#,
    )
    .unwrap();
    f.run_cmd().assert().success();
    let run = runs_in(run.parent().unwrap()).into_iter().find(|r| r != &run).unwrap();
    f.cmd().args(["judge", run.to_str().unwrap(), "--order", "returned", "--export"]).arg(&pool).assert().success();
    let parts: Vec<Value> = lines(&pool).into_iter().filter(|u| u["id"] == "manual#Manual do shell").collect();
    let pages: Vec<&str> = parts.iter().map(|p| p["part"]["page"].as_str().unwrap()).collect();
    assert_eq!(pages, (1..=30).map(|p| format!("p{p}")).collect::<Vec<_>>(), "by page");
    let answer = parts.iter().find(|p| p["text"].as_str().unwrap().contains("pipefail")).unwrap();
    assert_eq!(answer["part"]["page"], "p23");
    assert!(answer["matches"].as_array().unwrap().iter().any(|m| m["term"] == "pipefail" && m["count"] == 1));
}

/// A rescored run keeps the run's warnings and adds its own: the terminal, summary.md and the
/// report say each once (a document left in an over-32 KB chunk, here).
#[test]
fn a_rescored_run_says_each_warning_once() {
    let words = ["alfa", "beta", "gama", "delta", "épsilon", "zeta", "teta", "capa"];
    let big: String = (0..8000).map(|i| words[(i * 7 + i / 3) % words.len()]).collect::<Vec<_>>().join(" ");
    let f = Fixture::new(
        &[("big.md", &big), ("small.md", "# Pequeno\n\nO documento pequeno sobre capa.\n")],
        r#"[{"id": "q1", "question": "alfa beta gama", "relevant": ["small"]}]"#,
        "name = \"warned\"\nk = [1]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
         [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let warning = "1 document kept in chunks over 32 KB: big";
    let pool = f.path().join("pool.jsonl");
    f.cmd().args(["judge", run.to_str().unwrap(), "--k", "1", "--export"]).arg(&pool).assert().success();
    let graded = std::fs::read_to_string(&pool).unwrap().replace("\"grade\":null", "\"grade\":1");
    assert!(graded.contains("\"id\":\"big\""), "{graded}");
    std::fs::write(&pool, graded).unwrap();
    f.cmd().args(["judge", run.to_str().unwrap(), "--import"]).arg(&pool).assert().success();
    let out = f.cmd().args(["rescore", run.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(said.matches(warning).count(), 1, "{said}");
    let rescored =
        runs_in(run.parent().unwrap()).into_iter().find(|r| r.to_string_lossy().ends_with("-rescored")).unwrap();
    for file in ["summary.md", "report.html"] {
        let text = std::fs::read_to_string(rescored.join(file)).unwrap();
        assert_eq!(text.matches(warning).count(), 1, "{file}: {text}");
    }
}

/// A replay that grades one unit of a large pool, stdin closed: every unit it does not grade is
/// skipped without the decision being scored or traced again, so it ends, with one trace line
/// for the start and one for the grade.
#[test]
fn a_replay_that_skips_most_of_the_pool_ends_and_traces_only_what_changed() {
    let f = decoys(20, 4);
    let run = f.run();
    let run_arg = run.to_str().unwrap();
    let pool = f.path().join("pool.jsonl");
    f.cmd().args(["judge", run_arg, "--order", "returned", "--export"]).arg(&pool).assert().success();
    let mut units = lines(&pool);
    assert!(units.len() > 10, "{}", units.len());
    units[0]["grade"] = serde_json::json!(0);
    let graded: Vec<String> = units.iter().map(Value::to_string).collect();
    std::fs::write(&pool, graded.join("\n") + "\n").unwrap();
    let trace = f.path().join("trace.jsonl");
    let session = f
        .cmd()
        .args(["judge", run_arg, "--replay"])
        .arg(&pool)
        .arg("--trace")
        .arg(&trace)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    let out = String::from_utf8(session.get_output().stdout.clone()).unwrap();
    assert!(out.contains("1 judged"), "{out}");
    let steps = lines(&trace);
    assert!(steps.len() <= 2, "a line at the start and one after the grade, none per skip: {steps:?}");
}
