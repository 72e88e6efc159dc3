//! Runs an experiment: plans it, builds the planned stages, retrieves every case in every
//! cell through the cell's one retriever (in parallel), scores and aggregates each cell as
//! soon as it is done, then times each cell's retrieval call one case at a time.
//!
//! Orchestration only: planning is `plan`, building is `build`, retrieval and the
//! filter modes are `retrieve::cell`, scoring is `evaluate`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

use crate::build::{self, BuildContext};
use crate::engine::servers::EngineSources;
use crate::error::{Error, Result};
use crate::evaluate::aggregate;
use crate::evaluate::context::{self, Packed};
use crate::evaluate::label::{Truth, Unit};
use crate::evaluate::metrics::MetricAt;
use crate::evaluate::ties::CellValues;
use crate::experiment::{Cell, Experiment};
use crate::input::corpus::Corpus;
use crate::input::golden::{self, GoldenCase, Split};
use crate::plan::{CellPlan, ModelId, Plan};
use crate::results::{CaseInfo, CaseResult, ContextItem, ContextLine, Latency, Ordered, Row, SliceRow, StageReport};
use crate::retrieve::access::{self, Access};
use crate::retrieve::cell::{self, CellRetriever, Judge, Query, Retrieval, Stage, Timing};
use crate::retrieve::Allowed;
use crate::stages::cache::StageCache;
use crate::stages::cost::Counter;
use crate::stages::embed::{self, Embedder, Embedding, LazyEmbedder, ModelInfo, ModelKind, Role};
pub use crate::vocab::Cut;

pub use explain::{render as render_explanation, Explanation};

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Show progress bars (they also hide themselves when stderr is not a terminal).
    pub progress: bool,
    /// Where embedding models are installed.
    pub models_dir: PathBuf,
    /// Root of the content-addressed cache (vectors, chunk sets, indexes, engine tables).
    pub cache_dir: PathBuf,
    /// Installed serving engines (`engines/pg`).
    pub engines_dir: PathBuf,
}

/// Everything loaded and checked before any work or output: a bad corpus, golden set or
/// a missing model fails here.
pub struct Prepared {
    pub plan: Plan,
    pub corpus: Corpus,
    /// The golden cases, with the judgments added as labels.
    pub cases: Vec<GoldenCase>,
    /// Cases left out as unedited drafts (`init`'s proposed questions, not yet edited).
    pub drafts: Vec<String>,
    /// What the judgments file held, when it held any.
    pub judgments: Option<crate::input::judgments::JudgmentsInfo>,
    /// The plan's models, in its order.
    pub models: Vec<ModelInfo>,
    /// The cross-encoders its rerankers score with.
    pub cross_encoders: Vec<ModelInfo>,
    /// Counts the context tokens a retrieval would send to a model.
    pub counter: Counter,
    /// The experiment's own servers (`[engines.NAME]`), their secrets read.
    pub servers: Vec<crate::engine::registry::UserServer>,
}

impl Prepared {
    /// Where the run's serving engines come from: the installs in `opts`, or the experiment's
    /// own servers.
    pub fn engine_sources<'a>(&'a self, opts: &'a RunOptions) -> EngineSources<'a> {
        EngineSources { engines_dir: &opts.engines_dir, cache_dir: &opts.cache_dir, servers: &self.servers }
    }

    /// Documents visible to every user (no ACL once the experiment's permissions apply).
    pub fn public_documents(&self) -> usize {
        self.corpus.docs.iter().filter(|d| d.acl.is_none()).count()
    }

    /// What the golden set holds and what makes its numbers weak.
    pub fn health(&self) -> crate::input::health::Health {
        let judged = |case: &str, unit: &str| {
            self.judgments.as_ref().is_some_and(|j| j.units.contains(&(case.to_string(), unit.to_string())))
        };
        let mut health = crate::input::health::health(&self.cases, &self.corpus, &judged);
        if !self.drafts.is_empty() {
            health.warnings.push(format!(
                "{} left out ({}): the question is still one `init` drafted from the labelled text; rewrite it the way your users would ask, or set \"draft\": false in its meta to accept it",
                crate::words::count(self.drafts.len(), "unedited draft"),
                self.drafts.join(", ")
            ));
        }
        health
    }

    /// One line on who may see the corpus, for the terminal.
    pub fn access_summary(&self, exp: &Experiment) -> String {
        let policy = match exp.missing_acl {
            crate::retrieve::access::MissingAcl::Public => "documents without `acl` are public",
            crate::retrieve::access::MissingAcl::Deny => "documents without `acl` are visible to no one",
        };
        format!("access: {} of {} documents public ({policy})", self.public_documents(), self.corpus.docs.len())
    }
}

pub fn prepare(exp: &Experiment, models_dir: &Path) -> Result<Prepared> {
    let reranking = rerank_models(exp, models_dir);
    let cross_encoders: Vec<ModelInfo> = reranking.iter().filter(|m| m.is_cross_encoder()).cloned().collect();
    let plan = Plan::with_cross_encoders(exp, &cross_encoders);
    for (key, path, at) in
        [("corpus.path", &exp.corpus_path, &exp.corpus_path_at), ("golden.path", &exp.golden.path, &exp.golden_path_at)]
    {
        if !path.exists() {
            return Err(Error::input(
                at.clone(),
                format!("`{key}` points to {}, which does not exist", path.display()),
            ));
        }
    }
    let mut corpus = Corpus::load_with(&exp.corpus_path, exp.corpus_format, &exp.access_key, &exp.corpus_folder)?;
    if let Some(keys) = &exp.index_meta {
        corpus.index_meta = keys.clone();
    }
    let mut cases = golden::load(&exp.golden, &corpus)?;
    let drafts = golden::take_unedited_drafts(&mut cases);
    golden::assign_splits(&mut cases, exp.seed, exp.reserved_fraction);
    if let Some(synthetic) = exp.synthetic_acl {
        if let Some(doc) = corpus.docs.iter().find(|d| d.acl.is_some()) {
            return Err(Error::input(
                exp.synthetic_acl_at.clone(),
                format!(
                    "`synthetic_groups` is for corpora without ACLs, but document {:?} has one: \
                     remove `synthetic_groups` to evaluate the corpus's own ACLs",
                    doc.id
                ),
            ));
        }
        synthetic.apply(&mut corpus, &mut cases);
    }
    exp.missing_acl.apply(&mut corpus);
    for case in cases.iter_mut().filter(|c| c.groups.is_none()) {
        case.groups = Some(exp.default_groups.clone());
    }
    for case in cases.iter().filter(|c| c.is_restricted()) {
        if let Some(visible) = access::visible_label(&corpus, case) {
            return Err(Error::input(
                crate::Location::file(&exp.golden.path),
                format!(
                    "case {:?} is unanswerable but its label {visible:?} is visible to its groups {:?}: \
                     a restricted-answer case labels what its user may not see",
                    case.id,
                    case.user_groups()
                ),
            ));
        }
    }
    let judgments = crate::input::judgments::apply(&exp.judgments, exp.unit, &mut cases, &corpus)?;
    let models = plan
        .models
        .iter()
        .map(|id| match reranking.iter().find(|m| &m.id == id) {
            Some(read) => Ok(read.clone()),
            None => embed::find_model(models_dir, id),
        })
        .collect::<Result<Vec<_>>>()?;
    models.iter().try_for_each(ModelInfo::check_embeds)?;
    // Vectors made elsewhere are the model: checked against their record at every run, as a
    // flipped row would otherwise be ranked (ONNX files are checked when loaded).
    for m in models.iter().filter(|m| m.kind == embed::ModelKind::Vectors && m.dir.join("installed.json").exists()) {
        crate::installed::verify(&m.dir).map_err(|why| {
            Error::Damaged(format!(
                "model {} is damaged ({why}): add its vectors again with `ragsweep models add --vectors`",
                m.id
            ))
        })?;
    }
    let counter = Counter::load(&exp.cost_tokenizer, models_dir)?;
    let servers = crate::engine::servers::user_servers(&exp.servers)?;
    Ok(Prepared { plan, corpus, cases, drafts, judgments, models, cross_encoders, counter, servers })
}

/// The installed models the experiment reranks by, each read once (a model that is not
/// installed is reported where it is loaded).
fn rerank_models(exp: &Experiment, models_dir: &Path) -> Vec<ModelInfo> {
    let mut names: Vec<&str> = exp.cells.iter().flat_map(|c| c.retriever.rerank_models()).collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter().filter_map(|name| embed::find_model(models_dir, name).ok()).collect()
}

/// One model's share of a cold run (nothing cached): the passages it embeds and how fast.
pub struct ColdEstimate {
    pub model: String,
    pub passages: usize,
    /// Passages per second measured by the probe.
    pub per_second: f64,
    pub probe_seconds: f64,
    /// The slowest and fastest passages per second of the probe's rounds.
    pub spread: (f64, f64),
    pub rounds: usize,
    /// The 1-minute load average over the cores when the probe started (Linux), if readable.
    pub load_per_core: Option<f64>,
}

/// The 1-minute load average per core (`/proc/loadavg`), where the system says it.
fn load_per_core() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let load: f64 = text.split_whitespace().next()?.parse().ok()?;
    let cores = std::thread::available_parallelism().ok()?.get() as f64;
    Some(load / cores)
}

/// Rounds the probe is cut into, so that its line can say how much the rate moved.
const PROBE_ROUNDS: usize = 3;

/// Seconds the passage-embedding probe of [`cold_run`] runs per model, at most.
pub const PROBE_SECONDS: f64 = 2.0;

/// The probe's share of the embedding it estimates, at most: a small corpus is not probed for
/// longer than a tenth of what embedding it all takes.
const PROBE_SHARE: f64 = 0.1;

/// What a cold run would spend embedding, per model: the distinct passages of every chunk set
/// the model embeds, and its passages/s measured by embedding a spread of them with `loaded[m]`
/// (the model loaded on the run's threads) for about [`PROBE_SECONDS`], or a [`PROBE_SHARE`]
/// of the estimate when that is less (after one warm-up text).
pub fn cold_run(
    prepared: &Prepared,
    sets: &[crate::stages::chunk::ChunkSet],
    loaded: &[Option<Embedder>],
) -> Result<Vec<ColdEstimate>> {
    let mut out = Vec::new();
    for (m, info) in prepared.models.iter().enumerate() {
        let mut texts = model_passages(prepared, sets, m);
        let Some(embedder) = loaded.get(m).and_then(Option::as_ref) else { continue };
        if texts.is_empty() {
            continue;
        }
        // A spread of the passages by length, batched among similar lengths as the run batches
        // them, the batches visited in a scattered order so a probe cut short is not biased.
        texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
        let step = (texts.len() / 256).max(1);
        let sample: Vec<&str> = texts.iter().step_by(step).map(String::as_str).collect();
        // Tokens estimated at four bytes each, cut at the model's maximum length: the probe's
        // rate is in tokens, so a probe cut short on short passages does not promise long ones.
        let tokens = |t: &str| (t.len() / 4).clamp(1, info.max_length.max(1)) as u32;
        let lengths: Vec<u32> = sample.iter().map(|t| tokens(t)).collect();
        let all_tokens: f64 = texts.iter().map(|t| f64::from(tokens(t))).sum();
        let mut start = 0;
        let mut batches: Vec<std::ops::Range<usize>> =
            embed::token_batches(&lengths, embed::TOKEN_BUDGET, embed::MAX_BATCH)
                .into_iter()
                .map(|n| {
                    start += n;
                    start - n..start
                })
                .collect();
        batches.sort_by_key(|b| *blake3::hash(sample[b.start].as_bytes()).as_bytes());
        embedder.embed_batch(&sample[batches[0].start..batches[0].start + 1], Role::Passage)?;
        let load_per_core = load_per_core();
        let started = Instant::now();
        let (mut done, mut round_done, mut round_started) = (0.0, 0.0, Instant::now());
        let mut rates: Vec<f64> = Vec::new();
        for batch in batches {
            embedder.embed_batch(&sample[batch.clone()], Role::Passage)?;
            let batch_tokens: f64 = lengths[batch].iter().map(|&n| f64::from(n)).sum();
            done += batch_tokens;
            round_done += batch_tokens;
            let elapsed = started.elapsed().as_secs_f64();
            let budget = PROBE_SECONDS.min(PROBE_SHARE * all_tokens * elapsed / done);
            if round_started.elapsed().as_secs_f64() >= budget / PROBE_ROUNDS as f64 {
                rates.push(round_done / round_started.elapsed().as_secs_f64());
                (round_done, round_started) = (0.0, Instant::now());
            }
            if elapsed >= budget {
                break;
            }
        }
        let probe_seconds = started.elapsed().as_secs_f64();
        // Tokens per second, said as passages per second of this corpus's passages.
        let passages_per_token = texts.len() as f64 / all_tokens;
        let per_second = done / probe_seconds.max(1e-9) * passages_per_token;
        let spread = rates
            .iter()
            .map(|r| r * passages_per_token)
            .fold((per_second, per_second), |(lo, hi), r| (lo.min(r), hi.max(r)));
        out.push(ColdEstimate {
            model: info.id.clone(),
            passages: texts.len(),
            per_second,
            probe_seconds,
            spread,
            rounds: rates.len().max(1),
            load_per_core,
        });
    }
    Ok(out)
}

/// Reads vectors model `m`'s vectors for the questions and every chunk set it is paired with,
/// as a run reads them (every id checked both ways); returns how many it read.
pub fn check_brought(prepared: &Prepared, sets: &[crate::stages::chunk::ChunkSet], m: usize) -> Result<usize> {
    let info = &prepared.models[m];
    let paired: Vec<&crate::stages::chunk::ChunkSet> =
        prepared.plan.jobs_of(m).map(|(_, job)| &sets[job.chunks.0]).collect();
    let brought = crate::stages::brought::resolve(&info.dir, info.dim, &prepared.corpus, &prepared.cases, &paired)?;
    Ok((brought.queries.len() + brought.passages.iter().map(Vec::len).sum::<usize>()) / info.dim)
}

/// The distinct passages model `m` embeds over every chunk set of the plan, sorted.
pub(crate) fn model_passages(prepared: &Prepared, sets: &[crate::stages::chunk::ChunkSet], m: usize) -> Vec<String> {
    let mut texts: Vec<String> = prepared
        .plan
        .jobs_of(m)
        .map(|(_, job)| &sets[job.chunks.0])
        .flat_map(|set| (0..set.len()).map(|i| set.indexed_text(&prepared.corpus, i)))
        .collect();
    texts.sort_unstable();
    texts.dedup();
    texts
}

/// The plan's chunk sets (from the cache, or chunked and cached now), without embedding or
/// indexing anything: what scoring and the cold-run estimate read.
pub fn chunk_sets(
    prepared: &Prepared,
    opts: &RunOptions,
    stages: &mut Vec<StageReport>,
) -> Result<Vec<crate::stages::chunk::ChunkSet>> {
    with_chunking_context(prepared, opts, |plan, ctx| build::chunk_sets(plan, ctx, stages))
}

/// For `validate`: each index the team serves opened as a run opens it, in a line (reads only).
pub fn open_served(
    prepared: &Prepared,
    opts: &RunOptions,
    sets: &[crate::stages::chunk::ChunkSet],
) -> Result<Vec<String>> {
    with_chunking_context(prepared, opts, |plan, ctx| build::open_served(plan, ctx, sets))
}

/// `f` of the plan and a build context that embeds nothing (chunking and served indexes).
fn with_chunking_context<T>(
    prepared: &Prepared,
    opts: &RunOptions,
    f: impl FnOnce(&crate::plan::Plan, &BuildContext<'_, '_>) -> Result<T>,
) -> Result<T> {
    let store = StageCache::new(&opts.cache_dir);
    let make_bar = |len: usize, what: &str| bar(opts.progress, len, what);
    let embedder = |_: ModelId| -> Result<&dyn Embedding> { Err(Error::ModelFailed("chunking embeds nothing".into())) };
    let ctx = BuildContext {
        corpus: &prepared.corpus,
        cases: &prepared.cases,
        models: &prepared.models,
        embedder: &embedder,
        store: &store,
        cache_dir: &opts.cache_dir,
        engines: prepared.engine_sources(opts),
        bar: &make_bar,
    };
    f(&prepared.plan, &ctx)
}

fn bar(progress: bool, len: usize, what: &str) -> ProgressBar {
    if !progress {
        return ProgressBar::hidden();
    }
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        // A hidden bar keeps its position; a thread writes it as a line now and then.
        let pb = ProgressBar::hidden();
        pb.set_length(len as u64);
        progress_lines(&pb, what);
        return pb;
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

/// Seconds between progress lines when stderr is not a terminal (a CI log), unless
/// `RAGSWEEP_PROGRESS_SECONDS` says otherwise.
pub const PROGRESS_LINE_SECONDS: f64 = 30.0;

/// Writes `pb`'s progress to stderr as a line every [`PROGRESS_LINE_SECONDS`] (stage,
/// done/total, the current item, elapsed and remaining time), and a last line when it sees a
/// stage that wrote any finish (best effort: the process may end first); stops when the bar is
/// dropped.
fn progress_lines(pb: &ProgressBar, what: &str) {
    let every = std::env::var("RAGSWEEP_PROGRESS_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(PROGRESS_LINE_SECONDS);
    let (weak, what) = (pb.downgrade(), what.to_string());
    std::thread::spawn(move || {
        let started = Instant::now();
        let mut next = every;
        let mut wrote = false;
        loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let Some(pb) = weak.upgrade() else { return };
            let (pos, len, elapsed) = (pb.position(), pb.length().unwrap_or(0), started.elapsed().as_secs_f64());
            if pb.is_finished() {
                if wrote {
                    eprintln!("{what}: {len} of {len} done in {elapsed:.0} s");
                }
                return;
            }
            if elapsed >= next {
                next += every.max(0.1);
                wrote = true;
                let left = if pos > 0 {
                    format!(", about {:.0} s left", elapsed * (len - pos.min(len)) as f64 / pos as f64)
                } else {
                    String::new()
                };
                let item = pb.message();
                let item = if item.is_empty() { String::new() } else { format!(" ({item})") };
                eprintln!("{what}: {pos} of {len}{item}, {elapsed:.0} s{left}");
            }
        }
    });
}

/// Names a cell that fails on purpose (tests of an incomplete run): a comma-separated list of
/// cell ids. Not for use outside tests.
pub const FAIL_CELL_VAR: &str = "RAGSWEEP_TEST_FAIL_CELLS";

fn failing_on_purpose(cell: &str) -> bool {
    std::env::var(FAIL_CELL_VAR).is_ok_and(|v| v.split(',').any(|c| c.trim() == cell))
}

/// Cases run untimed before each cell's timed pass.
const LATENCY_WARM_UP: usize = 5;
/// Timed calls made again at most per cell after an endpoint retried inside them.
const MAX_TIMED_RETRIES: usize = 20;

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
    let embedders = lazy_embedders(&prepared.models, opts);
    let embedder = |m: ModelId| -> Result<&dyn Embedding> { Ok(embedders[m.0].get()? as &dyn Embedding) };
    run_with(exp, prepared, opts, &embedder, on_cell)
}

/// One embedder per model, loaded on first use.
fn lazy_embedders<'m>(models: &'m [ModelInfo], opts: &'m RunOptions) -> Vec<LazyEmbedder<'m>> {
    let threads = rayon::current_num_threads();
    models.iter().map(|m| LazyEmbedder::new(&opts.models_dir, m, threads)).collect()
}

/// Who may see what: one allowed set per (chunk set, user groups), when the corpus has ACLs.
fn allowed_sets<'c>(
    corpus: &Corpus,
    cases: &'c [GoldenCase],
    sets: &[crate::stages::chunk::ChunkSet],
) -> HashMap<(usize, &'c [String]), Allowed> {
    let mut out = HashMap::new();
    if corpus.docs.iter().any(|d| d.acl.is_some()) {
        for (s, set) in sets.iter().enumerate() {
            for case in cases {
                let groups = case.user_groups();
                out.entry((s, groups)).or_insert_with(|| {
                    Allowed::from_fn(set.len(), |i| access::visible(&corpus.docs[set.chunks[i].doc as usize], groups))
                });
            }
        }
    }
    out
}

/// What a run produced, before it is written: rows, slices, cases, and what each stage did.
pub struct Outcome {
    pub rows: Vec<Row>,
    pub slices: Vec<SliceRow>,
    pub case_info: Vec<CaseInfo>,
    pub stages: Vec<StageReport>,
    pub split_counts: BTreeMap<Split, usize>,
    /// Cells that failed, with why; the run is incomplete when there are any.
    pub failed: Vec<(String, String)>,
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
    let Prepared { plan, corpus, cases, models, counter, .. } = prepared;
    let store = StageCache::new(&opts.cache_dir);
    let mut stages = Vec::new();
    let make_bar = |len: usize, what: &str| bar(opts.progress, len, what);
    let ctx = BuildContext {
        corpus,
        cases,
        models,
        embedder,
        store: &store,
        cache_dir: &opts.cache_dir,
        engines: prepared.engine_sources(opts),
        bar: &make_bar,
    };
    let built = build::build(plan, &ctx, &mut stages)?;

    let plan_started = Instant::now();
    let columns = cut_columns(exp);
    let facts = ChunkFacts::of(corpus, &built.sets, counter)?;
    let scoring = Scoring::new(exp, corpus, cases, &built.sets, counter, &facts);
    let (metrics, ranking) = (collect::Metrics::new(&scoring, &columns)?, collect::Ranking::new(&scoring));
    let collectors: [&dyn collect::Collector; 6] =
        [&metrics, &collect::Budgets, &ranking, &collect::Leaks, &collect::RankedHits, &collect::OracleParity];
    let case_info = aggregate::case_info(cases, corpus);
    let slices_of = aggregate::case_slices(&case_info);
    let golden_tags = aggregate::golden_tags(&case_info);
    stages.push(StageReport::new(
        "plan",
        "truths per case, context tokens per chunk, allowed sets per user, exact terms".into(),
        plan_started.elapsed().as_secs_f64(),
    ));

    let decision = exp.decision_metric();
    let decision_column = columns.iter().position(|c| c.1 == decision).expect("the decision metric is a column");
    let mut decision_values: Vec<CellValues> = Vec::with_capacity(exp.cells.len());
    let sample = latency_sample(cases, exp.latency_cases);
    let retrieve_started = Instant::now();
    let (mut aggregate_seconds, mut latency_seconds) = (0.0, 0.0);
    let mut rows: Vec<Row> = Vec::new();
    let mut slices: Vec<SliceRow> = Vec::new();
    let pb = bar(opts.progress, exp.cells.len() * cases.len(), "retrieve");
    let mut failed: Vec<(String, String)> = Vec::new();
    for (c, (cell, planned)) in exp.cells.iter().zip(&plan.cells).enumerate() {
        pb.set_message(cell.id.clone());
        let this = CellRun::new(cell, planned, built.retriever(planned), models);
        let queries = built.cell_queries(planned);
        let used_before = this.rerank_usage();
        // One cell's failure (a consistency check, an engine error) is that cell's: the other
        // cells' results are kept, and the run says it is incomplete.
        let scored: Result<Vec<CaseResult>> = (0..cases.len())
            .into_par_iter()
            .map(|ci| {
                if failing_on_purpose(&cell.id) {
                    return Err(Error::FailedOnPurpose { cell: cell.id.clone(), var: FAIL_CELL_VAR });
                }
                let vector = queries.vector(ci);
                let retrieval = scoring.retrieve(&this, ci, vector)?;
                let oracle = scoring.oracle(&this, ci, vector)?;
                let packed = scoring.packed(&this, ci, &retrieval)?;
                let exact = oracle.as_ref().map(|o| &o.retrieval);
                let mut result = scoring.collect(&this, ci, &retrieval, &packed, exact, &collectors);
                result.misses = scoring.diagnose(&this, ci, vector, &retrieval, oracle.as_ref())?;
                result.budget_misses = scoring.budget_misses(&this, ci, &retrieval, &packed, &result.misses);
                pb.inc(1);
                Ok(result)
            })
            .collect();
        // What hosted rerankers said the scored questions used (before the timed pass asks again).
        let used_scoring = this.rerank_usage();
        let scored_vector = |ci: usize| queries.vector(ci);
        let t = Instant::now();
        let timed = scored.and_then(|results| {
            let latency = scoring.time_cell(&this, &sample, embedder, &scored_vector, &results, opts.progress)?;
            Ok((results, latency))
        });
        latency_seconds += t.elapsed().as_secs_f64();
        let with_plans =
            timed.and_then(|(results, latency)| Ok((results, latency, scoring.engine_plans(&this, &scored_vector)?)));
        let (results, latency, plans) = match with_plans {
            Ok(done) => done,
            Err(e) => {
                // Written to the manifest too: what a server echoed is scrubbed of secrets first.
                let e = crate::secret::scrub(&e.to_string());
                pb.suspend(|| eprintln!("warning: cell {} failed, the other cells go on: {e}", cell.id));
                failed.push((cell.id.clone(), e));
                continue;
            }
        };
        let t = Instant::now();
        let mut cost = built.cost(plan, planned, exp.shared[&exp.cells[c].id].clone(), &exp.prices, &prepared.models);
        add_reranking(&mut cost, &used_before, &used_scoring);
        let measured = aggregate::Measured { cost, latency, engine_plan: plans };
        let (cell_rows, cell_slices) =
            aggregate::aggregate_cell(exp, cell, &results, &slices_of, &golden_tags, &measured);
        aggregate_seconds += t.elapsed().as_secs_f64();
        on_cell(&results)?;
        decision_values.push(CellValues {
            cell: cell.id.clone(),
            values: results.iter().map(|r| (r.split, r.values[decision_column])).collect(),
        });
        rows.extend(cell_rows);
        slices.extend(cell_slices);
    }
    pb.finish_and_clear();
    let t = Instant::now();
    if exp.shard.is_none() {
        crate::evaluate::selection::mark_standing(exp, &mut rows, &slices, &decision_values);
    }
    aggregate_seconds += t.elapsed().as_secs_f64();
    let retrieve_seconds = retrieve_started.elapsed().as_secs_f64() - aggregate_seconds - latency_seconds;
    stages.push(StageReport::new(
        "retrieve",
        format!("{} cells × {} cases, judged, scored and written", exp.cells.len(), cases.len()),
        retrieve_seconds,
    ));
    stages.push(StageReport::new(
        "latency",
        format!("timed pass: {} cells × {} cases, one at a time", exp.cells.len(), sample.len()),
        latency_seconds,
    ));
    stages.push(StageReport::new(
        "aggregate",
        "means with bootstrap intervals, slices, abstention, standing against the best".into(),
        aggregate_seconds,
    ));
    let mut split_counts = BTreeMap::new();
    for case in cases {
        *split_counts.entry(case.split.unwrap_or(Split::Tuning)).or_insert(0) += 1;
    }
    Ok(Outcome { rows, slices, case_info, stages, split_counts, failed, wall_seconds: started.elapsed().as_secs_f64() })
}

/// Builds what cell `cell_id` of `exp` needs (from the cache when built before) and calls `f`
/// with the scoring context, the cell, and each case's query vector.
fn with_cell<T>(
    exp: &Experiment,
    prepared: &Prepared,
    opts: &RunOptions,
    cell_id: &str,
    f: impl for<'b> FnOnce(&Scoring<'b>, &CellRun<'b>, &'b (dyn Fn(usize) -> &'b [f32] + Sync)) -> Result<T>,
) -> Result<T> {
    with_cells(exp, prepared, opts, &[cell_id], |scoring, runs, queries| {
        let vector = |ci: usize| queries[0].vector(ci);
        f(scoring, &runs[0], &vector)
    })
}

/// Cells `cell_ids` of `exp` built as a run of them alone builds them, and each one's question
/// vectors.
fn with_cells<T>(
    exp: &Experiment,
    prepared: &Prepared,
    opts: &RunOptions,
    cell_ids: &[&str],
    f: impl for<'b> FnOnce(&Scoring<'b>, &[CellRun<'b>], &'b [crate::build::CellQueries<'b>]) -> Result<T>,
) -> Result<T> {
    let mut one = exp.clone();
    one.cells = cell_ids
        .iter()
        .map(|cell_id| {
            let cell = exp.cells.iter().find(|c| c.id == *cell_id).ok_or_else(|| {
                let known = exp.cells.iter().map(|c| c.id.clone()).collect();
                Error::UnknownCell { cell: cell_id.to_string(), source_of: exp.file.clone(), known }
            })?;
            Ok(cell.clone())
        })
        .collect::<Result<_>>()?;
    let plan = Plan::with_cross_encoders(&one, &prepared.cross_encoders);
    let Prepared { corpus, cases, models, .. } = prepared;
    // The plan numbers its own models: embedders follow that order.
    let plan_models: Vec<ModelInfo> = plan
        .models
        .iter()
        .map(|id| models.iter().find(|m| &m.id == id).cloned().expect("prepared for the whole plan"))
        .collect();
    let embedders = lazy_embedders(&plan_models, opts);
    let embedder = |m: ModelId| -> Result<&dyn Embedding> { Ok(embedders[m.0].get()? as &dyn Embedding) };
    let store = StageCache::new(&opts.cache_dir);
    let make_bar = |len: usize, what: &str| bar(opts.progress, len, what);
    let ctx = BuildContext {
        corpus,
        cases,
        models: &plan_models,
        embedder: &embedder,
        store: &store,
        cache_dir: &opts.cache_dir,
        engines: prepared.engine_sources(opts),
        bar: &make_bar,
    };
    let built = build::build(&plan, &ctx, &mut Vec::new())?;
    let facts = ChunkFacts::of(corpus, &built.sets, &prepared.counter)?;
    let scoring = Scoring::new(exp, corpus, cases, &built.sets, &prepared.counter, &facts);
    let runs: Vec<CellRun<'_>> = one
        .cells
        .iter()
        .zip(&plan.cells)
        .map(|(cell, planned)| CellRun::new(cell, planned, built.retriever(planned), &plan_models))
        .collect();
    let queries: Vec<_> = plan.cells.iter().map(|planned| built.cell_queries(planned)).collect();
    f(&scoring, &runs, &queries)
}

/// `diff --causes` for a finished run directory: why cells `a` and `b`'s lists at `k` differ,
/// over the cases of `split` (all when `None`).
pub fn lexical_causes(
    run: &Path,
    a: &str,
    b: &str,
    k: usize,
    split: Option<Split>,
    opts: &RunOptions,
) -> Result<lexical_causes::LexicalCauses> {
    let (exp, prepared) = load_run(run, opts)?;
    with_cells(&exp, &prepared, opts, &[a, b], |scoring, runs, _| scoring.lexical_causes(&runs[0], &runs[1], k, split))
}

/// The context `cell` of `exp` sends a generator for each case at cut-off `k` (one of the
/// experiment's), through the same retrieval call and permission filter as the run.
pub fn contexts(
    exp: &Experiment,
    prepared: &Prepared,
    opts: &RunOptions,
    cell_id: &str,
    cut: Cut,
) -> Result<Vec<ContextLine>> {
    let position = exp.cut_position(cut)?;
    with_cell(exp, prepared, opts, cell_id, |scoring, run, vector| {
        let (corpus, cases, truths) = (scoring.corpus, scoring.cases, &scoring.truths);
        let set = &scoring.sets[run.chunks];
        (0..cases.len())
            .into_par_iter()
            .map(|ci| {
                let r = scoring.retrieve(run, ci, vector(ci))?;
                // At k, each chunk carries the score of the unit it is judged as (the list's
                // score); at a budget, the packed piece's own.
                let (pieces, scores): (Vec<crate::evaluate::label::Piece>, Option<HashMap<&str, f32>>) = match cut {
                    Cut::K(k) => {
                        let list = r.list(position);
                        let pieces = list
                            .returned
                            .iter()
                            .take(k)
                            .map(|&c| {
                                let chunk = &set.chunks[c as usize];
                                let (start, end) = (chunk.start as usize, chunk.end as usize);
                                crate::evaluate::label::Piece { chunk: c, start, end, score: 0.0 }
                            })
                            .collect();
                        (pieces, Some(list.items.iter().map(|i| (i.key.as_str(), i.score)).collect()))
                    }
                    Cut::Budget(_) => {
                        let packed = scoring.packed(run, ci, &r)?.swap_remove(position);
                        (packed.pieces.into_iter().map(|p| p.0).collect(), None)
                    }
                };
                let allowed = scoring.allowed(run.chunks, ci);
                let items: Vec<ContextItem> = pieces
                    .iter()
                    .enumerate()
                    .map(|(rank, piece)| {
                        let judged = truths[ci].judge_pieces([*piece], set, corpus, 1);
                        let first = judged.items.first();
                        let chunk = &set.chunks[piece.chunk as usize];
                        let text = set.text(corpus, piece.chunk as usize);
                        let kept = (piece.end - piece.start).min(text.len());
                        ContextItem {
                            rank: rank + 1,
                            chunk: chunk.id.clone(),
                            doc: corpus.docs[chunk.doc as usize].id.clone(),
                            unit: first.map_or_else(|| chunk.id.clone(), |i| i.key.clone()),
                            relevant: cases[ci].answerable && first.is_some_and(|i| i.gain > 0.0),
                            visible_to_user: allowed.is_none_or(|a| a.contains(piece.chunk)),
                            score: match &scores {
                                Some(scores) => first.and_then(|i| scores.get(i.key.as_str()).copied()).unwrap_or(0.0),
                                None => piece.score,
                            },
                            // A budget's last piece is the chunk cut at the budget.
                            text: text.get(..kept).unwrap_or(text).to_string(),
                        }
                    })
                    .collect();
                let case = &cases[ci];
                Ok(ContextLine {
                    case: case.id.clone(),
                    question: case.question.clone(),
                    split: case.split.unwrap_or(Split::Tuning),
                    answerable: case.answerable,
                    cell: cell_id.to_string(),
                    k: match cut {
                        Cut::K(k) => k,
                        Cut::Budget(_) => items.len(),
                    },
                    budget: match cut {
                        Cut::K(_) => None,
                        Cut::Budget(b) => Some(b),
                    },
                    items,
                })
            })
            .collect()
    })
}

/// Reloads the experiment of a finished run directory, refusing one whose config or corpus
/// changed since the run.
pub fn load_run(run: &Path, opts: &RunOptions) -> Result<(Experiment, Prepared)> {
    let manifest_path = run.join("manifest.json");
    let stale = |why: String| Error::StaleRun { run: run.to_path_buf(), why };
    if !manifest_path.is_file() {
        return Err(stale("not a run directory (no manifest.json)".into()));
    }
    let manifest: crate::results::Manifest = crate::input::text::json(&manifest_path, "run manifest")?;
    let recorded = &manifest.experiment.file;
    let beside = manifest.experiment.file_from_run.as_ref().map(|r| run.join(r));
    let file =
        [Some(recorded.clone()), beside.clone()].into_iter().flatten().find(|p| p.is_file()).ok_or_else(|| {
            let also = beside.map_or(String::new(), |b| format!(" nor at {}", b.display()));
            stale(format!(
                "the run's experiment file is not at {}{also}: restore it (with its corpus and golden set) or rerun",
                recorded.display()
            ))
        })?;
    let exp = Experiment::load(&file)?;
    if exp.config_hash != manifest.experiment.config_hash {
        return Err(stale(format!(
            "{} changed since the run (config hash {} ≠ {}): rerun it first",
            exp.file.display(),
            exp.config_hash,
            manifest.experiment.config_hash
        )));
    }
    let prepared = prepare(&exp, &opts.models_dir)?;
    if prepared.corpus.hash != manifest.corpus.hash {
        return Err(stale("the corpus changed since the run: rerun it first".into()));
    }
    Ok((exp, prepared))
}

/// Explains each of `cases` in cell `cell` of a finished run (see [`explain::Explanation`]);
/// `doc` adds a document or unit of the user's choosing.
pub fn explain_cases(
    run: &Path,
    cell: &str,
    cases: &[String],
    doc: Option<&str>,
    budget: Option<usize>,
    opts: &RunOptions,
) -> Result<Vec<Explanation>> {
    let (exp, prepared) = load_run(run, opts)?;
    with_cell(&exp, &prepared, opts, cell, |scoring, run, vector| {
        cases.iter().map(|case| scoring.explain(run, case, doc, budget, vector)).collect()
    })
}

/// `contexts` for a finished run directory: writes `RUN/contexts.jsonl` with the cases of
/// `split` (all when `None`); returns the file and its number of lines.
pub fn write_contexts(
    run: &Path,
    cell: &str,
    cut: Cut,
    split: Option<Split>,
    opts: &RunOptions,
) -> Result<(PathBuf, usize)> {
    let (exp, prepared) = load_run(run, opts)?;
    let mut lines = contexts(&exp, &prepared, opts, cell, cut)?;
    lines.retain(|l| split.is_none_or(|s| l.split == s));
    let mut out = Vec::new();
    for l in &lines {
        serde_json::to_writer(&mut out, l).expect("json");
        out.push(b'\n');
    }
    let path = run.join("contexts.jsonl");
    crate::atomic::write_atomic(&path, &out)?;
    Ok((path, lines.len()))
}

/// What retrieving, packing and judging a case reads; what is computed from its lists is
/// the collectors' ([`collect`]).
struct Scoring<'a> {
    exp: &'a Experiment,
    corpus: &'a Corpus,
    cases: &'a [GoldenCase],
    /// The experiment's chunk sets, in plan order.
    sets: &'a [crate::stages::chunk::ChunkSet],
    truths: Vec<Truth>,
    /// Each case's relevant units as a key ([`GoldenCase::labels_key`]), recorded with its results.
    labels: Vec<String>,
    allowed_sets: HashMap<(usize, &'a [String]), Allowed>,
    /// The cost tokenizer: context tokens, budgets and token-level measures.
    counter: &'a Counter,
    /// What the chunk sets hold, whatever the labels.
    facts: &'a ChunkFacts,
}

/// The experiment's columns, each with the position of its cut-off among `cut_keys`.
fn cut_columns(exp: &Experiment) -> Vec<(usize, MetricAt)> {
    exp.columns()
        .into_iter()
        .map(|c| {
            let i = if c.budget {
                exp.k.len() + exp.budget.iter().position(|&b| b == c.k).expect("budget columns use the budgets")
            } else {
                exp.k.iter().position(|&k| k == c.k).expect("columns use the experiment's k")
            };
            (i, c)
        })
        .collect()
}

/// What the corpus and chunk sets hold, whatever the labels: computed once (the lazy parts once
/// needed) and scored against any labels, so judging's what-if scoring tokenizes nothing twice.
pub struct ChunkFacts {
    /// Per chunk set: the tokens of each chunk a model would be sent.
    chunk_tokens: Vec<Vec<u32>>,
    /// Per chunk set, per document: its chunks' ordinals.
    doc_chunks: Vec<Vec<Vec<u32>>>,
    /// Per document: the start byte of each of its cost-tokenizer tokens.
    doc_token_starts: Vec<OnceLock<Vec<u32>>>,
    /// Per document: its normalized text mapped to its bytes.
    normalized: Vec<OnceLock<crate::analyze::Mapped>>,
    /// Per chunk set once a budget cuts one of its chunks, per chunk: the end byte of each of its
    /// tokens (where a budget cuts it).
    chunk_token_ends: Vec<OnceLock<Vec<OnceLock<Vec<u32>>>>>,
}

impl ChunkFacts {
    pub fn of(corpus: &Corpus, sets: &[crate::stages::chunk::ChunkSet], counter: &Counter) -> Result<ChunkFacts> {
        let chunk_tokens = sets
            .iter()
            .map(|set| counter.count(&(0..set.len()).map(|i| set.text(corpus, i).to_string()).collect::<Vec<_>>()))
            .collect::<Result<_>>()?;
        let doc_chunks = sets
            .iter()
            .map(|set| {
                let mut by_doc = vec![Vec::new(); corpus.docs.len()];
                for (c, chunk) in set.chunks.iter().enumerate() {
                    by_doc[chunk.doc as usize].push(c as u32);
                }
                by_doc
            })
            .collect();
        Ok(ChunkFacts {
            chunk_tokens,
            doc_chunks,
            doc_token_starts: corpus.docs.iter().map(|_| OnceLock::new()).collect(),
            normalized: corpus.docs.iter().map(|_| OnceLock::new()).collect(),
            chunk_token_ends: sets.iter().map(|_| OnceLock::new()).collect(),
        })
    }

    /// Cost-tokenizer tokens of document `doc` that start within `start..end`.
    fn tokens_in(&self, corpus: &Corpus, counter: &Counter, doc: u32, start: usize, end: usize) -> usize {
        let starts = self.doc_token_starts[doc as usize].get_or_init(|| {
            let text = &corpus.docs[doc as usize].text;
            counter.token_spans(text).map_or_else(|_| Vec::new(), |s| s.iter().map(|t| t.0 as u32).collect())
        });
        starts.partition_point(|&s| (s as usize) < end) - starts.partition_point(|&s| (s as usize) < start)
    }

    fn normalized(&self, corpus: &Corpus, doc: usize) -> &crate::analyze::Mapped {
        self.normalized[doc].get_or_init(|| crate::analyze::normalize_mapped(&corpus.docs[doc].text))
    }

    /// The end byte of each cost-tokenizer token of chunk `chunk` of set `set`.
    fn chunk_token_ends(
        &self,
        corpus: &Corpus,
        counter: &Counter,
        sets: &[crate::stages::chunk::ChunkSet],
        set: usize,
        chunk: u32,
    ) -> Result<&[u32]> {
        let per_chunk =
            self.chunk_token_ends[set].get_or_init(|| (0..sets[set].len()).map(|_| OnceLock::new()).collect());
        let ends = &per_chunk[chunk as usize];
        if let Some(ends) = ends.get() {
            return Ok(ends);
        }
        let spans = counter.token_spans(sets[set].text(corpus, chunk as usize))?;
        Ok(ends.get_or_init(|| spans.iter().map(|s| s.1 as u32).collect()))
    }
}

/// A case's lists from the cell's oracle, and what the replaced sources approximate with.
struct Oracle {
    retrieval: Retrieval,
    approximate: String,
}

/// One cell as the scoring loop and the timed pass see it.
struct CellRun<'a> {
    cell: &'a Cell,
    chunks: usize,
    retriever: CellRetriever<'a>,
    /// The models that embed the cell's questions when it serves one (not those whose vectors
    /// were made elsewhere: they have no embedder to time).
    live_models: Vec<ModelId>,
    /// Some of the cell's models have vectors made elsewhere: its timed call leaves out
    /// embedding the question.
    made_elsewhere: bool,
}

/// Adds to a cell's cost what hosted rerankers' answers said one reranked question used between
/// two readings (each call reranks one question's list): tokens, search units, and their price.
fn add_reranking(
    cost: &mut crate::results::CellCost,
    before: &[Option<crate::retrieve::source::Usage>],
    after: &[Option<crate::retrieve::source::Usage>],
) {
    for (b, a) in before.iter().zip(after) {
        let (Some(b), Some(a)) = (b, a) else { continue };
        let calls = (a.used.calls - b.used.calls).max(1) as f64;
        let tokens = (a.used.tokens - b.used.tokens) as f64 / calls;
        let searches = (a.used.searches - b.used.searches) as f64 / calls;
        cost.rerank_tokens += tokens;
        cost.rerank_searches += searches;
        cost.usd_per_query +=
            crate::stages::cost::usd(tokens, a.usd_per_1m_tokens) + searches * a.usd_per_1k_searches / 1000.0;
    }
}

impl<'a> CellRun<'a> {
    /// What each of the cell's rerankers said it used so far (`None`: one that runs here).
    fn rerank_usage(&self) -> Vec<Option<crate::retrieve::source::Usage>> {
        self.retriever.rerank.iter().map(|r| r.source.usage()).collect()
    }

    /// The run of `cell` as planned, with the plan's `models` (by position).
    fn new(cell: &'a Cell, planned: &CellPlan, retriever: CellRetriever<'a>, models: &[ModelInfo]) -> Self {
        let live_models: Vec<ModelId> =
            planned.models.iter().copied().filter(|m| models[m.0].kind != ModelKind::Vectors).collect();
        let made_elsewhere = live_models.len() < planned.models.len();
        CellRun { cell, chunks: planned.chunks.0, retriever, live_models, made_elsewhere }
    }
}

impl<'a> Scoring<'a> {
    /// The cases' truths and who may see what, for `built`'s sets.
    fn new(
        exp: &'a Experiment,
        corpus: &'a Corpus,
        cases: &'a [GoldenCase],
        sets: &'a [crate::stages::chunk::ChunkSet],
        counter: &'a Counter,
        facts: &'a ChunkFacts,
    ) -> Self {
        let truths: Vec<Truth> = cases.iter().map(|c| Truth::new(exp.unit, c, corpus)).collect();
        let labels = cases.iter().map(GoldenCase::labels_key).collect();
        let allowed_sets = allowed_sets(corpus, cases, sets);
        Scoring { exp, corpus, cases, sets, truths, labels, allowed_sets, counter, facts }
    }

    /// Cost-tokenizer tokens of document `doc` that start within `[start, end)`.
    fn tokens_in(&self, doc: u32, start: usize, end: usize) -> usize {
        self.facts.tokens_in(self.corpus, self.counter, doc, start, end)
    }
}

impl Scoring<'_> {
    fn allowed(&self, chunks: usize, case: usize) -> Option<&Allowed> {
        self.allowed_sets.get(&(chunks, self.cases[case].user_groups()))
    }

    /// Where the cell's filter applies for case `case`'s user.
    fn access(&self, run: &CellRun<'_>, case: usize) -> Access<'_> {
        Access::of(run.cell.filter, self.allowed(run.chunks, case), self.cases[case].user_groups())
    }

    /// For a cell served by an engine: the plan the engine chooses for a list of each k, read
    /// with `EXPLAIN` for the first answerable case as its user asks it (an engine's planner
    /// may take its vector index for one `LIMIT` and scan for another, or never use it on a
    /// small table). Empty for in-process cells.
    fn engine_plans<'v>(&self, run: &CellRun<'_>, vector: &dyn Fn(usize) -> &'v [f32]) -> Result<Ordered<String>> {
        let mut plans = Ordered::default();
        if !run.retriever.plans_each_depth() {
            return Ok(plans);
        }
        if self.cases.is_empty() {
            return Ok(plans);
        }
        let case = self.cases.iter().position(|c| c.answerable).unwrap_or(0);
        let query = Query { text: &self.cases[case].question, vector: vector(case) };
        let access = self.access(run, case);
        let restrict = access.in_query();
        for &k in &self.exp.k {
            if let Some(plan) = run.retriever.plan(&query, k, restrict.as_ref())? {
                plans.0.push((format!("@{k}"), plan));
            }
        }
        Ok(plans)
    }

    /// The retrieval of a case in a cell at every k: what is scored.
    fn retrieve(&self, run: &CellRun<'_>, case: usize, vector: &[f32]) -> Result<Retrieval> {
        let access = self.access(run, case);
        self.retrieve_as(run, &run.retriever, access, &self.exp.k, case, vector, &mut Timing::default())
    }

    /// The cell's retrieval call with the oracle of each approximate or engine source in its
    /// place (same access and cut-offs); `None` for a cell without one. Parity columns, the
    /// `approximation` miss cause and `explain` all read this one call.
    fn oracle(&self, run: &CellRun<'_>, case: usize, vector: &[f32]) -> Result<Option<Oracle>> {
        let Some((retriever, approximate)) = run.retriever.oracle() else { return Ok(None) };
        let access = self.access(run, case);
        let retrieval = self.retrieve_as(run, &retriever, access, &self.exp.k, case, vector, &mut Timing::default())?;
        Ok(Some(Oracle { retrieval, approximate }))
    }

    /// The cell's retrieval call with another retriever, access or cut-offs (`ks` ascending):
    /// what diagnosing a miss compares the cell with.
    #[allow(clippy::too_many_arguments)]
    fn retrieve_as(
        &self,
        run: &CellRun<'_>,
        retriever: &CellRetriever<'_>,
        access: Access<'_>,
        ks: &[usize],
        case: usize,
        vector: &[f32],
        timing: &mut Timing,
    ) -> Result<Retrieval> {
        let query = Query { text: &self.cases[case].question, vector };
        self.with_judge(run, case, |judge| cell::retrieve(retriever, &query, access, ks, judge, timing))
    }

    /// Calls `f` with how case `case`'s ranked chunks become its judged list in cell `run`.
    fn with_judge<T>(&self, run: &CellRun<'_>, case: usize, f: impl FnOnce(&Judge<'_>) -> T) -> T {
        let set = &self.sets[run.chunks];
        let (truth, corpus) = (&self.truths[case], self.corpus);
        let judge = |hits: &[crate::retrieve::Hit], k: usize| truth.judge(hits, set, corpus, k);
        let collapses = self.exp.unit != Unit::Evidence && !run.cell.chunker.kind.keeps_whole_documents();
        let fill = self.exp.budget.last().map(|&b| (&self.facts.chunk_tokens[run.chunks][..], b));
        f(&Judge { judge: &judge, collapses, chunks: set.len(), fill })
    }

    /// The context packed into each budget (SPEC §3) from the cell's ranked list; under `post`
    /// the late filter drops what the user may not see from the packed context, refilling nothing.
    fn packed(&self, run: &CellRun<'_>, ci: usize, r: &Retrieval) -> Result<Vec<Packed>> {
        let set = &self.sets[run.chunks];
        let cut = |chunk: u32, tokens: usize| -> Result<usize> {
            let ends = self.facts.chunk_token_ends(self.corpus, self.counter, self.sets, run.chunks, chunk)?;
            Ok(ends.get(tokens.saturating_sub(1)).map_or(0, |&e| if tokens == 0 { 0 } else { e as usize }))
        };
        let post = match self.access(run, ci) {
            Access::Post(r) => Some(r.allowed),
            _ => None,
        };
        // Tokens of every chunk the user may see: summed once per call, when a late filter left
        // a context under its budget.
        let visible = std::cell::OnceCell::new();
        self.exp
            .budget
            .iter()
            .map(|&b| {
                let mut packed = context::pack(&r.hits, set, &self.facts.chunk_tokens[run.chunks], b, &cut)?;
                if let Some(allowed) = post {
                    packed.pieces.retain(|(p, _)| allowed.contains(p.chunk));
                    // The late filter left less than the budget although the user may see more.
                    let held = packed.tokens() as usize;
                    if held < b {
                        let visible: &usize = visible.get_or_init(|| {
                            allowed.iter().map(|c| self.facts.chunk_tokens[run.chunks][c as usize] as usize).sum()
                        });
                        packed.short |= *visible > held;
                    }
                }
                Ok(packed)
            })
            .collect()
    }

    /// The timed pass of one cell (SPEC §8): one case at a time after a warm-up, the query
    /// embedded live, through the retrieval call that produced the scored list at the largest
    /// k (an engine cell, asked once per k when scored, is timed on that one request). The call
    /// searches with the scored pass's query vector (a query embedded alone can differ from
    /// the same query embedded in a batch by rounding, and move a deepening step), so the
    /// depth each timed call reached must equal the scored call's.
    fn time_cell<'e, 'v>(
        &self,
        run: &CellRun<'_>,
        sample: &[usize],
        embedder: &'e (dyn Fn(ModelId) -> Result<&'e dyn Embedding> + Sync),
        scored_vector: &dyn Fn(usize) -> &'v [f32],
        scored: &[CaseResult],
        progress: bool,
    ) -> Result<Option<Latency>> {
        if sample.is_empty() {
            return Ok(None);
        }
        let pb = bar(progress, sample.len(), "latency");
        pb.set_message(run.cell.id.clone());
        let warm_up = sample.len().min(LATENCY_WARM_UP);
        let mut timings: Vec<(f64, Vec<(String, f64)>)> = Vec::with_capacity(sample.len());
        let retries = || -> Result<u64> { run.live_models.iter().map(|&m| Ok(embedder(m)?.retries())).sum() };
        let mut retried = 0;
        let mut same: Vec<(usize, bool)> = Vec::with_capacity(sample.len() + warm_up);
        let mut calls = sample[..warm_up].iter().chain(sample).copied().collect::<std::collections::VecDeque<_>>();
        while let Some(ci) = calls.pop_front() {
            let mut timing = Timing::default();
            let before = retries()?;
            let started = Instant::now();
            for &m in &run.live_models {
                std::hint::black_box(embedder(m)?.embed_batch(&[self.cases[ci].question.as_str()], Role::Query)?);
            }
            // A call an endpoint retried inside holds its backoff: made again, and counted.
            if retries()? > before && retried < MAX_TIMED_RETRIES {
                retried += 1;
                calls.push_front(ci);
                continue;
            }
            if !run.live_models.is_empty() {
                timing.add(Stage::Embed, started.elapsed().as_secs_f64());
            }
            // One call, at the largest k, for every kind of cell: what the application asks.
            let (access, max_k) = (self.access(run, ci), self.exp.max_k());
            let r = self.retrieve_as(run, &run.retriever, access, &[max_k], ci, scored_vector(ci), &mut timing)?;
            let total = started.elapsed().as_secs_f64();
            if r.depth != scored[ci].depth {
                return Err(Error::Latency(format!(
                    "cell {}: the timed call for case {} searched {} chunks, the scored call {}",
                    run.cell.id, self.cases[ci].id, r.depth, scored[ci].depth
                )));
            }
            std::hint::black_box(&r);
            // Named after the call: the timed window holds no formatting.
            timings.push((total, timing.stages.into_iter().map(|(st, s)| (st.name(&run.retriever), s)).collect()));
            // The same question asked again: whether the list came back as it was scored.
            same.push((ci, r.list(0).items.iter().map(|i| i.key.as_str()).eq(scored[ci].list_at(max_k))));
            pb.inc(1);
        }
        pb.finish_and_clear();
        let mut latency = Latency::of(&timings[warm_up..]);
        latency.retried = retried;
        latency.stable = Some(same[warm_up..].iter().filter(|s| s.1).count());
        let moved = same[warm_up..].iter().filter(|s| !s.1).map(|s| self.cases[s.0].id.clone());
        latency.moved = moved.take(crate::results::MAX_MOVED_LISTED).collect();
        if run.made_elsewhere {
            latency.leaves_out = Some("embedding the question (its vectors were made elsewhere)".into());
        }
        Ok(Some(latency))
    }
}

mod collect;
mod diagnose;
pub mod embed_shard;
mod explain;
pub mod lexical_causes;
pub mod rescore;
#[cfg(test)]
mod tests;
