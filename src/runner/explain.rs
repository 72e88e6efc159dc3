//! `ragsweep explain`: why a cell ranked its top item above the best-ranked relevant one,
//! in the numbers of the scorer that ranked them (BM25 term by term; cosines and the exact
//! scan's ranks for dense; each side's rank and share of the fused score for hybrid).

use std::fmt::Write as _;

use serde::Serialize;

use super::diagnose::exact_in_place_of_graph;
use super::{CellRun, Scoring};
use crate::error::{Error, Result};
use crate::evaluate::causes::{diagnostic_depth, Miss};
use crate::evaluate::label::Item;
use crate::retrieve::access::{Access, Filter};
use crate::retrieve::bm25::Bm25Explanation;
use crate::retrieve::cell::{CellRetriever, Source, Timing};
use crate::retrieve::dense::dot;
use crate::retrieve::fusion::{self, Fusion};
use crate::retrieve::Hit;

/// One case in one cell, explained.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub cell: String,
    pub label: String,
    pub case: String,
    pub question: String,
    pub answerable: bool,
    pub groups: Vec<String>,
    pub filter: Filter,
    /// Items of the cell's list read (the diagnostic depth).
    pub depth: usize,
    pub items: Vec<ExplainedItem>,
    /// The case's misses in this cell, with their causes.
    pub misses: Vec<Miss>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExplainedItem {
    /// `top`, `best relevant` or `asked` (`--doc`).
    pub role: &'static str,
    /// The judged unit (document, section or chunk id).
    pub key: String,
    pub doc: String,
    /// The chunk that placed the item, whose score is explained.
    pub chunk: String,
    /// 1-based rank in the cell's list; `None` when not within the depth read.
    pub rank: Option<u32>,
    pub relevant: bool,
    /// The score the cell ranked it by.
    pub score: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<Bm25Explanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<DenseExplanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridExplanation>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DenseExplanation {
    /// Cosine of the query and chunk vectors (both unit length).
    pub cosine: f32,
    /// Rank of the item in the exact scan over the same vectors, same filter.
    pub exact_rank: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SideScore {
    /// 1-based rank of the chunk in the side's list; `None` when the side did not return it.
    pub rank: Option<u32>,
    pub score: Option<f32>,
    /// What the side adds to the fused score after the fusion's normalisation.
    pub fused_part: f32,
}

#[derive(Debug, Clone, Serialize)]
pub struct HybridExplanation {
    pub fusion: String,
    pub lexical: SideScore,
    pub dense: SideScore,
    pub fused: f32,
}

impl Scoring<'_> {
    /// Explains case `case_id` in `run`: its top item, its best-ranked relevant item, and
    /// the unit or document `asked` when given.
    pub(super) fn explain<'v>(
        &self,
        run: &CellRun<'_>,
        case_id: &str,
        asked: Option<&str>,
        vector: &'v (dyn Fn(usize) -> &'v [f32] + Sync),
    ) -> Result<Explanation> {
        let ci = self.cases.iter().position(|c| c.id == case_id).ok_or_else(|| {
            Error::Other(format!("no case {case_id:?} in the golden set {}", self.exp.golden.path.display()))
        })?;
        let (case, corpus) = (&self.cases[ci], self.corpus);
        let set = &self.built.sets[run.chunks];
        let depth = diagnostic_depth(self.exp.max_k());
        let access = Access::of(run.cell.filter, self.allowed(run.chunks, ci));
        let q = vector(ci);
        let deep = self.retrieve_as(run, &run.retriever, access, &[depth], ci, q, &mut Timing::default())?;
        let list = deep.list(0);
        let rank_of = |key: &str| list.items.iter().position(|i| i.key == key).map(|p| p as u32 + 1);

        let mut chosen: Vec<(&'static str, Item)> = Vec::new();
        if let Some(top) = list.items.first() {
            chosen.push(("top", top.clone()));
        }
        if let Some(best) = list.items.iter().find(|i| i.gain > 0.0) {
            chosen.push(("best relevant", best.clone()));
        }
        if let Some(asked) = asked {
            let doc_of = |i: &Item| corpus.docs[set.chunks[i.chunk as usize].doc as usize].id.as_str();
            let item = match list.items.iter().find(|i| i.key == asked || doc_of(i) == asked) {
                Some(i) => i.clone(),
                None => self.unranked_item(run, ci, asked, q)?,
            };
            chosen.push(("asked", item));
        }
        chosen.dedup_by(|b, a| a.1.key == b.1.key && b.0 != "asked");

        // Without a graph the cell's own list is the exact one.
        let swapped = match exact_in_place_of_graph(&run.retriever) {
            Some((exact, _)) => Some(self.retrieve_as(run, &exact, access, &[depth], ci, q, &mut Timing::default())?),
            None => None,
        };
        let exact_list = swapped.as_ref().unwrap_or(&deep);
        let items = chosen
            .into_iter()
            .map(|(role, item)| {
                let chunk = &set.chunks[item.chunk as usize];
                let ranked = rank_of(&item.key);
                let mut out = ExplainedItem {
                    role,
                    key: item.key.clone(),
                    doc: corpus.docs[chunk.doc as usize].id.clone(),
                    chunk: chunk.id.clone(),
                    rank: ranked,
                    relevant: case.answerable && item.gain > 0.0,
                    score: ranked.map(|_| item.score),
                    bm25: None,
                    dense: None,
                    hybrid: None,
                };
                let exact_rank = exact_list.list(0).items.iter().position(|i| i.key == item.key).map(|p| p as u32 + 1);
                let (lexical, dense) = match run.retriever {
                    CellRetriever::Single(s @ Source::Bm25 { .. }) => (Some(s), None),
                    CellRetriever::Single(s) => (None, Some(s)),
                    CellRetriever::Hybrid { lexical, dense, .. } => (Some(lexical), Some(dense)),
                };
                if let Some(Source::Bm25 { index, params }) = lexical {
                    out.bm25 = Some(index.explain(&case.question, params, item.chunk)?);
                }
                if let Some(source) = dense {
                    let cosine = match source {
                        Source::Exact { index } => dot(q, index.vector(item.chunk as usize)),
                        Source::Hnsw { index, .. } => dot(q, index.exact().vector(item.chunk as usize)),
                        Source::Bm25 { .. } => unreachable!("a dense side"),
                    };
                    out.dense = Some(DenseExplanation { cosine, exact_rank });
                }
                if let CellRetriever::Hybrid { lexical, dense, fusion, candidates } = run.retriever {
                    out.hybrid = Some(self.hybrid(
                        ci,
                        q,
                        access,
                        (lexical, dense),
                        fusion,
                        candidates.max(deep.depth),
                        item.chunk,
                    )?);
                }
                Ok(out)
            })
            .collect::<Result<Vec<_>>>()?;
        let scored = self.retrieve(run, ci, q, &mut Timing::default())?;
        Ok(Explanation {
            cell: run.cell.id.clone(),
            label: run.cell.label(),
            case: case.id.clone(),
            question: case.question.clone(),
            answerable: case.answerable,
            groups: case.user_groups().to_vec(),
            filter: run.cell.filter,
            depth,
            items,
            misses: self.diagnose(run, ci, q, &scored)?,
        })
    }

    /// Each side's rank, score and share of the fused score of `chunk`, from the same side
    /// searches the cell fused.
    #[allow(clippy::too_many_arguments)]
    fn hybrid(
        &self,
        ci: usize,
        vector: &[f32],
        access: Access<'_>,
        (lexical, dense): (Source<'_>, Source<'_>),
        fusion: Fusion,
        side_depth: usize,
        chunk: u32,
    ) -> Result<HybridExplanation> {
        let query = crate::retrieve::cell::Query { text: &self.cases[ci].question, vector };
        let side = |source: Source<'_>, dense_side: bool| -> Result<SideScore> {
            let hits =
                CellRetriever::Single(source).search(&query, side_depth, access.in_query(), &mut Timing::default())?;
            let parts = fusion::contributions(&hits, fusion, dense_side);
            let at = hits.iter().position(|h| h.chunk == chunk);
            Ok(SideScore {
                rank: at.map(|p| p as u32 + 1),
                score: at.map(|p| hits[p].score),
                fused_part: at.map_or(0.0, |p| parts[p]),
            })
        };
        let (lexical, dense) = (side(lexical, false)?, side(dense, true)?);
        Ok(HybridExplanation {
            fusion: fusion.to_string(),
            fused: lexical.fused_part + dense.fused_part,
            lexical,
            dense,
        })
    }

    /// The best chunk of document or unit `asked` that the cell's list does not hold, by the
    /// cell's first ranking source.
    fn unranked_item(&self, run: &CellRun<'_>, ci: usize, asked: &str, vector: &[f32]) -> Result<Item> {
        let corpus = self.corpus;
        let set = &self.built.sets[run.chunks];
        let doc = corpus
            .doc_index(asked)
            .or_else(|| match corpus.target(asked) {
                Some(crate::input::corpus::Target::Section { doc, .. }) => Some(doc),
                _ => None,
            })
            .ok_or_else(|| Error::Other(format!("no document or section {asked:?} in the corpus")))?;
        let source = match run.retriever {
            CellRetriever::Single(s) => s,
            CellRetriever::Hybrid { lexical, .. } => lexical,
        };
        let question = &self.cases[ci].question;
        let mut best: Option<Hit> = None;
        for c in (0..set.len()).filter(|&c| set.chunks[c].doc as usize == doc) {
            let score = match source {
                Source::Bm25 { index, params } => index.explain(question, params, c as u32)?.score,
                Source::Exact { index } => dot(vector, index.vector(c)),
                Source::Hnsw { index, .. } => dot(vector, index.exact().vector(c)),
            };
            if best.is_none_or(|b| score > b.score) {
                best = Some(Hit { chunk: c as u32, score });
            }
        }
        let hit = best.ok_or_else(|| Error::Other(format!("document {asked:?} has no chunk in this cell")))?;
        let judged = self.truths[ci].judge(&[hit], set, corpus, 1);
        Ok(judged.items.into_iter().next().expect("one hit gives one item"))
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "–".into(), |v| v.to_string())
}

/// The explanation for a terminal.
pub fn render(e: &Explanation) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "cell {}: {}", e.cell, e.label);
    let kind = if e.answerable { "answerable" } else { "unanswerable" };
    let _ = writeln!(s, "case {}: {:?} ({kind}; groups {:?}; filter {})", e.case, e.question, e.groups, e.filter);
    if e.items.is_empty() {
        let _ = writeln!(s, "\nthe cell returned nothing for this case");
    }
    if !e.items.iter().any(|i| i.role == "best relevant") && e.answerable {
        let _ = writeln!(s, "\nno relevant item in the first {} of the list", e.depth);
    }
    for item in &e.items {
        let rel = if item.relevant { "relevant" } else { "not relevant" };
        let rank = item.rank.map_or_else(|| format!("not in the first {}", e.depth), |r| format!("#{r}"));
        let _ = writeln!(s, "\n{} ({rank}, {rel}): {}  [chunk {}]", item.role, item.key, item.chunk);
        if let Some(score) = item.score {
            let _ = writeln!(s, "  score {score}");
        }
        if let Some(b) = &item.bm25 {
            let _ = writeln!(
                s,
                "  BM25 k1 = {}, b = {}, chunk length {} terms (average {:.1})",
                b.k1, b.b, b.length, b.avg_length
            );
            let _ = writeln!(
                s,
                "  {:<24} {:>5} {:>8} {:>8} {:>4} {:>12}",
                "term", "query", "df", "idf", "tf", "contribution"
            );
            for t in &b.terms {
                let _ = writeln!(
                    s,
                    "  {:<24} {:>5} {:>8} {:>8.4} {:>4} {:>12.6}",
                    t.term, t.query_count, t.doc_freq, t.idf, t.tf, t.contribution
                );
            }
            let _ = writeln!(s, "  {:<24} {:>41.6}", "sum", b.score);
        }
        if let Some(d) = &item.dense {
            let _ = writeln!(s, "  cosine {:.6}; exact-scan rank {}", d.cosine, opt(d.exact_rank));
        }
        if let Some(h) = &item.hybrid {
            let side =
                |x: &SideScore| format!("rank {}, score {}, fused part {:.6}", opt(x.rank), opt(x.score), x.fused_part);
            let _ = writeln!(s, "  {}: lexical {}; dense {}", h.fusion, side(&h.lexical), side(&h.dense));
            let _ = writeln!(s, "  fused score {:.6}", h.fused);
        }
    }
    if !e.misses.is_empty() {
        let _ = writeln!(s, "\nmisses:");
        for group in e.misses.chunk_by(|a, b| a.cause == b.cause && a.rank == b.rank) {
            let ks: Vec<String> = group.iter().map(|m| format!("@{}", m.k)).collect();
            let last = group.last().expect("chunks are not empty");
            let _ = writeln!(s, "  {}: {} — {}", ks.join(", "), last.cause, last.evidence);
        }
    }
    s
}
