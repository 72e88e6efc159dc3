//! Chunk sets: a chunker's spans of every document (`crate::chunkers` makes them), with stable
//! ids `DOC@start-end`.
//!
//! A chunk is only a span of its document; the text indexed for it may add a prefix
//! (title, heading path). Chunk sets are sorted by id, so a chunk's ordinal order is its
//! id order and ties in score break by id for free (SPEC §3).

use std::fs;
use std::ops::Range;
use std::path::Path;

pub use crate::chunkers::ChunkerSpec;
use crate::error::{Error, Result};
use crate::input::corpus::Corpus;

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

/// The spans of a document: its index, text and headings (start, level, label).
type SpansOf<'a> = dyn Fn(usize, &str, &[(usize, u8, &str)]) -> Vec<std::ops::Range<usize>> + 'a;

impl ChunkSet {
    pub fn build(corpus: &Corpus, spec: &ChunkerSpec) -> ChunkSet {
        ChunkSet::assemble(corpus, spec, &|_, text, headings| spec.kind.spans(text, headings))
    }

    /// The chunk set of a team's own chunks (`brought`), and what placing them found (overlaps,
    /// gaps, documents without chunks) when there is something to say.
    pub fn from_brought(corpus: &Corpus, spec: &ChunkerSpec) -> Result<(ChunkSet, Option<String>)> {
        let brought = spec.kind.brought().expect("a brought chunker");
        let texts: Vec<&str> = corpus.docs.iter().map(|d| d.text.as_str()).collect();
        let placed = brought.place(&|id| corpus.doc_index(id), &texts)?;
        let mut by_doc: Vec<Vec<std::ops::Range<usize>>> = vec![Vec::new(); corpus.docs.len()];
        for (d, span, _) in &placed.chunks {
            by_doc[*d].push(span.clone());
        }
        let set = ChunkSet::assemble(corpus, spec, &|d, _, _| by_doc[d].clone());
        Ok((set, placed.note(&|d| corpus.docs[d].id.clone())))
    }

    /// The chunk set of `spec` made here, its own chunks or a team's (`brought`).
    pub fn made(corpus: &Corpus, spec: &ChunkerSpec) -> Result<ChunkSet> {
        match spec.kind.brought() {
            Some(_) => Ok(ChunkSet::from_brought(corpus, spec)?.0),
            None => Ok(ChunkSet::build(corpus, spec)),
        }
    }

    /// The set of the spans `spans(doc, text, headings)` gives each document, with the prefixes
    /// the spec asks for; ordered by id, each span once.
    fn assemble(corpus: &Corpus, spec: &ChunkerSpec, spans: &SpansOf<'_>) -> ChunkSet {
        let mut rows: Vec<(Chunk, String)> = Vec::new();
        for (d, doc) in corpus.docs.iter().enumerate() {
            // The document's own headings, whatever its format (HTML h1–h6, DOCX heading styles,
            // PDF headings by font size, reST titles, Markdown): the section chunker splits where
            // `ragsweep sections` lists a section, in every format.
            let headings: Vec<(usize, u8, &str)> = if spec.headings || spec.kind.splits_at_headings() {
                doc.sections.iter().filter(|s| !s.page).map(|s| (s.start, s.level, s.label.as_str())).collect()
            } else {
                Vec::new()
            };
            let mut enclosing = HeadingPath::new(&headings);
            for span in spans(d, &doc.text, &headings) {
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

    /// The chunk set of a served index from its rows (document id, text): one chunk per
    /// distinct place a row's text is found in its document, and how many rows were not found
    /// (each then its whole document, when the rows say so). A row whose document is not in the
    /// corpus, or (otherwise) whose text is not in it, is an error that names the first few.
    pub fn from_rows(corpus: &Corpus, spec: &ChunkerSpec, rows: &[(String, String)]) -> Result<(ChunkSet, usize)> {
        let whole_when_not_found = spec.kind.served().is_some_and(|r| r.whole_document_when_not_found);
        use crate::chunkers::served::{locate, Collapsed};
        let mut collapsed: std::collections::HashMap<usize, Collapsed> = std::collections::HashMap::new();
        let mut chunks = Vec::with_capacity(rows.len());
        let mut unknown: Vec<&str> = Vec::new();
        let mut unlocated: Vec<String> = Vec::new();
        let mut whole = 0;
        for (id, text) in rows {
            let Some(d) = corpus.doc_index(id) else {
                unknown.push(id);
                continue;
            };
            let doc = &corpus.docs[d].text;
            let c = collapsed.entry(d).or_insert_with(|| Collapsed::of(doc));
            let span = match locate(doc, c, text) {
                Some(span) => span,
                None if whole_when_not_found => {
                    whole += 1;
                    0..doc.len()
                }
                None => {
                    unlocated.push(format!("{id} ({:?})", crate::words::clip(text, 60)));
                    continue;
                }
            };
            chunks.push(Chunk {
                id: format!("{id}@{}-{}", span.start, span.end),
                doc: d as u32,
                start: span.start as u32,
                end: span.end as u32,
            });
        }
        let source = spec.kind.served().map_or_else(String::new, |r| format!("{} {}", r.engine, r.source));
        let listed = |items: &[String]| crate::words::first_of(items, 3);
        if !unknown.is_empty() {
            let ids: Vec<String> = unknown.iter().map(|s| s.to_string()).collect();
            return Err(Error::NotFound(format!(
                "{source}: {} of {} rows name a document the corpus does not have: {}; the id field must hold the corpus's document ids",
                unknown.len(),
                rows.len(),
                listed(&ids)
            )));
        }
        if !unlocated.is_empty() {
            return Err(Error::NotFound(format!(
                "{source}: {} of {} rows hold text that is not in their document as the corpus reads it: {}; a row that cannot be placed cannot be judged (with unit = \"doc\", unplaced = \"document\" counts each as its whole document)",
                unlocated.len(),
                rows.len(),
                listed(&unlocated)
            )));
        }
        chunks.sort_by(|a, b| a.id.cmp(&b.id));
        chunks.dedup_by(|a, b| a.id == b.id);
        let prefixes = vec![String::new(); chunks.len()];
        Ok((ChunkSet { spec: spec.clone(), chunks, prefixes }, whole))
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
        let bytes = crate::input::text::read_bytes(&path, u64::MAX)?;
        let rows: Vec<(String, u32, u32, u32, String)> =
            serde_json::from_slice(&bytes).map_err(|e| Error::Damaged(format!("{}: {e}", path.display())))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunkers::ChunkerKind;
    use crate::input::corpus::{Corpus, Document};

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
