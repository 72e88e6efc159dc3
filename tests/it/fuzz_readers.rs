//! Fuzzing the readers: valid inputs mutated at random (bytes inserted, deleted, replaced,
//! lines repeated or dropped) must load or fail with an error located in the file read;
//! never a panic, never an error that does not say where, and never an `acl:` line read
//! as document text.
//!
//! Each reader gets 1,000 generated inputs per test run (5,000 in all); set `FUZZ_CASES`
//! for a longer session.

use std::path::Path;

use proptest::prelude::*;

use ragsweep::error::Error;
use ragsweep::experiment::Experiment;
use ragsweep::input::access_key::AccessKey;
use ragsweep::input::corpus::Corpus;
use ragsweep::input::frontmatter;
use ragsweep::input::golden::{self, GoldenFormat, GoldenSource};

fn cases() -> u32 {
    std::env::var("FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(1000)
}

/// One edit of a text.
#[derive(Debug, Clone)]
enum Mutation {
    Insert(usize, String),
    Delete(usize, usize),
    RepeatLine(usize),
    DropLine(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let piece = prop_oneof![
        Just("\n".to_string()),
        Just("\"".to_string()),
        Just("---\n".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just("\t".to_string()),
        Just("=".to_string()),
        Just("nan".to_string()),
        Just("-1".to_string()),
        Just("1e400".to_string()),
        Just("\u{feff}".to_string()),
        Just("ção".to_string()),
        "[a-z_#\\[\\]{}\":,= \n-]{1,8}",
        any::<char>().prop_map(String::from),
    ];
    prop_oneof![
        (any::<usize>(), piece).prop_map(|(at, s)| Mutation::Insert(at, s)),
        (any::<usize>(), 1..20usize).prop_map(|(at, n)| Mutation::Delete(at, n)),
        any::<usize>().prop_map(Mutation::RepeatLine),
        any::<usize>().prop_map(Mutation::DropLine),
    ]
}

fn apply(text: &str, mutations: &[Mutation]) -> String {
    let mut s = text.to_string();
    for m in mutations {
        let boundary = |s: &str, at: usize| {
            let mut at = at % (s.len() + 1);
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            at
        };
        match m {
            Mutation::Insert(at, piece) => {
                let at = boundary(&s, *at);
                s.insert_str(at, piece);
            }
            Mutation::Delete(at, n) => {
                let start = boundary(&s, *at);
                let end = boundary(&s, start + n);
                s.replace_range(start..end.max(start), "");
            }
            Mutation::RepeatLine(i) | Mutation::DropLine(i) => {
                let mut lines: Vec<&str> = s.split_inclusive('\n').collect();
                if lines.is_empty() {
                    continue;
                }
                let i = i % lines.len();
                if matches!(m, Mutation::RepeatLine(_)) {
                    lines.insert(i, lines[i]);
                } else {
                    lines.remove(i);
                }
                s = lines.concat();
            }
        }
    }
    s
}

fn mutated(seed: &'static str) -> impl Strategy<Value = String> {
    prop::collection::vec(mutation(), 1..6).prop_map(move |m| apply(seed, &m))
}

/// An error is located when it names `dir` (the file read, or a file inside it) — with a
/// line when the problem is on a line.
fn assert_located(err: &Error, dir: &Path) -> Result<(), TestCaseError> {
    match err {
        Error::Input { at, .. } => prop_assert!(at.path.starts_with(dir), "{err}"),
        Error::Io { path, .. } => prop_assert!(path.starts_with(dir), "{err}"),
        // Several problems listed at once: each one located (a last "… and N more" aside).
        Error::Many(errors) => {
            for e in errors.iter().filter(|e| !matches!(e, Error::AndMore(_))) {
                assert_located(e, dir)?;
            }
        }
        other => prop_assert!(false, "an error without a place: {other}"),
    }
    Ok(())
}

const EXPERIMENT: &str = r#"name = "fuzz"
k = [1, 10]
metrics = ["ndcg", "recall"]
filter = ["none", "in_query"]
select = "ndcg@10"
[permissions]
default_groups = ["rh"]
missing_acl = "deny"
[cost]
llm_usd_per_1m_input_tokens = 0.5
[corpus]
path = "docs"
[golden]
path = "golden.json"
[[chunkers]]
kind = "recursive"
size = [200, 400]
overlap = 20
[[retrievers]]
kind = "hybrid"
model = "minilm-l6"
fusion = "convex"
alpha = [0.3, 0.7]
abstain_below = 0.2
"#;

const CORPUS: &str = r###"{"id": "a", "title": "Férias", "text": "Trinta dias de férias.", "acl": ["rh"]}
{"_id": 7, "text": "Vale refeição.", "metadata": {"area": "rh"}}
{"id": "c", "text": "## Art. 1\nTexto.\n"}
"###;

const MARKDOWN: &str = "\n---\ntitle: \"Salários: 2025\"\nacl:\n  - rh # só RH\n  - 'dpo'\nmeta:\n  area: pessoas\n---\n# Tabela\nSalários.\n";

const GOLDEN: &str = r#"[{"id": "q1", "question": "férias", "relevant": ["a", {"id": "7", "grade": 2}], "groups": ["rh"], "tags": ["x"]},
 {"id": "q2", "question": "art 1", "relevant": "c#Art. 1", "split": "reserved", "meta": {"autor": "ana"}},
 {"question": "nada", "answerable": false, "evidence": [{"text": "Texto", "doc": "c"}]}]
"#;

const QRELS: &str = "query-id\tcorpus-id\tscore\nq1\ta\t1\nq2\t7\t2\nq3\tc\t0\n";
const QUERIES: &str = "{\"_id\": \"q1\", \"text\": \"férias\"}\n{\"_id\": \"q2\", \"text\": \"vale\"}\n{\"_id\": \"q3\", \"text\": \"art\"}\n";

fn corpus(dir: &Path) -> Corpus {
    let path = dir.join("corpus.jsonl");
    std::fs::write(&path, CORPUS).unwrap();
    Corpus::load(&path, None, &AccessKey::default()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn experiment_toml(text in mutated(EXPERIMENT)) {
        let path = Path::new("/fuzz/exp.toml");
        if let Err(e) = Experiment::parse(path, &text) {
            assert_located(&e, path)?;
        }
    }

    #[test]
    fn jsonl_corpus(text in mutated(CORPUS)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("corpus.jsonl");
        std::fs::write(&path, &text).unwrap();
        if let Err(e) = Corpus::load(&path, None, &AccessKey::default()) {
            assert_located(&e, &path)?;
        }
    }

    #[test]
    fn markdown_front_matter(text in mutated(MARKDOWN)) {
        let path = Path::new("/fuzz/doc.md");
        let rules = AccessKey::default();
        match frontmatter::split(path, &text, &rules) {
            Err(e) => assert_located(&e, path)?,
            Ok((_, body)) => prop_assert!(!body.lines().any(|l| frontmatter::starts_like_acl(l, &rules)), "an access list read as text: {text:?}"),
        }
    }

    #[test]
    fn golden_json_and_jsonl(text in mutated(GOLDEN), lines in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let corpus = corpus(dir.path());
        let text = if lines { text.replace("\n ", "\n").trim_start_matches('[').replace("},\n", "}\n").replace("}]", "}") } else { text };
        let path = dir.path().join("golden.json");
        std::fs::write(&path, &text).unwrap();
        let source = GoldenSource { path: path.clone(), format: Some(GoldenFormat::Json), tuning: vec![], reserved: vec![], labels: None };
        if let Err(e) = golden::load(&source, &corpus) {
            assert_located(&e, &path)?;
        }
    }

    #[test]
    fn beir_qrels_and_queries(qrels in mutated(QRELS), queries in mutated(QUERIES)) {
        let dir = tempfile::tempdir().unwrap();
        let corpus = corpus(dir.path());
        let root = dir.path().join("beir");
        std::fs::create_dir_all(root.join("qrels")).unwrap();
        std::fs::write(root.join("qrels/test.tsv"), &qrels).unwrap();
        std::fs::write(root.join("queries.jsonl"), &queries).unwrap();
        let source = GoldenSource { path: root.clone(), format: Some(GoldenFormat::Beir), tuning: vec![], reserved: vec!["test".into()], labels: None };
        if let Err(e) = golden::load(&source, &corpus) {
            assert_located(&e, &root)?;
        }
    }
}
