//! `ragsweep init`: a starting experiment for a user's own documents. It reads the corpus
//! (detecting its format), guesses the language for BM25, and writes `experiment.toml` with
//! a small grid and `golden.jsonl` with stub cases spread across documents and sections, for
//! the user to fill with questions typed the way their users type them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::analyze::AnalyzerKind;
use crate::error::{Error, Result};
use crate::input::corpus::Corpus;

/// Stub cases written, of which this many are unanswerable.
pub const STUBS: usize = 30;
pub const UNANSWERABLE_STUBS: usize = 4;

const PT_WORDS: [&str; 12] = ["de", "que", "não", "para", "com", "uma", "os", "do", "da", "em", "é", "são"];
const EN_WORDS: [&str; 12] = ["the", "of", "and", "to", "is", "in", "that", "for", "with", "are", "this", "be"];

/// Portuguese or English, by which language's common words the corpus uses more.
pub fn language(corpus: &Corpus) -> AnalyzerKind {
    let (mut pt, mut en) = (0usize, 0usize);
    for doc in corpus.docs.iter().take(500) {
        for word in doc.text.split(|c: char| !c.is_alphanumeric()).take(2000) {
            let w = word.to_lowercase();
            pt += usize::from(PT_WORDS.contains(&w.as_str()));
            en += usize::from(EN_WORDS.contains(&w.as_str()));
        }
    }
    if pt > en {
        AnalyzerKind::Pt
    } else {
        AnalyzerKind::En
    }
}

/// What `init` wrote and found.
pub struct Initialised {
    pub experiment: PathBuf,
    pub golden: PathBuf,
    pub documents: usize,
    pub sections: usize,
    pub language: AnalyzerKind,
    pub stubs: usize,
    /// What was read per format and what was skipped.
    pub read: String,
    /// Metadata keys the documents carry (front matter and fields kept as meta), with counts.
    pub metadata: Vec<(String, usize)>,
    /// Sections left without a stub: too short to hold an answer, or a list of links.
    pub skipped_sections: usize,
}

fn snippet(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = flat.chars().take(160).collect();
    if flat.chars().count() > 160 {
        out.push('…');
    }
    out
}

/// Writes `experiment.toml` and `golden.jsonl` into `out` for the corpus at `corpus_path`;
/// never overwrites a file.
pub fn init(corpus_path: &Path, out: &Path) -> Result<Initialised> {
    let corpus = Corpus::load(corpus_path, None, &crate::input::access_key::AccessKey::default())?;
    let experiment = out.join("experiment.toml");
    let golden = out.join("golden.jsonl");
    for f in [&experiment, &golden] {
        if f.exists() {
            return Err(Error::Other(format!(
                "{} exists: init never overwrites (remove it or pick another folder)",
                f.display()
            )));
        }
    }
    let sections: usize = corpus.docs.iter().map(|d| d.sections.len()).sum();
    let by_section = sections >= corpus.docs.len();
    // Sections that can hold an answer: enough words of their own, not a table of contents.
    // When too few sections are that long, short ones (not link lists) are labelled too.
    let wanted = STUBS - UNANSWERABLE_STUBS;
    let pick = |min_words: usize| -> Vec<Vec<usize>> {
        let doc_sections = |d: &crate::input::corpus::Document| -> Vec<usize> {
            (0..d.sections.len()).filter(|&i| answerable_section(d, i, min_words)).collect()
        };
        corpus.docs.iter().map(doc_sections).collect()
    };
    let mut usable = pick(MIN_STUB_WORDS);
    if usable.iter().map(Vec::len).sum::<usize>() < wanted {
        usable = pick(0);
    }
    let skipped = sections - usable.iter().map(Vec::len).sum::<usize>();
    let lang = language(&corpus);
    // Labels spread across the corpus: every document's first section (or the document,
    // without headings) in turn, then every document's second section, and so on; with more
    // documents than stubs, evenly spaced documents.
    let target = |d: usize, r: usize| -> Option<(String, String)> {
        let doc = &corpus.docs[d];
        if by_section {
            usable[d].get(r).map(|&i| {
                let s = &doc.sections[i];
                (s.id.clone(), snippet(&doc.text[s.start..s.end]))
            })
        } else {
            (r == 0).then(|| (doc.id.clone(), snippet(&doc.text)))
        }
    };
    let n = corpus.docs.len();
    let targets: Vec<(String, String)> = if n >= wanted {
        (0..wanted).filter_map(|i| target(i * n / wanted, 0).or_else(|| target(i * n / wanted, 1))).collect()
    } else {
        let rounds = usable.iter().map(|u| u.len().max(1)).max().unwrap_or(1);
        (0..rounds).flat_map(|r| (0..n).map(move |d| (d, r))).filter_map(|(d, r)| target(d, r)).take(wanted).collect()
    };
    let mut lines = String::new();
    for (i, (label, text)) in targets.iter().enumerate() {
        let case = json!({"id": format!("q{:02}", i + 1), "question": "", "relevant": [label],
            "label_hash": corpus.label_hash(label), "meta": {"snippet": text}});
        let _ = writeln!(lines, "{case}");
    }
    for i in 0..UNANSWERABLE_STUBS {
        let case = json!({"id": format!("u{:02}", i + 1), "question": "", "answerable": false,
            "meta": {"hint": "a question your users ask that these documents do not answer"}});
        let _ = writeln!(lines, "{case}");
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let corpus_ref = pathdiff(corpus_path, out);
    let unit = if by_section { "section" } else { "doc" };
    let chunker = if by_section {
        "[[chunkers]]\nkind = \"markdown\"\ntitle = true\nheadings = true\n\n[[chunkers]]\nkind = \"recursive\"\nsize = 800\noverlap = 100\ntitle = true\n"
    } else {
        "[[chunkers]]\nkind = \"none\"\ntitle = true\n\n[[chunkers]]\nkind = \"recursive\"\nsize = 800\noverlap = 100\ntitle = true\n"
    };
    let analyzer = match lang {
        AnalyzerKind::Pt => "pt",
        _ => "en",
    };
    let toml = format!(
        "# Written by `ragsweep init` for {corpus} ({docs} documents, {sections} sections).\n\
         # Fill golden.jsonl with questions, then: ragsweep validate experiment.toml && ragsweep run experiment.toml\n\
         name = \"my-retrieval\"\nunit = \"{unit}\"\nk = [1, 3, 5, 10]\nselect = \"ndcg@10\"\nreserved_fraction = 0.3\n\n\
         [corpus]\npath = {corpus_toml}\n\n[golden]\npath = \"golden.jsonl\"\n\n{chunker}\n\
         [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"{analyzer}\"\n\n\
         [[retrievers]]\nkind = \"dense\"\nmodel = \"e5-small\"\n\n\
         [[retrievers]]\nkind = \"hybrid\"\nanalyzer = \"{analyzer}\"\nmodel = \"e5-small\"\nfusion = \"rrf\"\n",
        corpus = corpus_path.display(),
        docs = corpus.docs.len(),
        corpus_toml = toml::Value::String(corpus_ref.display().to_string()),
    );
    crate::atomic::write_atomic(&experiment, toml.as_bytes())?;
    crate::atomic::write_atomic(&golden, lines.as_bytes())?;
    Ok(Initialised {
        experiment,
        golden,
        documents: corpus.docs.len(),
        sections,
        language: lang,
        stubs: targets.len() + UNANSWERABLE_STUBS,
        read: corpus.report.summary(),
        metadata: {
            let mut keys: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
            for k in corpus.docs.iter().flat_map(|d| d.meta.keys()) {
                *keys.entry(k.clone()).or_insert(0) += 1;
            }
            keys.into_iter().collect()
        },
        skipped_sections: if by_section { skipped } else { 0 },
    })
}

/// Words a section needs of its own text (to its first subsection) to be a stub's label.
pub const MIN_STUB_WORDS: usize = 30;

/// Whether section `i` of `doc` can hold an answer: at least `min_words` words before its
/// first subsection, and not mostly links (a table of contents, a link list).
fn answerable_section(doc: &crate::input::corpus::Document, i: usize, min_words: usize) -> bool {
    let s = &doc.sections[i];
    // Its own text runs to the first heading after its start (a PDF lists its pages after its
    // headings, so the next section in the list can start earlier).
    let own_end = doc
        .sections
        .iter()
        .filter(|n| !n.page && n.start > s.start)
        .map(|n| n.start)
        .min()
        .map_or(s.end, |next| next.min(s.end))
        .max(s.start);
    let own = &doc.text[s.start..own_end];
    let body: Vec<&str> = own.lines().skip(1).filter(|l| !l.trim().is_empty()).collect();
    let links =
        body.iter().filter(|l| l.contains("](") || l.trim_start().starts_with(['-', '*']) && l.contains('[')).count();
    let words = own.split_whitespace().count();
    words >= min_words && links * 2 <= body.len()
}

/// `path` as seen from `base` (absolute when they share nothing).
fn pathdiff(path: &Path, base: &Path) -> PathBuf {
    match (path.canonicalize(), base.canonicalize()) {
        (Ok(p), Ok(b)) => {
            let common = p.components().zip(b.components()).take_while(|(x, y)| x == y).count();
            if common <= 1 {
                return p;
            }
            let mut rel = PathBuf::new();
            for _ in b.components().skip(common) {
                rel.push("..");
            }
            for c in p.components().skip(common) {
                rel.push(c);
            }
            rel
        }
        _ => path.to_path_buf(),
    }
}

/// The guide printed after `init`.
pub fn guide(i: &Initialised) -> String {
    format!(
        "{}\ndocument metadata (front matter and fields kept as meta): {}\nwrote {} and {} ({} stubs) for {} documents ({} sections, {} without a stub: link lists, or under {MIN_STUB_WORDS} words of their own when longer ones sufficed), BM25 analyzer {}\n\n\
         Next:\n\
         1. Fill each stub's \"question\" in golden.jsonl. Write it the way your users type it (short, misspelt,\n\
         \x20  without the document's words), not the way the document phrases it. Its label says where the\n\
         \x20  answer is (meta.snippet shows the text); keep it, or point it at the right section.\n\
         2. The u* stubs are unanswerable: questions users ask that your documents do not answer. They measure\n\
         \x20  whether retrieval (and your model) knows when to say nothing.\n\
         3. Why 30: below about 30 answerable cases a mean's 95% interval is wider than ±0.18, too wide to\n\
         \x20  tell configurations apart; add more where you can (see `ragsweep plan` after a first run).\n\
         4. ragsweep validate experiment.toml   (it lists the stubs still empty)\n\
         5. ragsweep run experiment.toml\n",
        i.read,
        if i.metadata.is_empty() {
            "none".to_string()
        } else {
            i.metadata.iter().map(|(k, n)| format!("{k} ×{n}")).collect::<Vec<_>>().join(", ")
        },
        i.experiment.display(),
        i.golden.display(),
        i.stubs,
        i.documents,
        i.sections,
        i.skipped_sections,
        i.language
    )
}

/// A document or section id a label may name, for `ragsweep sections`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SectionEntry {
    pub id: String,
    pub doc: String,
    /// Cost-tokenizer tokens of its text.
    pub tokens: usize,
    pub first_words: String,
    pub label_hash: String,
}

/// Every document and its sections, in corpus order, each with its size and first words;
/// with `grep`, those whose id or text contains it (any case).
/// A `sections --grep` pattern: any case, as whole words unless `whole_words` is false.
pub struct Grep {
    pub pattern: String,
    pub whole_words: bool,
}

impl Grep {
    /// Whether `text` holds the pattern (any case), bounded by non-alphanumeric characters or
    /// the text's ends when whole words are asked for.
    pub fn finds(&self, text: &str) -> bool {
        let (text, pattern) = (text.to_lowercase(), self.pattern.to_lowercase());
        if pattern.is_empty() {
            return true;
        }
        text.match_indices(pattern.as_str()).any(|(at, found)| {
            !self.whole_words || {
                let before = text[..at].chars().next_back();
                let after = text[at + found.len()..].chars().next();
                let edge = |c: Option<char>, inner: Option<char>| {
                    c.is_none_or(|c| !c.is_alphanumeric()) || inner.is_none_or(|i| !i.is_alphanumeric())
                };
                edge(before, pattern.chars().next()) && edge(after, pattern.chars().next_back())
            }
        })
    }
}

pub fn sections(
    corpus: &Corpus,
    counter: &crate::stages::cost::Counter,
    grep: Option<&Grep>,
) -> Result<Vec<SectionEntry>> {
    let mut out = Vec::new();
    for id in corpus.label_ids() {
        let text = corpus.label_text(id).unwrap_or("");
        if let Some(g) = grep {
            // A document's entry is found by its indexed description too.
            let summary = corpus.doc_index(id).and_then(|d| corpus.summary(&corpus.docs[d])).unwrap_or("");
            if ![id, text, summary].iter().any(|s| g.finds(s)) {
                continue;
            }
        }
        let first: String = text.split_whitespace().take(12).collect::<Vec<_>>().join(" ");
        out.push(SectionEntry {
            id: id.to_string(),
            doc: id.split('#').next().unwrap_or(id).to_string(),
            tokens: counter.count(&[text.to_string()])?[0] as usize,
            first_words: first,
            label_hash: corpus.label_hash(id).unwrap_or_default(),
        });
    }
    Ok(out)
}
