//! `ragsweep rescore`: a finished run scored again with the current judgments (SPEC §9),
//! without retrieving: each case's ranked chunks are in its `per_query.jsonl` line.
//!
//! The lists are judged again exactly as a fresh run judges them, provided the fresh run would
//! search as deep (new labels can collapse chunks into fewer sections and ask for a deeper
//! search): a case where it would not is refused, never approximated. Latency, build cost
//! and filter parity are measurements, not labels: they are the run's. A miss the run diagnosed
//! keeps its pipeline cause; a miss only the new labels make is `undecided` until a run
//! diagnoses it.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::*;
use crate::evaluate::causes::Miss;
use crate::input::text::{json, jsonl};
use crate::results::{CaseLine, Manifest, Matrix, RunResult};
use crate::retrieve::Hit;

/// A rescored run, and the cells whose rank on tuning (by the decision metric) moved.
pub struct Rescored {
    pub result: RunResult,
    /// `(cell, rank before, rank after)`, 1-based among the cells with a tuning score.
    pub moved: Vec<(String, usize, usize)>,
}

/// Whether the run at `run` scored the judgments the experiment reads now.
pub fn judgments_changed(manifest: &Manifest, prepared: &Prepared) -> bool {
    manifest.golden.hash != crate::input::golden::golden_hash(&prepared.cases)
        || manifest.golden.judgments.as_ref().map(|j| &j.hash) != prepared.judgments.as_ref().map(|j| &j.hash)
}

/// A finished run's recorded lists, checked and loaded once, to be scored against any labels.
pub struct Recorded {
    manifest: Manifest,
    /// The rows the run wrote.
    rows: Vec<Row>,
    lines: BTreeMap<String, Vec<CaseLine>>,
    sets: Vec<crate::stages::chunk::ChunkSet>,
    facts: ChunkFacts,
    columns: Vec<(usize, MetricAt)>,
    stages: Vec<StageReport>,
    /// The corpus's word rarity (exact-term slices), computed once.
    rarity: std::sync::OnceLock<crate::evaluate::exact_terms::Rarity>,
}

/// How [`Recorded::score`] treats what the recorded lists cannot say exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every recorded case must be in the cases given, and a list the labels would make a
    /// fresh run search deeper for is refused: numbers a run would write.
    Exact,
    /// Cases not given are left out, and such a list is scored as deep as it was recorded:
    /// what-if labels for judging, never written as a run's numbers.
    Estimate,
}

/// A grid scored against one set of labels, each eligible row marked against the best.
pub struct Scored {
    pub rows: Vec<Row>,
    pub slices: Vec<SliceRow>,
}

impl Recorded {
    /// The run at `run`, refused when it is a shard or its rankings were edited.
    pub fn open(run: &Path, exp: &Experiment, prepared: &Prepared, opts: &RunOptions) -> Result<Recorded> {
        let manifest: Manifest = json(&run.join("manifest.json"), "run manifest")?;
        if manifest.shard.is_some() {
            return Err(Error::Shards(format!(
                "{}: a shard; merge the shards first, then rescore the merged run",
                run.display()
            )));
        }
        // Recorded rankings are read only when they are what the run wrote: an edited hit would
        // otherwise be scored like a retrieval.
        let per_query = run.join("per_query.jsonl");
        if let Some(recorded) = &manifest.per_query_blake3 {
            if crate::stages::cache::file_hash(&per_query)? != *recorded {
                return Err(Error::StaleRun {
                    run: run.to_path_buf(),
                    why: "per_query.jsonl is not what the run wrote (its blake3 differs from the manifest's): refusing to rescore edited rankings; run the experiment again".into(),
                });
            }
        }
        let matrix: Matrix = json(&run.join("matrix.json"), "matrix")?;
        Recorded::of(&per_query, manifest, matrix.rows, exp, prepared, opts)
    }

    /// The lists of `per_query` (a `per_query.jsonl`), written by a run whose manifest and rows
    /// are these: a finished run's, or one being written.
    pub fn of(
        per_query: &Path,
        manifest: Manifest,
        rows: Vec<Row>,
        exp: &Experiment,
        prepared: &Prepared,
        opts: &RunOptions,
    ) -> Result<Recorded> {
        let mut lines: BTreeMap<String, Vec<CaseLine>> = BTreeMap::new();
        for l in jsonl::<CaseLine>(per_query)? {
            lines.entry(l.cell.clone()).or_default().push(l);
        }
        let mut stages = Vec::new();
        let sets = chunk_sets(prepared, opts, &mut stages)?;
        let facts = ChunkFacts::of(&prepared.corpus, &sets, &prepared.counter)?;
        Ok(Recorded {
            manifest,
            rows,
            lines,
            sets,
            facts,
            columns: cut_columns(exp),
            stages,
            rarity: std::sync::OnceLock::new(),
        })
    }

    /// The first cell whose ranked chunks the run did not record (an engine cell planning each
    /// depth): its lists cannot be judged again.
    pub fn unrecorded_cell(&self) -> Option<&str> {
        self.lines.iter().find(|(_, lines)| lines.iter().any(|l| l.hits.is_none())).map(|(cell, _)| cell.as_str())
    }

    /// Every cell's recorded lists judged again against `cases`' labels as a fresh run judges
    /// them (see [`Scope`]); `on_cell` receives each cell's case results in grid order.
    pub fn score(
        &self,
        exp: &Experiment,
        prepared: &Prepared,
        cases: &[GoldenCase],
        scope: Scope,
        on_cell: &mut dyn FnMut(&[CaseResult]) -> Result<()>,
    ) -> Result<Scored> {
        let Prepared { plan, corpus, counter, .. } = prepared;
        let (sets, columns) = (&self.sets, &self.columns);
        let scoring = Scoring::new(exp, corpus, cases, sets, counter, &self.facts);
        let (metrics, ranking) = (collect::Metrics::new(&scoring, columns)?, collect::Ranking::new(&scoring));
        // The oracle's parity is the run's: no case is searched again.
        let collectors: [&dyn collect::Collector; 5] =
            [&metrics, &collect::Budgets, &ranking, &collect::Leaks, &collect::RankedHits];
        let case_at: HashMap<&str, usize> = cases.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
        // What-if labels decide only: without `require`, a cell's written row with the decision
        // metric's mean is all the rule reads (leaks, latency and cost are the run's).
        let decision_only = scope == Scope::Estimate && exp.require.is_empty();
        let case_info = if decision_only {
            Vec::new()
        } else {
            let rarity = self
                .rarity
                .get_or_init(|| crate::evaluate::exact_terms::Rarity::of(corpus.docs.iter().map(|d| d.text.as_str())));
            aggregate::case_info_with(cases, corpus, rarity)
        };
        let slices_of = aggregate::case_slices(&case_info);
        let golden_tags = aggregate::golden_tags(&case_info);
        let decision = exp.decision_metric();
        let decision_column = columns.iter().position(|c| c.1 == decision).expect("the decision metric is a column");
        let (mut rows, mut slices, mut decision_values) = (Vec::new(), Vec::new(), Vec::new());
        let mut ordinals: HashMap<usize, HashMap<&str, u32>> = HashMap::new();
        for (cell, planned) in exp.cells.iter().zip(&plan.cells) {
            let written: Vec<&Row> = self.rows.iter().filter(|r| r.cell == cell.id).collect();
            let Some(cell_lines) = self.lines.get(&cell.id).filter(|_| !written.is_empty()) else {
                return Err(Error::NotFound(format!(
                    "cell {}: not in the run (it failed or the run is incomplete)",
                    cell.id
                )));
            };
            let this = CellRun {
                cell,
                chunks: planned.chunks.0,
                retriever: CellRetriever { sources: Vec::new(), names: Vec::new(), fusion: None, rerank: Vec::new() },
                live_models: Vec::new(),
                made_elsewhere: false,
            };
            let set = &sets[this.chunks];
            let ordinal = ordinals
                .entry(this.chunks)
                .or_insert_with(|| set.chunks.iter().enumerate().map(|(i, c)| (c.id.as_str(), i as u32)).collect());
            let mut results = Vec::with_capacity(cell_lines.len());
            for line in cell_lines {
                let refuse = |why: String| Error::Damaged(format!("cell {} case {}: {why}", cell.id, line.case));
                let ci = match case_at.get(line.case.as_str()) {
                    Some(&ci) => ci,
                    None if scope == Scope::Estimate => continue,
                    None => return Err(refuse("no such case in the golden set".into())),
                };
                let recorded = line.hits.as_ref().ok_or_else(|| {
                    refuse("the run did not record its ranked chunks (an engine cell, or a run older than rescore): run it again".into())
                })?;
                let hits: Vec<Hit> = recorded
                    .iter()
                    .map(|(id, score)| ordinal.get(id.as_str()).map(|&chunk| Hit { chunk, score: *score }))
                    .collect::<Option<_>>()
                    .ok_or_else(|| {
                        refuse("a recorded chunk is not in the chunk set: the chunks changed since the run".into())
                    })?;
                let access = scoring.access(&this, ci);
                let (r, exact) =
                    scoring.with_judge(&this, ci, |judge| cell::replay(&hits, line.depth, access, &exp.k, judge))?;
                if !exact && scope == Scope::Exact {
                    return Err(refuse(format!(
                        "with the new judgments a fresh run would search deeper than the {} chunks recorded: run it again",
                        line.depth
                    )));
                }
                let packed = scoring.packed(&this, ci, &r)?;
                let mut result = scoring.collect(&this, ci, &r, &packed, None, &collectors);
                result.misses = diagnose::flag_unjudged(kept_misses(&result, line, &exp.k, &r), &r, &exp.k);
                // A budget miss reads only the ranking and its packing: diagnosed anew.
                result.budget_misses = scoring.budget_misses(&this, ci, &r, &packed, &result.misses);
                result.parity = line.parity.values().copied().collect();
                results.push(result);
            }
            decision_values.push(CellValues {
                cell: cell.id.clone(),
                values: results.iter().map(|r| (r.split, r.values[decision_column])).collect(),
            });
            on_cell(&results)?;
            if decision_only {
                for split in [Split::Tuning, Split::Reserved] {
                    let Some(theirs) = written.iter().find(|w| w.split == split) else { continue };
                    let values = results.iter().filter(|r| r.split == split).map(|r| r.values[decision_column]);
                    let mut row = (*theirs).clone();
                    row.metrics = crate::results::Ordered(vec![(decision.to_string(), crate::vocab::Mean::of(values))]);
                    (row.p_vs_best, row.vs_best, row.diff_vs_best) = (None, None, None);
                    rows.push(row);
                }
                continue;
            }
            let measured = aggregate::Measured::of(written[0]);
            let (cell_rows, cell_slices) =
                aggregate::aggregate_cell(exp, cell, &results, &slices_of, &golden_tags, &measured);
            rows.extend(cell_rows);
            slices.extend(cell_slices);
        }
        crate::evaluate::selection::mark_standing(exp, &mut rows, &slices, &decision_values);
        Ok(Scored { rows, slices })
    }
}

/// Each cell's value of the decision metric per case, `(case, split, value)`, under `cases`'
/// labels: what-if scoring of the recorded lists ([`Scope::Estimate`]).
pub type DecisionValues = Vec<(String, Vec<(String, Split, Option<f64>)>)>;

impl Recorded {
    pub fn decision_values(
        &self,
        exp: &Experiment,
        prepared: &Prepared,
        cases: &[GoldenCase],
    ) -> Result<DecisionValues> {
        let decision = exp.decision_metric();
        let column = self.columns.iter().position(|c| c.1 == decision).expect("the decision metric is a column");
        let mut out = Vec::new();
        self.score(exp, prepared, cases, Scope::Estimate, &mut |results| {
            if let Some(first) = results.first() {
                out.push((
                    first.cell.clone(),
                    results.iter().map(|r| (r.case.clone(), r.split, r.values[column])).collect(),
                ));
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// Scores the run at `run` again with the judgments its experiment reads now; `on_cell`
/// receives each cell's case results in grid order, to write them out.
pub fn rescore(
    run: &Path,
    exp: &Experiment,
    prepared: &Prepared,
    opts: &RunOptions,
    on_cell: &mut dyn FnMut(&[CaseResult]) -> Result<()>,
) -> Result<Rescored> {
    let recorded = Recorded::open(run, exp, prepared, opts)?;
    let started = Instant::now();
    let Scored { rows, slices } = recorded.score(exp, prepared, &prepared.cases, Scope::Exact, on_cell)?;
    let Recorded { manifest, rows: written, mut stages, .. } = recorded;
    let cases = &prepared.cases;
    stages.push(StageReport::new(
        "rescore",
        format!("{} cells × {} cases judged again from the recorded lists", exp.cells.len(), cases.len()),
        started.elapsed().as_secs_f64(),
    ));
    let decision = exp.decision_metric();
    let moved = moved(&written, &rows, &decision.to_string());
    let mut manifest = manifest;
    manifest.golden.hash = crate::input::golden::golden_hash(cases);
    manifest.golden.judgments = prepared.judgments.clone();
    manifest.golden.health = prepared.health().warnings;
    manifest.rescored_from = Some(manifest.run_id.clone());
    manifest.stages.extend(stages);
    let (selection, no_selection) = crate::evaluate::selection::select_for(exp, &rows, &slices);
    let result = RunResult {
        columns: exp.columns(),
        decision_metric: decision,
        rows,
        slices,
        case_info: aggregate::case_info(cases, &prepared.corpus),
        selection,
        no_selection,
        suggested: None,
        manifest,
    };
    Ok(Rescored { result, moved })
}

/// The misses of a rescored case: each missed cut-off keeps the cause the run diagnosed when
/// the run missed it too under the same labels (a run before labels were recorded counts as
/// the same), else it is `undecided`: which relevant item decides the cause, and where the
/// pipeline lost it, only retrieving again can tell.
fn kept_misses(result: &CaseResult, line: &CaseLine, ks: &[usize], r: &Retrieval) -> Vec<Miss> {
    if !result.answerable {
        return Vec::new();
    }
    let same_labels = line.labels.is_empty() || line.labels == result.labels;
    let undecided = |k: usize, why: &str| {
        Miss::new(
            k,
            crate::evaluate::causes::Cause::Undecided,
            None,
            format!("{why}, rescored without retrieving: run again to diagnose it"),
        )
    };
    ks.iter()
        .enumerate()
        .filter(|&(i, &k)| !r.list(i).items.iter().take(k).any(|item| item.gain > 0.0))
        .map(|(_, &k)| match line.misses.iter().find(|m| m.k == k) {
            Some(m) if same_labels => Miss::new(k, m.pipeline.unwrap_or(m.cause), m.rank, m.evidence.clone()),
            Some(_) => undecided(k, "a miss whose case's labels changed since the run"),
            None => undecided(k, "a miss under the new judgments"),
        })
        .collect()
}

/// Cells whose rank among the tuning rows (by `metric`, best first) differs between runs.
fn moved(before: &[Row], after: &[Row], metric: &str) -> Vec<(String, usize, usize)> {
    let ranks = |rows: &[Row]| -> HashMap<String, usize> {
        let mut scored: Vec<(&str, f64)> = rows
            .iter()
            .filter(|r| r.split == Split::Tuning)
            .filter_map(|r| Some((r.cell.as_str(), r.metrics.get(metric)?.value?)))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        scored.into_iter().enumerate().map(|(i, (c, _))| (c.to_string(), i + 1)).collect()
    };
    let (was, now) = (ranks(before), ranks(after));
    let mut out: Vec<(String, usize, usize)> =
        was.iter().filter_map(|(cell, &a)| now.get(cell).filter(|&&b| b != a).map(|&b| (cell.clone(), a, b))).collect();
    out.sort_by_key(|a| a.2);
    out
}
