//! Chunkers: each turns a document into spans `[start, end)` with stable ids `DOC@start-end`.
//!
//! A chunk is only a span of its document; the text indexed for it may add a prefix
//! (title, heading path). Chunk sets are sorted by id, so a chunk's ordinal order is its
//! id order and ties in score break by id for free (SPEC §3).

use std::fmt;
use std::fs;
use std::ops::Range;
use std::path::Path;

use crate::error::{Error, Result};
use crate::input::corpus::Corpus;
pub use crate::vocab::{ChunkerKind, ChunkerSpec};

impl fmt::Display for ChunkerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ChunkerKind::None => write!(f, "none")?,
            ChunkerKind::Fixed { size, overlap } => write!(f, "fixed({size},{overlap})")?,
            ChunkerKind::Sentence { max_chars, overlap } => write!(f, "sentence({max_chars},{overlap})")?,
            ChunkerKind::Recursive { size, overlap } => write!(f, "recursive({size},{overlap})")?,
            ChunkerKind::Markdown { max_chars: None } => write!(f, "markdown")?,
            ChunkerKind::Markdown { max_chars: Some(m) } => write!(f, "markdown({m})")?,
        }
        if self.title {
            write!(f, "+title")?;
        }
        if self.headings {
            write!(f, "+headings")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub id: String,
    pub doc: u32,
    pub start: u32,
    pub end: u32,
}

impl Chunk {
    pub fn span(&self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// All chunks of a corpus under one chunker, sorted by id.
#[derive(Debug)]
pub struct ChunkSet {
    pub spec: ChunkerSpec,
    pub chunks: Vec<Chunk>,
    /// Per chunk, the prefix added to its indexed text (empty when none).
    prefixes: Vec<String>,
}

const CHUNKS_FILE: &str = "chunks.json";

impl ChunkSet {
    pub fn build(corpus: &Corpus, spec: &ChunkerSpec) -> ChunkSet {
        let mut rows: Vec<(Chunk, String)> = Vec::new();
        for (d, doc) in corpus.docs.iter().enumerate() {
            // The document's own headings, whatever its format (HTML h1–h6, DOCX heading styles,
            // PDF headings by font size, reST titles, Markdown): the section chunker splits where
            // `ragsweep sections` lists a section, in every format.
            let headings: Vec<(usize, u8, &str)> = if spec.headings || matches!(spec.kind, ChunkerKind::Markdown { .. })
            {
                doc.sections.iter().filter(|s| !s.page).map(|s| (s.start, s.level, s.label.as_str())).collect()
            } else {
                Vec::new()
            };
            let mut enclosing = HeadingPath::new(&headings);
            for span in spans(&spec.kind, &doc.text, &headings) {
                let mut prefix = String::new();
                if spec.title {
                    if let Some(t) = &doc.title {
                        prefix.push_str(t);
                    }
                    // A page's description (front matter) is indexed with its title.
                    if let Some(summary) = corpus.summary(doc) {
                        if !prefix.is_empty() {
                            prefix.push_str(" — ");
                        }
                        prefix.push_str(summary);
                    }
                }
                if spec.headings {
                    let path = enclosing.at(span.start);
                    if !path.is_empty() {
                        if !prefix.is_empty() {
                            prefix.push_str(" > ");
                        }
                        prefix.push_str(&path);
                    }
                }
                let id = format!("{}@{}-{}", doc.id, span.start, span.end);
                rows.push((Chunk { id, doc: d as u32, start: span.start as u32, end: span.end as u32 }, prefix));
            }
        }
        rows.sort_by(|a, b| a.0.id.cmp(&b.0.id));
        rows.dedup_by(|a, b| a.0.id == b.0.id);
        let (chunks, prefixes) = rows.into_iter().unzip();
        ChunkSet { spec: spec.clone(), chunks, prefixes }
    }

    /// Writes the set's chunks into `dir` (for [`ChunkSet::open`]).
    pub fn write(&self, dir: &Path) -> Result<()> {
        let rows: Vec<(&str, u32, u32, u32, &str)> = self
            .chunks
            .iter()
            .zip(&self.prefixes)
            .map(|(c, p)| (c.id.as_str(), c.doc, c.start, c.end, p.as_str()))
            .collect();
        let path = dir.join(CHUNKS_FILE);
        fs::write(&path, serde_json::to_vec(&rows).expect("serializable")).map_err(|e| Error::io(&path, e))
    }

    /// Reads a set written by [`ChunkSet::write`] for the same corpus and spec.
    pub fn open(dir: &Path, spec: &ChunkerSpec) -> Result<ChunkSet> {
        let path = dir.join(CHUNKS_FILE);
        let bytes = fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let rows: Vec<(String, u32, u32, u32, String)> =
            serde_json::from_slice(&bytes).map_err(|e| Error::Other(format!("{}: {e}", path.display())))?;
        let (chunks, prefixes) =
            rows.into_iter().map(|(id, doc, start, end, prefix)| (Chunk { id, doc, start, end }, prefix)).unzip();
        Ok(ChunkSet { spec: spec.clone(), chunks, prefixes })
    }

    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// The chunk's own text: a span of its document.
    pub fn text<'c>(&self, corpus: &'c Corpus, ord: usize) -> &'c str {
        let c = &self.chunks[ord];
        &corpus.docs[c.doc as usize].text[c.span()]
    }

    /// The text indexed for the chunk: its prefix (if any), a blank, its span.
    pub fn indexed_text(&self, corpus: &Corpus, ord: usize) -> String {
        let text = self.text(corpus, ord);
        let prefix = &self.prefixes[ord];
        if prefix.is_empty() {
            text.to_string()
        } else {
            format!("{prefix} {text}")
        }
    }
}

/// The chain of headings that enclose a byte, walked forward: asked at ascending offsets (as
/// spans come) each heading is pushed once, so a document of n headings costs O(n), not
/// O(n) per span; an offset before the last one asked starts the walk again.
struct HeadingPath<'h> {
    headings: &'h [(usize, u8, &'h str)],
    next: usize,
    stack: Vec<(u8, &'h str)>,
    last: usize,
}

impl<'h> HeadingPath<'h> {
    fn new(headings: &'h [(usize, u8, &'h str)]) -> Self {
        HeadingPath { headings, next: 0, stack: Vec::new(), last: 0 }
    }

    /// The headings that enclose byte `at`, joined by " > ".
    fn at(&mut self, at: usize) -> String {
        if at < self.last {
            (self.next, self.last) = (0, 0);
            self.stack.clear();
        }
        self.last = at;
        while let Some(&(_, level, label)) = self.headings.get(self.next).filter(|h| h.0 <= at) {
            while self.stack.last().is_some_and(|&(l, _)| l >= level) {
                self.stack.pop();
            }
            self.stack.push((level, label));
            self.next += 1;
        }
        self.stack.iter().map(|(_, l)| *l).collect::<Vec<_>>().join(" > ")
    }
}

fn spans(kind: &ChunkerKind, text: &str, headings: &[(usize, u8, &str)]) -> Vec<Range<usize>> {
    let whole = 0..text.len();
    let out = match *kind {
        ChunkerKind::None => vec![whole],
        ChunkerKind::Fixed { size, overlap } => fixed(text, whole, size, overlap),
        ChunkerKind::Sentence { max_chars, overlap } => by_sentences(text, max_chars, overlap),
        ChunkerKind::Recursive { size, overlap } => recursive(text, whole, size, overlap),
        ChunkerKind::Markdown { max_chars } => {
            let mut starts: Vec<usize> = headings.iter().map(|h| h.0).collect();
            if starts.first() != Some(&0) {
                starts.insert(0, 0);
            }
            let mut out = Vec::new();
            for (i, &s) in starts.iter().enumerate() {
                let e = starts.get(i + 1).copied().unwrap_or(text.len());
                match max_chars {
                    Some(m) if text[s..e].chars().count() > m => out.extend(recursive(text, s..e, m, 0)),
                    _ => out.push(s..e),
                }
            }
            out
        }
    };
    out.into_iter().map(|r| trim_span(text, r)).filter(|r| !r.is_empty()).collect()
}

/// Shrinks a span so it starts and ends on non-white-space.
fn trim_span(text: &str, r: Range<usize>) -> Range<usize> {
    let s = &text[r.clone()];
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    if lead == s.len() {
        return r.start..r.start;
    }
    r.start + lead..r.end - trail
}

/// Byte offsets of every char boundary in `range`, plus its end.
fn char_offsets(text: &str, range: Range<usize>) -> Vec<usize> {
    let mut v: Vec<usize> = text[range.clone()].char_indices().map(|(i, _)| range.start + i).collect();
    v.push(range.end);
    v
}

fn fixed(text: &str, range: Range<usize>, size: usize, overlap: usize) -> Vec<Range<usize>> {
    let offsets = char_offsets(text, range);
    let n = offsets.len() - 1;
    let step = size.saturating_sub(overlap).max(1);
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let j = (i + size).min(n);
        out.push(offsets[i]..offsets[j]);
        if j == n {
            break;
        }
        i += step;
    }
    out
}

/// Words that end with a period without ending a sentence (compared lowercased).
const ABBREVIATIONS: &[&str] = &[
    "adm", "al", "ap", "apto", "art", "arts", "av", "cap", "cf", "cia", "co", "corp", "dep", "dr", "dra", "dras",
    "drs", "e.g", "ed", "eng", "etc", "ex", "exa", "exmo", "fig", "figs", "i.e", "inc", "jr", "lt", "ltd", "ltda",
    "me", "min", "mr", "mrs", "ms", "n", "no", "nº", "obs", "op", "p", "pag", "pg", "pp", "pág", "prof", "profa",
    "publ", "r", "ref", "rev", "s.a", "sec", "sr", "sra", "srs", "sta", "sto", "st", "tel", "v", "vol", "vs",
];

/// Sentence spans of `text`: ends at `.`, `!`, `?` or `…` (plus closing quotes or brackets)
/// followed by white space, unless the word before a `.` is an abbreviation or an initial;
/// a blank line always ends a sentence.
pub fn sentences(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let mut end = None;
        if matches!(c, '.' | '!' | '?' | '…') {
            let mut j = i + c.len_utf8();
            while let Some(&(k, d)) = iter.peek() {
                if matches!(d, '.' | '!' | '?' | '…' | '"' | '\'' | ')' | ']' | '»' | '”' | '’') {
                    j = k + d.len_utf8();
                    iter.next();
                } else {
                    break;
                }
            }
            let followed_by_space = j == text.len() || text[j..].starts_with(char::is_whitespace);
            if followed_by_space && !(c == '.' && is_abbreviation(&text[start..i])) {
                end = Some(j);
            }
        } else if c == '\n' && bytes.get(i + 1) == Some(&b'\n') {
            end = Some(i);
        }
        if let Some(e) = end {
            let r = trim_span(text, start..e);
            if !r.is_empty() {
                out.push(r);
            }
            start = e;
        }
    }
    let r = trim_span(text, start..text.len());
    if !r.is_empty() {
        out.push(r);
    }
    out
}

fn is_abbreviation(before: &str) -> bool {
    let word = before.rsplit(|c: char| c.is_whitespace() || c == '(' || c == '"').next().unwrap_or("");
    if word.is_empty() {
        return false;
    }
    let lower = word.to_lowercase();
    let mut chars = word.chars();
    let single_upper = matches!((chars.next(), chars.next()), (Some(c), None) if c.is_uppercase());
    single_upper || ABBREVIATIONS.contains(&lower.as_str())
}

fn by_sentences(text: &str, max_chars: usize, overlap: usize) -> Vec<Range<usize>> {
    let mut units: Vec<Range<usize>> = Vec::new();
    for s in sentences(text) {
        if text[s.clone()].chars().count() > max_chars {
            units.extend(fixed(text, s, max_chars, 0));
        } else {
            units.push(s);
        }
    }
    let chars = |r: Range<usize>| text[r].chars().count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < units.len() {
        let mut j = i + 1;
        while j < units.len() && chars(units[i].start..units[j].end) <= max_chars {
            j += 1;
        }
        out.push(units[i].start..units[j - 1].end);
        if j == units.len() {
            break;
        }
        // Repeat up to `overlap` sentences, but never so many that no new one fits.
        i = j.saturating_sub(overlap).max(i + 1);
        while i < j && chars(units[i].start..units[j].end) > max_chars {
            i += 1;
        }
    }
    out
}

#[derive(Clone, Copy)]
enum Separator {
    Str(&'static str),
    Sentence,
}

const SEPARATORS: &[Separator] =
    &[Separator::Str("\n\n"), Separator::Str("\n"), Separator::Sentence, Separator::Str(" ")];

/// Splits `range` at the coarsest separator that occurs in it; pieces that fit are merged
/// with their siblings, pieces that do not are split again at the next separator.
fn recursive_at(text: &str, range: Range<usize>, size: usize, overlap: usize, level: usize) -> Vec<Range<usize>> {
    if text[range.clone()].chars().count() <= size {
        return vec![range];
    }
    let Some(sep) = SEPARATORS.get(level) else {
        return fixed(text, range, size, overlap.min(size / 2));
    };
    let mut cuts: Vec<usize> = match sep {
        Separator::Str(s) => text[range.clone()].match_indices(s).map(|(i, m)| range.start + i + m.len()).collect(),
        Separator::Sentence => {
            sentences(&text[range.clone()]).into_iter().skip(1).map(|r| range.start + r.start).collect()
        }
    };
    cuts.retain(|&c| c > range.start && c < range.end);
    cuts.push(range.end);
    let mut out = Vec::new();
    let mut fitting: Vec<Range<usize>> = Vec::new();
    let mut start = range.start;
    for cut in cuts {
        let piece = start..cut;
        start = cut;
        if text[piece.clone()].chars().count() <= size {
            fitting.push(piece);
        } else {
            out.extend(merge(text, &fitting, size, overlap));
            fitting.clear();
            out.extend(recursive_at(text, piece, size, overlap, level + 1));
        }
    }
    out.extend(merge(text, &fitting, size, overlap));
    out
}

/// Greedily joins contiguous pieces into spans of at most `size` chars, each next span
/// starting early enough to repeat up to `overlap` chars of the previous one.
fn merge(text: &str, parts: &[Range<usize>], size: usize, overlap: usize) -> Vec<Range<usize>> {
    let chars = |r: Range<usize>| text[r].chars().count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < parts.len() {
        let mut j = i + 1;
        while j < parts.len() && chars(parts[i].start..parts[j].end) <= size {
            j += 1;
        }
        out.push(parts[i].start..parts[j - 1].end);
        if j == parts.len() {
            break;
        }
        let mut k = j;
        while k > i + 1
            && chars(parts[k - 1].start..parts[j - 1].end) <= overlap
            && chars(parts[k - 1].start..parts[j].end) <= size
        {
            k -= 1;
        }
        i = k;
    }
    out
}

fn recursive(text: &str, range: Range<usize>, size: usize, overlap: usize) -> Vec<Range<usize>> {
    recursive_at(text, range, size, overlap, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::corpus::{Corpus, Document};

    use crate::input::corpus::markdown_headings;

    fn texts(kind: ChunkerKind, text: &str) -> Vec<String> {
        spans(&kind, text, &markdown_headings(text)).into_iter().map(|r| text[r].to_string()).collect()
    }

    #[test]
    fn abbreviations_do_not_end_sentences() {
        let t = "Conforme o Art. 5 da lei, o Dr. Silva decidiu. Veja p. ex. o anexo! Fim? Sim.";
        let s: Vec<_> = sentences(t).into_iter().map(|r| &t[r]).collect();
        assert_eq!(s, ["Conforme o Art. 5 da lei, o Dr. Silva decidiu.", "Veja p. ex. o anexo!", "Fim?", "Sim."]);
    }

    #[test]
    fn decimals_and_initials_stay_inside_sentences() {
        let t = "J. Smith measured 3.5 mg. Then it rose.";
        let s: Vec<_> = sentences(t).into_iter().map(|r| &t[r]).collect();
        assert_eq!(s, ["J. Smith measured 3.5 mg.", "Then it rose."]);
    }

    #[test]
    fn fixed_windows_count_chars_not_bytes() {
        assert_eq!(texts(ChunkerKind::Fixed { size: 4, overlap: 1 }, "açãoxyz"), ["ação", "oxyz"]);
    }

    #[test]
    fn sentence_chunks_overlap_in_whole_sentences() {
        let t = "Um dois. Três quatro. Cinco seis. Sete.";
        let c = texts(ChunkerKind::Sentence { max_chars: 24, overlap: 1 }, t);
        assert_eq!(c, ["Um dois. Três quatro.", "Três quatro. Cinco seis.", "Cinco seis. Sete."]);
        // When the repeated sentence leaves no room for a new one, it is not repeated.
        let c = texts(ChunkerKind::Sentence { max_chars: 22, overlap: 1 }, t);
        assert_eq!(c, ["Um dois. Três quatro.", "Cinco seis. Sete."]);
    }

    #[test]
    fn recursive_prefers_paragraphs_and_respects_size() {
        let t = "Primeiro parágrafo curto.\n\nSegundo parágrafo, um pouco maior que o primeiro.\n\nTerceiro.";
        let c = texts(ChunkerKind::Recursive { size: 40, overlap: 0 }, t);
        assert_eq!(c[0], "Primeiro parágrafo curto.");
        assert!(c.iter().all(|s| s.chars().count() <= 40), "{c:?}");
        let joined: String = c.join(" ");
        assert!(joined.contains("Terceiro."));
    }

    #[test]
    fn markdown_splits_on_every_heading() {
        let t = "intro\n# A\na\n## A.1\nb\n# B\nc";
        assert_eq!(texts(ChunkerKind::Markdown { max_chars: None }, t), ["intro", "# A\na", "## A.1\nb", "# B\nc"]);
    }

    #[test]
    fn ids_are_stable_sorted_spans_with_prefixes() {
        let doc = Document {
            id: "d".into(),
            title: Some("Título".into()),
            text: "# A\nx\n## B\ny\n".into(),
            meta: Default::default(),
            acl: None,
            sections: crate::input::corpus::markdown_sections("d", "# A\nx\n## B\ny\n"),
        };
        let corpus = Corpus::from_docs(vec![doc], "mem".into()).unwrap();
        let spec = ChunkerSpec { kind: ChunkerKind::Markdown { max_chars: None }, title: true, headings: true };
        let set = ChunkSet::build(&corpus, &spec);
        let ids: Vec<_> = set.chunks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["d@0-5", "d@6-12"]);
        assert_eq!(set.indexed_text(&corpus, 1), "Título > A > B ## B\ny");
        assert_eq!(ChunkSet::build(&corpus, &spec).chunks, set.chunks);
    }
}
