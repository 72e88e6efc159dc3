//! One retriever per cell, and the one retrieval call that scoring, the timed latency pass
//! and the benchmarks all make.
//!
//! [`retrieve`] owns the depth rule (fetch more chunks until the judged list holds max k
//! items) and the filter modes (SPEC §5): `in_query` passes the allowed set into the search,
//! `post` takes the list filter `none` returns at each cut-off (deepened exactly as `none`
//! is) and drops what the user may not see without refilling it.

use std::sync::Arc;
use std::time::Instant;

use crate::error::Result;
use crate::retrieve::access::Access;
use crate::retrieve::fusion::{self, Fusion};
use crate::retrieve::hits::{top_hits, Hit};
pub use crate::retrieve::source::Query;
use crate::retrieve::source::{NodeRole, RankingSource, Restriction, ScoreNode, Side};
use crate::vocab::Judged;

/// What a cell retrieves with: one or more ranking sources, fused when there are several,
/// then reordered by each reranker in turn.
#[derive(Clone)]
pub struct CellRetriever<'a> {
    pub sources: Vec<Arc<dyn RankingSource + 'a>>,
    /// Each source's name in the results: its catalog kind's label.
    pub names: Vec<String>,
    /// With several sources: how their lists fuse, and the chunks each source fetches at
    /// least (more when a deeper list is asked for); the fused list is cut at the asked depth.
    pub fusion: Option<(Fusion, usize)>,
    /// Rerankers, each reordering the list before it.
    pub rerank: Vec<Reranker<'a>>,
}

/// A reranker: it reorders the first `candidates` chunks of the list before it (more when a
/// deeper list is asked for) by its source's scores.
#[derive(Clone)]
pub struct Reranker<'a> {
    pub source: Arc<dyn RankingSource + 'a>,
    pub candidates: usize,
    /// Its name in the results (`rerank(minilm-l6)`).
    pub name: String,
}

/// A stage of one retrieval call. A new kind of stage adds a variant, not a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Embedding the question.
    Embed,
    /// The search of the retriever's source at this position.
    Search(usize),
    Fuse,
    /// The reranker at this position.
    Rerank(usize),
}

impl Stage {
    /// The stage's name in the results: `embed`, `search <source name>`, `fuse`, the
    /// reranker's name.
    pub fn name(self, retriever: &CellRetriever<'_>) -> String {
        match self {
            Stage::Embed => "embed".into(),
            Stage::Search(i) => format!("search {}", retriever.names[i]),
            Stage::Fuse => "fuse".into(),
            Stage::Rerank(i) => retriever.rerank[i].name.clone(),
        }
    }
}

/// Seconds spent in each stage of one call, in the order first met, added up over its searches.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    pub stages: Vec<(Stage, f64)>,
}

impl Timing {
    pub fn add(&mut self, stage: Stage, seconds: f64) {
        match self.stages.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, total)) => *total += seconds,
            None => self.stages.push((stage, seconds)),
        }
    }
}

impl<'a> CellRetriever<'a> {
    pub fn single(source: Arc<dyn RankingSource + 'a>, name: String) -> Self {
        CellRetriever { sources: vec![source], names: vec![name], fusion: None, rerank: Vec::new() }
    }

    /// The cell's retriever with the oracle of each approximate source in its place, and
    /// the names of the sources replaced; `None` when no source approximates.
    pub fn oracle(&self) -> Option<(CellRetriever<'_>, String)> {
        let mut what = Vec::new();
        let sources = self
            .sources
            .iter()
            .zip(&self.names)
            .map(|(s, name)| -> Arc<dyn RankingSource + '_> {
                match s.oracle() {
                    Some(exact) => {
                        what.push(name.as_str());
                        exact
                    }
                    None => s.clone(),
                }
            })
            .collect::<Vec<_>>();
        let names = self.names.clone();
        (!what.is_empty()).then(|| {
            (
                CellRetriever { sources, names, fusion: self.fusion.clone(), rerank: self.rerank.clone() },
                what.join(", "),
            )
        })
    }

    /// The sides of a fused cell, each searched alone as the cell searches it (not reranked).
    pub fn alone(&self) -> Vec<CellRetriever<'a>> {
        self.sources.iter().zip(&self.names).map(|(s, name)| CellRetriever::single(s.clone(), name.clone())).collect()
    }

    /// The cell's retriever without its rerankers: the list they reorder. `None` without one.
    pub fn unreranked(&self) -> Option<CellRetriever<'a>> {
        (!self.rerank.is_empty()).then(|| CellRetriever {
            sources: self.sources.clone(),
            names: self.names.clone(),
            fusion: self.fusion.clone(),
            rerank: Vec::new(),
        })
    }

    /// The chunks the sources' list holds for a list of `depth`: the most any reranker
    /// reorders, at least `depth`.
    pub fn reranked_depth(&self, depth: usize) -> usize {
        self.rerank.iter().map(|r| r.candidates).fold(depth, usize::max)
    }

    /// The chunks each source fetches for a list of `depth`.
    pub fn side_depth(&self, depth: usize) -> usize {
        let depth = self.reranked_depth(depth);
        self.fusion.as_ref().map_or(depth, |(_, candidates)| (*candidates).max(depth))
    }

    /// Whether a source plans each depth on its own (a serving engine), so that a list of k
    /// must be asked for with its own `LIMIT k`, as an application asks, not cut from a deeper one.
    pub fn plans_each_depth(&self) -> bool {
        self.sources.iter().any(|s| s.plans_each_depth())
    }

    /// How the engine plans each engine source's search of a list of `depth` (its own
    /// `LIMIT`, for fused cells its candidates), joined with `; `; `None` when no source is
    /// served by an engine.
    pub fn plan(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Option<String>> {
        let mut plans = Vec::new();
        for source in &self.sources {
            if let Some(plan) = source.plan(query, self.side_depth(depth), restrict)? {
                plans.push(plan);
            }
        }
        Ok((!plans.is_empty()).then(|| plans.join("; ")))
    }

    /// The first source on `side`.
    pub fn first(&self, side: Side) -> Option<&(dyn RankingSource + 'a)> {
        self.sources.iter().find(|s| s.side() == side).map(|s| &**s)
    }

    /// The top `depth` chunks for `query`, restricted in the search when `restrict` is given.
    pub fn search(
        &self,
        query: &Query<'_>,
        depth: usize,
        restrict: Option<&Restriction<'_>>,
        timing: &mut Timing,
    ) -> Result<Vec<Hit>> {
        self.searched(query, depth, restrict, timing, None)
    }

    /// The lists every step of [`CellRetriever::search`] made for the same call.
    pub fn trace(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Trace> {
        let mut trace = Trace::default();
        self.searched(query, depth, restrict, &mut Timing::default(), Some(&mut trace))?;
        Ok(trace)
    }

    /// How `chunk`'s score was made in the call `trace` recorded: each source's node with its
    /// rank in its list, the fusion's node over them, each reranker's over the list it
    /// reordered. `exact` is the same call of the cell's oracle ([`CellRetriever::oracle`]):
    /// an approximate source's node holds the chunk's rank in the exact search in its place.
    pub fn explain(&self, query: &Query<'_>, chunk: u32, trace: &Trace, exact: Option<&Trace>) -> Result<ScoreNode> {
        let mut sources = Vec::with_capacity(self.sources.len());
        for (i, source) in self.sources.iter().enumerate() {
            let e = source.explain(query, chunk)?;
            let mut node = ScoreNode {
                name: self.names[i].clone(),
                value: e.score,
                rank: rank_in(&trace.sources[i], chunk),
                children: e.parts,
                role: NodeRole::Source(i),
            };
            let exact_rank = exact.filter(|_| source.oracle().is_some()).and_then(|x| rank_in(&x.sources[i], chunk));
            node.children.extend(exact_rank.map(ScoreNode::exact_rank));
            sources.push(node);
        }
        let mut tree = match self.fused() {
            Some(fusion) => {
                let sided = self.sided(&trace.sources);
                fusion::explain(&sided, fusion, chunk, sources, rank_in(&trace.first, chunk))
            }
            None => sources.swap_remove(0),
        };
        for (i, reranker) in self.rerank.iter().enumerate() {
            tree = reranker.explain(query, chunk, tree, rank_in(&trace.reranked[i], chunk), i)?;
        }
        Ok(tree)
    }

    /// How the sources' lists fuse, when there are several.
    fn fused(&self) -> Option<&dyn fusion::Fuse> {
        self.fusion.as_ref().filter(|_| self.sources.len() > 1).map(|(fusion, _)| fusion.as_ref())
    }

    fn sided<'l>(&self, lists: &'l [Vec<Hit>]) -> Vec<(&'l [Hit], Side)> {
        lists.iter().zip(&self.sources).map(|(l, s)| (&l[..], s.side())).collect()
    }

    /// [`CellRetriever::search`], keeping each step's list in `trace` when given.
    fn searched(
        &self,
        query: &Query<'_>,
        depth: usize,
        restrict: Option<&Restriction<'_>>,
        timing: &mut Timing,
        mut trace: Option<&mut Trace>,
    ) -> Result<Vec<Hit>> {
        let mut hits = self.first_stage(query, self.reranked_depth(depth), restrict, timing, trace.as_deref_mut())?;
        for (i, reranker) in self.rerank.iter().enumerate() {
            let t = Instant::now();
            let n = hits.len().min(reranker.candidates.max(depth));
            let chunks: Vec<u32> = hits[..n].iter().map(|h| h.chunk).collect();
            let scores = reranker.source.rescore(query, &chunks)?;
            let reordered = chunks.into_iter().zip(scores).map(|(chunk, score)| Hit { chunk, score }).collect();
            hits = top_hits(reordered, n);
            timing.add(Stage::Rerank(i), t.elapsed().as_secs_f64());
            if let Some(trace) = trace.as_deref_mut() {
                trace.reranked.push(hits.clone());
            }
        }
        hits.truncate(depth);
        Ok(hits)
    }

    /// The sources' list of `depth` chunks: the one source's, or the sides' fused.
    fn first_stage(
        &self,
        query: &Query<'_>,
        depth: usize,
        restrict: Option<&Restriction<'_>>,
        timing: &mut Timing,
        trace: Option<&mut Trace>,
    ) -> Result<Vec<Hit>> {
        let mut timed = |i: usize, depth: usize| -> Result<Vec<Hit>> {
            let t = Instant::now();
            let hits = self.sources[i].search(query, depth, restrict)?;
            timing.add(Stage::Search(i), t.elapsed().as_secs_f64());
            Ok(hits)
        };
        let Some(fusion) = self.fused() else {
            let hits = timed(0, depth)?;
            if let Some(trace) = trace {
                (trace.sources, trace.first) = (vec![hits.clone()], hits.clone());
            }
            return Ok(hits);
        };
        let side_depth = self.side_depth(depth);
        let lists: Vec<Vec<Hit>> = (0..self.sources.len()).map(|i| timed(i, side_depth)).collect::<Result<_>>()?;
        let t = Instant::now();
        let fused = fusion::fuse(&self.sided(&lists), fusion, depth);
        timing.add(Stage::Fuse, t.elapsed().as_secs_f64());
        if let Some(trace) = trace {
            (trace.sources, trace.first) = (lists, fused.clone());
        }
        Ok(fused)
    }
}

impl Reranker<'_> {
    /// The reranker's node for `chunk` over `below`, the node of the list it reordered.
    fn explain(
        &self,
        query: &Query<'_>,
        chunk: u32,
        below: ScoreNode,
        rank: Option<u32>,
        position: usize,
    ) -> Result<ScoreNode> {
        let e = self.source.explain(query, chunk)?;
        let mut children = e.parts;
        children.push(below);
        let name = format!("{} of the first {}", self.name, self.candidates);
        Ok(ScoreNode { name, value: e.score, rank, children, role: NodeRole::Rerank(position) })
    }
}

/// The lists each step of one search call made, for [`CellRetriever::explain`].
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Each source's list, in source order.
    pub sources: Vec<Vec<Hit>>,
    /// The sources' list: the one source's, or theirs fused.
    pub first: Vec<Hit>,
    /// Each reranker's list, in order.
    pub reranked: Vec<Vec<Hit>>,
}

/// 1-based rank of `chunk` in `hits`.
pub fn rank_in(hits: &[Hit], chunk: u32) -> Option<u32> {
    hits.iter().position(|h| h.chunk == chunk).map(|p| p as u32 + 1)
}

/// How a cell's hits become judged lists, and how deep it starts.
pub struct Judge<'j> {
    /// Builds the judged list of at most `k` items from ranked hits.
    pub judge: &'j (dyn Fn(&[Hit], usize) -> Judged + Sync),
    /// Whether chunks collapse into fewer judged items (documents or sections): the first
    /// search call then fetches more than k chunks (see [`first_depth`]).
    pub collapses: bool,
    /// Chunks in the index: deepening stops there.
    pub chunks: usize,
    /// With context budgets: each chunk's tokens and the largest budget, which the ranked list
    /// must fill (as far as the index allows) besides holding max k items.
    pub fill: Option<(&'j [u32], usize)>,
}

/// Chunks fetched first: more than `max_k` when chunks collapse into documents or sections.
pub fn first_depth(collapses: bool, max_k: usize) -> usize {
    if collapses {
        max_k.saturating_mul(4)
    } else {
        max_k
    }
}

/// The lists one case gets from one cell.
#[derive(Debug, Clone)]
pub struct Retrieval {
    /// The list at the deepest cut-off.
    pub deepest: Judged,
    /// Each cut-off's own list (in the order of the cut-offs) under `post` and for a retriever
    /// that plans each depth; empty otherwise, where every cut-off reads a prefix of `deepest`.
    pub per_k: Vec<Judged>,
    /// Chunks asked of the last search call.
    pub depth: usize,
    /// The ranked chunks of the last search call (unfiltered under `post`): what a context
    /// budget packs.
    pub hits: Vec<Hit>,
}

impl Retrieval {
    /// The list scored at the i-th cut-off.
    pub fn list(&self, i: usize) -> &Judged {
        self.per_k.get(i).unwrap_or(&self.deepest)
    }
}

/// Retrieves one case for one cell at cut-offs `ks` (ascending): the one code path of
/// scoring and latency. A retriever that plans each depth on its own (an engine) is asked once
/// per cut-off, each list with its own depth; `timing` then holds the largest cut-off's call,
/// the one request an application makes.
pub fn retrieve(
    retriever: &CellRetriever<'_>,
    query: &Query<'_>,
    access: Access<'_>,
    ks: &[usize],
    judge: &Judge<'_>,
    timing: &mut Timing,
) -> Result<Retrieval> {
    if !retriever.plans_each_depth() || ks.len() == 1 {
        return retrieve_deepest(retriever, query, access, ks, judge, timing);
    }
    let (last, smaller) = ks.split_last().expect("at least one cut-off");
    let mut per_k = Vec::with_capacity(ks.len());
    for &k in smaller {
        let r = retrieve_deepest(retriever, query, access, &[k], judge, &mut Timing::default())?;
        per_k.push(r.deepest);
    }
    let deepest = retrieve_deepest(retriever, query, access, &[*last], judge, timing)?;
    per_k.push(deepest.deepest.clone());
    Ok(Retrieval { per_k, ..deepest })
}

/// [`retrieve`] with every cut-off read from the deepest call's list.
fn retrieve_deepest(
    retriever: &CellRetriever<'_>,
    query: &Query<'_>,
    access: Access<'_>,
    ks: &[usize],
    judge: &Judge<'_>,
    timing: &mut Timing,
) -> Result<Retrieval> {
    let restrict = access.in_query();
    deepened(&mut |depth| retriever.search(query, depth, restrict.as_ref(), timing), access, ks, judge)
}

/// A case's lists rebuilt from the ranked chunks a run recorded (`hits`, the last search call
/// of `depth` chunks) with the current labels, and whether they are what a fresh run would
/// list: only when it would search exactly as deep (new labels can collapse the list
/// differently, and only retrieving again can say what that run would list).
pub fn replay(
    hits: &[Hit],
    depth: usize,
    access: Access<'_>,
    ks: &[usize],
    judge: &Judge<'_>,
) -> Result<(Retrieval, bool)> {
    let mut deeper = false;
    let mut search = |d: usize| -> Result<Vec<Hit>> {
        deeper |= d > depth;
        Ok(hits[..d.min(hits.len())].to_vec())
    };
    let r = deepened(&mut search, access, ks, judge)?;
    let exact = !deeper && r.depth == depth;
    Ok((r, exact))
}

/// Searches ever deeper (×4) until the judged list holds the deepest cut-off's items and the
/// largest budget is filled, or the source has no more; then applies a late filter.
fn deepened(
    search: &mut dyn FnMut(usize) -> Result<Vec<Hit>>,
    access: Access<'_>,
    ks: &[usize],
    judge: &Judge<'_>,
) -> Result<Retrieval> {
    let max_k = *ks.last().expect("at least one cut-off");
    let mut depth = first_depth(judge.collapses, max_k);
    let filled = |hits: &[Hit]| {
        judge.fill.is_none_or(|(tokens, budget)| {
            hits.iter().map(|h| tokens[h.chunk as usize] as usize).sum::<usize>() >= budget
        })
    };
    let (hits, deepest) = loop {
        let hits = search(depth)?;
        let judged = (judge.judge)(&hits, max_k);
        if (judged.items.len() >= max_k && filled(&hits)) || hits.len() < depth || depth >= judge.chunks {
            break (hits, judged);
        }
        depth = depth.saturating_mul(4);
    };
    let Access::Post(Restriction { allowed, .. }) = access else {
        return Ok(Retrieval { deepest, per_k: Vec::new(), depth, hits });
    };
    let per_k: Vec<Judged> = ks
        .iter()
        .map(|&k| {
            let unfiltered = (judge.judge)(&hits, k).returned.len();
            let visible: Vec<Hit> = hits[..unfiltered].iter().filter(|h| allowed.contains(h.chunk)).copied().collect();
            (judge.judge)(&visible, k)
        })
        .collect();
    let deepest = per_k.last().expect("at least one cut-off").clone();
    Ok(Retrieval { deepest, per_k, depth, hits })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::dense::ExactIndex;
    use crate::retrieve::hits::Allowed;
    use crate::retrieve::source::{ExactSource, SourceScore};
    use crate::vocab::Item;

    /// Chunks 0..n; chunk i belongs to document i / 2; the judged list collapses to
    /// documents; document 0 is relevant.
    fn collapse(hits: &[Hit], k: usize) -> Judged {
        let mut items: Vec<Item> = Vec::new();
        let mut returned = Vec::new();
        for h in hits {
            if items.len() >= k {
                break;
            }
            returned.push(h.chunk);
            let key = format!("d{}", h.chunk / 2);
            if !items.iter().any(|i| i.key == key) {
                let gain = f64::from(u8::from(h.chunk / 2 == 0));
                items.push(Item { key, score: h.score, gain, new: gain as u32, chunk: h.chunk, judged: true });
            }
        }
        Judged { items, relevant: 1, ideal: vec![1.0], returned }
    }

    #[test]
    fn a_reranker_reorders_only_its_candidates_and_at_least_the_asked_depth() {
        // The first stage ranks chunks 0..6 in order; the reranker's vectors the other way round.
        let first = ExactIndex::new(2, (0..6).flat_map(|i| [0.0, 1.0 - i as f32 * 0.1]).collect::<Vec<_>>());
        let second = ExactIndex::new(2, (0..6).flat_map(|i| [0.0, i as f32 * 0.1]).collect::<Vec<_>>());
        let reranked = |candidates| CellRetriever {
            sources: vec![Arc::new(ExactSource { index: &first })],
            names: vec!["first".into()],
            fusion: None,
            rerank: vec![Reranker { source: Arc::new(ExactSource { index: &second }), candidates, name: "r".into() }],
        };
        let search = |retriever: &CellRetriever<'_>, vector: &[f32], depth| -> Vec<u32> {
            let mut t = Timing::default();
            let query = Query { text: "", vector };
            retriever.search(&query, depth, None, &mut t).unwrap().iter().map(|h| h.chunk).collect()
        };
        // Candidates 3, depth 2: the first stage's top 3 (0, 1, 2) reordered by the second query.
        let q = [0.0, 1.0];
        assert_eq!(search(&reranked(3), &q, 2), [2, 1]);
        // Fewer candidates than the depth: the asked depth is reordered.
        assert_eq!(search(&reranked(1), &q, 4), [3, 2, 1, 0]);
        let mut t = Timing::default();
        reranked(3).search(&Query { text: "", vector: &q }, 2, None, &mut t).unwrap();
        let stages: Vec<Stage> = t.stages.iter().map(|s| s.0).collect();
        assert_eq!(stages, [Stage::Search(0), Stage::Rerank(0)]);
    }

    #[test]
    fn a_reranked_fusion_explains_itself_from_its_steps_lists() {
        // Two sides ranking chunks 0..6 in opposite orders, fused by RRF; a reranker preferring
        // chunk 3.
        let up = ExactIndex::new(2, (0..6).flat_map(|i| [0.0, 1.0 - i as f32 * 0.1]).collect::<Vec<_>>());
        let down = ExactIndex::new(2, (0..6).flat_map(|i| [0.0, 0.5 + i as f32 * 0.1]).collect::<Vec<_>>());
        let near3 =
            ExactIndex::new(2, (0..6).flat_map(|i| [0.0, 1.0 - (i as f32 - 3.0).abs() * 0.1]).collect::<Vec<_>>());
        let retriever = CellRetriever {
            sources: vec![Arc::new(ExactSource { index: &up }), Arc::new(ExactSource { index: &down })],
            names: vec!["up".into(), "down".into()],
            fusion: Some((
                serde_json::from_str::<crate::catalog::fusion::Fusion>(r#"{"method":"rrf","k":0.0}"#).unwrap().fuse(),
                4,
            )),
            rerank: vec![Reranker { source: Arc::new(ExactSource { index: &near3 }), candidates: 3, name: "r".into() }],
        };
        let query = Query { text: "", vector: &[0.0, 1.0] };
        let trace = retriever.trace(&query, 2, None).unwrap();
        assert_eq!(trace.sources.iter().map(Vec::len).collect::<Vec<_>>(), [4, 4]);
        let listed = retriever.search(&query, 2, None, &mut Timing::default()).unwrap();
        assert_eq!(&trace.reranked[0][..2], &listed[..]);
        for chunk in 0..6 {
            let tree = retriever.explain(&query, chunk, &trace, None).unwrap();
            assert_eq!((tree.role, tree.rank), (NodeRole::Rerank(0), rank_in(&trace.reranked[0], chunk)));
            assert_eq!(tree.name, "r of the first 3");
            let fusion = tree.children.last().unwrap();
            assert_eq!((fusion.role, fusion.rank), (NodeRole::Fusion, rank_in(&trace.first, chunk)));
            let parts: f32 = fusion.children.iter().map(|s| s.find(NodeRole::FusedPart).unwrap().value.unwrap()).sum();
            assert_eq!(Some(parts), fusion.value);
            if let Some(r) = fusion.rank {
                assert_eq!(Some(trace.first[r as usize - 1].score), fusion.value, "the fused score");
            }
            for (i, side) in fusion.children.iter().enumerate() {
                assert_eq!((side.role, side.rank), (NodeRole::Source(i), rank_in(&trace.sources[i], chunk)));
            }
        }
    }

    #[test]
    fn post_drops_from_the_unfiltered_list_and_never_refills() {
        let vectors: Vec<f32> = (0..8).flat_map(|i| [1.0 - i as f32 * 0.1, 0.0]).collect();
        let index = ExactIndex::new(2, vectors);
        let retriever = CellRetriever::single(Arc::new(ExactSource { index: &index }), "exact".into());
        let query = Query { text: "", vector: &[1.0, 0.0] };
        // Document 0 (chunks 0 and 1) is the best match and invisible.
        let allowed = Allowed::from_fn(8, |i| i >= 2);
        let judge = Judge { judge: &collapse, collapses: true, chunks: 8, fill: None };
        let mut t = Timing::default();
        let ks = [1, 2];
        let post = retrieve(
            &retriever,
            &query,
            Access::Post(Restriction { allowed: &allowed, groups: &[] }),
            &ks,
            &judge,
            &mut t,
        )
        .unwrap();
        assert!(post.list(0).items.is_empty(), "the unfiltered top 1 was invisible: nothing is left");
        assert_eq!(post.list(1).items.len(), 1, "d1 survives, d0 is dropped, nothing refills");
        let in_query = retrieve(
            &retriever,
            &query,
            Access::InQuery(Restriction { allowed: &allowed, groups: &[] }),
            &ks,
            &judge,
            &mut t,
        )
        .unwrap();
        assert_eq!(in_query.list(1).items.len(), 2);
        assert!(in_query.deepest.returned.iter().all(|&c| c >= 2));
        let open = retrieve(&retriever, &query, Access::Open, &ks, &judge, &mut t).unwrap();
        assert_eq!(open.depth, post.depth, "post is deepened exactly as none is");
        assert_eq!(open.deepest.items[0].key, "d0");
    }

    /// An exact source that counts its search calls, planning each depth or not.
    struct Counting<'a> {
        inner: ExactSource<'a>,
        plans: bool,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl RankingSource for Counting<'_> {
        fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.search(query, depth, restrict)
        }
        fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
            self.inner.explain(query, chunk)
        }
        fn size_bytes(&self) -> u64 {
            0
        }
        fn side(&self) -> Side {
            self.inner.side()
        }
        fn plans_each_depth(&self) -> bool {
            self.plans
        }
    }

    #[test]
    fn scoring_asks_an_engine_once_per_k_and_the_timed_call_once_for_any_cell() {
        let index = ExactIndex::new(2, (0..40).flat_map(|i| [1.0 - i as f32 * 0.01, 0.0]).collect::<Vec<_>>());
        let query = Query { text: "", vector: &[1.0, 0.0] };
        let one_each = |hits: &[Hit], k: usize| {
            let items: Vec<Item> = hits
                .iter()
                .take(k)
                .map(|h| Item {
                    key: h.chunk.to_string(),
                    score: h.score,
                    gain: 0.0,
                    new: 0,
                    chunk: h.chunk,
                    judged: true,
                })
                .collect();
            Judged { returned: items.iter().map(|i| i.chunk).collect(), items, relevant: 1, ideal: vec![1.0] }
        };
        let judge = Judge { judge: &one_each, collapses: false, chunks: 40, fill: None };
        for plans in [false, true] {
            let source = Arc::new(Counting { inner: ExactSource { index: &index }, plans, calls: 0.into() });
            let retriever = CellRetriever::single(source.clone(), "counting".into());
            let calls = |ks: &[usize]| {
                source.calls.store(0, std::sync::atomic::Ordering::SeqCst);
                retrieve(&retriever, &query, Access::Open, ks, &judge, &mut Timing::default()).unwrap();
                source.calls.load(std::sync::atomic::Ordering::SeqCst)
            };
            assert_eq!(calls(&[1, 3, 10]), if plans { 3 } else { 1 }, "scored, plans each depth: {plans}");
            assert_eq!(calls(&[10]), 1, "the timed call at the largest k, plans each depth: {plans}");
        }
    }
}
