//! Gathers the evidence for each miss of a case in a cell and gives it its first cause
//! (`evaluate::causes`), in pipeline order. Every rank it reads comes from the cell's own
//! retrieval call (`retrieve_as`), with one thing changed: the exact scan in place of the
//! graph, one side of a hybrid alone, the in-query filter in place of `post`, or a deeper
//! cut-off.

use std::collections::BTreeSet;

use super::{CellRun, Oracle, Packed, Scoring};
use crate::analyze::{fold_accents, normalize};
use crate::error::Result;
use crate::evaluate::causes::{diagnostic_depth, BudgetMiss, Cause, Miss, CUTOFF_MARGIN};
use crate::evaluate::label::{Judged, Truth};
use crate::input::corpus::Target;
use crate::retrieve::access::{Access, Filter};
use crate::retrieve::cell::{CellRetriever, Retrieval, Timing};
use crate::retrieve::Hit;
use crate::stages::chunk::ChunkSet;
use crate::words::clip;

/// 1-based rank of the first relevant item among the first `k` of `list`.
pub fn first_relevant(list: &Judged, k: usize) -> Option<u32> {
    list.items.iter().take(k).position(|i| i.gain > 0.0).map(|p| p as u32 + 1)
}

/// Ranks of the first relevant item in one variant of the cell: per cut-off of the
/// experiment (within k), and in its deepest list.
struct Ranks {
    at_k: Vec<Option<u32>>,
    deepest: Option<u32>,
}

impl Scoring<'_> {
    /// The misses of case `ci` in `run` (one per cut-off without a relevant item), each with
    /// its first cause; none for unanswerable cases.
    /// `oracle` is the case's call to the cell's oracle ([`Scoring::oracle`]), when it has one.
    pub(super) fn diagnose(
        &self,
        run: &CellRun<'_>,
        ci: usize,
        vector: &[f32],
        r: &Retrieval,
        oracle: Option<&Oracle>,
    ) -> Result<Vec<Miss>> {
        let misses = self.diagnose_pipeline(run, ci, vector, r, oracle)?;
        Ok(flag_unjudged(misses, r, &self.exp.k))
    }

    /// The misses of case `ci` at the context budgets: each budget whose context (`packed`, as
    /// [`Scoring::packed`] made them) holds no relevant item. When the ranking holds one, the budget ran out before it (`budget`);
    /// otherwise the cause is the miss's at the largest k (`at_k`, as [`Scoring::diagnose`]
    /// gave them), where the ranking first lost it.
    pub(super) fn budget_misses(
        &self,
        run: &CellRun<'_>,
        ci: usize,
        r: &Retrieval,
        packed: &[Packed],
        at_k: &[Miss],
    ) -> Vec<BudgetMiss> {
        if !self.cases[ci].answerable {
            return Vec::new();
        }
        let set = &self.sets[run.chunks];
        let max_k = *self.exp.k.last().expect("at least one cut-off");
        let ranked = first_relevant(&r.deepest, usize::MAX);
        let mut out = Vec::new();
        for (packed, &budget) in packed.iter().zip(&self.exp.budget) {
            let judged = self.truths[ci].judge_pieces(packed.pieces.iter().map(|p| p.0), set, self.corpus, usize::MAX);
            if first_relevant(&judged, usize::MAX).is_some() {
                continue;
            }
            let (items, tokens) = (judged.items.len(), packed.tokens());
            let miss = match (ranked, at_k.iter().find(|m| m.k == max_k)) {
                (Some(rank), _) => Miss::new(
                    max_k,
                    Cause::Budget,
                    Some(rank),
                    if rank as usize > items {
                        format!("the ranking holds a relevant unit at rank {rank}; {budget} tokens packed the {items} items before it ({tokens} tokens)")
                    } else {
                        format!("the ranking holds a relevant unit at rank {rank}, but the budget of {budget} tokens cut its chunk before the relevant text")
                    },
                ),
                (None, Some(m)) => m.clone(),
                (None, None) => Miss::new(
                    max_k,
                    Cause::Undecided,
                    None,
                    format!("no relevant unit in the ranking of {} items, and none packed", r.deepest.items.len()),
                ),
            };
            out.push(BudgetMiss { budget, miss });
        }
        out
    }

    /// The first pipeline stage that lost the relevant unit, per missed cut-off.
    fn diagnose_pipeline(
        &self,
        run: &CellRun<'_>,
        ci: usize,
        vector: &[f32],
        r: &Retrieval,
        oracle: Option<&Oracle>,
    ) -> Result<Vec<Miss>> {
        let case = &self.cases[ci];
        let ks = &self.exp.k;
        let missed: Vec<usize> = (0..ks.len()).filter(|&i| first_relevant(r.list(i), ks[i]).is_none()).collect();
        if !case.answerable || missed.is_empty() {
            return Ok(Vec::new());
        }
        let every = |cause: Cause, evidence: String| -> Vec<Miss> {
            missed
                .iter()
                .map(|&i| Miss { k: ks[i], pipeline: None, unjudged: 0, cause, rank: None, evidence: evidence.clone() })
                .collect()
        };
        let set = &self.sets[run.chunks];
        let relevant = self.relevant_chunks(run.chunks, ci);
        if relevant.is_empty() {
            let (cause, evidence) = self.unreachable(set, ci, run);
            return Ok(every(cause, evidence));
        }
        let allowed = self.allowed(run.chunks, ci).filter(|_| run.cell.filter != Filter::None);
        let visible: Vec<u32> = relevant.iter().copied().filter(|&c| allowed.is_none_or(|a| a.contains(c))).collect();
        if visible.is_empty() {
            return Ok(every(Cause::NotVisible, self.invisible(set, &relevant, ci)));
        }
        if let [only] = &run.retriever.sources[..] {
            if let Some(evidence) = only.bm25().and_then(|index| self.lexical_mismatch(index, set, &visible, ci)) {
                return Ok(every(Cause::LexicalMismatch, evidence));
            }
        }

        let max_k = *ks.last().expect("at least one cut-off");
        let access = self.access(run, ci);
        // Each variant makes the scored call (same cut-offs, so the same depths) with one
        // thing changed.
        let ranks_of = |got: &Retrieval| Ranks {
            at_k: ks.iter().enumerate().map(|(i, &k)| first_relevant(got.list(i), k)).collect(),
            deepest: first_relevant(&got.deepest, usize::MAX),
        };
        let ranks = |retriever: &CellRetriever<'_>, access: Access<'_>| -> Result<Ranks> {
            Ok(ranks_of(&self.retrieve_as(run, retriever, access, ks, ci, vector, &mut Timing::default())?))
        };
        let exact = oracle.map(|o| (ranks_of(&o.retrieval), &o.approximate));
        let sides: Vec<Ranks> = if run.retriever.sources.len() > 1 {
            run.retriever.alone().iter().map(|r| ranks(r, access)).collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let unreranked = run.retriever.unreranked().map(|r| ranks(&r, access)).transpose()?;
        let in_query = match access {
            Access::Post(restriction) => Some(ranks(&run.retriever, Access::InQuery(restriction))?),
            _ => None,
        };
        // Below k: in the scored list, else in a search to the diagnostic depth.
        let depth = diagnostic_depth(max_k);
        let below = match first_relevant(&r.deepest, usize::MAX) {
            Some(rank) => Some((rank, String::new())),
            None => {
                let deep =
                    self.retrieve_as(run, &run.retriever, access, &[depth], ci, vector, &mut Timing::default())?;
                first_relevant(&deep.deepest, usize::MAX).map(|rank| (rank, format!(" of a search to depth {depth}")))
            }
        };
        let side_text =
            |r: &Ranks| r.deepest.map_or_else(|| format!("none in the first {max_k}"), |r| format!("rank {r}"));
        Ok(missed
            .iter()
            .map(|&i| {
                let k = ks[i];
                let within = |rank: Option<u32>| rank.filter(|&r| r as usize <= k);
                if let Some((e, approximate)) = &exact {
                    if let Some(rank) = within(e.at_k[i]) {
                        let evidence = format!(
                            "the exact scan over the same vectors ranks it {rank}; {approximate} does not within {k}"
                        );
                        return Miss { k, pipeline: None, unjudged: 0, cause: Cause::Approximation, rank: Some(rank), evidence };
                    }
                }
                let before_rerank = unreranked.as_ref().and_then(|u| within(u.at_k[i]));
                if let Some(rank) = sides.iter().find_map(|s| within(s.at_k[i])).filter(|_| before_rerank.is_none()) {
                    let fused = first_relevant(&r.deepest, usize::MAX)
                        .map_or_else(|| format!("none in the first {max_k}"), |r| format!("rank {r}"));
                    let alone: Vec<String> = sides
                        .iter()
                        .zip(run.retriever.sources.iter().zip(&run.retriever.names))
                        .map(|(ranks, (source, name))| {
                            let side = source.side();
                            let name = if run.retriever.sources.iter().filter(|s| s.side() == side).count() == 1 {
                                format!("{} side", side.name())
                            } else {
                                name.clone()
                            };
                            format!("{name} alone: {}", side_text(ranks))
                        })
                        .collect();
                    let evidence = format!("{}; fused: {fused}", alone.join("; "));
                    return Miss { k, pipeline: None, unjudged: 0, cause: Cause::Fusion, rank: Some(rank), evidence };
                }
                if let Some(rank) = before_rerank {
                    let rerankers: Vec<String> = run.retriever.rerank.iter().map(|r| r.name.clone()).collect();
                    let after = first_relevant(&r.deepest, usize::MAX)
                        .map_or_else(|| format!("none in the first {max_k}"), |r| format!("rank {r}"));
                    let evidence = format!(
                        "before reranking it is rank {rank}; after {}: {after}",
                        rerankers.join(", then ")
                    );
                    return Miss { k, pipeline: None, unjudged: 0, cause: Cause::Rerank, rank: Some(rank), evidence };
                }
                if let Some(rank) = in_query.as_ref().and_then(|q| within(q.at_k[i])) {
                    let held = r.list(i).items.len();
                    let evidence = format!(
                        "the in-query filter ranks it {rank}; dropping what the user may not see from the unfiltered top {k} left {held} of {k} items"
                    );
                    return Miss { k, pipeline: None, unjudged: 0, cause: Cause::FilterLate, rank: Some(rank), evidence };
                }
                match &below {
                    Some((rank, of)) if *rank as usize <= k + CUTOFF_MARGIN => Miss {
                        k,
                        pipeline: None,
                        unjudged: 0,
                        cause: Cause::Cutoff,
                        rank: Some(*rank),
                        evidence: format!("retrieved at rank {rank}{of}, just below k = {k}"),
                    },
                    Some((rank, of)) => Miss {
                        k,
                        pipeline: None,
                        unjudged: 0,
                        cause: Cause::Ranking,
                        rank: Some(*rank),
                        evidence: format!(
                            "retrieved at rank {rank}{of}, more than {CUTOFF_MARGIN} ranks below k = {k}: raising k would not fix the ranking"
                        ),
                    },
                    None => Miss {
                        k,
                        pipeline: None,
                        unjudged: 0,
                        cause: Cause::Ranking,
                        rank: None,
                        evidence: format!("no relevant unit in the first {depth} items"),
                    },
                }
            })
            .collect())
    }

    /// The chunks of `set` (chunk set `s`) that count as a relevant unit of case `ci` on
    /// their own, among the chunks of the documents that can hold one.
    fn relevant_chunks(&self, s: usize, ci: usize) -> Vec<u32> {
        let set = &self.sets[s];
        let docs = self.labelled_docs(ci);
        let candidates: Vec<u32> = if docs.is_empty() {
            (0..set.len() as u32).collect()
        } else {
            docs.iter().flat_map(|&d| self.facts.doc_chunks[s][d].iter().copied()).collect()
        };
        candidates
            .into_iter()
            .filter(|&c| {
                let judged = self.truths[ci].judge(&[Hit { chunk: c, score: 0.0 }], set, self.corpus, 1);
                judged.items.first().is_some_and(|i| i.gain > 0.0)
            })
            .collect()
    }

    /// Documents that can hold the case's relevant units: those its labels name, or for
    /// evidence spans the documents they name (every document when one names none).
    fn labelled_docs(&self, ci: usize) -> BTreeSet<usize> {
        let case = &self.cases[ci];
        if let Truth::Evidence(_) = self.truths[ci] {
            return case
                .evidence
                .iter()
                .map(|e| e.doc.as_deref().and_then(|id| self.corpus.doc_index(id)))
                .collect::<Option<_>>()
                .unwrap_or_default();
        }
        case.relevant
            .iter()
            .filter_map(|label| match self.corpus.target(&label.id) {
                Some(Target::Doc(d)) | Some(Target::Section { doc: d, .. }) => Some(d),
                None => None,
            })
            .collect()
    }

    /// Why no chunk of `set` counts as a relevant unit: the chunker cut it, or (evidence
    /// found in no document) nothing can be decided.
    fn unreachable(&self, set: &ChunkSet, ci: usize, run: &CellRun<'_>) -> (Cause, String) {
        let chunker = run.cell.chunker.to_string();
        let corpus = self.corpus;
        match &self.truths[ci] {
            Truth::Doc(grades) => {
                let docs: Vec<&str> =
                    grades.iter().filter(|(_, &g)| g > 0).map(|(&d, _)| corpus.docs[d as usize].id.as_str()).collect();
                (Cause::Chunking, format!("{chunker} gives no chunk of the relevant document(s) {docs:?} (empty text)"))
            }
            Truth::Section(_) => {
                let labels: Vec<&str> = self.cases[ci].relevant.iter().map(|l| l.id.as_str()).collect();
                (
                    Cause::Chunking,
                    format!(
                        "no chunk of {chunker} lies at least half inside or covers at least half of {labels:?}: \
                         the section is spread over chunks"
                    ),
                )
            }
            Truth::Evidence(spans) => {
                let docs = self.labelled_docs(ci);
                let searched: Vec<usize> =
                    if docs.is_empty() { (0..corpus.docs.len()).collect() } else { docs.into_iter().collect() };
                for span in spans {
                    let holder = searched.iter().find(|&&d| normalize(&corpus.docs[d].text).contains(span.as_str()));
                    if let Some(&d) = holder {
                        let cut: Vec<String> = self.facts.doc_chunks[run.chunks][d]
                            .iter()
                            .map(|&c| &set.chunks[c as usize])
                            .filter(|c| {
                                let text = normalize(&corpus.docs[d].text[c.span()]);
                                span.split(' ').take(3).any(|w| text.contains(w))
                            })
                            .map(|c| c.id.clone())
                            .take(4)
                            .collect();
                        return (
                            Cause::Chunking,
                            format!(
                                "no chunk of {chunker} holds the evidence \"{}\" whole; document {} has it, cut across chunks {}",
                                clip(span, 80),
                                corpus.docs[d].id,
                                cut.join(", ")
                            ),
                        );
                    }
                }
                let first = spans.first().map(|s| clip(s, 80)).unwrap_or_default();
                (
                    Cause::Undecided,
                    format!("the evidence \"{first}\" occurs in no document (after normalising case and spaces): check the label"),
                )
            }
        }
    }

    /// Which documents hold the relevant chunks and who may see them.
    fn invisible(&self, set: &ChunkSet, relevant: &[u32], ci: usize) -> String {
        let mut docs: Vec<&str> =
            relevant.iter().map(|&c| self.corpus.docs[set.chunks[c as usize].doc as usize].id.as_str()).collect();
        docs.dedup();
        let acl: Vec<String> = docs
            .iter()
            .filter_map(|id| self.corpus.doc_index(id))
            .map(|d| format!("{}: {:?}", self.corpus.docs[d].id, self.corpus.docs[d].acl.clone().unwrap_or_default()))
            .collect();
        format!(
            "the relevant text is visible only to other groups ({}); the case's groups are {:?}",
            acl.join("; "),
            self.cases[ci].user_groups()
        )
    }

    /// BM25 only: when no query term, after the index's analyzer, occurs in any visible
    /// relevant chunk, both sides' terms (the relevant side's nearest ones first).
    fn lexical_mismatch(
        &self,
        index: &crate::retrieve::Bm25Index,
        set: &ChunkSet,
        visible: &[u32],
        ci: usize,
    ) -> Option<String> {
        let query: Vec<String> = index.query_terms(&self.cases[ci].question).into_keys().collect();
        let mut relevant: BTreeSet<String> = BTreeSet::new();
        for &c in visible {
            index.analyzer().for_each_term(&set.indexed_text(self.corpus, c as usize), |t| {
                relevant.insert(t.text);
            });
        }
        if query.iter().any(|q| relevant.contains(q)) {
            return None;
        }
        let folded = |s: &str| fold_accents(s).to_lowercase();
        let near = |t: &str| {
            let t = folded(t);
            query.iter().any(|q| {
                let q = folded(q);
                (q.len() >= 2 && t.contains(&q))
                    || (t.len() >= 2 && q.contains(&t))
                    || (q.chars().count() >= 4 && t.chars().take(4).eq(q.chars().take(4)))
            })
        };
        let mut shown: Vec<&str> = relevant.iter().map(String::as_str).filter(|t| near(t)).take(12).collect();
        let label = if shown.is_empty() {
            shown = relevant.iter().map(String::as_str).take(12).collect();
            "its first terms"
        } else {
            "its nearest terms"
        };
        Some(format!(
            "{} analyzer: query terms [{}] occur nowhere in the relevant text; {label}: [{}]",
            index.analyzer().kind(),
            query.join(", "),
            shown.join(", ")
        ))
    }
}

/// SPEC §9: a miss keeps the pipeline's cause; how many unjudged items rank above the cut is a
/// flag beside it (it may not be a miss: one of them may be relevant).
pub(super) fn flag_unjudged(misses: Vec<Miss>, r: &Retrieval, ks: &[usize]) -> Vec<Miss> {
    misses
        .into_iter()
        .map(|m| {
            let i = ks.iter().position(|&k| k == m.k).expect("a miss is at one of the cut-offs");
            let unjudged = r.list(i).items.iter().take(m.k).filter(|item| !item.judged).count();
            Miss { unjudged: unjudged as u32, ..m }
        })
        .collect()
}
