//! What is computed from one case's lists in one cell, apart from how they were ranked
//! (tantivy's `Collector`): each collector fills one group of a case's result (its metric
//! values, its contexts against the budgets, its judged ranking, its leaks, its ranked chunks
//! for `rescore`, its parity with the oracle). The run and `rescore` compose the ones they
//! need; a new per-case measure is a collector, not a field of [`Scoring`].

use rayon::prelude::*;

use super::{CellRun, Scoring};
use crate::error::Result;
use crate::evaluate::context::{self, Overlap, Packed};
use crate::evaluate::label::{Judged, Truth, Unit};
use crate::evaluate::metrics::{Case, MetricAt};
use crate::input::corpus::{Corpus, Target};
use crate::input::golden::GoldenCase;
use crate::results::{CaseResult, Parity};
use crate::retrieve::cell::Retrieval;
use crate::stages::chunk::ChunkSet;

/// What one case's retrieval call in one cell gave, as every collector reads it.
pub(super) struct CaseLists<'r> {
    pub ci: usize,
    pub retrieval: &'r Retrieval,
    /// The context packed into each budget.
    pub packed: &'r [Packed],
    /// Each packed context judged.
    pub judged_packed: Vec<Judged>,
    /// The same call of the cell's oracle, for a cell that has one.
    pub oracle: Option<&'r Retrieval>,
}

/// Fills its part of one case's result from the case's lists.
pub(super) trait Collector: Sync {
    fn collect(&self, s: &Scoring<'_>, run: &CellRun<'_>, lists: &CaseLists<'_>, out: &mut CaseResult);
}

impl Scoring<'_> {
    /// Case `ci`'s result in cell `run` from its retrieval `r`, the contexts packed from it
    /// ([`Scoring::packed`]) and its oracle's call, as `collectors` fill it.
    pub(super) fn collect(
        &self,
        run: &CellRun<'_>,
        ci: usize,
        r: &Retrieval,
        packed: &[Packed],
        oracle: Option<&Retrieval>,
        collectors: &[&dyn Collector],
    ) -> CaseResult {
        let (case, set) = (&self.cases[ci], &self.sets[run.chunks]);
        let judged_packed = packed
            .iter()
            .map(|p| self.truths[ci].judge_pieces(p.pieces.iter().map(|x| x.0), set, self.corpus, usize::MAX))
            .collect();
        let lists = CaseLists { ci, retrieval: r, packed, judged_packed, oracle };
        let mut out = CaseResult {
            cell: run.cell.id.clone(),
            case: case.id.clone(),
            split: case.split.unwrap_or_default(),
            answerable: case.answerable,
            depth: r.depth,
            labels: self.labels[ci].clone(),
            ..CaseResult::default()
        };
        for collector in collectors {
            collector.collect(self, run, &lists, &mut out);
        }
        out
    }
}

/// The metric columns (`values`): rank metrics on each k's list, token-level and packed
/// measures on each budget's context.
pub(super) struct Metrics<'a> {
    /// Each column with the position of its cut-off among the experiment's (each k, then each
    /// budget).
    columns: &'a [(usize, MetricAt)],
    /// Per case: the relevant text as byte ranges `(doc, start, end)`, for token-level measures
    /// (section and evidence units with budgets; empty otherwise).
    relevant_text: Vec<Vec<(u32, usize, usize)>>,
    /// Per case and budget: how many of R's items the ideal packed context holds (SPEC §3).
    ideal_items: Vec<Vec<usize>>,
}

impl<'a> Metrics<'a> {
    pub fn new(s: &Scoring<'_>, columns: &'a [(usize, MetricAt)]) -> Result<Self> {
        let (exp, corpus, cases, facts, counter) = (s.exp, s.corpus, s.cases, s.facts, s.counter);
        let token_measures = exp.unit != Unit::Doc
            && (!exp.budget.is_empty() || columns.iter().any(|(_, c)| !c.budget && c.metric.is_token_level()));
        let relevant_text = if token_measures {
            let doc = |d: usize| facts.normalized(corpus, d);
            cases.par_iter().zip(&s.truths).map(|(c, t)| relevant_text(exp.unit, c, t, corpus, &doc)).collect()
        } else {
            vec![Vec::new(); cases.len()]
        };
        let ideal_items = if exp.budget.is_empty() {
            vec![Vec::new(); cases.len()]
        } else {
            let tokens_in = |d: u32, st: usize, e: usize| facts.tokens_in(corpus, counter, d, st, e);
            s.truths
                .iter()
                .map(|truth| {
                    let items = truth.item_tokens(corpus, &tokens_in, &|t| counter.count(t))?;
                    Ok(exp.budget.iter().map(|&b| context::ideal_count(&items, b)).collect())
                })
                .collect::<Result<Vec<Vec<usize>>>>()?
        };
        Ok(Metrics { columns, relevant_text, ideal_items })
    }
}

impl Collector for Metrics<'_> {
    fn collect(&self, s: &Scoring<'_>, run: &CellRun<'_>, lists: &CaseLists<'_>, out: &mut CaseResult) {
        let (ci, r) = (lists.ci, lists.retrieval);
        if !s.cases[ci].answerable {
            out.values = vec![None; self.columns.len()];
            return;
        }
        let set = &s.sets[run.chunks];
        let overlaps: Vec<Overlap> = lists
            .packed
            .iter()
            .map(|p| {
                let context: Vec<(u32, usize, usize)> =
                    p.pieces.iter().map(|(x, _)| (set.chunks[x.chunk as usize].doc, x.start, x.end)).collect();
                Overlap::of(&self.relevant_text[ci], &context, &|d, st, e| s.tokens_in(d, st, e))
            })
            .collect();
        let ks = s.exp.k.len();
        // Token-level measures at a cut-off, in characters as Chroma's chunking evaluation
        // counts them: the top k chunks' characters summed, each chunk whole. Once per k that has
        // them.
        let chars = |d: u32, st: usize, e: usize| s.corpus.docs[d as usize].text[st..e].chars().count();
        let at_k: Vec<Option<Overlap>> = (s.exp.k.iter().enumerate())
            .map(|(i, &k)| {
                let wanted = self.columns.iter().any(|&(j, c)| j == i && !c.budget && c.metric.is_token_level());
                wanted.then(|| {
                    let top: Vec<(u32, usize, usize)> = (r.list(i).returned.iter().take(k))
                        .map(|&c| &set.chunks[c as usize])
                        .map(|c| (c.doc, c.start as usize, c.end as usize))
                        .collect();
                    Overlap::of_chunks(&self.relevant_text[ci], &top, &chars)
                })
            })
            .collect();
        out.values = self
            .columns
            .iter()
            .map(|&(i, c)| {
                if !c.budget {
                    return c.metric.measure().value(&Case {
                        judged: r.list(i),
                        k: c.k,
                        packed_ideal: None,
                        overlap: at_k[i],
                    });
                }
                let (b, judged) = (i - ks, &lists.judged_packed[i - ks]);
                c.metric.measure().value(&Case {
                    judged,
                    k: judged.items.len().max(1),
                    packed_ideal: Some(self.ideal_items[ci][b]),
                    overlap: Some(overlaps[b]),
                })
            })
            .collect();
    }
}

/// What each cut-off would send a model: context tokens, lists short of k or of their budget,
/// items packed per budget.
pub(super) struct Budgets;

impl Collector for Budgets {
    fn collect(&self, s: &Scoring<'_>, run: &CellRun<'_>, lists: &CaseLists<'_>, out: &mut CaseResult) {
        let (r, ks) = (lists.retrieval, &s.exp.k);
        let chunk_tokens = &s.facts.chunk_tokens[run.chunks];
        out.ctx_tokens = ks
            .iter()
            .enumerate()
            .map(|(i, &k)| r.list(i).returned.iter().take(k).map(|&c| chunk_tokens[c as usize]).sum())
            .chain(lists.packed.iter().map(Packed::tokens))
            .collect();
        out.short = ks
            .iter()
            .enumerate()
            .map(|(i, &k)| r.list(i).items.len() < k)
            .chain(lists.packed.iter().map(|p| p.short))
            .collect();
        out.packed_items = lists.judged_packed.iter().map(|j| j.items.len()).collect();
    }
}

/// The judged ranking as the results export it: its items (as deep as the largest budget's
/// packing read), the units left to judge, each engine cut-off's own list, the first relevant
/// rank, the top score, restricted and spanning hits.
pub(super) struct Ranking {
    /// Per chunk set, per chunk: whether it counts for several labelled sections (section unit).
    spanning: Vec<Vec<bool>>,
}

impl Ranking {
    pub fn new(s: &Scoring<'_>) -> Self {
        Ranking { spanning: spanning_chunks(s.exp.unit, s.cases, s.corpus, s.sets) }
    }
}

impl Collector for Ranking {
    fn collect(&self, s: &Scoring<'_>, run: &CellRun<'_>, lists: &CaseLists<'_>, out: &mut CaseResult) {
        let (ci, r) = (lists.ci, lists.retrieval);
        let (case, set, deepest) = (&s.cases[ci], &s.sets[run.chunks], &r.deepest);
        // Deeper than the deepest k list only where the largest budget's list extends it (a
        // `post` cell's budget list is filtered after packing, its k lists per k).
        let extends = |p: &&Judged| {
            p.items.len() > deepest.items.len() && p.items.iter().zip(&deepest.items).all(|(a, b)| a.key == b.key)
        };
        let ranking = &lists.judged_packed.last().filter(extends).unwrap_or(deepest).items;
        out.ranking = ranking.iter().map(|i| (i.key.clone(), i.score)).collect();
        // Only an answerable case is judged (an unanswerable one has no answer to find).
        let visible = s.allowed(run.chunks, ci);
        for (rank, item) in ranking.iter().enumerate().filter(|_| case.answerable) {
            if item.judged || visible.is_some_and(|a| !a.contains(item.chunk)) {
                continue;
            }
            for unit in crate::evaluate::label::judging_units(s.exp.unit, set, s.corpus, item.chunk) {
                if !out.unjudged.iter().any(|(u, _)| *u == unit) {
                    out.unjudged.push((unit, rank as u32 + 1));
                }
            }
        }
        out.top_at = s
            .exp
            .k
            .iter()
            .enumerate()
            .filter(|&(i, &k)| {
                let list = &r.list(i).items;
                let (mine, prefix) = (&list[..k.min(list.len())], &ranking[..k.min(ranking.len())]);
                mine.len() != prefix.len() || mine.iter().zip(prefix).any(|(a, b)| a.key != b.key)
            })
            .map(|(i, &k)| (format!("@{k}"), r.list(i).items.iter().take(k).map(|it| it.key.clone()).collect()))
            .collect();
        out.restricted_hit = case.is_restricted() && deepest.items.iter().any(|i| i.gain > 0.0);
        let relevant: Vec<u32> = deepest.items.iter().filter(|i| i.gain > 0.0).map(|i| i.chunk).collect();
        let spanning = relevant.iter().filter(|&&c| self.spanning[run.chunks][c as usize]).count();
        out.spanning = (relevant.len() as u32, spanning as u32);
        out.first_relevant = deepest.items.iter().position(|i| i.gain > 0.0).map(|p| p as u32 + 1);
        out.top_score = deepest.items.first().map(|i| i.score);
    }
}

/// Returned chunks the asking user may not see: the first chunks of the ranking (after a late
/// filter) up to the largest k, and every packed context; whatever the labels say.
pub(super) struct Leaks;

impl Collector for Leaks {
    fn collect(&self, s: &Scoring<'_>, run: &CellRun<'_>, lists: &CaseLists<'_>, out: &mut CaseResult) {
        let Some(allowed) = s.allowed(run.chunks, lists.ci) else { return };
        let max_k = *s.exp.k.last().expect("at least one cut-off");
        let late = run.cell.filter == crate::vocab::Filter::Post;
        let hits = &lists.retrieval.hits;
        let mut returned: Vec<u32> =
            hits.iter().map(|h| h.chunk).filter(|&c| !late || allowed.contains(c)).take(max_k).collect();
        returned.extend(lists.packed.iter().flat_map(|p| p.pieces.iter().map(|x| x.0.chunk)));
        returned.sort_unstable();
        returned.dedup();
        out.leaks = returned.into_iter().filter(|&c| !allowed.contains(c)).count();
    }
}

/// The ranked chunks of the last search call, which `rescore` judges again with new labels;
/// not for a cell that asks each k with its own call (an engine).
pub(super) struct RankedHits;

impl Collector for RankedHits {
    fn collect(&self, s: &Scoring<'_>, run: &CellRun<'_>, lists: &CaseLists<'_>, out: &mut CaseResult) {
        if run.retriever.plans_each_depth() {
            return;
        }
        let set = &s.sets[run.chunks];
        out.hits =
            Some(lists.retrieval.hits.iter().map(|h| (set.chunks[h.chunk as usize].id.clone(), h.score)).collect());
    }
}

/// Per k: the cell's list against the oracle's list of the same case under the same access.
pub(super) struct OracleParity;

impl Collector for OracleParity {
    fn collect(&self, s: &Scoring<'_>, _run: &CellRun<'_>, lists: &CaseLists<'_>, out: &mut CaseResult) {
        let Some(oracle) = lists.oracle else { return };
        let top =
            |j: &Judged, k: usize| -> Vec<String> { j.items.iter().take(k).map(|item| item.key.clone()).collect() };
        out.parity = (s.exp.k.iter().enumerate())
            .map(|(i, &k)| Parity::of(&top(lists.retrieval.list(i), k), &top(oracle.list(i), k)))
            .collect();
    }
}

/// The relevant text of a case as byte ranges: its labelled sections (section unit), or its
/// evidence spans where the golden set places them, else every place they occur in the
/// documents they name, else in its labelled documents, else anywhere (evidence unit); `normalized` gives each document's mapped
/// normalisation, computed once per document.
fn relevant_text<'n>(
    unit: Unit,
    case: &GoldenCase,
    truth: &Truth,
    corpus: &Corpus,
    normalized: &(dyn Fn(usize) -> &'n crate::analyze::Mapped + Sync),
) -> Vec<(u32, usize, usize)> {
    match unit {
        Unit::Doc => Vec::new(),
        // A section's span runs to the next heading: the blank lines before it are layout,
        // not text to recall (a chunk equal to the section then recalls all of it).
        Unit::Section => truth
            .section_spans()
            .into_iter()
            .map(|(d, start, end)| {
                let text = &corpus.docs[d as usize].text[start..end];
                (d, start, start + text.trim_end().len())
            })
            .collect(),
        Unit::Evidence => {
            let labelled: Vec<usize> = case
                .relevant
                .iter()
                .filter_map(|l| match corpus.target(&l.id)? {
                    Target::Doc(d) | Target::Section { doc: d, .. } => Some(d),
                })
                .collect();
            let mut out = Vec::new();
            for e in &case.evidence {
                if let (Some((start, end)), Some(d)) = (e.span, e.doc.as_deref().and_then(|d| corpus.doc_index(d))) {
                    out.push((d as u32, start, end));
                    continue;
                }
                let span = crate::analyze::normalize(&e.text);
                if span.is_empty() {
                    continue;
                }
                let docs: Vec<usize> = match e.doc.as_deref().and_then(|d| corpus.doc_index(d)) {
                    Some(d) => vec![d],
                    None if !labelled.is_empty() => labelled.clone(),
                    None => (0..corpus.docs.len()).collect(),
                };
                for d in docs {
                    let (norm, map) = normalized(d);
                    for (at, found) in norm.match_indices(span.as_str()) {
                        let (start, end) = (map[at].0, map[at + found.len() - 1].1);
                        out.push((d as u32, start as usize, end as usize));
                    }
                }
            }
            out
        }
    }
}

/// Per chunk set, per chunk: whether it counts (SPEC §2) for two or more of the sections any
/// case labels. Such a chunk is credited for each: the bigger the chunk, the more it covers.
fn spanning_chunks(unit: Unit, cases: &[GoldenCase], corpus: &Corpus, sets: &[ChunkSet]) -> Vec<Vec<bool>> {
    // Per document, the spans of the sections any case labels.
    let mut labelled: Vec<Vec<(usize, usize)>> = vec![Vec::new(); corpus.docs.len()];
    if unit == Unit::Section {
        for l in cases.iter().flat_map(|c| &c.relevant) {
            if let Some(Target::Section { doc, section }) = corpus.target(&l.id) {
                let s = &corpus.docs[doc].sections[section];
                labelled[doc].push((s.start, s.end));
            }
        }
        for spans in &mut labelled {
            spans.sort_unstable();
            spans.dedup();
        }
    }
    sets.iter()
        .map(|set| {
            set.chunks
                .par_iter()
                .map(|c| {
                    let span = (c.start as usize, c.end as usize);
                    let counts = |s: &&(usize, usize)| crate::evaluate::label::counts_for(span, **s);
                    labelled[c.doc as usize].iter().filter(counts).take(2).count() >= 2
                })
                .collect()
        })
        .collect()
}
