//! Relevance units (SPEC §2): turn a ranked chunk list into the judged list L that
//! metrics score, against labels that never name chunks.

use std::collections::HashMap;

use crate::analyze::normalize;

use crate::input::corpus::{Corpus, Target};
use crate::input::golden::GoldenCase;
use crate::retrieve::Hit;
use crate::stages::chunk::ChunkSet;
pub use crate::vocab::{Item, Judged, Unit};

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Doc => "doc",
            Unit::Section => "section",
            Unit::Evidence => "evidence",
        }
    }
}

pub struct LabelledSpan {
    key: String,
    doc: u32,
    start: usize,
    end: usize,
    grade: u32,
}

/// A case's truth in one unit, resolved once and reused for every chunker and retriever.
pub enum Truth {
    Doc(HashMap<u32, u32>),
    Section(Vec<LabelledSpan>),
    Evidence(Vec<String>),
}

impl Truth {
    pub fn new(unit: Unit, case: &GoldenCase, corpus: &Corpus) -> Truth {
        match unit {
            Unit::Doc => {
                let mut grades: HashMap<u32, u32> = HashMap::new();
                for l in &case.relevant {
                    let doc = match corpus.target(&l.id) {
                        Some(Target::Doc(d)) | Some(Target::Section { doc: d, .. }) => d as u32,
                        None => continue,
                    };
                    let g = grades.entry(doc).or_insert(0);
                    *g = (*g).max(l.grade);
                }
                Truth::Doc(grades)
            }
            Unit::Section => {
                let mut spans: Vec<LabelledSpan> = Vec::new();
                for l in &case.relevant {
                    let (doc, start, end) = match corpus.target(&l.id) {
                        Some(Target::Doc(d)) => (d, 0, corpus.docs[d].text.len()),
                        Some(Target::Section { doc, section }) if l.own => {
                            let (start, end) = corpus.docs[doc].own_span(section);
                            (doc, start, end)
                        }
                        Some(Target::Section { doc, section }) => {
                            let s = &corpus.docs[doc].sections[section];
                            (doc, s.start, s.end)
                        }
                        None => continue,
                    };
                    match spans.iter_mut().find(|s| s.key == l.id) {
                        Some(s) => s.grade = s.grade.max(l.grade),
                        None => {
                            spans.push(LabelledSpan { key: l.id.clone(), doc: doc as u32, start, end, grade: l.grade })
                        }
                    }
                }
                spans.sort_by_key(|s| (s.doc, s.start, s.end));
                Truth::Section(spans)
            }
            Unit::Evidence => {
                let mut spans: Vec<String> = case.evidence.iter().map(|e| normalize(&e.text)).collect();
                spans.sort();
                spans.dedup();
                Truth::Evidence(spans)
            }
        }
    }

    /// |R|: relevant members (grade > 0).
    pub fn relevant(&self) -> usize {
        match self {
            Truth::Doc(g) => g.values().filter(|&&g| g > 0).count(),
            Truth::Section(s) => s.iter().filter(|s| s.grade > 0).count(),
            Truth::Evidence(e) => e.len(),
        }
    }

    /// R's items as (grade, tokens of their own text): a document's text, a labelled section's
    /// span, an evidence span's (normalised) text — what the ideal context of `ndcg@Bt` packs.
    pub fn item_tokens(
        &self,
        corpus: &Corpus,
        tokens_in: &dyn Fn(u32, usize, usize) -> usize,
        count: &dyn Fn(&[String]) -> crate::error::Result<Vec<u32>>,
    ) -> crate::error::Result<Vec<(u32, usize)>> {
        Ok(match self {
            Truth::Doc(grades) => grades
                .iter()
                .filter(|(_, &g)| g > 0)
                .map(|(&d, &g)| (g, tokens_in(d, 0, corpus.docs[d as usize].text.len())))
                .collect(),
            Truth::Section(spans) => {
                spans.iter().filter(|s| s.grade > 0).map(|s| (s.grade, tokens_in(s.doc, s.start, s.end))).collect()
            }
            Truth::Evidence(spans) => count(spans)?.into_iter().map(|t| (1, t as usize)).collect(),
        })
    }

    fn ideal(&self) -> Vec<f64> {
        let mut g: Vec<f64> = match self {
            Truth::Doc(g) => g.values().filter(|&&g| g > 0).map(|&g| g as f64).collect(),
            Truth::Section(s) => s.iter().filter(|s| s.grade > 0).map(|s| s.grade as f64).collect(),
            Truth::Evidence(e) => vec![1.0; e.len()],
        };
        g.sort_by(|a, b| b.total_cmp(a));
        g
    }

    /// Builds L from ranked chunks, stopping once it holds `max_items` items.
    pub fn judge(&self, hits: &[Hit], chunks: &ChunkSet, corpus: &Corpus, max_items: usize) -> Judged {
        let pieces = hits.iter().map(|h| {
            let c = &chunks.chunks[h.chunk as usize];
            Piece { chunk: h.chunk, start: c.start as usize, end: c.end as usize, score: h.score }
        });
        self.judge_pieces(pieces, chunks, corpus, max_items)
    }

    /// Builds L from ranked pieces of chunks (whole chunks, or the last one of a packed context
    /// cut at the budget), each judged by its own span, stopping once L holds `max_items`.
    pub fn judge_pieces(
        &self,
        pieces: impl IntoIterator<Item = Piece>,
        chunks: &ChunkSet,
        corpus: &Corpus,
        max_items: usize,
    ) -> Judged {
        let mut items: Vec<Item> = Vec::new();
        let mut returned: Vec<u32> = Vec::new();
        let mut pieces = pieces.into_iter();
        match self {
            Truth::Doc(grades) => {
                let mut seen = std::collections::HashSet::new();
                for p in pieces.by_ref() {
                    if items.len() >= max_items {
                        break;
                    }
                    returned.push(p.chunk);
                    let doc = chunks.chunks[p.chunk as usize].doc;
                    if seen.insert(doc) {
                        let grade = grades.get(&doc).copied();
                        let gain = grade.unwrap_or(0) as f64;
                        let key = corpus.docs[doc as usize].id.clone();
                        let new = u32::from(gain > 0.0);
                        items.push(Item { key, score: p.score, gain, new, chunk: p.chunk, judged: grade.is_some() });
                    }
                }
            }
            Truth::Section(spans) => {
                let mut seen = vec![false; spans.len()];
                for p in pieces.by_ref() {
                    if items.len() >= max_items {
                        break;
                    }
                    returned.push(p.chunk);
                    let c = &chunks.chunks[p.chunk as usize];
                    let (cs, ce) = (p.start, p.end);
                    // Relevant sections collapse the list; a section judged not relevant (grade 0)
                    // only marks the chunk judged, so judging "not relevant" moves no metric.
                    let (mut counted, mut judged_zero) = (false, false);
                    for (i, s) in spans.iter().enumerate() {
                        if s.doc != c.doc || !counts_for((cs, ce), (s.start, s.end)) {
                            continue;
                        }
                        if s.grade == 0 {
                            judged_zero = true;
                            continue;
                        }
                        counted = true;
                        if !seen[i] && items.len() < max_items {
                            seen[i] = true;
                            let gain = s.grade as f64;
                            items.push(Item {
                                key: s.key.clone(),
                                score: p.score,
                                gain,
                                new: 1,
                                chunk: p.chunk,
                                judged: true,
                            });
                        }
                    }
                    if !counted {
                        let key = c.id.clone();
                        let judged = judged_zero;
                        items.push(Item { key, score: p.score, gain: 0.0, new: 0, chunk: p.chunk, judged });
                    }
                }
            }
            Truth::Evidence(spans) => {
                let mut covered = vec![false; spans.len()];
                for p in pieces.by_ref().take(max_items) {
                    returned.push(p.chunk);
                    let c = &chunks.chunks[p.chunk as usize];
                    let text = normalize(&corpus.docs[c.doc as usize].text[p.start..p.end]);
                    let mut new = 0;
                    for (i, e) in spans.iter().enumerate() {
                        if !covered[i] && text.contains(e.as_str()) {
                            covered[i] = true;
                            new += 1;
                        }
                    }
                    let key = c.id.clone();
                    let gain = f64::from(u8::from(new > 0));
                    // A text rule decides every chunk: the evidence unit has no unjudged items.
                    items.push(Item { key, score: p.score, gain, new, chunk: p.chunk, judged: true });
                }
            }
        }
        Judged { items, relevant: self.relevant(), ideal: self.ideal(), returned }
    }

    /// The relevant text of a section unit: each labelled section's byte span (grade > 0).
    pub fn section_spans(&self) -> Vec<(u32, usize, usize)> {
        match self {
            Truth::Section(spans) => spans.iter().filter(|s| s.grade > 0).map(|s| (s.doc, s.start, s.end)).collect(),
            _ => Vec::new(),
        }
    }
}

/// Leaf sections a chunk spanning several sections is pooled as, at most; a chunk over more
/// (a whole chapter) is too coarse to judge and is left out of the pool.
pub const MAX_UNITS_PER_CHUNK: usize = 3;

/// The units a person judges for an unjudged item placed by chunk `chunk` (SPEC §9): its
/// document (doc unit, or a document with neither headings nor pages); else, among the
/// document's heading sections (its pages when it has no headings), the smallest that holds
/// half the chunk or more; else, for a chunk over several, the innermost ones it holds half or
/// more of (none when more than [`MAX_UNITS_PER_CHUNK`]). A section unit is judged by its own
/// text: its subsections are units of their own.
pub fn judging_units(unit: Unit, chunks: &ChunkSet, corpus: &Corpus, chunk: u32) -> Vec<String> {
    let c = &chunks.chunks[chunk as usize];
    let doc = &corpus.docs[c.doc as usize];
    let mut headings: Vec<&crate::input::corpus::Section> = doc.sections.iter().filter(|s| !s.page).collect();
    if headings.is_empty() {
        headings = doc.sections.iter().filter(|s| s.page).collect();
    }
    if unit == Unit::Doc || headings.is_empty() {
        return vec![doc.id.clone()];
    }
    let (cs, ce) = (c.start as usize, c.end as usize);
    let overlap = |s: &crate::input::corpus::Section| ce.min(s.end).saturating_sub(cs.max(s.start));
    if let Some(s) = headings.iter().filter(|s| 2 * overlap(s) >= ce - cs).min_by_key(|s| s.end - s.start) {
        return vec![s.id.clone()];
    }
    let held: Vec<&&crate::input::corpus::Section> =
        headings.iter().filter(|s| overlap(s) > 0 && 2 * overlap(s) >= s.end - s.start).collect();
    let inner: Vec<String> = held
        .iter()
        .filter(|s| !held.iter().any(|o| o.id != s.id && s.start <= o.start && o.end <= s.end))
        .map(|s| s.id.clone())
        .collect();
    if inner.len() > MAX_UNITS_PER_CHUNK {
        return Vec::new();
    }
    inner
}

/// SPEC §2: a chunk span counts for a section span when at least half of the chunk's bytes or
/// half of the section's bytes lie inside the section (both in one document).
pub fn counts_for((cs, ce): (usize, usize), (ss, se): (usize, usize)) -> bool {
    let overlap = ce.min(se).saturating_sub(cs.max(ss));
    overlap > 0 && (2 * overlap >= ce - cs || 2 * overlap >= se - ss)
}

/// A ranked span of one chunk: the whole chunk, or the part of it a budget kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Piece {
    pub chunk: u32,
    /// Byte span in the chunk's document.
    pub start: usize,
    pub end: usize,
    pub score: f32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunkers::ChunkerKind;
    use crate::input::corpus::{markdown_sections, Document};
    use crate::input::golden::{Evidence, Label};
    use crate::stages::chunk::ChunkerSpec;

    fn doc(id: &str, text: &str) -> Document {
        Document {
            id: id.into(),
            title: None,
            sections: markdown_sections(id, text),
            text: text.into(),
            meta: Default::default(),
            acl: None,
        }
    }

    fn case(relevant: &[(&str, u32)], evidence: &[&str]) -> GoldenCase {
        GoldenCase {
            id: "q".into(),
            question: "?".into(),
            split: None,
            answerable: true,
            groups: None,
            relevant: relevant.iter().map(|(id, g)| Label { id: id.to_string(), grade: *g, own: false }).collect(),
            evidence: evidence.iter().map(|t| Evidence { text: t.to_string(), doc: None, span: None }).collect(),
            tags: vec![],
            meta: None,
            label_hash: None,
        }
    }

    fn hits(ords: &[u32]) -> Vec<Hit> {
        ords.iter().enumerate().map(|(i, &c)| Hit { chunk: c, score: 10.0 - i as f32 }).collect()
    }

    #[test]
    fn normalisation_folds_case_space_and_composition() {
        assert_eq!(normalize("  Prazo  de\n30\tDIAS "), "prazo de 30 dias");
        assert_eq!(normalize("ac\u{0327}a\u{0303}o"), normalize("AÇÃO"));
    }

    #[test]
    fn doc_unit_collapses_to_first_chunk_of_each_doc() {
        let corpus = Corpus::from_docs(vec![doc("a", "aaaa bbbb"), doc("b", "cccc dddd")], "m".into()).unwrap();
        let spec = ChunkerSpec { kind: ChunkerKind::Fixed { size: 5, overlap: 0 }, title: false, headings: false };
        let set = ChunkSet::build(&corpus, &spec);
        // ordinals: a@0-5, a@5-9, b@0-5, b@5-9
        let truth = Truth::new(Unit::Doc, &case(&[("b", 2)], &[]), &corpus);
        let j = truth.judge(&hits(&[1, 0, 3, 2]), &set, &corpus, 10);
        let keys: Vec<_> = j.items.iter().map(|i| (i.key.as_str(), i.gain)).collect();
        assert_eq!(keys, [("a", 0.0), ("b", 2.0)]);
        assert_eq!((j.relevant, j.ideal.clone()), (1, vec![2.0]));
    }

    #[test]
    fn section_rule_half_of_chunk_or_half_of_section() {
        // Section "S" spans bytes 6..26; chunks are trimmed of surrounding white space.
        let text = "intro\n## S\nabcdefghijklmn\n## T\nzz";
        let corpus = Corpus::from_docs(vec![doc("d", text)], "m".into()).unwrap();
        let spec = ChunkerSpec { kind: ChunkerKind::Fixed { size: 10, overlap: 0 }, title: false, headings: false };
        let set = ChunkSet::build(&corpus, &spec);
        let spans: Vec<_> = set.chunks.iter().map(|c| (c.start, c.end)).collect();
        assert_eq!(spans, [(0, 10), (11, 20), (20, 30), (31, 33)]);
        let truth = Truth::new(Unit::Section, &case(&[("d#S", 1)], &[]), &corpus);
        // 0..10 has 4 bytes of S (< 5 and < 10): not S. 20..30 has 6 of its 10 bytes in S;
        // 11..20 lies inside S too, but S is already listed.
        let j = truth.judge(&hits(&[0, 2, 1, 3]), &set, &corpus, 10);
        let keys: Vec<_> = j.items.iter().map(|i| (i.key.as_str(), i.gain)).collect();
        assert_eq!(keys, [("d@0-10", 0.0), ("d#S", 1.0), ("d@31-33", 0.0)]);
    }

    #[test]
    fn a_section_judged_not_relevant_marks_its_chunks_judged_and_moves_nothing() {
        let text = "## S\nabcdefghijklmn\n## T\nopqrstuvwxyz\n## U\nzz";
        let corpus = Corpus::from_docs(vec![doc("d", text)], "m".into()).unwrap();
        let spec = ChunkerSpec { kind: ChunkerKind::Markdown { max_chars: None }, title: false, headings: false };
        let set = ChunkSet::build(&corpus, &spec);
        let order = hits(&(0..set.len() as u32).rev().collect::<Vec<_>>());
        let without = Truth::new(Unit::Section, &case(&[("d#S", 1)], &[]), &corpus).judge(&order, &set, &corpus, 10);
        let with =
            Truth::new(Unit::Section, &case(&[("d#S", 1), ("d#T", 0)], &[]), &corpus).judge(&order, &set, &corpus, 10);
        let keys = |j: &Judged| j.items.iter().map(|i| (i.key.clone(), i.gain)).collect::<Vec<_>>();
        assert_eq!(keys(&with), keys(&without), "the same list, the same gains");
        let judged: Vec<bool> = with.items.iter().map(|i| i.judged).collect();
        assert_eq!(judged, [false, true, true], "U unjudged, T judged not relevant, S labelled");
    }

    #[test]
    fn evidence_duplicates_are_not_new_sources() {
        let corpus = Corpus::from_docs(
            vec![doc("a", "o prazo é de 30 dias"), doc("b", "O PRAZO é de   30 dias úteis"), doc("c", "multa de 2%")],
            "m".into(),
        )
        .unwrap();
        let spec = ChunkerSpec { kind: ChunkerKind::None, title: false, headings: false };
        let set = ChunkSet::build(&corpus, &spec);
        let truth = Truth::new(Unit::Evidence, &case(&[], &["prazo é de 30 dias", "Multa de 2%", "juros"]), &corpus);
        let j = truth.judge(&hits(&[0, 1, 2]), &set, &corpus, 10);
        let gains: Vec<_> = j.items.iter().map(|i| (i.gain, i.new)).collect();
        assert_eq!(gains, [(1.0, 1), (0.0, 0), (1.0, 1)]);
        assert_eq!(j.relevant, 3);
    }
}
