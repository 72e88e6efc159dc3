//! Runs an experiment's grid: plans the distinct stages, builds each once, retrieves for
//! every case in every cell (in parallel), judges and scores.
//!
//! Stages are keyed by what determines them: a chunk set by its chunker, a BM25 index by
//! (chunk set, analyzer). k1 and b are query-time parameters, so sweeping them reuses
//! one index, and every cut-off k is read from one ranking at the deepest k.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;

use crate::analyze::{Analyzer, AnalyzerKind};
use crate::chunk::{ChunkSet, ChunkerKind, ChunkerSpec};
use crate::corpus::Corpus;
use crate::error::Result;
use crate::experiment::{Cell, Experiment, RetrieverSpec};
use crate::golden::{self, GoldenCase, Split};
use crate::index::{Bm25Index, Hit};
use crate::label::{Judged, Truth, Unit};
use crate::metrics::{Mean, Metric, MetricAt};

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Show progress bars (they also hide themselves when stderr is not a terminal).
    pub progress: bool,
}

/// What one case got in one cell.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub cell: String,
    pub case: String,
    pub split: Split,
    pub answerable: bool,
    /// One value per entry of [`RunResult::columns`]; `None` when undefined or unanswerable.
    pub values: Vec<Option<f64>>,
    /// The judged list's items (keys and scores), up to the deepest k.
    pub ranking: Vec<(String, f32)>,
}

/// One row of the result matrix: a cell on one split.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub cell: String,
    pub label: String,
    pub config: Vec<(&'static str, String)>,
    pub split: Split,
    pub cases: usize,
    pub unanswerable: usize,
    pub means: Vec<Mean>,
}

#[derive(Debug, Serialize)]
pub struct StageReport {
    pub stage: String,
    pub key: String,
    pub seconds: f64,
    pub chunks: usize,
    pub bytes: u64,
}

#[derive(Debug)]
pub struct RunResult {
    pub columns: Vec<MetricAt>,
    pub rows: Vec<Row>,
    pub cases: Vec<CaseResult>,
    pub stages: Vec<StageReport>,
    pub corpus_hash: String,
    pub corpus_docs: usize,
    pub golden_hash: String,
    pub split_counts: BTreeMap<&'static str, usize>,
    pub wall_seconds: f64,
}

/// Everything loaded and checked before any work or output: a bad corpus or golden set
/// fails here.
pub struct Prepared {
    pub corpus: Corpus,
    pub cases: Vec<GoldenCase>,
}

pub fn prepare(exp: &Experiment) -> Result<Prepared> {
    let corpus = Corpus::load(&exp.corpus_path, exp.corpus_format)?;
    let mut cases = golden::load(&exp.golden, &corpus)?;
    golden::assign_splits(&mut cases, exp.seed, exp.reserved_fraction);
    Ok(Prepared { corpus, cases })
}

fn bar(opts: &RunOptions, len: usize, what: &str) -> ProgressBar {
    if !opts.progress {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg} ({eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_prefix(what.to_string());
    pb
}

pub fn run(exp: &Experiment, prepared: &Prepared, opts: &RunOptions) -> Result<RunResult> {
    let started = Instant::now();
    let Prepared { corpus, cases } = prepared;
    let columns: Vec<MetricAt> =
        exp.metrics.iter().flat_map(|&metric| exp.k.iter().map(move |&k| MetricAt { metric, k })).collect();

    // Stage: chunk sets, one per distinct chunker.
    let mut chunkers: Vec<ChunkerSpec> = Vec::new();
    for cell in &exp.cells {
        if !chunkers.contains(&cell.chunker) {
            chunkers.push(cell.chunker.clone());
        }
    }
    let pb = bar(opts, chunkers.len(), "chunk");
    let chunk_sets: Vec<(ChunkSet, f64)> = chunkers
        .par_iter()
        .map(|spec| {
            let t = Instant::now();
            let set = ChunkSet::build(corpus, spec);
            pb.inc(1);
            (set, t.elapsed().as_secs_f64())
        })
        .collect();
    pb.finish_and_clear();

    // Stage: indexes, one per (chunk set, analyzer).
    let mut index_keys: Vec<(usize, AnalyzerKind)> = Vec::new();
    for cell in &exp.cells {
        let RetrieverSpec::Bm25 { analyzer, .. } = cell.retriever;
        let key = (chunk_index(&chunkers, &cell.chunker), analyzer);
        if !index_keys.contains(&key) {
            index_keys.push(key);
        }
    }
    let pb = bar(opts, index_keys.len(), "index");
    let indexes: Vec<(Bm25Index, f64)> = index_keys
        .par_iter()
        .map(|&(c, analyzer)| {
            let t = Instant::now();
            let set = &chunk_sets[c].0;
            let index =
                Bm25Index::build(&Analyzer::new(analyzer), (0..set.len()).map(|i| set.indexed_text(corpus, i)))?;
            pb.inc(1);
            Ok((index, t.elapsed().as_secs_f64()))
        })
        .collect::<Result<_>>()?;
    pb.finish_and_clear();

    let truths: Vec<Truth> = cases.iter().map(|c| Truth::new(exp.unit, c, corpus)).collect();

    // Stage: retrieve, judge and score every case in every cell.
    let max_k = exp.max_k();
    let pb = bar(opts, exp.cells.len() * cases.len(), "retrieve");
    let search_nanos = AtomicU64::new(0);
    let mut per_case: Vec<CaseResult> = Vec::with_capacity(exp.cells.len() * cases.len());
    for cell in &exp.cells {
        let c = chunk_index(&chunkers, &cell.chunker);
        let set = &chunk_sets[c].0;
        let RetrieverSpec::Bm25 { analyzer, params } = cell.retriever;
        let index = &indexes[index_keys.iter().position(|k| *k == (c, analyzer)).expect("planned")].0;
        pb.set_message(cell.id.clone());
        let results: Vec<CaseResult> = cases
            .par_iter()
            .zip(truths.par_iter())
            .map(|(case, truth)| {
                let t = Instant::now();
                let judged = judge_deep(exp.unit, &cell.chunker, set, truth, corpus, max_k, |depth| {
                    index.search(&case.question, params, depth, None)
                })?;
                search_nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
                pb.inc(1);
                Ok(score_case(cell, case, &judged, &columns))
            })
            .collect::<Result<_>>()?;
        per_case.extend(results);
    }
    pb.finish_and_clear();

    let rows = aggregate(exp, cases, &per_case, columns.len());
    let mut stages = Vec::new();
    for (spec, (set, secs)) in chunkers.iter().zip(&chunk_sets) {
        stages.push(StageReport {
            stage: "chunk".into(),
            key: spec.to_string(),
            seconds: *secs,
            chunks: set.len(),
            bytes: 0,
        });
    }
    for ((c, analyzer), (index, secs)) in index_keys.iter().zip(&indexes) {
        stages.push(StageReport {
            stage: "index".into(),
            key: format!("bm25({analyzer}) on {}", chunkers[*c]),
            seconds: *secs,
            chunks: index.num_chunks(),
            bytes: index.size_bytes(),
        });
    }
    stages.push(StageReport {
        stage: "retrieve".into(),
        key: "all cells (summed over threads)".into(),
        seconds: search_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        chunks: 0,
        bytes: 0,
    });
    let mut split_counts = BTreeMap::new();
    for case in cases {
        *split_counts.entry(case.split.unwrap_or(Split::Tuning).as_str()).or_insert(0) += 1;
    }
    Ok(RunResult {
        columns,
        rows,
        cases: per_case,
        stages,
        corpus_hash: corpus.hash.clone(),
        corpus_docs: corpus.docs.len(),
        golden_hash: golden_hash(cases),
        split_counts,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

fn chunk_index(chunkers: &[ChunkerSpec], spec: &ChunkerSpec) -> usize {
    chunkers.iter().position(|c| c == spec).expect("planned")
}

/// Retrieves deep enough that the judged list holds `max_k` items: when chunks collapse
/// (doc and section units), more chunks are fetched until it does or the index runs dry.
fn judge_deep(
    unit: Unit,
    chunker: &ChunkerSpec,
    set: &ChunkSet,
    truth: &Truth,
    corpus: &Corpus,
    max_k: usize,
    mut search: impl FnMut(usize) -> Result<Vec<Hit>>,
) -> Result<Judged> {
    let collapses = unit != Unit::Evidence && chunker.kind != ChunkerKind::None;
    let mut depth = if collapses { max_k * 4 } else { max_k };
    loop {
        let hits = search(depth)?;
        let judged = truth.judge(&hits, set, corpus, max_k);
        if judged.items.len() >= max_k || hits.len() < depth || depth >= set.len() {
            return Ok(judged);
        }
        depth *= 4;
    }
}

fn score_case(cell: &Cell, case: &GoldenCase, judged: &Judged, columns: &[MetricAt]) -> CaseResult {
    let values = columns.iter().map(|c| if case.answerable { c.metric.at(judged, c.k) } else { None }).collect();
    CaseResult {
        cell: cell.id.clone(),
        case: case.id.clone(),
        split: case.split.unwrap_or(Split::Tuning),
        answerable: case.answerable,
        values,
        ranking: judged.items.iter().map(|i| (i.key.clone(), i.score)).collect(),
    }
}

fn aggregate(exp: &Experiment, cases: &[GoldenCase], results: &[CaseResult], width: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    for cell in &exp.cells {
        for split in [Split::Tuning, Split::Reserved] {
            let mine: Vec<&CaseResult> = results.iter().filter(|r| r.cell == cell.id && r.split == split).collect();
            if mine.is_empty() {
                continue;
            }
            let means = (0..width).map(|i| Mean::of(mine.iter().map(|r| r.values[i]))).collect();
            rows.push(Row {
                cell: cell.id.clone(),
                label: cell.label(),
                config: cell.config(),
                split,
                cases: mine.len(),
                unanswerable: mine.iter().filter(|r| !r.answerable).count(),
                means,
            });
        }
    }
    let _ = cases;
    rows
}

fn golden_hash(cases: &[GoldenCase]) -> String {
    let mut h = blake3::Hasher::new();
    for c in cases {
        h.update(c.id.as_bytes());
        h.update(b"\0");
        h.update(c.question.as_bytes());
        h.update(b"\0");
        for l in &c.relevant {
            h.update(l.id.as_bytes());
            h.update(&l.grade.to_le_bytes());
        }
        for e in &c.evidence {
            h.update(e.text.as_bytes());
            h.update(b"\0");
        }
    }
    h.finalize().to_hex()[..16].to_string()
}

/// The directory a run writes to: `<out>/<name>/<run-id>`.
pub fn run_dir(out: &Path, exp: &Experiment, run_id: &str) -> PathBuf {
    out.join(&exp.name).join(run_id)
}

/// Metric names used by default in printed tables.
pub fn headline(columns: &[MetricAt]) -> Vec<usize> {
    let preferred = [Metric::Ndcg, Metric::Recall, Metric::Mrr];
    let picked: Vec<usize> = (0..columns.len()).filter(|&i| preferred.contains(&columns[i].metric)).collect();
    if picked.is_empty() {
        (0..columns.len()).collect()
    } else {
        picked
    }
}
