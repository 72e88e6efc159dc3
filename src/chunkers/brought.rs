//! `brought`: the chunks a team's own pipeline made, read from a JSON Lines file, so the chunks
//! measured are exactly the ones it indexes. Each line names its document (`doc`) and places
//! the chunk by `start` and `end` (characters) or by its `text`, found in the document as the
//! corpus reads it: exactly, at or after the document's previous chunk (else anywhere), then
//! with white space compared loosely. A line that cannot be placed stops the run at its line;
//! overlaps, text no chunk holds and documents without chunks are reported, not refused.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::served::{locate, Collapsed};
use super::ChunkerKind;
use crate::error::{Error, Location, Result};
use crate::grid::{only, Bad, Combo};

/// The file, and its content's hash (a new file is a new chunk set).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Brought {
    pub path: PathBuf,
    pub content: String,
}

pub(super) fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerKind> {
    only(combo, &["path", "title", "headings"], bad)?;
    let Some((value, span)) = combo.get("path") else {
        return Err(bad(combo.kind.1.clone(), "kind \"brought\" needs `path`: a JSON Lines file of chunks".into()));
    };
    let Some(relative) = value.as_str() else {
        return Err(bad(span, format!("`path` must be a string, found {}", value.type_str())));
    };
    let path = combo.dir.join(relative);
    let text = crate::input::text::read(&path).map_err(|e| bad(span, e.to_string()))?;
    let content = blake3::hash(text.as_bytes()).to_hex()[..16].to_string();
    Ok(ChunkerKind::Brought(Brought { path, content }))
}

#[derive(Deserialize)]
struct Line {
    doc: String,
    start: Option<usize>,
    end: Option<usize>,
    text: Option<String>,
}

/// What placing the chunks found besides the chunks: said, never refused.
#[derive(Debug, Default)]
pub struct Placed {
    /// Each chunk: document, byte span, line.
    pub chunks: Vec<(usize, Range<usize>, usize)>,
    /// Lines whose chunk starts inside the document's previous chunk.
    pub overlapping: Vec<usize>,
    /// Text no chunk holds: document, character span.
    pub gaps: Vec<(usize, Range<usize>)>,
    /// Documents without a chunk.
    pub without: Vec<usize>,
}

impl Placed {
    /// One line for the run's stage report, when there is something to say.
    pub fn note(&self, doc_id: &dyn Fn(usize) -> String) -> Option<String> {
        let first = |items: Vec<String>| crate::words::first_of(&items, 3);
        let mut parts = Vec::new();
        if !self.overlapping.is_empty() {
            let lines = self.overlapping.iter().map(|l| format!("line {l}")).collect();
            parts.push(format!("{} overlap the chunk before them ({})", self.overlapping.len(), first(lines)));
        }
        if !self.gaps.is_empty() {
            let gaps = self.gaps.iter().map(|(d, r)| format!("{} chars {}..{}", doc_id(*d), r.start, r.end)).collect();
            parts.push(format!("{} stretches of text no chunk holds ({})", self.gaps.len(), first(gaps)));
        }
        if !self.without.is_empty() {
            let docs = self.without.iter().map(|&d| doc_id(d)).collect();
            parts.push(format!("{} documents without a chunk ({})", self.without.len(), first(docs)));
        }
        (!parts.is_empty()).then(|| format!("brought chunks: {}", parts.join("; ")))
    }
}

impl Brought {
    /// Places every line's chunk in `docs` (id → index, texts); the first line that cannot be
    /// placed is an error at its line.
    pub fn place(&self, doc_index: &dyn Fn(&str) -> Option<usize>, texts: &[&str]) -> Result<Placed> {
        let mut placed = Placed::default();
        // Per document: each character's byte offset (and the end), its collapsed text, and
        // where its previous chunk started.
        let mut offsets: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut collapsed: HashMap<usize, Collapsed> = HashMap::new();
        let mut previous: HashMap<usize, usize> = HashMap::new();
        for line in crate::input::text::lines(&self.path)? {
            let (number, line) = line?;
            if line.trim().is_empty() {
                continue;
            }
            let at = || Location::line(&self.path, number);
            let record: Line =
                serde_json::from_str(&line).map_err(|e| Error::input(at(), format!("not a chunk: {e}")))?;
            let d = doc_index(&record.doc).ok_or_else(|| {
                Error::input(
                    at(),
                    format!("document {:?} is not in the corpus (`doc` holds a document id)", record.doc),
                )
            })?;
            let text = texts[d];
            let span = match (record.start, record.end, &record.text) {
                (Some(start), Some(end), given) => {
                    let chars = offsets.entry(d).or_insert_with(|| crate::input::text::char_offsets(text));
                    if start >= end || end >= chars.len() {
                        return Err(Error::input(
                            at(),
                            format!(
                                "characters {start}..{end} are not a span of {:?} ({} characters)",
                                record.doc,
                                chars.len() - 1
                            ),
                        ));
                    }
                    let span = chars[start]..chars[end];
                    if given.as_deref().is_some_and(|g| g != &text[span.clone()]) {
                        return Err(Error::input(
                            at(),
                            format!("characters {start}..{end} of {:?} do not hold its `text`", record.doc),
                        ));
                    }
                    span
                }
                (None, None, Some(chunk)) if !chunk.trim().is_empty() => {
                    let from = previous.get(&d).map_or(0, |&p| next_char(text, p));
                    let exact =
                        text[from..].find(chunk.as_str()).map(|i| from + i).or_else(|| text.find(chunk.as_str()));
                    match exact {
                        Some(i) => i..i + chunk.len(),
                        None => {
                            let c = collapsed.entry(d).or_insert_with(|| Collapsed::of(text));
                            locate(text, c, chunk).ok_or_else(|| {
                                Error::input(
                                    at(),
                                    format!(
                                        "its text is not in {:?} as the corpus reads it: {:?}",
                                        record.doc,
                                        chunk.chars().take(60).collect::<String>()
                                    ),
                                )
                            })?
                        }
                    }
                }
                _ => {
                    return Err(Error::input(
                        at(),
                        "a chunk takes `start` and `end` (characters), or a non-blank `text`",
                    ))
                }
            };
            previous.insert(d, span.start);
            placed.chunks.push((d, span, number));
        }
        placed.report(texts, &mut offsets);
        Ok(placed)
    }
}

impl Placed {
    /// Overlaps, gaps and documents without chunks, from the chunks in document order;
    /// `offsets` holds (and gets) each document's character offsets.
    fn report(&mut self, texts: &[&str], offsets: &mut HashMap<usize, Vec<usize>>) {
        let mut order: Vec<&(usize, Range<usize>, usize)> = self.chunks.iter().collect();
        order.sort_by_key(|(d, r, line)| (*d, r.start, r.end, *line));
        let mut covered: Vec<usize> = vec![0; texts.len()];
        let mut seen = vec![false; texts.len()];
        let mut gaps: Vec<(usize, Range<usize>)> = Vec::new();
        for (d, r, line) in order {
            if seen[*d] && r.start < covered[*d] {
                self.overlapping.push(*line);
            } else if !texts[*d][covered[*d]..r.start].trim().is_empty() {
                gaps.push((*d, covered[*d]..r.start));
            }
            seen[*d] = true;
            covered[*d] = covered[*d].max(r.end);
        }
        for (d, text) in texts.iter().enumerate() {
            if !seen[d] && !text.trim().is_empty() {
                self.without.push(d);
            } else if seen[d] && !text[covered[d]..].trim().is_empty() {
                gaps.push((d, covered[d]..text.len()));
            }
        }
        // Byte spans as characters.
        self.gaps = gaps
            .into_iter()
            .map(|(d, r)| {
                let chars = offsets.entry(d).or_insert_with(|| crate::input::text::char_offsets(texts[d]));
                (d, chars.partition_point(|&b| b < r.start)..chars.partition_point(|&b| b < r.end))
            })
            .collect();
        self.overlapping.sort_unstable();
    }
}

/// The byte after the character at `at`.
fn next_char(text: &str, at: usize) -> usize {
    at + text[at..].chars().next().map_or(0, char::len_utf8)
}
