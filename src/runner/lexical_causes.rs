//! `ragsweep diff --causes`: why two lexical cells' lists differ (ragsweep's BM25 and an engine's,
//! two analyzers), case by case. Each case whose top k differs gets the first difference found in
//! the order text flows through BM25: the parameters, the question's words each side keeps, which
//! of the moved chunks each word matches (stemming), the words' document frequencies, the moved
//! chunks' lengths as each index stores them, else ties and rounding. Both cells answer through
//! their own sources (`analyze`, and `explain`'s term table), so any lexical source can be asked.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{CellRun, Scoring};
use crate::error::{Error, Result};
use crate::input::golden::Split;
use crate::retrieve::access::Filter;
use crate::retrieve::bm25::Bm25Explanation;
use crate::retrieve::source::{Query, RankingSource};

/// The first difference between two lexical rankings of one question, in pipeline order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LexicalCause {
    Parameters,
    QueryWords,
    WordMatches,
    DocumentFrequency,
    LengthNormalisation,
    TiesOrRounding,
}

impl LexicalCause {
    pub const ALL: [LexicalCause; 6] = [
        LexicalCause::Parameters,
        LexicalCause::QueryWords,
        LexicalCause::WordMatches,
        LexicalCause::DocumentFrequency,
        LexicalCause::LengthNormalisation,
        LexicalCause::TiesOrRounding,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            LexicalCause::Parameters => "k1 or b differ",
            LexicalCause::QueryWords => "analyzer: the question's words each side keeps (stop words, tokens)",
            LexicalCause::WordMatches => "analyzer: a word matches a moved chunk on one side only (stemming)",
            LexicalCause::DocumentFrequency => "a word's document frequency differs (stemming elsewhere, shards)",
            LexicalCause::LengthNormalisation => "a moved chunk's length differs as indexed (length normalisation)",
            LexicalCause::TiesOrRounding => "same words, matches and statistics: ties or rounding",
        }
    }
}

/// One case whose lists differ, its cause and what showed it.
#[derive(Debug, Clone, Serialize)]
pub struct CaseCause {
    pub case: String,
    pub cause: LexicalCause,
    pub detail: String,
}

/// The two cells' lists at `k` over the cases of a split: how many were compared and equal,
/// and each other case's cause.
#[derive(Debug, Clone, Serialize)]
pub struct LexicalCauses {
    pub k: usize,
    pub compared: usize,
    pub equal: usize,
    pub cases: Vec<CaseCause>,
}

/// A cell's one lexical source, or why the cell has none.
fn lexical<'r>(run: &'r CellRun<'_>) -> Result<&'r (dyn RankingSource + 'r)> {
    let r = &run.retriever;
    let one = r.sources.len() == 1 && r.fusion.is_none() && r.rerank.is_empty();
    if !one || run.cell.filter != Filter::None {
        return Err(Error::Comparison(format!(
            "--causes compares two lexical cells of one source each, unfiltered: {} is not one",
            run.cell.id
        )));
    }
    Ok(&*r.sources[0])
}

/// The question's words a side keeps: the byte spans its terms come from.
fn spans(terms: &[crate::analyze::Term]) -> BTreeSet<(usize, usize)> {
    terms.iter().map(|t| (t.from, t.to)).collect()
}

impl Scoring<'_> {
    /// The lists of cells `a` and `b` at `k` for the cases of `split`, compared; each case whose
    /// lists differ with its first difference.
    pub(super) fn lexical_causes(
        &self,
        a: &CellRun<'_>,
        b: &CellRun<'_>,
        k: usize,
        split: Option<Split>,
    ) -> Result<LexicalCauses> {
        let (sa, sb) = (lexical(a)?, lexical(b)?);
        if a.chunks != b.chunks {
            return Err(Error::Comparison(format!(
                "--causes compares two cells over the same chunks: {} and {} have different chunkers",
                a.cell.id, b.cell.id
            )));
        }
        let set = &self.sets[a.chunks];
        let mut out = LexicalCauses { k, compared: 0, equal: 0, cases: Vec::new() };
        for case in self.cases.iter().filter(|c| split.is_none_or(|s| c.split == Some(s))) {
            let query = Query { text: &case.question, vector: &[] };
            let la: Vec<u32> = sa.search(&query, k, None)?.iter().map(|h| h.chunk).collect();
            let lb: Vec<u32> = sb.search(&query, k, None)?.iter().map(|h| h.chunk).collect();
            out.compared += 1;
            if la == lb {
                out.equal += 1;
                continue;
            }
            let moved: Vec<u32> = {
                let (ia, ib): (BTreeSet<u32>, BTreeSet<u32>) =
                    (la.iter().copied().collect(), lb.iter().copied().collect());
                ia.symmetric_difference(&ib).copied().collect()
            };
            // With the same chunks in another order, the chunks that changed place.
            let moved = if moved.is_empty() {
                la.iter().zip(&lb).filter(|(x, y)| x != y).flat_map(|(x, y)| [*x, *y]).collect()
            } else {
                moved
            };
            let (cause, detail) = self.first_difference(sa, sb, &query, &moved, set)?;
            out.cases.push(CaseCause { case: case.id.clone(), cause, detail });
        }
        Ok(out)
    }

    fn first_difference(
        &self,
        sa: &dyn RankingSource,
        sb: &dyn RankingSource,
        query: &Query<'_>,
        moved: &[u32],
        set: &crate::stages::chunk::ChunkSet,
    ) -> Result<(LexicalCause, String)> {
        let not_lexical = || Error::Comparison("--causes compares lexical cells: a source analyzes no text".into());
        let qa = sa.analyze(query.text)?.ok_or_else(not_lexical)?;
        let qb = sb.analyze(query.text)?.ok_or_else(not_lexical)?;
        let words = |only: &BTreeSet<(usize, usize)>| -> String {
            only.iter().map(|&(f, t)| format!("{:?}", &query.text[f..t])).collect::<Vec<_>>().join(", ")
        };
        let (wa, wb) = (spans(&qa), spans(&qb));
        let doc_of = |c: u32| &self.corpus.docs[set.chunks[c as usize].doc as usize].id;
        // The moved chunks' scores as each side explains them.
        let mut explained: Vec<(u32, Bm25Explanation, Bm25Explanation)> = Vec::new();
        for &c in moved {
            let (ea, eb) = (sa.explain(query, c)?.bm25, sb.explain(query, c)?.bm25);
            if let (Some(ea), Some(eb)) = (ea, eb) {
                explained.push((c, ea, eb));
            }
        }
        if let Some((_, ea, eb)) = explained.iter().find(|(_, ea, eb)| ea.k1 != eb.k1 || ea.b != eb.b) {
            return Ok((LexicalCause::Parameters, format!("k1 {} / {}, b {} / {}", ea.k1, eb.k1, ea.b, eb.b)));
        }
        if wa != wb {
            let only_a: BTreeSet<_> = wa.difference(&wb).copied().collect();
            let only_b: BTreeSet<_> = wb.difference(&wa).copied().collect();
            let sides = [("A", &only_a), ("B", &only_b)].into_iter().filter(|(_, w)| !w.is_empty());
            let kept: Vec<String> = sides.map(|(side, w)| format!("kept by {side} only: {}", words(w))).collect();
            return Ok((LexicalCause::QueryWords, kept.join("; ")));
        }
        // Each kept word's term on each side.
        let term_of = |terms: &[crate::analyze::Term], span: (usize, usize)| {
            terms.iter().find(|t| (t.from, t.to) == span).map(|t| t.text.clone()).unwrap_or_default()
        };
        let pairs: Vec<(String, String, String)> =
            wa.iter().map(|&s| (query.text[s.0..s.1].to_string(), term_of(&qa, s), term_of(&qb, s))).collect();
        for &c in moved {
            let text = set.indexed_text(self.corpus, c as usize);
            let (da, db) = (sa.analyze(&text)?.unwrap_or_default(), sb.analyze(&text)?.unwrap_or_default());
            let has = |terms: &[crate::analyze::Term], term: &str| terms.iter().any(|t| t.text == term);
            if let Some((word, ta, _)) = pairs.iter().find(|(_, ta, tb)| has(&da, ta) != has(&db, tb)) {
                let side = if has(&da, ta) { "A" } else { "B" };
                return Ok((LexicalCause::WordMatches, format!("{word:?} matches {} on {side} only", doc_of(c))));
            }
        }
        for (c, ea, eb) in &explained {
            let df = |e: &Bm25Explanation, term: &str| {
                e.terms.iter().find(|t| t.term == term && t.tf > 0).map(|t| t.doc_freq)
            };
            for (word, ta, tb) in &pairs {
                if let (Some(fa), Some(fb)) = (df(ea, ta), df(eb, tb)) {
                    if fa != fb {
                        return Ok((
                            LexicalCause::DocumentFrequency,
                            format!("{word:?} in {fa} chunks on A, {fb} on B (as matched in {})", doc_of(*c)),
                        ));
                    }
                }
            }
        }
        for (c, ea, eb) in &explained {
            // Each side's length over its average: what BM25 normalises by.
            let (ra, rb) = (ea.length as f32 / ea.avg_length.max(1e-6), eb.length as f32 / eb.avg_length.max(1e-6));
            if (ra - rb).abs() > 1e-3 {
                return Ok((
                    LexicalCause::LengthNormalisation,
                    format!(
                        "{}: length {} of average {:.1} on A, {} of {:.1} on B",
                        doc_of(*c),
                        ea.length,
                        ea.avg_length,
                        eb.length,
                        eb.avg_length
                    ),
                ));
            }
        }
        Ok((LexicalCause::TiesOrRounding, String::new()))
    }
}

/// The causes as a table: their counts, then each case.
pub fn render(c: &LexicalCauses, a: &str, b: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "why the lists of A ({a}) and B ({b}) differ at {}: {} of {} cases equal, {} differ; first difference, in pipeline order:",
        c.k,
        c.equal,
        c.compared,
        c.cases.len()
    );
    for cause in LexicalCause::ALL {
        let n = c.cases.iter().filter(|x| x.cause == cause).count();
        let _ = writeln!(out, "  {n:>5}  {}", cause.describe());
    }
    for x in &c.cases {
        let detail = if x.detail.is_empty() { String::new() } else { format!(": {}", x.detail) };
        let _ = writeln!(out, "  {:<12} {:?}{detail}", x.case, x.cause);
    }
    out
}
