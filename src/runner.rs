//! Runs an experiment: plans it, builds the planned stages, retrieves every case in every
//! cell through the cell's one retriever (in parallel), scores and aggregates each cell as
//! soon as it is done, then times each cell's retrieval call one case at a time.
//!
//! Orchestration only: planning is `plan`, building is `stages::build`, retrieval and the
//! filter modes are `retrieve::cell`, scoring is `evaluate`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::evaluate::aggregate;
use crate::evaluate::label::{Truth, Unit};
use crate::evaluate::metrics::{Metric, MetricAt};
use crate::experiment::{Cell, Experiment};
use crate::input::corpus::Corpus;
use crate::input::golden::{self, GoldenCase, Split};
use crate::plan::{ModelId, Plan};
use crate::results::{CaseInfo, CaseResult, Latency, Row, SliceRow, StageReport};
use crate::retrieve::access::{self, Access};
use crate::retrieve::cell::{self, CellRetriever, Judge, Query, Retrieval, Timing};
use crate::retrieve::Allowed;
use crate::stages::build::{self, BuildContext, Built};
use crate::stages::cache::StageCache;
use crate::stages::chunk::ChunkerKind;
use crate::stages::cost::Counter;
use crate::stages::embed::{self, Embedding, LazyEmbedder, ModelInfo, Role};

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Show progress bars (they also hide themselves when stderr is not a terminal).
    pub progress: bool,
    /// Where embedding models are installed.
    pub models_dir: PathBuf,
    /// Root of the content-addressed cache (vectors, chunk sets, indexes).
    pub cache_dir: PathBuf,
}

/// Everything loaded and checked before any work or output: a bad corpus, golden set or
/// a missing model fails here.
pub struct Prepared {
    pub plan: Plan,
    pub corpus: Corpus,
    pub cases: Vec<GoldenCase>,
    /// The plan's models, in its order.
    pub models: Vec<ModelInfo>,
    /// Counts the context tokens a retrieval would send to a model.
    pub counter: Counter,
}

pub fn prepare(exp: &Experiment, models_dir: &Path) -> Result<Prepared> {
    let plan = Plan::new(exp);
    let mut corpus = Corpus::load(&exp.corpus_path, exp.corpus_format)?;
    let mut cases = golden::load(&exp.golden, &corpus)?;
    golden::assign_splits(&mut cases, exp.seed, exp.reserved_fraction);
    if let Some(synthetic) = exp.synthetic_acl {
        synthetic.apply(&mut corpus, &mut cases);
    }
    for case in cases.iter_mut().filter(|c| c.groups.is_empty()) {
        case.groups = exp.default_groups.clone();
    }
    for case in cases.iter().filter(|c| c.is_restricted()) {
        if let Some(visible) = access::visible_label(&corpus, case) {
            return Err(Error::input(
                crate::Location::file(&exp.golden.path),
                format!(
                    "case {:?} is unanswerable but its label {visible:?} is visible to its groups {:?}: \
                     a restricted-answer case labels what its user may not see",
                    case.id, case.groups
                ),
            ));
        }
    }
    let models = plan.models.iter().map(|id| embed::find_model(models_dir, id)).collect::<Result<Vec<_>>>()?;
    let counter = Counter::load(&exp.cost_tokenizer, models_dir)?;
    Ok(Prepared { plan, corpus, cases, models, counter })
}

fn bar(progress: bool, len: usize, what: &str) -> ProgressBar {
    if !progress {
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

/// Cases run untimed before each cell's timed pass.
const LATENCY_WARM_UP: usize = 5;

/// Up to `n` cases for the timed pass, chosen by a hash of their ids (never by file order).
fn latency_sample(cases: &[GoldenCase], n: usize) -> Vec<usize> {
    let mut order: Vec<(blake3::Hash, usize)> =
        cases.iter().enumerate().map(|(i, c)| (blake3::hash(c.id.as_bytes()), i)).collect();
    order.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    order.into_iter().take(n).map(|(_, i)| i).collect()
}

/// Runs the grid with the installed models. `on_cell` receives each cell's case results
/// (in grid order) once the cell is scored, to write them out; the run keeps only the
/// aggregated rows.
pub fn run(
    exp: &Experiment,
    prepared: &Prepared,
    opts: &RunOptions,
    on_cell: &mut dyn FnMut(&[CaseResult]) -> Result<()>,
) -> Result<Outcome> {
    let threads = rayon::current_num_threads();
    let embedders: Vec<LazyEmbedder> =
        prepared.models.iter().map(|m| LazyEmbedder::new(&opts.models_dir, m, threads)).collect();
    let embedder = |m: ModelId| -> Result<&dyn Embedding> { Ok(embedders[m.0].get()? as &dyn Embedding) };
    run_with(exp, prepared, opts, &embedder, on_cell)
}

/// What a run produced, before it is written: rows, slices, cases, and what each stage did.
pub struct Outcome {
    pub rows: Vec<Row>,
    pub slices: Vec<SliceRow>,
    pub case_info: Vec<CaseInfo>,
    pub stages: Vec<StageReport>,
    pub split_counts: BTreeMap<Split, usize>,
    pub wall_seconds: f64,
}

/// Runs the grid with `embedder` for query and passage vectors.
pub fn run_with<'e>(
    exp: &Experiment,
    prepared: &'e Prepared,
    opts: &RunOptions,
    embedder: &'e (dyn Fn(ModelId) -> Result<&'e dyn Embedding> + Sync),
    on_cell: &mut dyn FnMut(&[CaseResult]) -> Result<()>,
) -> Result<Outcome> {
    let started = Instant::now();
    let Prepared { plan, corpus, cases, models, counter } = prepared;
    let store = StageCache::new(&opts.cache_dir);
    let mut stages = Vec::new();
    let make_bar = |len: usize, what: &str| bar(opts.progress, len, what);
    let ctx =
        BuildContext { corpus, cases, models, embedder, store: &store, cache_dir: &opts.cache_dir, bar: &make_bar };
    let built = build::build(plan, &ctx, &mut stages)?;

    let plan_started = Instant::now();
    let truths: Vec<Truth> = cases.iter().map(|c| Truth::new(exp.unit, c, corpus)).collect();
    let chunk_tokens: Vec<Vec<u32>> = built
        .sets
        .iter()
        .map(|set| counter.count(&(0..set.len()).map(|i| set.text(corpus, i).to_string()).collect::<Vec<_>>()))
        .collect::<Result<_>>()?;
    // Who may see what: one allowed set per (chunk set, user groups), when the corpus has ACLs.
    let has_acl = corpus.docs.iter().any(|d| d.acl.is_some());
    let mut allowed_sets: HashMap<(usize, &[String]), Allowed> = HashMap::new();
    if has_acl {
        for (s, set) in built.sets.iter().enumerate() {
            for case in cases {
                allowed_sets
                    .entry((s, case.groups.as_slice()))
                    .or_insert_with(|| access::allowed(corpus, set, &case.groups));
            }
        }
    }
    let case_info = aggregate::case_info(cases, corpus);
    let slices_of = aggregate::case_slices(&case_info);
    let golden_tags = aggregate::golden_tags(&case_info);
    stages.push(StageReport::new(
        "plan",
        "truths per case, context tokens per chunk, allowed sets per user, exact terms".into(),
        plan_started.elapsed().as_secs_f64(),
    ));

    let scoring = Scoring { exp, corpus, cases, built: &built, truths: &truths, allowed_sets: &allowed_sets };
    let retrieve_started = Instant::now();
    let (mut aggregate_seconds, mut latency_seconds) = (0.0, 0.0);
    let mut rows: Vec<Row> = Vec::new();
    let mut slices: Vec<SliceRow> = Vec::new();
    let pb = bar(opts.progress, exp.cells.len() * cases.len(), "retrieve");
    for (c, (cell, planned)) in exp.cells.iter().zip(&plan.cells).enumerate() {
        pb.set_message(cell.id.clone());
        let retriever = built.retriever(planned);
        let results: Vec<CaseResult> = (0..cases.len())
            .into_par_iter()
            .map(|ci| {
                let vector = planned.model.map_or(&[][..], |m| built.query_vector(models, m, ci));
                let retrieval =
                    scoring.retrieve(cell, planned.chunks.0, &retriever, ci, vector, &mut Timing::default())?;
                pb.inc(1);
                Ok(scoring.score(cell, ci, &retrieval, planned.chunks.0, &chunk_tokens[planned.chunks.0]))
            })
            .collect::<Result<_>>()?;
        let t = Instant::now();
        let cost = built.cost(exp, c, planned);
        let (cell_rows, cell_slices) = aggregate::aggregate_cell(exp, cell, &results, &slices_of, &golden_tags, &cost);
        rows.extend(cell_rows);
        slices.extend(cell_slices);
        aggregate_seconds += t.elapsed().as_secs_f64();
        let depths: Vec<usize> = results.iter().map(|r| r.depth).collect();
        on_cell(&results)?;
        let t = Instant::now();
        let latency = scoring.time_cell(cell, planned, embedder, &depths, opts.progress)?;
        latency_seconds += t.elapsed().as_secs_f64();
        for row in rows.iter_mut().filter(|r| r.cell == cell.id) {
            row.latency = latency;
        }
    }
    pb.finish_and_clear();
    let retrieve_seconds = retrieve_started.elapsed().as_secs_f64() - aggregate_seconds - latency_seconds;
    stages.push(StageReport::new(
        "retrieve",
        format!("{} cells × {} cases, judged, scored and written", exp.cells.len(), cases.len()),
        retrieve_seconds,
    ));
    stages.push(StageReport::new(
        "latency",
        format!(
            "timed pass: {} cells × {} cases, one at a time",
            exp.cells.len(),
            latency_sample(cases, exp.latency_cases).len()
        ),
        latency_seconds,
    ));
    stages.push(StageReport::new(
        "aggregate",
        "means with bootstrap intervals, slices, abstention".into(),
        aggregate_seconds,
    ));
    let mut split_counts = BTreeMap::new();
    for case in cases {
        *split_counts.entry(case.split.unwrap_or(Split::Tuning)).or_insert(0) += 1;
    }
    Ok(Outcome { rows, slices, case_info, stages, split_counts, wall_seconds: started.elapsed().as_secs_f64() })
}

/// What retrieving and scoring a case reads.
struct Scoring<'a> {
    exp: &'a Experiment,
    corpus: &'a Corpus,
    cases: &'a [GoldenCase],
    built: &'a Built,
    truths: &'a [Truth],
    allowed_sets: &'a HashMap<(usize, &'a [String]), Allowed>,
}

impl Scoring<'_> {
    fn allowed(&self, chunks: usize, case: usize) -> Option<&Allowed> {
        self.allowed_sets.get(&(chunks, self.cases[case].groups.as_slice()))
    }

    /// The one retrieval call of a case in a cell: what is scored, and what is timed.
    fn retrieve(
        &self,
        cell: &Cell,
        chunks: usize,
        retriever: &CellRetriever<'_>,
        case: usize,
        vector: &[f32],
        timing: &mut Timing,
    ) -> Result<Retrieval> {
        let set = &self.built.sets[chunks];
        let (truth, corpus) = (&self.truths[case], self.corpus);
        let judge = |hits: &[crate::retrieve::Hit], k: usize| truth.judge(hits, set, corpus, k);
        let collapses = self.exp.unit != Unit::Evidence && cell.chunker.kind != ChunkerKind::None;
        let judge =
            Judge { judge: &judge, first_depth: cell::first_depth(collapses, self.exp.max_k()), chunks: set.len() };
        let query = Query { text: &self.cases[case].question, vector };
        let access = Access::of(cell.filter, self.allowed(chunks, case));
        cell::retrieve(retriever, &query, access, &self.exp.k, &judge, timing)
    }

    fn score(&self, cell: &Cell, ci: usize, r: &Retrieval, chunks: usize, chunk_tokens: &[u32]) -> CaseResult {
        let case = &self.cases[ci];
        let ks = &self.exp.k;
        let k_index = |k: usize| ks.iter().position(|&x| x == k).expect("columns use the experiment's k");
        let values = self
            .exp
            .columns()
            .iter()
            .map(|c| if case.answerable { c.metric.at(r.list(k_index(c.k)), c.k) } else { None })
            .collect();
        let leaks = match self.allowed(chunks, ci) {
            Some(a) => {
                let mut returned: Vec<u32> = (0..ks.len()).flat_map(|i| r.list(i).returned.iter().copied()).collect();
                returned.sort_unstable();
                returned.dedup();
                returned.into_iter().filter(|&c| !a.contains(c)).count()
            }
            None => 0,
        };
        let deepest = &r.deepest;
        CaseResult {
            cell: cell.id.clone(),
            case: case.id.clone(),
            split: case.split.unwrap_or(Split::Tuning),
            answerable: case.answerable,
            values,
            ranking: deepest.items.iter().map(|i| (i.key.clone(), i.score)).collect(),
            short: ks.iter().enumerate().map(|(i, &k)| r.list(i).items.len() < k).collect(),
            leaks,
            restricted_hit: case.is_restricted() && deepest.items.iter().any(|i| i.gain > 0.0),
            ctx_tokens: ks
                .iter()
                .enumerate()
                .map(|(i, &k)| r.list(i).returned.iter().take(k).map(|&c| chunk_tokens[c as usize]).sum())
                .collect(),
            first_relevant: deepest.items.iter().position(|i| i.gain > 0.0).map(|p| p as u32 + 1),
            top_score: deepest.items.first().map(|i| i.score),
            depth: r.depth,
        }
    }

    /// The timed pass of one cell (SPEC §8): one case at a time after a warm-up, the query
    /// embedded live, through the same retrieval call that produced the scored list. The
    /// depth each timed call reached is checked against the scored call's.
    fn time_cell<'e>(
        &self,
        cell: &Cell,
        planned: &crate::plan::CellPlan,
        embedder: &'e (dyn Fn(ModelId) -> Result<&'e dyn Embedding> + Sync),
        scored_depths: &[usize],
        progress: bool,
    ) -> Result<Option<Latency>> {
        let sample = latency_sample(self.cases, self.exp.latency_cases);
        if sample.is_empty() {
            return Ok(None);
        }
        let pb = bar(progress, sample.len(), "latency");
        pb.set_message(cell.id.clone());
        let retriever = self.built.retriever(planned);
        let warm_up = sample.len().min(LATENCY_WARM_UP);
        let mut timings: Vec<[f64; 4]> = Vec::with_capacity(sample.len());
        for &ci in sample[..warm_up].iter().chain(&sample) {
            let mut timing = Timing::default();
            let started = Instant::now();
            let vector = match planned.model {
                Some(m) => embedder(m)?.embed_batch(&[self.cases[ci].question.as_str()], Role::Query)?.remove(0),
                None => Vec::new(),
            };
            let embed_s = started.elapsed().as_secs_f64();
            let r = self.retrieve(cell, planned.chunks.0, &retriever, ci, &vector, &mut timing)?;
            let total = started.elapsed().as_secs_f64();
            if r.depth != scored_depths[ci] {
                return Err(Error::Other(format!(
                    "cell {}: the timed call for case {} searched {} chunks, the scored call {}",
                    cell.id, self.cases[ci].id, r.depth, scored_depths[ci]
                )));
            }
            std::hint::black_box(&r);
            timings.push([total, embed_s, timing.search_s, timing.fuse_s]);
            pb.inc(1);
        }
        pb.finish_and_clear();
        Ok(Some(Latency::of(&timings[warm_up..])))
    }
}

/// The hash of a golden set's content as a run sees it: ids, questions, labels.
pub fn golden_hash(cases: &[GoldenCase]) -> String {
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

/// Metric columns shown by default in printed tables: nDCG, recall and MRR when present.
pub fn headline(columns: &[MetricAt]) -> Vec<usize> {
    let preferred = [Metric::Ndcg, Metric::Recall, Metric::Mrr];
    let picked: Vec<usize> = (0..columns.len()).filter(|&i| preferred.contains(&columns[i].metric)).collect();
    if picked.is_empty() {
        (0..columns.len()).collect()
    } else {
        picked
    }
}
