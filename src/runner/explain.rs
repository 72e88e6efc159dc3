//! `ragsweep explain`: why a cell ranked its top item above the best-ranked relevant one,
//! in the numbers of the scorer that ranked them (BM25 term by term; cosines and the exact
//! scan's ranks for dense; each side's rank and share of the fused score for hybrid).

use std::fmt::Write as _;

use serde::Serialize;

use super::{CellRun, Scoring};
use crate::error::{Error, Result};
use crate::evaluate::causes::{diagnostic_depth, Miss};
use crate::evaluate::label::Item;
use crate::retrieve::access::Filter;
use crate::retrieve::bm25::Bm25Explanation;
use crate::retrieve::cell::{Query, Timing};
use crate::retrieve::source::{NodeRole, ScoreNode, Side};
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
    /// Items the cell's list holds at most (its largest k), or with a budget the items its
    /// packed context holds.
    pub depth: usize,
    /// With `--budget`: the context budget in tokens the list was packed into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<usize>,
    /// Chunks the cell's retrieval call searched (`depth` in `per_query.jsonl`).
    pub searched: usize,
    /// Items the search for a relevant item outside the list reads.
    pub deeper_depth: usize,
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
    /// 1-based rank in the cell's list (the run's list: `per_query.jsonl`, `runs/<cell>.trec`);
    /// `None` when the list does not hold it.
    pub rank: Option<u32>,
    /// For a relevant item outside the cell's list: its rank in the cell's search to the
    /// diagnostic depth (`Explanation::deeper_depth`), as the miss diagnosis reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deeper_rank: Option<u32>,
    /// Labelled for the case and the case is answerable by its user.
    pub relevant: bool,
    /// Labelled for the case (also in a restricted-answer case, where the user may not see it).
    pub labelled: bool,
    /// Whether the asking user may see the chunk; false in a `filter = none` cell is a leak.
    pub visible_to_user: bool,
    /// The score the cell ranked it by.
    pub score: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<Bm25Explanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<DenseExplanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridExplanation>,
    /// How the score was made, for any composition: the fusion (if any) at the root, each
    /// source below it with its rank, its score and its parts.
    pub score_tree: ScoreNode,
}

#[derive(Debug, Clone, Serialize)]
pub struct DenseExplanation {
    /// Cosine of the query and chunk vectors (both unit length).
    pub cosine: f32,
    /// Rank of the item in the dense search the cell ran (the cell's list for a dense cell,
    /// the dense side's own list for a hybrid).
    pub rank: Option<u32>,
    /// For a graph (HNSW): the rank in the exact scan over the same vectors, same depth and
    /// filter.
    #[serde(skip_serializing_if = "Option::is_none")]
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
    /// the unit or document `asked` when given. Every rank and score is read from the cell's
    /// own retrieval call (the run's depth, fusion candidates and filter mode: under `post`,
    /// the post list), so it equals the run's `per_query.jsonl` and TREC file.
    pub(super) fn explain<'v>(
        &self,
        run: &CellRun<'_>,
        case_id: &str,
        asked: Option<&str>,
        budget: Option<usize>,
        vector: &'v (dyn Fn(usize) -> &'v [f32] + Sync),
    ) -> Result<Explanation> {
        let ci = self.cases.iter().position(|c| c.id == case_id).ok_or_else(|| Error::UnknownCase {
            cases: vec![case_id.to_string()],
            golden: self.exp.golden.path.clone(),
        })?;
        let (case, corpus) = (&self.cases[ci], self.corpus);
        let set = &self.sets[run.chunks];
        let access = self.access(run, ci);
        let q = vector(ci);
        let scored = self.retrieve(run, ci, q)?;
        // At a budget, the list is the packed context as the budget metrics judged it.
        let contexts = budget.map(|_| self.packed(run, ci, &scored)).transpose()?;
        let packed = match (budget, &contexts) {
            (Some(b), Some(contexts)) => {
                let at = self.exp.cut_position(crate::vocab::Cut::Budget(b))?;
                let pieces = contexts[at].pieces.iter().map(|p| p.0);
                Some(self.truths[ci].judge_pieces(pieces, set, corpus, usize::MAX))
            }
            _ => None,
        };
        let list = packed.as_ref().unwrap_or(&scored.deepest);
        let rank_of = |list: &crate::evaluate::label::Judged, key: &str| {
            list.items.iter().position(|i| i.key == key).map(|p| p as u32 + 1)
        };

        let mut chosen: Vec<(&'static str, Item)> = Vec::new();
        if let Some(top) = list.items.first() {
            chosen.push(("top", top.clone()));
        }
        // The best relevant item: from the cell's list, else (as the miss diagnosis finds it)
        // from the cell's search to the diagnostic depth, whose rank is reported apart.
        let deeper_depth = diagnostic_depth(self.exp.max_k());
        let mut deeper: Option<(String, u32)> = None;
        match list.items.iter().find(|i| i.gain > 0.0) {
            Some(best) => chosen.push(("best relevant", best.clone())),
            None => {
                let deep =
                    self.retrieve_as(run, &run.retriever, access, &[deeper_depth], ci, q, &mut Timing::default())?;
                if let Some(p) = deep.deepest.items.iter().position(|i| i.gain > 0.0) {
                    let item = deep.deepest.items[p].clone();
                    deeper = Some((item.key.clone(), p as u32 + 1));
                    chosen.push(("best relevant", item));
                }
            }
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

        // The oracle's call (the exact search in place of each approximate source): the miss
        // diagnosis, and the exact ranks of a lone source's judged list.
        let oracle = self.oracle(run, ci, q)?;
        let allowed = self.allowed(run.chunks, ci);
        let query = Query { text: &case.question, vector: q };
        // Every step's list in the cell's call, and in the same call of its oracle.
        let restriction = access.in_query();
        let trace = run.retriever.trace(&query, scored.depth, restriction.as_ref())?;
        // A lone source ranks the cell's judged list: its ranks are the judged items', its exact
        // rank read from the oracle's judged list (no second search of the oracle).
        let alone = run.retriever.sources.len() == 1 && run.retriever.rerank.is_empty();
        let exact = match run.retriever.oracle().filter(|_| !alone) {
            Some((oracle, _)) => Some(oracle.trace(&query, scored.depth, restriction.as_ref())?),
            None => None,
        };
        let lexical = run.retriever.sources.iter().find(|s| s.bm25().is_some());
        let items = chosen
            .into_iter()
            .map(|(role, item)| {
                let chunk = &set.chunks[item.chunk as usize];
                let ranked = rank_of(list, &item.key);
                let deeper_rank = deeper.as_ref().filter(|(k, _)| ranked.is_none() && *k == item.key).map(|d| d.1);
                let mut tree = run.retriever.explain(&query, item.chunk, &trace, exact.as_ref())?;
                tree.rank = ranked.or(deeper_rank);
                if alone {
                    let exact_rank = oracle.as_ref().and_then(|o| rank_of(&o.retrieval.deepest, &item.key));
                    tree.children.extend(exact_rank.map(ScoreNode::exact_rank));
                }
                let hybrid = tree.find(NodeRole::Fusion).map(|fusion| {
                    let side = |side: Side| {
                        let node = run
                            .retriever
                            .sources
                            .iter()
                            .position(|s| s.side() == side)
                            .and_then(|i| fusion.find(NodeRole::Source(i)));
                        node.map_or(SideScore { rank: None, score: None, fused_part: 0.0 }, |n| SideScore {
                            rank: n.rank,
                            score: n.rank.and(n.value),
                            fused_part: n.find(NodeRole::FusedPart).and_then(|p| p.value).unwrap_or(0.0),
                        })
                    };
                    HybridExplanation {
                        fusion: fusion.name.clone(),
                        lexical: side(Side::Lexical),
                        dense: side(Side::Dense),
                        fused: fusion.value.unwrap_or(0.0),
                    }
                });
                let dense = run
                    .retriever
                    .sources
                    .iter()
                    .position(|s| s.side() == Side::Dense)
                    .and_then(|d| tree.find(NodeRole::Source(d)))
                    .map(|node| DenseExplanation {
                        cosine: node.value.unwrap_or(f32::NAN),
                        rank: node.rank,
                        exact_rank: node.find(NodeRole::ExactRank).and_then(|n| n.rank),
                    });
                Ok(ExplainedItem {
                    role,
                    key: item.key.clone(),
                    doc: corpus.docs[chunk.doc as usize].id.clone(),
                    chunk: chunk.id.clone(),
                    rank: ranked,
                    deeper_rank,
                    relevant: case.answerable && item.gain > 0.0,
                    labelled: item.gain > 0.0,
                    visible_to_user: allowed.is_none_or(|a| a.contains(item.chunk)),
                    score: ranked.map(|_| item.score),
                    bm25: lexical.map(|s| s.explain(&query, item.chunk)).transpose()?.and_then(|e| e.bm25),
                    dense,
                    hybrid,
                    score_tree: tree,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Explanation {
            cell: run.cell.id.clone(),
            label: run.cell.label(),
            case: case.id.clone(),
            question: case.question.clone(),
            answerable: case.answerable,
            groups: case.user_groups().to_vec(),
            filter: run.cell.filter,
            depth: if budget.is_some() { list.items.len() } else { list.items.len().max(self.exp.max_k()) },
            budget,
            searched: scored.depth,
            deeper_depth,
            items,
            misses: {
                let at_k = self.diagnose(run, ci, q, &scored, oracle.as_ref())?;
                match (budget, &contexts) {
                    // At a budget, its own miss (the cut-offs' are another question).
                    (Some(b), Some(contexts)) => self
                        .budget_misses(run, ci, &scored, contexts, &at_k)
                        .into_iter()
                        .filter(|m| m.budget == b)
                        .map(|m| m.miss)
                        .collect(),
                    _ => at_k,
                }
            },
        })
    }

    /// The best chunk of document or unit `asked` that the cell's list does not hold, by the
    /// cell's first ranking source.
    fn unranked_item(&self, run: &CellRun<'_>, ci: usize, asked: &str, vector: &[f32]) -> Result<Item> {
        let corpus = self.corpus;
        let set = &self.sets[run.chunks];
        let doc = corpus
            .doc_index(asked)
            .or_else(|| match corpus.target(asked) {
                Some(crate::input::corpus::Target::Section { doc, .. }) => Some(doc),
                _ => None,
            })
            .ok_or_else(|| Error::NotFound(format!("no document or section {asked:?} in the corpus")))?;
        let source = &run.retriever.sources[0];
        let query = Query { text: &self.cases[ci].question, vector };
        let mut best: Option<Hit> = None;
        for c in (0..set.len()).filter(|&c| set.chunks[c].doc as usize == doc) {
            let score = source.explain(&query, c as u32)?.score.unwrap_or(f32::NEG_INFINITY);
            if best.is_none_or(|b| score > b.score) {
                best = Some(Hit { chunk: c as u32, score });
            }
        }
        let hit = best.ok_or_else(|| Error::NotFound(format!("document {asked:?} has no chunk in this cell")))?;
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
    let at =
        e.budget.map_or_else(|| format!("k ≤ {}", e.depth), |b| format!("budget {b} tokens: {} items packed", e.depth));
    let _ = writeln!(s, "at {at}; the retrieval call searched {} chunks", e.searched);
    if e.items.is_empty() {
        let _ = writeln!(s, "\nthe cell returned nothing for this case");
    }
    // The top item may be the best relevant one (then listed once, as the top).
    if !e.items.iter().any(|i| i.labelled && i.role != "asked") && e.answerable {
        let _ = writeln!(s, "\nno relevant item in the first {} of the cell's search", e.deeper_depth);
    }
    for item in &e.items {
        let rel = match (item.relevant, item.labelled) {
            (true, _) => "relevant",
            (false, true) => "labelled, but the answer is restricted for this user",
            _ => "not relevant",
        };
        let list = match e.budget {
            Some(b) => format!("the context packed into {b} tokens ({} items)", e.depth),
            None => format!("the cell's list of {}", e.depth),
        };
        let rank = match (item.rank, item.deeper_rank) {
            (Some(r), _) => format!("#{r}"),
            (None, Some(r)) => format!("not in {list}; #{r} in a search to depth {}", e.deeper_depth),
            (None, None) => format!("not in {list}"),
        };
        let restricted = match (item.visible_to_user, e.filter) {
            (true, _) => "",
            (false, Filter::None) => ", RESTRICTED: the user may not see it (a leak of this filter = none cell)",
            (false, _) => ", RESTRICTED: the user may not see it",
        };
        let _ = writeln!(s, "\n{} ({rank}, {rel}{restricted}): {}  [chunk {}]", item.role, item.key, item.chunk);
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
            let exact = d.exact_rank.map_or(String::new(), |r| format!("; exact-scan rank {r}"));
            let _ = writeln!(s, "  cosine {:.6}; dense rank {}{exact}", d.cosine, opt(d.rank));
        }
        let mut tree = String::new();
        item.score_tree.render(4, &mut tree);
        let _ = write!(s, "  how the score was made:\n{tree}");
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
            let ks: Vec<String> = match e.budget {
                Some(b) => vec![format!("@{b}t")],
                None => group.iter().map(|m| format!("@{}", m.k)).collect(),
            };
            let last = group.last().expect("chunks are not empty");
            let _ = writeln!(s, "  {}: {} — {}", ks.join(", "), last.cause, last.explained());
        }
    }
    s
}
