//! Fail closed (issue 11), through the real binary: permissions that cannot silently open,
//! inputs that cannot silently mean something else. A refused run names the file and line
//! and writes nothing.

use crate::common;

use crate::common::{matrix, row, Fixture};
use predicates::prelude::*;
use serde_json::Value;

const OPEN_AND_FILTERED: &str = "name = \"acl\"\nunit = \"doc\"\nk = [1, 2]\nmetrics = [\"hit\"]\nreserved_fraction = 0.0\n\
    latency_cases = 0\nfilter = [\"none\", \"in_query\"]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n";

const GOLDEN: &str = r#"[{"id": "q1", "question": "tabela de salários da diretoria", "relevant": ["beneficios"], "groups": ["vendas"]}]"#;

const BENEFITS: (&str, &str) = ("beneficios.md", "# Benefícios\nVale refeição e a tabela de benefícios.\n");

/// The experiment with `[permissions]` holding `lines`.
fn with_permissions(lines: &str) -> String {
    let (top, grids) = OPEN_AND_FILTERED.split_once("[[").unwrap();
    format!("{top}[permissions]\n{lines}[[{grids}")
}

fn manifest(run: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap()
}

/// The run fails, its message contains each of `needles`, and `out/` holds nothing.
fn refused(f: &Fixture, needles: &[&str]) {
    let mut assert = f.run_cmd().assert().failure().code(2);
    for needle in needles {
        assert = assert.stderr(predicate::str::contains(*needle));
    }
    let out = f.path().join("out");
    assert!(!out.exists() || common::walk(&out).is_empty(), "{:?}", common::walk(&out));
}

#[test]
fn a_misspelt_acl_key_is_a_located_error_and_writes_nothing() {
    for (key, line) in [("ACL", 2), ("acls", 3)] {
        let doc = format!(
            "---\n{}{key}: [rh]\n---\n# Salários\nTabela de salários da diretoria.\n",
            if line == 3 { "title: Salários\n" } else { "" }
        );
        let f = Fixture::new(&[("salarios.md", &doc), BENEFITS], GOLDEN, OPEN_AND_FILTERED);
        refused(&f, &[&format!("salarios.md:{line}: front matter key `{key}` could be an access list"), "acl_key"]);
    }
}

#[test]
fn front_matter_after_blank_lines_with_fence_spaces_and_comments_stays_restricted() {
    let doc = "\n\n---  \nacl: [rh] # só RH\n---\t\n# Salários\nTabela de salários da diretoria.\n";
    let f = Fixture::new(&[("salarios.md", doc), BENEFITS], GOLDEN, OPEN_AND_FILTERED);
    let run = f.run();
    let m = matrix(&run);
    assert!(row(&m, "filter", "none")["leaks"].as_u64().unwrap() > 0, "the restricted document is ranked first");
    assert_eq!(row(&m, "filter", "none")["vs_best"], Value::Null, "a leaking cell is never compared with the best");
    assert_eq!(row(&m, "filter", "in_query")["leaks"], 0);
    assert_eq!(manifest(&run)["corpus"]["public_documents"], 1);
    let per_query = std::fs::read_to_string(run.join("per_query.jsonl")).unwrap();
    assert!(!per_query.contains("acl"), "front matter is never indexed as text: {per_query}");
}

#[test]
fn missing_acl_deny_makes_documents_without_an_acl_visible_to_no_one() {
    let golden = r#"[{"id": "q1", "question": "tabela de benefícios vale refeição", "relevant": ["beneficios"], "groups": ["vendas"]}]"#;
    let docs = [("salarios.md", "---\nacl: [vendas]\n---\n# Salários\nTabela de salários.\n"), BENEFITS];
    let public = Fixture::new(&docs, golden, OPEN_AND_FILTERED);
    let m = matrix(&public.run());
    assert_eq!(row(&m, "filter", "in_query")["metrics"]["hit@1"]["value"], 1.0);

    let deny = Fixture::new(&docs, golden, &with_permissions("missing_acl = \"deny\"\n"));
    let output = deny.run_cmd().assert().success();
    output.stderr(predicate::str::contains(
        "access: 0 of 2 documents public (documents without `acl` are visible to no one)",
    ));
    let run = common::run_dir(&deny.path().join("out"), "acl");
    let m = matrix(&run);
    let filtered = row(&m, "filter", "in_query");
    assert_eq!(filtered["metrics"]["hit@1"]["value"], 0.0, "the answer has no ACL: denied");
    assert_eq!(filtered["leaks"], 0);
    assert!(row(&m, "filter", "none")["leaks"].as_u64().unwrap() > 0);
    let manifest = manifest(&run);
    assert_eq!(manifest["corpus"]["public_documents"], 0);
    assert_eq!(manifest["golden"]["missing_acl"], "deny");
}

#[test]
fn synthetic_groups_on_a_corpus_with_acls_is_refused() {
    let docs = [("salarios.md", "---\nacl: [rh]\n---\n# Salários\nTabela de salários.\n"), BENEFITS];
    let f = Fixture::new(&docs, GOLDEN, &with_permissions("synthetic_groups = 4\n"));
    refused(&f, &["exp.toml:9:20", "`synthetic_groups` is for corpora without ACLs", "\"salarios\""]);
}

#[test]
fn an_explicit_empty_group_list_is_a_user_in_no_group_not_the_default_user() {
    let golden = r#"[{"id": "nobody", "question": "tabela de salários", "relevant": ["salarios"], "groups": [], "answerable": false},
                     {"id": "default", "question": "tabela de salários", "relevant": ["salarios"]}]"#;
    let docs = [("salarios.md", "---\nacl: [rh]\n---\n# Salários\nTabela de salários.\n"), BENEFITS];
    let experiment = with_permissions("default_groups = [\"rh\"]\n")
        .replace("filter = [\"none\", \"in_query\"]", "filter = \"in_query\"");
    let f = Fixture::new(&docs, golden, &experiment);
    let run = f.run();
    let lines = crate::common::jsonl(&run.join("per_query.jsonl"));
    let top = |case: &str| lines.iter().find(|l| l["case"] == case).unwrap()["top"].clone();
    assert_eq!(top("default")[0], "salarios");
    assert!(!top("nobody").to_string().contains("salarios"), "{}", top("nobody"));
    let m = matrix(&run);
    assert_eq!(m["rows"][0]["unanswerable"], 1);
    assert_eq!(m["rows"][0]["restricted_hits"], 0);

    // `groups: null` is refused, as `acl: null` is on a document: not silently the default user.
    let golden = r#"[{"id": "nulo", "question": "tabela de salários", "relevant": ["salarios"], "groups": null}]"#;
    let f = Fixture::new(&docs, golden, &experiment);
    refused(&f, &["case \"nulo\": `groups` is null"]);
}

/// Every file under `dir` whose name ends with `suffix`.
fn files_ending(dir: &std::path::Path, suffix: &str) -> Vec<std::path::PathBuf> {
    common::walk(dir).into_iter().filter(|p| p.to_string_lossy().ends_with(suffix)).collect()
}

#[test]
fn a_corrupted_cache_is_reported_and_rebuilt_never_read() {
    let golden = r#"[{"id": "q1", "question": "vale refeição", "relevant": ["beneficios#Vale"]},
                     {"id": "q2", "question": "tabela de salários", "relevant": ["salarios#Tabela"]}]"#;
    let docs = [
        ("salarios.md", "# Tabela\nTabela de salários da diretoria e reajuste anual.\n"),
        ("beneficios.md", "# Vale\nVale refeição e vale transporte para todos.\n\n# Plano\nPlano de saúde.\n"),
    ];
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"cache\"\nunit = \"section\"\nk = [1, 3]\nlatency_cases = 0\n[[chunkers]]\nkind = \"recursive\"\nsize = 40\noverlap = 0\n\
         [[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let cache = f.path().join("cache");
    let first = common::stable_rows(&matrix(&f.run()));
    let rerun = || {
        std::fs::remove_dir_all(f.path().join("out")).unwrap();
        let assert = f.run_cmd().assert().success();
        let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
        let run = common::run_dir(&f.path().join("out"), "cache");
        (stderr, run)
    };

    // Flipped bytes in a vector segment, same size.
    let segments = files_ending(&cache.join("embeddings"), ".seg");
    assert!(!segments.is_empty());
    for seg in &segments {
        let mut bytes = std::fs::read(seg).unwrap();
        let n = bytes.len();
        bytes[n - 3] ^= 0x7f;
        std::fs::write(seg, bytes).unwrap();
    }
    let (stderr, run) = rerun();
    assert!(stderr.contains("warning: broken cache entry") && stderr.contains("do not match the checksum"), "{stderr}");
    assert_eq!(common::stable_rows(&matrix(&run)), first);
    let manifest = manifest(&run);
    let repairs = manifest["stages"].as_array().unwrap().iter().filter(|s| s["stage"] == "repair").count();
    assert_eq!(repairs, segments.len());
    let trec = std::fs::read_to_string(run.join("runs/c01.trec")).unwrap();
    assert!(!trec.contains("NaN") && !trec.contains("e+"), "{trec}");

    // An edited but valid chunk set, and a token count entry without its build.json.
    let chunks = files_ending(&cache.join("stages/chunks"), "chunks.json");
    let text = std::fs::read_to_string(&chunks[0]).unwrap();
    std::fs::write(&chunks[0], text.replacen(",0,", ",1,", 1)).unwrap();
    let tokens = files_ending(&cache.join("stages/tokens"), "build.json");
    std::fs::remove_file(&tokens[0]).unwrap();
    let (stderr, run) = rerun();
    assert!(stderr.contains("chunks.json does not match its checksum"), "{stderr}");
    assert!(stderr.contains("no readable build.json"), "{stderr}");
    assert_eq!(common::stable_rows(&matrix(&run)), first);

    // Nothing broken: nothing reported.
    let (stderr, _) = rerun();
    assert!(!stderr.contains("broken cache entry"), "{stderr}");
}

const ONE_DOC: [(&str, &str); 1] = [BENEFITS];
const ONE_CASE: &str = r#"[{"id": "q1", "question": "vale refeição", "relevant": ["beneficios"]}]"#;
const BM25: &str =
    "name = \"inputs\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n";

/// The run is refused, stderr matching `pattern` (a regex), and nothing is written.
fn refused_matching(f: &Fixture, pattern: &str) {
    f.run_cmd().assert().failure().code(2).stderr(predicate::str::is_match(pattern).unwrap());
    let out = f.path().join("out");
    assert!(!out.exists() || common::walk(&out).is_empty());
}

#[test]
fn numbers_that_mean_nothing_are_located_errors() {
    for (change, pattern) in [
        ("kind = \"bm25\"\nk1 = nan\n", r"exp\.toml:\d+:6: `k1` must be a finite number, found NaN"),
        ("kind = \"bm25\"\nb = inf\n", r"exp\.toml:\d+:5: `b` must be a finite number, found inf"),
        ("kind = \"bm25\"\nk1 = -1.0\n", r"exp\.toml:\d+:6: `k1` must be non-negative"),
        ("kind = \"bm25\"\nabstain_below = nan\n", r"exp\.toml:\d+:\d+: `abstain_below` must be a finite score"),
        (
            "kind = \"hybrid\"\nmodel = \"minilm-l6\"\nfusion = \"convex\"\nalpha = nan\n",
            r"exp\.toml:\d+:9: `alpha` must be a finite number",
        ),
        ("kind = \"hybrid\"\nmodel = \"minilm-l6\"\nfusion = \"rrf\"\nk = nan\n", r"`k` must be a finite number"),
    ] {
        let f = Fixture::new(&ONE_DOC, ONE_CASE, &BM25.replace("kind = \"bm25\"\n", change));
        refused_matching(&f, pattern);
    }
    let price = BM25.replace("latency_cases = 0\n", "latency_cases = 0\n[cost]\nllm_usd_per_1m_input_tokens = -0.5\n");
    refused_matching(
        &Fixture::new(&ONE_DOC, ONE_CASE, &price),
        r"exp\.toml:5:31: `cost.llm_usd_per_1m_input_tokens` must be a finite number ≥ 0, found -0.5",
    );
    let markdown = BM25.replace("kind = \"none\"", "kind = \"markdown\"\nmax_chars = 0");
    refused_matching(&Fixture::new(&ONE_DOC, ONE_CASE, &markdown), r"exp\.toml:\d+:13: `max_chars` must be at least 1");
    let no_filter = BM25.replace("latency_cases = 0\n", "latency_cases = 0\nfilter = []\n");
    refused_matching(&Fixture::new(&ONE_DOC, ONE_CASE, &no_filter), r"exp\.toml:4:10: `filter` is an empty list");
}

#[test]
fn empty_or_ambiguous_golden_sets_and_corpora_are_located_errors() {
    for (golden, pattern) in [
        ("[]", r"golden\.json: the golden set has no cases"),
        (r#"[{"id": "q1", "question": "  "}]"#, r#"golden\.json:1:2: case "q1" has an empty question"#),
        (
            r#"[{"id": "q1", "question": "a"}, {"id": "q2", "question": "b", "relevant": []}]"#,
            r#"golden\.json:1:33: case "q2" names no relevant document: say `"answerable": false`"#,
        ),
        (
            r#"[{"id": "q1", "question": "a", "relevant": [{"id": "beneficios", "grade": -1}]}]"#,
            r#"case "q1": the grade of "beneficios" must be a non-negative integer, found -1"#,
        ),
        (
            r#"[{"id": "q1", "question": "a", "relevant": [{"id": "beneficios", "grade": "alta"}]}]"#,
            r#"must be a non-negative integer, found "alta""#,
        ),
    ] {
        refused_matching(&Fixture::new(&ONE_DOC, golden, BM25), pattern);
    }
    let f = Fixture::new(&ONE_DOC, ONE_CASE, BM25);
    std::fs::write(f.path().join("corpus.jsonl"), "\n").unwrap();
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(f.path().join("exp.toml"), exp.replace("path = \"docs\"", "path = \"corpus.jsonl\"")).unwrap();
    refused_matching(&f, r"corpus\.jsonl: the corpus has no documents");
    std::fs::write(
        f.path().join("corpus.jsonl"),
        "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"a\", \"text\": \"y\"}\n",
    )
    .unwrap();
    refused_matching(&f, r#"corpus\.jsonl:2: duplicate document id "a" \(first on line 1\)"#);
}

#[test]
fn messages_name_the_place_once() {
    let f = Fixture::new(&ONE_DOC, ONE_CASE, BM25);
    std::fs::write(f.path().join("docs/beneficios.md"), b"# Beneficios\nol\xe1 vale\n").unwrap();
    refused_matching(&f, r"docs/beneficios\.md:2:3: byte 0xe1 is not UTF-8");

    std::fs::write(f.path().join("docs/beneficios.txt"), "vale").unwrap();
    std::fs::write(f.path().join("docs/beneficios.md"), "# Benefícios\nvale\n").unwrap();
    refused_matching(&f, r#"document id "beneficios" is also the id of .*beneficios\.md"#);
    std::fs::remove_file(f.path().join("docs/beneficios.txt")).unwrap();

    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(f.path().join("exp.toml"), exp.replace("path = \"docs\"", "path = \"documentos\"")).unwrap();
    refused_matching(&f, r"exp\.toml:\d+:8: `corpus.path` points to .*documentos, which does not exist");

    let missing = f.cmd().args(["run", "nada.toml"]).assert().failure();
    let stderr = String::from_utf8(missing.get_output().stderr.clone()).unwrap();
    assert_eq!(stderr.matches("os error 2").count(), 1, "{stderr}");
}

#[cfg(unix)]
#[test]
fn symlink_loops_in_a_markdown_corpus_neither_repeat_documents_nor_hang() {
    let f = Fixture::new(&ONE_DOC, ONE_CASE, BM25);
    let docs = f.path().join("docs");
    std::fs::create_dir(docs.join("sub")).unwrap();
    std::fs::write(docs.join("sub/ferias.md"), "# Férias\nTrinta dias.\n").unwrap();
    std::os::unix::fs::symlink(&docs, docs.join("sub/loop")).unwrap();
    std::os::unix::fs::symlink(docs.join("sub"), docs.join("sub/loop2")).unwrap();
    std::os::unix::fs::symlink(docs.join("beneficios.md"), docs.join("copia.md")).unwrap();
    f.cmd()
        .args(["validate", "--models"])
        .arg(common::repo().join("models"))
        .arg("exp.toml")
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success()
        .stdout(predicate::str::contains("2 documents"));
}

#[cfg(unix)]
#[test]
fn validate_loads_the_model_and_onnx_runtime_that_run_would_load() {
    let dense = BM25.replace("kind = \"bm25\"", "kind = \"dense\"\nmodel = \"minilm-l6\"");
    let f = Fixture::new(&ONE_DOC, ONE_CASE, &dense);
    let installed = common::repo().join("models");
    let validate = |models: &std::path::Path| {
        let mut cmd = f.cmd();
        cmd.env_remove("ORT_DYLIB_PATH").args(["validate", "--models"]).arg(models).arg("exp.toml");
        cmd.assert()
    };
    validate(&installed)
        .success()
        .stdout(predicate::str::contains("model minilm-l6: loaded with ONNX Runtime, 384 dimensions"));

    // The model files are there, ONNX Runtime is not.
    let models = f.path().join("models");
    std::fs::create_dir_all(models.join("minilm-l6")).unwrap();
    for entry in std::fs::read_dir(installed.join("minilm-l6")).unwrap() {
        let entry = entry.unwrap();
        std::os::unix::fs::symlink(entry.path(), models.join("minilm-l6").join(entry.file_name())).unwrap();
    }
    validate(&models).failure().stderr(predicate::str::contains("ONNX Runtime is not installed"));

    // ONNX Runtime is there, the ONNX file is not the model its install recorded: refused as
    // damaged; without an install record (a user's own model), ONNX Runtime refuses to load it.
    std::os::unix::fs::symlink(installed.join("onnxruntime"), models.join("onnxruntime")).unwrap();
    std::fs::remove_file(models.join("minilm-l6/model.onnx")).unwrap();
    std::fs::write(models.join("minilm-l6/model.onnx"), b"not an onnx file").unwrap();
    validate(&models).failure().stderr(predicate::str::contains("model minilm-l6 is damaged (model.onnx is 16 bytes"));
    std::fs::remove_file(models.join("minilm-l6/installed.json")).unwrap();
    validate(&models).failure().stderr(predicate::str::contains("loading model minilm-l6"));
}

#[test]
fn check_refuses_runs_that_do_not_score_the_same_reserved_cases() {
    let golden = |n: usize| {
        let cases: Vec<String> = (1..=n)
            .map(|i| format!(r#"{{"id": "q{i}", "question": "vale refeição {i}", "relevant": ["beneficios"], "split": "reserved"}}"#))
            .collect();
        format!("[{}]", cases.join(","))
    };
    let base = Fixture::new(&ONE_DOC, &golden(3), BM25);
    let base_run = base.run();
    let fewer = Fixture::new(&ONE_DOC, &golden(2), BM25);
    let fewer_run = fewer.run();
    let check = |run: &std::path::Path, margin: &str| {
        let mut cmd = base.cmd();
        cmd.arg("check").arg(run).arg("--baseline").arg(&base_run).args([
            "--metric",
            "ndcg@1",
            &format!("--margin={margin}"),
        ]);
        cmd.assert()
    };
    check(&base_run, "0.01").code(0).stdout(predicate::str::contains("PASS"));
    check(&fewer_run, "0.01")
        .code(2)
        .stdout(predicate::str::contains("NOT COMPARABLE"))
        .stdout(predicate::str::contains("only in the baseline: q3"))
        .stdout(predicate::str::contains("PASS").not());

    // The same golden set split by another seed: other reserved cases. Refused before any
    // comparison is printed.
    let unsplit = format!(
        "[{}]",
        (1..=12)
            .map(|i| format!(r#"{{"id": "q{i}", "question": "vale refeição {i}", "relevant": ["beneficios"]}}"#))
            .collect::<Vec<_>>()
            .join(",")
    );
    let seeded =
        |seed: u64| Fixture::new(&ONE_DOC, &unsplit, &format!("seed = {seed}\nreserved_fraction = 0.5\n{BM25}"));
    let (one, other) = (seeded(1), seeded(2));
    let (one, other) = (one.run(), other.run());
    let mut cmd = base.cmd();
    cmd.arg("check").arg(&other).arg("--baseline").arg(&one).args(["--fail-on", "ndcg@1:0.01,hit@1:0.01"]);
    cmd.assert()
        .code(2)
        .stdout(predicate::str::contains("NOT COMPARABLE: the runs do not score the same cases"))
        .stdout(predicate::str::contains("only in the baseline: q"))
        .stdout(predicate::str::contains("PASS").not().and(predicate::str::contains("B − A").not()));

    // Lines removed from a finished run's per_query.jsonl.
    let edited = Fixture::new(&ONE_DOC, &golden(3), BM25);
    let edited_run = edited.run();
    let per_query = edited_run.join("per_query.jsonl");
    let text = std::fs::read_to_string(&per_query).unwrap();
    std::fs::write(&per_query, text.lines().take(1).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    check(&edited_run, "0.01")
        .code(2)
        .stderr(predicate::str::contains("per_query.jsonl has 1 cases of cell c01 on reserved, matrix.json says 3"));

    for margin in ["nan", "inf", "-0.1"] {
        check(&base_run, margin).code(2).stderr(predicate::str::contains("is not a finite number ≥ 0"));
    }
}

#[test]
fn two_runs_started_together_into_one_folder_both_finish() {
    let f = Fixture::new(&ONE_DOC, ONE_CASE, BM25);
    let spawn = || {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
            .current_dir(f.path())
            .args(["run", "-q", "--cache", "cache", "--out", "out", "exp.toml"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let runs: Vec<_> = common::runs_in(&f.path().join("out/inputs"));
    assert_eq!(runs.len(), 2, "{runs:?}");
    for run in runs {
        assert!(run.join("matrix.json").is_file(), "{}", run.display());
    }
}

#[cfg(unix)]
#[test]
fn staging_left_by_a_killed_run_is_removed_after_a_day_and_said() {
    let f = Fixture::new(&ONE_DOC, ONE_CASE, BM25);
    let folder = f.path().join("out/inputs");
    let (old, young) = (folder.join(".20250101T000000Z-0000-000000.partial"), folder.join(".recent.partial"));
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&young).unwrap();
    let two_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 24 * 3600);
    std::fs::File::open(&old).unwrap().set_modified(two_days_ago).unwrap();
    f.run_cmd().assert().success().stderr(predicate::str::contains(format!(
        "removed {}: left by a run killed more than a day ago",
        old.display()
    )));
    assert!(!old.exists());
    assert!(young.exists(), "a staging directory touched within a day may belong to a live run");
}

/// A run of `OPEN_AND_FILTERED` on the benefits corpus with `golden` as its golden set.
fn run_with_golden(golden: &str) -> (Fixture, std::path::PathBuf) {
    let selecting = OPEN_AND_FILTERED.replacen("latency_cases = 0\n", "latency_cases = 0\nselect = \"hit@1\"\n", 1);
    let docs = [
        BENEFITS,
        ("ferias.md", "# Férias\nTrinta dias de férias.\n"),
        ("salarios.md", "---\nacl: [rh]\n---\n# Salários\nFérias, férias e férias da diretoria.\n"),
    ];
    let f = Fixture::new(&docs, golden, &selecting);
    let run = f.run();
    (f, run)
}

#[test]
fn report_vs_refuses_runs_on_other_golden_sets_unless_allowed() {
    let (_a, run_a) = run_with_golden(GOLDEN);
    let (_b, run_b) = run_with_golden(&GOLDEN.replace("da diretoria", "dos diretores"));
    let report = || {
        let mut cmd = common::ragsweep();
        cmd.arg("report").arg(&run_b).arg("--vs").arg(&run_a);
        cmd
    };
    let before = std::fs::read(run_b.join("report.html")).unwrap();
    report().assert().code(2).stderr(predicate::str::contains("used different golden sets"));
    assert_eq!(std::fs::read(run_b.join("report.html")).unwrap(), before, "a refused report writes nothing");
    report().arg("--allow-different-golden").assert().success();
    let page = std::fs::read_to_string(run_b.join("report.html")).unwrap();
    assert!(page.contains("WARNING: the two runs used different golden sets"), "the page says so");
}

#[test]
fn empty_ids_are_refused_and_an_empty_list_scores_plus_zero() {
    let empty_case = r#"[{"id": "", "question": "tabela de benefícios", "relevant": ["beneficios"]}]"#;
    let f = Fixture::new(&[BENEFITS], empty_case, OPEN_AND_FILTERED);
    refused(&f, &["golden.json", "empty id"]);
    let control = r#"[{"id": "q\u001b[31m", "question": "tabela de benefícios", "relevant": ["beneficios"]}]"#;
    let f = Fixture::new(&[BENEFITS], control, OPEN_AND_FILTERED);
    refused(&f, &["golden.json", "contains a control character"]);

    let f = Fixture::new(&[BENEFITS], GOLDEN, OPEN_AND_FILTERED);
    std::fs::remove_dir_all(f.path().join("docs")).unwrap();
    std::fs::write(f.path().join("docs.jsonl"), "{\"id\": \"\", \"text\": \"tabela\"}\n").unwrap();
    let exp =
        std::fs::read_to_string(f.path().join("exp.toml")).unwrap().replace("path = \"docs\"", "path = \"docs.jsonl\"");
    std::fs::write(f.path().join("exp.toml"), exp).unwrap();
    refused(&f, &["docs.jsonl:1", "empty id"]);

    // A question that matches nothing: its empty list scores 0, never -0.
    let (_f, run) = run_with_golden(r#"[{"id": "q1", "question": "zzz yyy", "relevant": ["beneficios"]}]"#);
    for file in ["per_query.jsonl", "matrix.json", "matrix.csv", "matrix.md"] {
        let text = std::fs::read_to_string(run.join(file)).unwrap();
        assert!(!text.contains("-0.0") && !text.contains(":-0,"), "{file}: {text}");
    }
}

#[test]
fn plan_says_a_tiny_delta_is_not_reachable() {
    let (f, run) = run_with_golden(
        r#"[{"id": "q1", "question": "tabela de benefícios", "relevant": ["beneficios"]},
            {"id": "q2", "question": "dias de férias", "relevant": ["ferias"], "groups": ["vendas"]},
            {"id": "q3", "question": "férias", "relevant": ["ferias"], "groups": ["vendas"]}]"#,
    );
    f.cmd()
        .arg("plan")
        .arg(&run)
        .args(["--metric", "hit@1", "--delta", "1e-12", "--split", "all", "--cell", "c01", "--vs", "c02"])
        .assert()
        .success()
        .stdout(predicate::str::contains("not reachable (> 1000000 cases)"))
        .stdout(predicate::str::contains("18446744073709551615").not());
}

#[test]
fn a_failed_run_leaves_no_empty_output_folder() {
    let f = Fixture::new(&[BENEFITS], GOLDEN, OPEN_AND_FILTERED);
    // A retriever that cannot be built once the run has started: a model that is not installed.
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap()
        + "[[retrievers]]\nkind = \"dense\"\nmodel = \"not-installed\"\n";
    std::fs::write(f.path().join("exp.toml"), exp).unwrap();
    f.run_cmd().assert().code(2);
    assert!(!f.path().join("out").join("acl").exists(), "no empty out/acl/ folder");
}

#[test]
fn explain_and_contexts_work_from_another_directory_and_after_a_move() {
    let (f, run) = run_with_golden(GOLDEN);
    let elsewhere = tempfile::tempdir().unwrap();
    let explain = |run: &std::path::Path, cache: &std::path::Path| {
        let mut cmd = common::ragsweep();
        cmd.current_dir(elsewhere.path())
            .arg("explain")
            .arg(run)
            .args(["--cell", "c01", "--case", "q1", "--cache"])
            .arg(cache);
        cmd.assert()
    };
    explain(&run, &f.path().join("cache")).success().stdout(predicate::str::contains("q1"));
    // The whole fixture (experiment, corpus, golden set and run) moved elsewhere.
    let moved = tempfile::tempdir().unwrap();
    let target = moved.path().join("project");
    std::fs::rename(f.path(), &target).unwrap();
    let moved_run = target.join(run.strip_prefix(f.path()).unwrap());
    explain(&moved_run, &target.join("cache")).success().stdout(predicate::str::contains("q1"));
    // The experiment gone: the error names where it looked.
    std::fs::remove_file(target.join("exp.toml")).unwrap();
    explain(&moved_run, &target.join("cache"))
        .code(2)
        .stderr(predicate::str::contains("the run's experiment file is not at"))
        .stderr(predicate::str::contains("exp.toml"));
    std::fs::rename(&target, f.path()).unwrap();
}

#[test]
fn terminal_output_never_carries_control_characters_from_the_data() {
    let golden = r#"[{"id": "q1", "question": "tabela \u001b[31mde benefícios\u001b]0;pwned\u0007", "relevant": ["beneficios"], "groups": ["vendas"]},
        {"id": "q2", "question": "dias de férias", "relevant": ["ferias"], "groups": ["vendas"]}]"#;
    let (f, run) = run_with_golden(golden);
    let out = f
        .cmd()
        .args(["diff", "c01", "c02", "--metric", "hit@1", "--split", "all", "--run"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(!stdout.contains('\u{1b}') && !stdout.contains('\u{7}'), "{stdout:?}");
    let explain = f
        .cmd()
        .arg("explain")
        .arg(&run)
        .args(["--cell", "c01", "--case", "q1", "--cache"])
        .arg(f.path().join("cache"))
        .output()
        .unwrap();
    let text = String::from_utf8(explain.stdout).unwrap();
    assert!(text.contains("\\u{1b}") && !text.contains('\u{1b}'), "shown escaped: {text:?}");
}

#[test]
fn front_matter_as_sites_write_it_is_read_and_every_doubtful_key_is_listed_at_once() {
    let site = "---\ntitle: Benefícios\nlayout: doc\ndate: 2024-05-01\ntags: [rh, beneficios]\nweight: 3\nsidebar_position: 2\nhide-toc: true\n---\n# Benefícios\nVale refeição e a tabela de benefícios.\n";
    let salaries = "+++\ntitle = \"Salários\"\nacl = [\"rh\"]\n+++\n# Salários\nTabela de salários da diretoria.\n";
    let f = Fixture::new(&[("beneficios.md", site), ("salarios.md", salaries)], GOLDEN, OPEN_AND_FILTERED);
    let run = f.run();
    assert_eq!(manifest(&run)["corpus"]["public_documents"], 1, "TOML front matter restricts salarios");
    assert_eq!(row(&matrix(&run), "filter", "in_query")["leaks"], 0);

    // Three files, three problems: all named in one error.
    let f = Fixture::new(
        &[
            ("a.md", "---\nroles: [rh]\n---\nTexto a.\n"),
            ("b.md", "---\nacl: null\n---\nTexto b.\n"),
            ("c.md", "---\nAcl: [rh]\n---\nTexto c.\n"),
        ],
        GOLDEN.replace("beneficios", "a").as_str(),
        OPEN_AND_FILTERED,
    );
    refused(
        &f,
        &[
            "3 problems",
            "a.md:2: front matter key `roles`",
            "b.md:2: `acl` is empty or null",
            "c.md:2: front matter key `Acl`",
        ],
    );

    // The access key can be another field, and a look-alike declared plain metadata.
    let f = Fixture::new(
        &[
            ("salarios.md", "---\ngroups: [rh]\nroles: [gestor]\n---\n# Salários\nTabela de salários da diretoria.\n"),
            BENEFITS,
        ],
        GOLDEN,
        &with_permissions("acl_key = \"groups\"\n").replacen(
            "[[chunkers]]",
            "[corpus]\nnot_access = [\"roles\"]\n[[chunkers]]",
            1,
        ),
    );
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    // Fixture::new wrote its own [corpus]; fold not_access into it.
    let exp = exp.replacen("[corpus]\nnot_access = [\"roles\"]\n", "", 1).replacen(
        "[corpus]\n",
        "[corpus]\nnot_access = [\"roles\"]\n",
        1,
    );
    std::fs::write(f.path().join("exp.toml"), exp).unwrap();
    let run = f.run();
    assert_eq!(manifest(&run)["corpus"]["public_documents"], 1, "`groups` is the access list");
}

#[test]
fn a_jsonl_access_list_that_is_null_or_not_a_list_or_a_look_alike_is_refused() {
    for (line, message) in [
        (r#"{"id": "s", "text": "Tabela de salários", "acl": null}"#, "`acl` is null"),
        (r#"{"id": "s", "text": "Tabela de salários", "acl": "rh"}"#, "`acl` must be a list of groups"),
        (r#"{"id": "s", "text": "Tabela de salários", "roles": ["rh"]}"#, "field `roles` could be an access list"),
        (
            r#"{"id": "s", "text": "Tabela de salários", "metadata": {"allowed_groups": ["rh"]}}"#,
            "metadata field `allowed_groups`",
        ),
    ] {
        let f = Fixture::new(&[BENEFITS], GOLDEN, OPEN_AND_FILTERED);
        std::fs::remove_dir_all(f.path().join("docs")).unwrap();
        std::fs::write(
            f.path().join("docs.jsonl"),
            format!("{{\"id\": \"beneficios\", \"text\": \"tabela\"}}\n{line}\n"),
        )
        .unwrap();
        let exp = std::fs::read_to_string(f.path().join("exp.toml"))
            .unwrap()
            .replace("path = \"docs\"", "path = \"docs.jsonl\"");
        std::fs::write(f.path().join("exp.toml"), exp).unwrap();
        refused(&f, &["docs.jsonl:2", message]);
    }
}

/// A `latest` link planted to point outside the experiment's results folder is refused by
/// every command that reads a run; nothing is read or written there.
#[test]
fn a_latest_link_pointing_elsewhere_is_refused() {
    let f = common::Fixture::new(
        &[("a.md", "# A\nTexto sobre férias.\n")],
        r#"[{"id": "q1", "question": "férias", "relevant": ["a"]}]"#,
        "name = \"planted\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let run = f.run();
    let elsewhere = f.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    for entry in std::fs::read_dir(&run).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, elsewhere.join(path.file_name().unwrap())).unwrap();
        }
    }
    let latest = f.path().join("out/planted/latest");
    std::fs::remove_file(&latest).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &latest).unwrap();
    f.cmd()
        .arg("contexts")
        .arg(&latest)
        .args(["--cell", "c01", "--k", "1"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("which is not a run id beside it: refused"));
    assert!(!elsewhere.join("contexts.jsonl").exists());
    std::fs::remove_file(&latest).unwrap();
    std::os::unix::fs::symlink("../../elsewhere", &latest).unwrap();
    f.cmd().arg("report").arg(f.path().join("out/planted")).assert().code(2);
}

/// Odd numbers a user can type: a delta of 1e-300 is printed as such, a `k` beyond any list or
/// a budget beyond bounds is a located error, and an empty .npy is refused by bench-ann.
#[test]
fn extreme_numbers_are_bounded_or_refused() {
    let f = common::Fixture::new(
        &[("a.md", "# A\nTexto sobre férias.\n"), ("b.md", "# B\nOutro texto.\n")],
        r#"[{"id": "q1", "question": "férias", "relevant": ["a"], "split": "reserved"}, {"id": "q2", "question": "texto", "relevant": ["b"], "split": "reserved"}]"#,
        "name = \"big\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nb = [0.4, 0.75]\n",
    );
    let run = f.run();
    f.cmd()
        .arg("plan")
        .arg(&run)
        .args(["--metric", "hit@1", "--delta", "1e-300", "--cell", "c01"])
        .assert()
        .success()
        .stdout(predicate::str::contains("a difference of 1e-300 with"));
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    for (from, to) in [("k = [1]", "k = [4611686018427387904]"), ("k = [1]", "k = [1]\nbudget = [4611686018427387904]")]
    {
        std::fs::write(f.path().join("exp.toml"), exp.replace(from, to)).unwrap();
        f.cmd()
            .args(["validate", "exp.toml"])
            .assert()
            .code(2)
            .stderr(predicate::str::is_match(r"exp\.toml:\d+:\d+: ").unwrap());
    }
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 0), }";
    let header = format!("{header:<117}\n");
    npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
    npy.extend_from_slice(header.as_bytes());
    std::fs::write(f.path().join("empty.npy"), &npy).unwrap();
    f.cmd()
        .args(["bench-ann", "empty.npy", "empty.npy"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("holds no vectors"));
}

/// An engine or a filter that starts leaking fails CI: `check --fail-on leaks:0` fails on any
/// rise (a defect, not a statistic: one case is enough), and `--require leaks=0` fails on any
/// leaking case.
#[test]
fn check_gates_and_requires_leaks() {
    let docs = [
        ("rh.md", "---\nacl: [rh]\n---\n# RH\nSalários e férias da equipe.\n"),
        ("pub.md", "# Público\nCalendário de férias.\n"),
    ];
    let golden = r#"[{"id": "q1", "question": "férias da equipe", "relevant": ["pub"], "groups": ["ti"], "split": "reserved"},
                     {"id": "q2", "question": "calendário", "relevant": ["pub"], "groups": ["ti"], "split": "reserved"}]"#;
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"leak\"\nunit = \"doc\"\nk = [2]\nlatency_cases = 0\nfilter = [\"in_query\", \"none\"]\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let run = f.run();
    let m = matrix(&run);
    assert_eq!(row(&m, "filter", "none")["leaks"], 1);
    let check = |args: &[&str]| {
        let mut cmd = f.cmd();
        cmd.arg("check").arg(&run).args(args);
        cmd.assert()
    };
    check(&["--require", "leaks=0", "--cell", "c01"])
        .code(0)
        .stdout(predicate::str::contains("PASS: leaks of cell c01"));
    check(&["--require", "leaks=0", "--cell", "c02"])
        .code(1)
        .stdout(predicate::str::contains("FAIL: leaks of cell c02: the worst case is 1 over 2 cases, required ≤ 0"));
    // The leaking cell against the filtered one: one leaking case of two is no significant
    // change, and still fails.
    let base = run.to_str().unwrap();
    check(&["--baseline", base, "--cell", "c02", "--baseline-cell", "c01", "--fail-on", "leaks:0,hit@2:0.5"])
        .code(1)
        .stdout(predicate::str::contains("FAIL: leaks rose 0.5000").and(predicate::str::contains("a defect")));
}

/// A password written into `[engines.pg] url` is refused, and no message repeats it.
#[test]
fn a_password_in_the_server_url_is_refused_and_never_echoed() {
    for url in [
        "postgresql://u:s3cr3t-pw@db.internal/rag",
        "postgresql://u%3As3cr3t-pw@db.internal/rag",
        "postgresql://u@db.internal/rag?password=s3cr3t-pw",
        "postgres+psycopg://u:s3cr3t-pw@db.internal/rag",
        // A password typed in the port slot, or as a bare parameter.
        "postgresql://u@db.internal:s3cr3t-pw/rag",
        "postgresql://u@db.internal/rag?s3cr3t-pw",
        "postgresql://u@db.internal/rag?s3cr3t-pw=1",
    ] {
        let f = common::Fixture::new(
            &[("a.md", "# A\nTexto.\n")],
            r#"[{"id": "q1", "question": "texto", "relevant": ["a"]}]"#,
            &format!(
                "name = \"pw\"\nunit = \"doc\"\nk = [1]\n[engines.pg]\nurl = {url:?}\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n"
            ),
        );
        let out = f.cmd().args(["validate", "exp.toml"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{url}");
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!all.contains("s3cr3t"), "{url}: {all}");
        assert!(all.contains("exp.toml:"), "located: {all}");
    }
}

/// Front matter stays an access list whatever writes the file: CR-only line ends (classic Mac),
/// CRLF, an `.html` page that opens with YAML front matter, and a CR-only fragment a page
/// includes. Each restricted page is left out for a user outside its group.
#[test]
fn access_lists_hidden_by_line_endings_or_html_front_matter_stay_restricted() {
    let secret = "Tabela de salários da diretoria.";
    for (name, text) in [
        ("salarios.md", format!("---\rtitle: x\racl: [rh]\r---\r# Salários\r{secret}\r")),
        ("salarios.md", format!("---\r\ntitle: x\r\nacl: [rh]\r\n---\r\n# Salários\r\n{secret}\r\n")),
        (
            "salarios.html",
            format!(
                "---\ntitle: Salários\nacl: [rh]\n---\n<html><body><h1>Salários</h1><p>{secret}</p></body></html>\n"
            ),
        ),
        ("salarios.txt", format!("+++\rtitle = \"x\"\racl = [\"rh\"]\r+++\r{secret}\r")),
    ] {
        let f = Fixture::new(&[(name, &text), BENEFITS], GOLDEN, OPEN_AND_FILTERED);
        let run = f.run();
        assert_eq!(manifest(&run)["corpus"]["public_documents"], 1, "{name}: {text:?}");
        let m = matrix(&run);
        assert_eq!(row(&m, "filter", "in_query")["leaks"], 0, "{name}");
        assert!(row(&m, "filter", "none")["leaks"].as_u64().unwrap() > 0, "{name}: the open cell sees it");
    }
    // A fragment with a CR-only access list: the page that includes it is refused, not public.
    let f = Fixture::new(
        &[
            ("page.md", "# Página\n{{< readfile file=\"frag.md\" >}}\n"),
            ("frag.md", &format!("---\racl: [rh]\r---\r{secret}\r")),
            BENEFITS,
        ],
        GOLDEN,
        OPEN_AND_FILTERED,
    );
    refused(&f, &["declares its own access list"]);
}

/// A fragment that only restricted pages include, and that declares no access list itself, is
/// public under its own id: `validate` and `run` say so, naming it and the pages; once a public
/// page includes it too, nothing is said.
#[test]
fn a_fragment_only_restricted_pages_include_is_named_as_public() {
    let restricted = "---\nacl: [rh]\n---\n# Salários\n{{< readfile file=\"tabela.md\" >}}\n";
    let fragment = ("tabela.md", "Tabela de salários da diretoria.\n");
    let f = Fixture::new(&[("salarios.md", restricted), fragment, BENEFITS], GOLDEN, OPEN_AND_FILTERED);
    let warning =
        "only restricted pages include these, yet they declare no access list and are public under their own id";
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains(warning).and(predicate::str::contains("tabela.md (included by salarios.md)")));
    f.run_cmd().assert().success().stderr(predicate::str::contains("tabela.md (included by salarios.md)"));
    let public = ("resumo.md", "# Resumo\n{{< readfile file=\"tabela.md\" >}}\n");
    let f = Fixture::new(&[("salarios.md", restricted), fragment, public, BENEFITS], GOLDEN, OPEN_AND_FILTERED);
    f.cmd().args(["validate", "exp.toml"]).assert().success().stdout(predicate::str::contains(warning).not());
}

/// A leak is a chunk served to a user who may not see it: judging more of a whole-document
/// chunk's sections relevant (it then fills more of the list) must not move it.
#[test]
fn leaks_do_not_move_with_judgments_on_the_same_retrieval() {
    let docs = [
        ("manual.md", "# Manual\n## Férias\nférias no manual.\n## Saldo\nsaldo de férias no manual.\n## Prazo\nprazo das férias.\n"),
        ("secreto.md", "---\nacl: [rh]\n---\n# Segredo\nférias da diretoria.\n"),
        ("outro.md", "# Outro\nfrota urbana.\n"),
    ];
    let golden = r#"[{"id": "q1", "question": "férias no manual", "relevant": ["manual#Férias"], "groups": ["ti"]}]"#;
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"judged\"\nunit = \"section\"\nk = [2]\nmetrics = [\"precision\", \"ndcg\"]\nreserved_fraction = 0.0\nlatency_cases = 0\nfilter = \"none\"\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let before = matrix(&f.run());
    std::fs::write(
        f.path().join("judgments.jsonl"),
        "{\"case\": \"q1\", \"id\": \"manual#Saldo\", \"grade\": 1}\n{\"case\": \"q1\", \"id\": \"manual#Prazo\", \"grade\": 1}\n",
    )
    .unwrap();
    let exp = f.path().join("exp.toml");
    let text =
        std::fs::read_to_string(&exp).unwrap().replace("[golden]\n", "[golden]\njudgments = \"judgments.jsonl\"\n");
    std::fs::write(&exp, text).unwrap();
    std::fs::remove_dir_all(f.path().join("out")).unwrap();
    let after = matrix(&f.run());
    let leaks = |m: &Value| m["rows"][0]["leaks"].as_u64().unwrap();
    let precision = |m: &Value| m["rows"][0]["metrics"]["precision@2"]["value"].as_f64().unwrap();
    assert_eq!((precision(&before), precision(&after)), (0.5, 1.0), "the chapter fills the list once judged");
    assert_eq!(leaks(&before), 1, "the restricted chapter is served at rank 2: {}", before["rows"][0]);
    assert_eq!(leaks(&after), leaks(&before), "the same retrieval leaks the same chunks");
}

/// Model settings out of their stated ranges (a dimension of 2³¹ or 0, `max_length` 0 or 10⁹,
/// `dimensions = 0`) and a `model.toml` naming another model are refused at their line by
/// `validate`, before anything is allocated or sent.
#[test]
fn model_settings_out_of_bounds_are_refused_at_their_line() {
    let f = Fixture::new(
        &[BENEFITS],
        r#"[{"id": "q1", "question": "benefícios", "relevant": ["beneficios"]}]"#,
        "name = \"m\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n\
         [[retrievers]]\nkind = \"dense\"\nmodel = \"mine\"\n",
    );
    let models = f.path().join("models");
    std::fs::create_dir_all(models.join("mine")).unwrap();
    for (toml, line, says) in [
        ("id = \"mine\"\nkind = \"random\"\ndim = 2147483648\n", 3, "`dim` must be within 1..=65536"),
        ("id = \"mine\"\nkind = \"random\"\ndim = 0\n", 3, "`dim` must be within 1..=65536"),
        (
            "id = \"mine\"\nkind = \"onnx\"\ndim = 8\npooling = \"mean\"\nmax_length = 0\n",
            5,
            "`max_length` must be within 8..=32768",
        ),
        (
            "id = \"mine\"\nkind = \"onnx\"\ndim = 8\npooling = \"mean\"\nmax_length = 1000000000\n",
            5,
            "`max_length` must be within 8..=32768",
        ),
        (
            "id = \"mine\"\nkind = \"http\"\ndim = 8\nurl = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\ndimensions = 0\n",
            6,
            "`dimensions` must be within 1..=65536",
        ),
        ("id = \"minilm-l6\"\nkind = \"random\"\ndim = 8\n", 0, "a model is named by its folder"),
    ] {
        std::fs::write(models.join("mine/model.toml"), toml).unwrap();
        let at = if line == 0 { "model.toml:".to_string() } else { format!("model.toml:{line}:") };
        f.cmd()
            .args(["validate", "exp.toml", "--models"])
            .arg(&models)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(at).and(predicate::str::contains(says)));
    }
    // An endpoint whose probe vector has more dimensions than any model's.
    let url = common::openai_endpoint(70_000);
    f.cmd()
        .args(["models", "add", "--name", "wide", "--url", &url, "--model", "m", "--models"])
        .arg(&models)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("a 70000-dimensional vector for a probe text: vectors have 1 to 65536"));
    assert!(!models.join("wide").exists());
    // Within the range but past the graph's position table (512 rows in MiniLM's fused graph,
    // whose kernel would read past it): refused at the line; at the table's size it loads.
    let bundled = common::repo().join("models");
    std::fs::remove_dir_all(models.join("mine")).unwrap();
    std::os::unix::fs::symlink(bundled.join("onnxruntime"), models.join("onnxruntime")).unwrap();
    let copied = std::process::Command::new("cp").arg("-r").arg(bundled.join("minilm-l6")).arg(&models).status();
    assert!(copied.unwrap().success());
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap().replace("\"mine\"", "\"minilm-l6\"");
    std::fs::write(f.path().join("exp.toml"), exp).unwrap();
    let settings = models.join("minilm-l6/model.toml");
    let toml = std::fs::read_to_string(&settings).unwrap();
    let line = 1 + toml.lines().position(|l| l.starts_with("max_length")).unwrap();
    for (max_length, refused) in [(1024, true), (512, false)] {
        std::fs::write(&settings, toml.replace("max_length = 256", &format!("max_length = {max_length}"))).unwrap();
        let mut validate = f.cmd();
        validate.args(["validate", "exp.toml", "--models"]).arg(&models);
        if refused {
            validate.assert().code(2).stderr(predicate::str::contains(format!(
                "model.toml:{line}: `max_length = 1024`, but the graph's position table holds 512 positions"
            )));
        } else {
            validate.assert().success();
        }
    }
}

/// Inputs too large to read whole (6 GiB, sparse) and FIFOs where a file belongs are refused
/// in seconds, with their size and the cap; nothing waits on a writer that never comes.
#[test]
fn huge_inputs_and_fifos_are_refused_in_seconds() {
    let experiment = "name = \"big\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n\
         [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n";
    let golden = r#"[{"id": "q1", "question": "benefícios", "relevant": ["beneficios"]}]"#;
    let sparse = |path: &std::path::Path| {
        let file = std::fs::File::create(path).unwrap();
        file.set_len(6 << 30).unwrap();
    };
    let started = std::time::Instant::now();
    // A golden set of 6 GiB.
    let f = Fixture::new(&[BENEFITS], golden, experiment);
    sparse(&f.path().join("golden.json"));
    f.cmd().args(["validate", "exp.toml"]).assert().code(2).stderr(
        predicate::str::contains("golden.json").and(predicate::str::contains("6442450944 bytes, over the cap of")),
    );
    // A JSONL corpus of one 6 GiB line.
    let f = Fixture::new(&[BENEFITS], golden, experiment);
    let exp =
        std::fs::read_to_string(f.path().join("exp.toml")).unwrap().replace("path = \"docs\"", "path = \"c.jsonl\"");
    std::fs::write(f.path().join("exp.toml"), exp).unwrap();
    sparse(&f.path().join("c.jsonl"));
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("c.jsonl:1").and(predicate::str::contains("over the cap of")));
    // The experiment itself, and a FIFO posing as it.
    let f = Fixture::new(&[BENEFITS], golden, experiment);
    sparse(&f.path().join("big.toml"));
    f.cmd().args(["validate", "big.toml"]).assert().code(2).stderr(predicate::str::contains("over the cap of"));
    let status = std::process::Command::new("mkfifo").arg(f.path().join("fifo.toml")).status().unwrap();
    assert!(status.success());
    f.cmd().args(["validate", "fifo.toml"]).timeout(std::time::Duration::from_secs(20)).assert().code(2);
    // A judged pool to import or replay, and a vectors array, of 6 GiB each.
    let f = Fixture::new(
        &[BENEFITS, ("ferias.md", "# Férias\nTrinta dias de férias, um dos benefícios.\n")],
        golden,
        &experiment.replace("k = [1]", "k = [2]"),
    );
    let run = f.run();
    let over_cap = predicate::str::contains("6442450944 bytes, over the cap of");
    sparse(&f.path().join("pool.jsonl"));
    for flag in ["--import", "--replay"] {
        f.cmd()
            .args(["judge", flag, "pool.jsonl"])
            .arg(&run)
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("pool.jsonl").and(over_cap.clone()));
    }
    let vectors = f.path().join("vectors");
    std::fs::create_dir(&vectors).unwrap();
    // A valid header for 805,306,368 rows of 2 columns: checked against the ids before the data.
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (805306368, 2), }";
    let header = format!("{header:<117}\n");
    let mut npy = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
    npy.extend(header.as_bytes());
    std::fs::write(vectors.join("passages.npy"), &npy).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(vectors.join("passages.npy"))
        .unwrap()
        .set_len(128 + (6 << 30))
        .unwrap();
    std::fs::write(vectors.join("passages.ids"), "beneficios\n").unwrap();
    std::fs::write(vectors.join("queries.jsonl"), "{\"id\": \"q1\", \"vector\": [1.0, 0.0]}\n").unwrap();
    f.cmd()
        .args(["models", "add", "vectors", "--vectors", "--name", "big", "--models", "models"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("passages.ids: 1 ids for the 805306368 rows of"));
    // A FIFO posing as the run's ranked lists: every reader of the run refuses it.
    std::fs::write(f.path().join("judgments.jsonl"), "{\"case\": \"q1\", \"id\": \"ferias\", \"grade\": 0}\n").unwrap();
    let per_query = run.join("per_query.jsonl");
    std::fs::remove_file(&per_query).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&per_query).status().unwrap().success());
    for command in [&["rescore"][..], &["misses", "--cell", "c01"], &["judge", "--export", "pool2.jsonl"]] {
        f.cmd()
            .args(command)
            .arg(&run)
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("per_query.jsonl: not a regular file"));
    }
    assert!(started.elapsed().as_secs() < 60, "refused in seconds: {:?}", started.elapsed());
}
