//! Fail closed (issue 11), through the real binary: permissions that cannot silently open,
//! inputs that cannot silently mean something else. A refused run names the file and line
//! and writes nothing.

mod common;

use common::{matrix, row, Fixture};
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
        refused(&f, &[&format!("salarios.md:{line}: unknown front matter key `{key}`"), "acl: [group, ...]"]);
    }
}

#[test]
fn front_matter_after_blank_lines_with_fence_spaces_and_comments_stays_restricted() {
    let doc = "\n\n---  \nacl: [rh] # só RH\n---\t\n# Salários\nTabela de salários da diretoria.\n";
    let f = Fixture::new(&[("salarios.md", doc), BENEFITS], GOLDEN, OPEN_AND_FILTERED);
    let run = f.run();
    let m = matrix(&run);
    assert!(row(&m, "filter", "none")["leaks"].as_u64().unwrap() > 0, "the restricted document is ranked first");
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
    let lines: Vec<Value> = std::fs::read_to_string(run.join("per_query.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let top = |case: &str| lines.iter().find(|l| l["case"] == case).unwrap()["top"].clone();
    assert_eq!(top("default")[0], "salarios");
    assert!(!top("nobody").to_string().contains("salarios"), "{}", top("nobody"));
    let m = matrix(&run);
    assert_eq!(m["rows"][0]["unanswerable"], 1);
    assert_eq!(m["rows"][0]["restricted_hits"], 0);
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
    assert!(!stderr.contains("warning"), "{stderr}");
}
