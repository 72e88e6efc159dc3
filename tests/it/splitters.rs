//! The splitters teams ship, through the binary (issue 65): `langchain_recursive`,
//! `chroma_fixed_token` and `llamaindex_sentence` chunks equal the Python libraries' chunk for
//! chunk (LangChain's text splitters, LlamaIndex with NLTK, and tiktoken, installed by
//! scripts/install-models.sh) on a corpus written to
//! be hard, the bundled corpus and the statute; Chroma's chunking-evaluation CSV read as a
//! golden set whose excerpts are placed where it says; and `tok_*@k` as Chroma counts them.

use std::path::Path;
use std::process::Command as Process;

use crate::common::{repo, Fixture};
use serde_json::Value;

/// Chunkers of every library setting: characters and two BPEs, LangChain's and Chroma's
/// separators, the separator kept at the end, separators with no character fallback (pieces
/// kept whole), token windows with and without overlap, LlamaIndex's sentences in chunks down
/// to a few tokens (where its Punkt sentences, clauses, words and characters all cut) with its
/// own and other separators.
const CHUNKERS: &str = r#"
[[chunkers]]
kind = "langchain_recursive"
size = [30, 200]
overlap = [0, 12]
[[chunkers]]
kind = "langchain_recursive"
size = 40
overlap = 10
length = "cl100k_base"
separators = ["\n\n", "\n", ".", "?", "!", " ", ""]
[[chunkers]]
kind = "langchain_recursive"
size = 25
length = "o200k_base"
keep_separator = "end"
separators = [["\n", " "], ["ção", "\n"]]
[[chunkers]]
kind = "chroma_fixed_token"
size = [7, 64]
overlap = [0, 3]
[[chunkers]]
kind = "llamaindex_sentence"
size = [10, 60]
overlap = [0, 10]
[[chunkers]]
kind = "llamaindex_sentence"
size = 30
overlap = 10
encoding = "o200k_base"
separator = "\n"
paragraph_separator = "\n\n"
[[retrievers]]
kind = "bm25"
"#;

/// Text that trips splitters: runs of blank lines, tabs and information separators (white
/// space to Python, not to Rust), words longer than a chunk, accents, CJK and emoji that a BPE
/// encodes in several tokens, Windows line ends; and for Punkt, initials, numbers,
/// abbreviations, ellipses, quotes closing a sentence and CJK full stops.
const HARD: &str = "# Título\n\n\n\nA rescisão do contrato exige aviso prévio de 30 dias.\tO locatário devolve os sensores.\n\n\u{1c}Seção 2\u{1f}\n\
palavrasemespaçoquepassadotamanhodeumpedaçointeiro e mais\n  \n\n中文文本没有空格也要切分。🙂🙂🙂 end.\r\nLine two?\r\n\r\nWhy! Yes. \
Art. 5º Para os fins desta Lei, considera-se: I - dado pessoal: informação relacionada a pessoa natural identificada.\n\
He said \"Stop.\" Then J. R. Tolkien left at 3 p.m. today... Really?! (It was late.) «Fim.» 第一。第二！ 3. item\n\n\n\n. . . end";

fn python() -> std::path::PathBuf {
    let python = repo().join("models/.venv/bin/python");
    assert!(python.is_file(), "no {}: run scripts/install-models.sh (it makes the test venv)", python.display());
    python
}

/// `ragsweep chunks` (and `--documents`) of an experiment over each corpus, their documents
/// named apart, then scripts/splitter_parity.py once on them all (the libraries take seconds
/// to import): each line of its report, asserted to have no difference.
fn parity(dir: &Path, corpora: &[std::path::PathBuf]) -> Vec<Value> {
    std::fs::write(dir.join("golden.json"), r#"[{"id": "none", "question": "nothing", "answerable": false}]"#).unwrap();
    let (mut all_chunks, mut all_documents) = (String::new(), String::new());
    for (i, corpus) in corpora.iter().enumerate() {
        let exp = dir.join(format!("exp{i}.toml"));
        std::fs::write(
            &exp,
            format!(
                "name = \"splitters\"\nk = [1]\n[corpus]\npath = {:?}\n[golden]\npath = \"golden.json\"\n{CHUNKERS}",
                corpus.display().to_string()
            ),
        )
        .unwrap();
        for (extra, all) in [(None, &mut all_chunks), (Some("--documents"), &mut all_documents)] {
            let out = crate::common::ragsweep().current_dir(dir).arg("chunks").arg(&exp).args(extra).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            for line in String::from_utf8(out.stdout).unwrap().lines() {
                let mut line: Value = serde_json::from_str(line).unwrap();
                line["doc"] = format!("{i}:{}", line["doc"].as_str().unwrap()).into();
                all.push_str(&format!("{line}\n"));
            }
        }
    }
    std::fs::write(dir.join("chunks.jsonl"), all_chunks).unwrap();
    std::fs::write(dir.join("documents.jsonl"), all_documents).unwrap();
    let out = Process::new(python())
        .arg(repo().join("scripts/splitter_parity.py"))
        .arg(dir.join("documents.jsonl"))
        .arg(dir.join("chunks.jsonl"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{report}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> = report.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 16, "one line per chunker: {report}");
    for line in &lines {
        // `repeated` documents are not differences: LlamaIndex sent a chunk again right after
        // itself (its overlap re-adds pieces that strip removes again); a chunk is a place, so
        // ragsweep has it once.
        assert_eq!(line["differ"], 0, "{line}");
        assert!(line["chunks"].as_u64().unwrap() > 0, "{line}");
    }
    lines
}

/// The hard text, the bundled corpus and the statute.
#[test]
fn library_splitters_give_the_libraries_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("hard.md"), HARD).unwrap();
    std::fs::write(docs.join("plain.txt"), HARD.replace('#', "").repeat(3)).unwrap();
    let corpora = [docs, repo().join("corpora/nuvem-verde/docs"), repo().join("../shared/corpora/lgpd/corpus")];
    let lines = parity(dir.path(), &corpora);
    // Some token window of the hard text is cut inside a character (U+FFFD in Python).
    let cut: u64 = lines.iter().map(|l| l["cut_inside_a_char"].as_u64().unwrap()).sum();
    assert!(cut > 0, "the hard text should cut a character somewhere: {lines:?}");
    let documents = lines[0]["documents"].as_u64().unwrap();
    assert_eq!(documents, 2 + 24 + 10, "{lines:?}");
}

const CSV: &str = "question,references,corpus_id\n\
alpha beta gamma,\"[{\"\"content\"\": \"\"alpha beta gamma\"\", \"\"start_index\"\": 23, \"\"end_index\"\": 39}]\",a\n\
delta epsilon,\"[{\"\"content\"\": \"\"epsilon\"\", \"\"start_index\"\": 6, \"\"end_index\"\": 13}]\",b\n";

fn chroma_fixture(csv: &str) -> Fixture {
    let f = Fixture::new(
        // The excerpt of q0 occurs twice in `a`; Chroma places it at the second.
        &[("a.txt", "ação alpha beta gamma. alpha beta gamma."), ("b.txt", "delta epsilon alpha")],
        "[]",
        "name = \"chroma\"\nk = [1, 2]\nunit = \"evidence\"\nlatency_cases = 0\n\
         metrics = [\"recall\", \"tok_iou\", \"tok_precision\", \"tok_recall\"]\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n",
    );
    std::fs::write(f.path().join("golden.csv"), csv).unwrap();
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap().replace("golden.json", "golden.csv");
    std::fs::write(f.path().join("exp.toml"), exp).unwrap();
    f
}

#[test]
fn chroma_questions_are_a_golden_set_and_token_measures_at_k_count_characters_as_chroma_does() {
    let f = chroma_fixture(CSV);
    let run = f.run();
    let lines = crate::common::jsonl(&run.join("per_query.jsonl"));
    let metric = |case: &str, name: &str| -> f64 {
        let line = lines.iter().find(|l| l["case"] == case).unwrap();
        line["metrics"][name].as_f64().unwrap_or_else(|| panic!("{name}: {line}"))
    };
    // q0: only the second "alpha beta gamma" (16 of a's 40 characters) is relevant; at k = 2 b's
    // 19 characters join the context.
    assert_eq!(metric("q0", "tok_recall@1"), 1.0);
    assert_eq!(metric("q0", "tok_precision@1"), 16.0 / 40.0);
    assert_eq!(metric("q0", "tok_iou@1"), 16.0 / 40.0);
    assert_eq!(metric("q0", "tok_precision@2"), 16.0 / 59.0);
    assert_eq!(metric("q0", "tok_iou@2"), 16.0 / 59.0);
    // q1: "epsilon", 7 of b's 19 characters; a does not match the question.
    assert_eq!(metric("q1", "tok_precision@1"), 7.0 / 19.0);
    assert_eq!(metric("q1", "tok_iou@2"), 7.0 / 19.0);
    assert_eq!(metric("q1", "recall@1"), 1.0);
}

#[test]
fn an_excerpt_its_place_does_not_hold_and_bad_splitter_settings_are_located_errors() {
    let f = chroma_fixture(
        &CSV.replace("\"\"start_index\"\": 6, \"\"end_index\"\": 13", "\"\"start_index\"\": 5, \"\"end_index\"\": 12"),
    );
    let out = f.cmd().args(["validate", "exp.toml"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("golden.csv:3") && err.contains("do not hold the evidence text"), "{err}");
    assert!(err.contains("holds \" epsilo\""), "{err}");

    let f = chroma_fixture(CSV);
    for (chunker, wanted) in [
        ("kind = \"langchain_recursive\"\nsize = 10\noverlap = 11", "bad.toml:13:11: `overlap` must not be larger"),
        (
            "kind = \"langchain_recursive\"\nsize = 10\nseparators = \"\\n\"",
            "bad.toml:13:14: `separators` must be a list",
        ),
        ("kind = \"langchain_recursive\"\nsize = 10\nlength = \"words\"", "unknown length \"words\""),
        ("kind = \"chroma_fixed_token\"\nsize = 10\noverlap = 10", "`overlap` must be smaller than `size`"),
        ("kind = \"chroma_fixed_token\"\nsize = 10\nencoding = \"chars\"", "unknown encoding \"chars\""),
        ("kind = \"llamaindex_sentence\"\nsize = 3", "bad.toml:12:8: `size` must be at least 4 tokens"),
        ("kind = \"llamaindex_sentence\"\nsize = 10\noverlap = 11", "bad.toml:13:11: `overlap` must not be larger"),
        (
            "kind = \"llamaindex_sentence\"\nsize = 10\nseparator = \"\"",
            "bad.toml:13:13: `separator` must be a non-empty",
        ),
        ("kind = \"llamaindex_sentence\"\nsize = 10\nencoding = \"chars\"", "unknown encoding \"chars\""),
    ] {
        let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap().replace("kind = \"none\"", chunker);
        std::fs::write(f.path().join("bad.toml"), exp).unwrap();
        let out = f.cmd().args(["validate", "bad.toml"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(wanted), "{chunker}: {err}");
    }
}

/// A team's own chunks (`kind = "brought"`): placed by characters or by text (a repeated text at
/// its next occurrence), indexed and ranked; overlaps, text no chunk holds and documents without
/// chunks said by `validate`; a line that cannot be placed stops it at its line.
#[test]
fn brought_chunks_are_placed_measured_and_their_gaps_said() {
    let chunks = [
        r#"{"doc": "a", "start": 0, "end": 24}"#,
        r#"{"doc": "a", "text": "Segunda parte do texto."}"#,
        r#"{"doc": "b", "text": "Texto repetido."}"#,
        r#"{"doc": "b", "text": "Texto repetido.", "metadata": {"page": 1}}"#,
        r#"{"doc": "a", "text": "parte do texto. Terceira"}"#,
    ];
    let f = Fixture::new(
        &[
            ("a.md", "Primeira parte do texto. Segunda parte do texto. Terceira parte."),
            ("b.md", "Texto repetido. Texto repetido. Fim."),
            ("c.md", "Sem chunks aqui."),
        ],
        r#"[{"id": "q1", "question": "terceira parte", "relevant": ["a"]}]"#,
        "name = \"brought\"\nk = [2]\nlatency_cases = 0\n[[chunkers]]\nkind = \"brought\"\npath = \"chunks.jsonl\"\n\
         [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n",
    );
    std::fs::write(f.path().join("chunks.jsonl"), chunks.join("\n")).unwrap();
    let out = f.cmd().args(["validate", "exp.toml"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("1 overlap the chunk before them (line 5)"), "{said}");
    assert!(said.contains("2 stretches of text no chunk holds (a chars 57..64, b chars 31..36)"), "{said}");
    assert!(said.contains("1 documents without a chunk (c)"), "{said}");

    let listed = f.cmd().args(["chunks", "exp.toml"]).output().unwrap();
    let placed: Vec<(String, u64)> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|c| (c["text"].as_str().unwrap().to_string(), c["char_start"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        placed,
        [
            ("Primeira parte do texto.".to_string(), 0),
            ("Segunda parte do texto.".to_string(), 25),
            ("parte do texto. Terceira".to_string(), 33),
            ("Texto repetido.".to_string(), 0),
            ("Texto repetido.".to_string(), 16),
        ]
    );
    let run = f.run();
    let line = crate::common::jsonl(&run.join("per_query.jsonl")).remove(0);
    assert_eq!(line["hits"][0][0], "a@33-57", "{line}");

    for (bad, wanted) in [
        (r#"{"doc": "zz", "text": "x"}"#, "chunks.jsonl:2: document \"zz\" is not in the corpus"),
        (r#"{"doc": "a", "text": "não está lá"}"#, "chunks.jsonl:2: its text is not in \"a\""),
        (r#"{"doc": "c", "start": 3, "end": 99}"#, "chunks.jsonl:2: characters 3..99 are not a span of \"c\""),
        (r#"{"doc": "c"}"#, "chunks.jsonl:2: a chunk takes `start` and `end`"),
    ] {
        std::fs::write(f.path().join("chunks.jsonl"), format!("{}\n{bad}\n", chunks[0])).unwrap();
        let out = f.cmd().args(["validate", "exp.toml"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(wanted), "{bad}: {err}");
    }
    std::fs::remove_file(f.path().join("chunks.jsonl")).unwrap();
    let out = f.cmd().args(["validate", "exp.toml"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("exp.toml:10:8") && err.contains("chunks.jsonl"), "{err}");
}
