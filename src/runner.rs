//! Runs an experiment's grid: plans the distinct stages, builds each once, retrieves for
//! every case in every cell (in parallel), judges and scores.
//!
//! Stages are keyed by what determines them: a chunk set by its chunker, vectors by (chunk
//! set, model), a BM25 index by (chunk set, analyzer), an HNSW graph by (vectors, m,
//! ef_construction). k1, b, ef_search, fusion parameters and k are query-time parameters:
//! sweeping them reuses one index, hybrid cells fuse component rankings computed once, and
//! every cut-off is read from one ranking at the deepest k (except late `post` filters,
//! which by definition filter each cut-off's own top k).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;

use crate::abstention::{self, Outcome, Rates};
use crate::analyze::{Analyzer, AnalyzerKind};
use crate::chunk::{ChunkSet, ChunkerKind, ChunkerSpec};
use crate::corpus::Corpus;
use crate::cost::Counter;
use crate::embed::{self, EmbedStats, LazyEmbedder, ModelInfo, Role, VectorCache};
use crate::error::{Error, Result};
use crate::exact_terms::{self, ExactTerm, Rarity, Tag};
use crate::experiment::{Abstain, Cell, DenseIndex, Experiment, RetrieverSpec};
use crate::fusion;
use crate::golden::{self, GoldenCase, Split};
use crate::index::{Allowed, Bm25Index, Bm25Params, ExactIndex, Hit, HnswIndex, HnswParams};
use crate::label::{Judged, Truth, Unit};
use crate::metrics::{Mean, Metric, MetricAt};
use crate::permissions::{self, Filter};
use crate::stage_cache::{self, Cached, StageCache};
use crate::stats;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Show progress bars (they also hide themselves when stderr is not a terminal).
    pub progress: bool,
    /// Where embedding models are installed.
    pub models_dir: PathBuf,
    /// Root of the content-addressed cache (vectors, chunk sets, indexes).
    pub cache_dir: PathBuf,
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
    /// Per cut-off k of the experiment: whether the case got fewer than k results.
    pub short: Vec<bool>,
    /// Returned chunks the asking user may not see.
    pub leaks: usize,
    /// Per cut-off k: tokens of the top k returned chunks (what a model would be sent).
    pub ctx_tokens: Vec<u32>,
    /// 1-based rank of the first relevant item in the judged list (deepest k), if any.
    pub first_relevant: Option<u32>,
    /// The score of the list's first item, which abstention compares with its floor.
    pub top_score: Option<f32>,
}

/// What a case is, once per run: its question and the exact terms it hinges on.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CaseInfo {
    pub case: String,
    pub question: String,
    pub split: Split,
    pub answerable: bool,
    pub exact_terms: Vec<ExactTerm>,
}

/// A cell's abstention on one split (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct AbstainRow {
    /// The floor used; calibrated on the tuning split when `calibrated`.
    pub floor: f64,
    pub calibrated: bool,
    pub rates: Rates,
}

/// Means of one slice of a cell's cases on one split (e.g. the cases with exact terms).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SliceRow {
    pub cell: String,
    pub split: Split,
    pub slice: String,
    pub cases: usize,
    pub means: Vec<Mean>,
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
    /// Returned chunks the asking users may not see, summed over cases.
    pub leaks: usize,
    /// Per cut-off k (as in the experiment), cases that got fewer than k results.
    pub short_lists: Vec<usize>,
    /// The cell's latency from the timed pass (the same on both split rows).
    pub latency: Option<Latency>,
    /// Per cut-off k: mean tokens of the top k chunks a model would be sent.
    pub ctx_tokens: Vec<f64>,
    /// What building the cell's stages cost (the same on both split rows).
    pub cost: CellCost,
    /// Abstention at the cell's floor, when it has one.
    pub abstain: Option<AbstainRow>,
}

impl Row {
    /// US dollars per 1,000 queries at the i-th cut-off: context sent to the model, plus the
    /// query embedding for dense retrieval.
    pub fn usd_per_1k_queries(&self, i: usize, prices: &crate::cost::Prices) -> f64 {
        1000.0
            * (crate::cost::usd(self.ctx_tokens[i], prices.llm_usd_per_1m_input_tokens)
                + crate::cost::usd(self.cost.query_tokens, prices.embedding_usd_per_1m_tokens))
    }
}

/// The build cost of a cell: its chunk set, embeddings and indexes (SPEC §8).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct CellCost {
    pub chunks: usize,
    /// Passage tokens embedded for the cell's vectors (model tokenizer, truncated as the model does).
    pub tokens_embedded: u64,
    /// `tokens_embedded` at the declared embedding price.
    pub usd_index: f64,
    pub embed_s: f64,
    pub index_s: f64,
    pub index_bytes: u64,
    /// Texts whose vectors came from the cache (or repeated) instead of being embedded now.
    pub reused_texts: usize,
    /// The first earlier cell that uses the same indexes (work shared, not redone).
    pub shared_index: Option<String>,
    /// The first earlier cell that uses the same embeddings (work shared, not redone).
    pub shared_embeddings: Option<String>,
    /// Mean tokens of an embedded query (dense retrieval).
    pub query_tokens: f64,
}

/// Per-case latency of a cell's whole retrieval call, in milliseconds (SPEC §8).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Latency {
    pub n: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
    /// Means of the call's parts: query embedding, index search, fusion.
    pub embed_ms: f64,
    pub search_ms: f64,
    pub fuse_ms: f64,
}

impl Latency {
    /// From per-case [total, embed, search, fuse] seconds.
    fn of(timings: &[[f64; 4]]) -> Latency {
        let mut totals: Vec<f64> = timings.iter().map(|t| t[0] * 1e3).collect();
        totals.sort_by(f64::total_cmp);
        let n = totals.len();
        let at = |p: f64| totals[((n as f64 * p).ceil() as usize).clamp(1, n) - 1];
        let mean = |i: usize| timings.iter().map(|t| t[i] * 1e3).sum::<f64>() / n as f64;
        Latency {
            n,
            p50_ms: at(0.50),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            mean_ms: mean(0),
            embed_ms: mean(1),
            search_ms: mean(2),
            fuse_ms: mean(3),
        }
    }
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

#[derive(Debug, Serialize, serde::Deserialize)]
pub struct StageReport {
    pub stage: String,
    pub key: String,
    pub seconds: f64,
    pub chunks: usize,
    pub bytes: u64,
    /// True when the stage was read from the on-disk stage cache instead of built.
    #[serde(default)]
    pub reused: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding: Option<EmbedStats>,
}

impl StageReport {
    fn new(stage: &str, key: String, seconds: f64) -> Self {
        StageReport { stage: stage.into(), key, seconds, chunks: 0, bytes: 0, reused: false, embedding: None }
    }
}

#[derive(Debug)]
pub struct RunResult {
    pub columns: Vec<MetricAt>,
    pub rows: Vec<Row>,
    /// Means per cell × split × slice: `exact_term` cases, the `other` cases, and each tag.
    pub slices: Vec<SliceRow>,
    pub case_info: Vec<CaseInfo>,
    pub stages: Vec<StageReport>,
    pub corpus_hash: String,
    pub corpus_docs: usize,
    pub golden_hash: String,
    pub split_counts: BTreeMap<&'static str, usize>,
    pub models: Vec<ModelInfo>,
    /// The tokenizer that counted context tokens.
    pub counter: String,
    pub wall_seconds: f64,
}

/// Everything loaded and checked before any work or output: a bad corpus, golden set or
/// a missing model fails here.
pub struct Prepared {
    pub corpus: Corpus,
    pub cases: Vec<GoldenCase>,
    pub models: Vec<ModelInfo>,
    /// Counts the context tokens a retrieval would send to a model.
    pub counter: Counter,
}

pub fn prepare(exp: &Experiment, models_dir: &Path) -> Result<Prepared> {
    let corpus = Corpus::load(&exp.corpus_path, exp.corpus_format)?;
    let mut corpus = corpus;
    let mut cases = golden::load(&exp.golden, &corpus)?;
    golden::assign_splits(&mut cases, exp.seed, exp.reserved_fraction);
    if let Some(synthetic) = exp.synthetic_acl {
        synthetic.apply(&mut corpus, &mut cases);
    }
    for case in cases.iter_mut().filter(|c| c.groups.is_empty()) {
        case.groups = exp.default_groups.clone();
    }
    let mut models: Vec<ModelInfo> = Vec::new();
    for cell in &exp.cells {
        if let RetrieverSpec::Dense { model, .. } = &cell.retriever {
            if !models.iter().any(|m| &m.id == model) {
                models.push(embed::find_model(models_dir, model)?);
            }
        }
    }
    let counter = Counter::load(&exp.cost_tokenizer, models_dir)?;
    Ok(Prepared { corpus, cases, models, counter })
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

/// What an index is built from; cells with equal keys share the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum IndexKey {
    Bm25 { chunks: usize, analyzer: AnalyzerKind },
    Exact { chunks: usize, model: usize },
    Hnsw { chunks: usize, model: usize, params: HnswParams },
}

/// Query-time parameters of one source of a ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
enum QueryParams {
    Bm25(Bm25Params),
    Exact,
    Hnsw { ef_search: usize },
}

/// One side of a hybrid: a source's rankings for every case, at `candidates` depth.
struct Component {
    source: (IndexKey, QueryParams),
    filtered: bool,
    candidates: usize,
    rankings: Vec<Vec<Hit>>,
}

impl Component {
    fn is(&self, source: &(IndexKey, QueryParams), filtered: bool, candidates: usize) -> bool {
        self.source == *source && self.filtered == filtered && self.candidates == candidates
    }
}

enum BuiltIndex {
    Bm25(Bm25Index),
    Exact(ExactIndex),
    Hnsw(HnswIndex),
}

impl BuiltIndex {
    fn size_bytes(&self) -> u64 {
        match self {
            BuiltIndex::Bm25(i) => i.size_bytes(),
            BuiltIndex::Exact(i) => i.size_bytes(),
            BuiltIndex::Hnsw(i) => i.size_bytes(),
        }
    }
}

const EMBED_BATCH: usize = 32;

/// Runs the grid. `on_cell` receives each cell's case results (in grid order) once the cell
/// is scored, to write them out; the run keeps only the aggregated rows.
pub fn run(
    exp: &Experiment,
    prepared: &Prepared,
    opts: &RunOptions,
    on_cell: &mut dyn FnMut(&[CaseResult]) -> Result<()>,
) -> Result<RunResult> {
    let started = Instant::now();
    let Prepared { corpus, cases, models, counter } = prepared;
    let columns = exp.columns();
    let store = StageCache::new(&opts.cache_dir);
    let model_index = |id: &str| models.iter().position(|m| m.id == id).expect("prepared");
    let mut stages = Vec::new();

    let ctx = StageContext { corpus, models, store: &store, opts };
    let chunked = chunk_stage(exp, &ctx, &mut stages)?;
    let (chunkers, chunk_sets) = (&chunked.chunkers, &chunked.sets);

    // Stage: index keys, planned so that cells differing only in query-time parameters
    // (k1, b, ef_search, fusion, filter, k) share an index.
    let source_of = |chunks: usize, retriever: &RetrieverSpec| -> Vec<(IndexKey, QueryParams)> {
        let lexical = |analyzer: AnalyzerKind, params: Bm25Params| {
            (IndexKey::Bm25 { chunks, analyzer }, QueryParams::Bm25(params))
        };
        let dense = |model: &str, index: &DenseIndex| match *index {
            DenseIndex::Exact => (IndexKey::Exact { chunks, model: model_index(model) }, QueryParams::Exact),
            DenseIndex::Hnsw { m, ef_construction, ef_search } => (
                IndexKey::Hnsw { chunks, model: model_index(model), params: HnswParams { m, ef_construction } },
                QueryParams::Hnsw { ef_search },
            ),
        };
        match retriever {
            RetrieverSpec::Bm25 { analyzer, params } => vec![lexical(*analyzer, *params)],
            RetrieverSpec::Dense { model, index } => vec![dense(model, index)],
            RetrieverSpec::Hybrid { lexical: l, dense: d, .. } => {
                vec![lexical(l.analyzer, l.params), dense(&d.model, &d.index)]
            }
        }
    };
    let cell_sources: Vec<Vec<(IndexKey, QueryParams)>> =
        exp.cells.iter().map(|cell| source_of(chunk_index(chunkers, &cell.chunker), &cell.retriever)).collect();
    let mut index_keys: Vec<IndexKey> = Vec::new();
    for (key, _) in cell_sources.iter().flatten() {
        if !index_keys.contains(key) {
            index_keys.push(*key);
        }
    }

    // Stage: embeddings, once per (chunk set, model) for passages and once per model for queries.
    let embedders: Vec<LazyEmbedder> =
        models.iter().map(|m| LazyEmbedder::new(&opts.models_dir, m, rayon::current_num_threads())).collect();
    let load = |model: usize| embedders[model].get();
    let mut passage_vectors: HashMap<(usize, usize), Arc<Vec<f32>>> = HashMap::new();
    // (stats, tokens embedded) per (chunk set, model); mean query tokens per model.
    let mut embed_costs: HashMap<(usize, usize), (EmbedStats, u64)> = HashMap::new();
    let mut query_tokens: Vec<f64> = vec![0.0; models.len()];
    let mut query_vectors: Vec<Option<Vec<f32>>> = models.iter().map(|_| None).collect();
    for key in &index_keys {
        let (chunks, model) = match *key {
            IndexKey::Exact { chunks, model } | IndexKey::Hnsw { chunks, model, .. } => (chunks, model),
            IndexKey::Bm25 { .. } => continue,
        };
        if passage_vectors.contains_key(&(chunks, model)) {
            continue;
        }
        let info = &models[model];
        let mut cache = VectorCache::open(&opts.cache_dir, info)?;
        let set = &chunk_sets[chunks];
        let texts: Vec<String> = (0..set.len()).map(|i| set.indexed_text(corpus, i)).collect();
        let pb = bar(opts, 0, "embed");
        pb.set_message(format!("{} passages with {}", texts.len(), info.id));
        let (vectors, stats) =
            embed::embed_all(&texts, Role::Passage, &mut cache, EMBED_BATCH, &|| load(model), &|done, of| {
                pb.set_length(of as u64);
                pb.set_position(done as u64);
            })?;
        pb.finish_and_clear();
        // Passage tokens the model embeds (for cost), counted once per (model, texts).
        let counting = Instant::now();
        let counted = store.get_or_build(
            "tokens",
            &stage_cache::key("tokens", &[info.key().as_bytes(), &chunked.text_keys[chunks]]),
            |dir| {
                let prefixed: Vec<String> = texts.iter().map(|t| info.prefixed(Role::Passage, t)).collect();
                let tokens: u64 = Counter::for_model(info)?.count(&prefixed)?.iter().map(|&n| u64::from(n)).sum();
                let path = dir.join("tokens");
                std::fs::write(&path, tokens.to_string()).map_err(|e| Error::io(&path, e))
            },
            |dir| {
                let path = dir.join("tokens");
                let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
                text.trim().parse::<u64>().map_err(|e| Error::Other(format!("{}: {e}", path.display())))
            },
        )?;
        let tokens = counted.value;
        let mut r = StageReport::new(
            "count",
            format!("{} tokens of {} passages", info.id, set.spec),
            counting.elapsed().as_secs_f64(),
        );
        r.reused = counted.reused;
        stages.push(r);
        embed_costs.insert((chunks, model), (stats.clone(), tokens));
        let mut r = StageReport::new("embed", format!("{} passages: {}", info.id, set.spec), stats.seconds);
        r.chunks = set.len();
        r.embedding = Some(stats);
        stages.push(r);
        passage_vectors.insert((chunks, model), Arc::new(vectors));

        if query_vectors[model].is_none() {
            let questions: Vec<String> = cases.iter().map(|c| c.question.clone()).collect();
            let (vectors, stats) =
                embed::embed_all(&questions, Role::Query, &mut cache, EMBED_BATCH, &|| load(model), &|_, _| {})?;
            let prefixed: Vec<String> = questions.iter().map(|q| info.prefixed(Role::Query, q)).collect();
            let counts = Counter::for_model(info)?.count(&prefixed)?;
            query_tokens[model] = counts.iter().map(|&n| f64::from(n)).sum::<f64>() / counts.len().max(1) as f64;
            let mut r = StageReport::new("embed", format!("{} queries", info.id), stats.seconds);
            r.embedding = Some(stats);
            stages.push(r);
            query_vectors[model] = Some(vectors);
        }
    }

    let built = index_stage(&index_keys, &chunked, &passage_vectors, &ctx, &mut stages)?;

    let plan_started = Instant::now();
    let truths: Vec<Truth> = cases.iter().map(|c| Truth::new(exp.unit, c, corpus)).collect();

    // Context tokens of every chunk, with the experiment's counting tokenizer.
    let chunk_tokens: Vec<Vec<u32>> = chunk_sets
        .iter()
        .map(|set| counter.count(&(0..set.len()).map(|i| set.text(corpus, i).to_string()).collect::<Vec<_>>()))
        .collect::<Result<_>>()?;

    // Who may see what: one allowed set per (chunk set, user groups).
    let user_groups: Vec<&[String]> = cases.iter().map(|c| c.groups.as_slice()).collect();
    let mut allowed_sets: HashMap<(usize, &[String]), Allowed> = HashMap::new();
    let has_acl = corpus.docs.iter().any(|d| d.acl.is_some());
    for cell in &exp.cells {
        let chunks = chunk_index(chunkers, &cell.chunker);
        if cell.filter == Filter::None && !has_acl {
            continue;
        }
        for groups in &user_groups {
            allowed_sets
                .entry((chunks, groups))
                .or_insert_with(|| permissions::allowed(corpus, &chunk_sets[chunks], groups));
        }
    }

    stages.push(StageReport::new(
        "plan",
        "truths per case, context tokens per chunk, allowed sets per user".into(),
        plan_started.elapsed().as_secs_f64(),
    ));

    let max_k = exp.max_k();
    let search_with = |source: &(IndexKey, QueryParams),
                       question: &str,
                       vector: &[f32],
                       depth: usize,
                       allowed: Option<&Allowed>|
     -> Result<Vec<Hit>> {
        let index = &built[index_keys.iter().position(|k| *k == source.0).expect("planned")].0;
        Ok(match (index, source.1) {
            (BuiltIndex::Bm25(i), QueryParams::Bm25(params)) => i.search(question, params, depth, allowed)?,
            (BuiltIndex::Exact(i), QueryParams::Exact) => i.search(vector, depth, allowed),
            (BuiltIndex::Hnsw(i), QueryParams::Hnsw { ef_search }) => i.search(vector, depth, ef_search, allowed),
            _ => unreachable!("query parameters follow index kinds"),
        })
    };
    let source_model = |source: &(IndexKey, QueryParams)| match source.0 {
        IndexKey::Exact { model, .. } | IndexKey::Hnsw { model, .. } => Some(model),
        IndexKey::Bm25 { .. } => None,
    };
    let search = |source: &(IndexKey, QueryParams), case: usize, depth: usize, allowed: Option<&Allowed>| {
        let vector = source_model(source).map_or(&[][..], |m| query_vector(&query_vectors, models, m, case));
        search_with(source, &cases[case].question, vector, depth, allowed)
    };

    let retrieve_started = Instant::now();
    // Component rankings of hybrid cells, computed once and shared by every fusion setting.
    let mut components: Vec<Component> = Vec::new();
    for (cell, sources) in exp.cells.iter().zip(&cell_sources) {
        let RetrieverSpec::Hybrid { candidates, .. } = cell.retriever else { continue };
        let chunks = chunk_index(chunkers, &cell.chunker);
        let filtered = cell.filter == Filter::InQuery;
        for source in sources {
            if components.iter().any(|c| c.is(source, filtered, candidates)) {
                continue;
            }
            let rankings = (0..cases.len())
                .into_par_iter()
                .map(|ci| {
                    let allowed = filtered.then(|| &allowed_sets[&(chunks, user_groups[ci])]);
                    search(source, ci, candidates, allowed)
                })
                .collect::<Result<Vec<_>>>()?;
            components.push(Component { source: *source, filtered, candidates, rankings });
        }
    }

    // Build cost per cell: the stages it uses; a stage shared with an earlier cell says so.
    // A cached index costs what building it cost when it was built.
    let index_seconds: Vec<f64> =
        built.iter().map(|(_, secs, cached)| cached.as_ref().map_or(*secs, |c| c.build.seconds)).collect();
    let costs: Vec<CellCost> = exp
        .cells
        .iter()
        .zip(&cell_sources)
        .map(|(cell, sources)| {
            let chunks = chunk_index(chunkers, &cell.chunker);
            let mut cost = CellCost { chunks: chunk_sets[chunks].len(), ..Default::default() };
            for source in sources {
                let at = index_keys.iter().position(|k| *k == source.0).expect("planned");
                cost.index_s += index_seconds[at];
                cost.index_bytes += built[at].0.size_bytes();
                if let Some(model) = source_model(source) {
                    let (stats, tokens) = &embed_costs[&(chunks, model)];
                    cost.tokens_embedded += tokens;
                    cost.embed_s += stats.seconds;
                    cost.reused_texts += stats.reused;
                    cost.query_tokens += query_tokens[model];
                }
            }
            (cost.shared_embeddings, cost.shared_index) = exp.shared[&cell.id].clone();
            cost.usd_index = crate::cost::usd(cost.tokens_embedded as f64, exp.prices.embedding_usd_per_1m_tokens);
            cost
        })
        .collect();

    let case_info = case_info(cases, corpus);
    let tags = case_tags(&case_info);
    let mut aggregate_seconds = 0.0;
    let mut rows: Vec<Row> = Vec::new();
    let mut slices: Vec<SliceRow> = Vec::new();

    // Stage: retrieve, judge and score every case in every cell.
    // Each cell's case results are aggregated and handed to `on_cell` as soon as the cell is
    // done, then dropped: a run holds one cell's rankings at a time.
    let pb = bar(opts, exp.cells.len() * cases.len(), "retrieve");
    for ((cell, sources), cost) in exp.cells.iter().zip(&cell_sources).zip(&costs) {
        let chunks = chunk_index(chunkers, &cell.chunker);
        let set = &chunk_sets[chunks];
        pb.set_message(cell.id.clone());
        let results: Vec<CaseResult> = cases
            .par_iter()
            .enumerate()
            .zip(truths.par_iter())
            .map(|((ci, case), truth)| {
                let allowed = allowed_sets.get(&(chunks, user_groups[ci]));
                let in_query = if cell.filter == Filter::InQuery { allowed } else { None };
                // The ranking a cell returns at depth `k`: hits before judging. `post` filters
                // each cut-off's own unfiltered top k, as a late filter in production would.
                let unfiltered_or_in_query = |depth: usize| -> Result<Vec<Hit>> {
                    match &cell.retriever {
                        RetrieverSpec::Hybrid { fusion, candidates, .. } => {
                            let side = |source: &(IndexKey, QueryParams)| {
                                let filtered = cell.filter == Filter::InQuery;
                                &components
                                    .iter()
                                    .find(|c| c.is(source, filtered, *candidates))
                                    .expect("component planned")
                                    .rankings[ci]
                            };
                            Ok(fusion::fuse(side(&sources[0]), side(&sources[1]), *fusion, depth.min(*candidates)))
                        }
                        _ => search(&sources[0], ci, depth, in_query),
                    }
                };
                let mut per_k: Vec<(usize, Judged)> = Vec::new();
                let judged = if cell.filter == Filter::Post {
                    let deepest = unfiltered_or_in_query(first_depth(exp.unit, &cell.chunker, max_k))?;
                    for &k in &exp.k {
                        let mut hits: Vec<Hit> =
                            deepest.iter().take(first_depth(exp.unit, &cell.chunker, k)).copied().collect();
                        hits.retain(|h| allowed.is_some_and(|a| a.contains(h.chunk)));
                        per_k.push((k, truth.judge(&hits, set, corpus, k)));
                    }
                    per_k.pop().expect("k is not empty").1
                } else if let RetrieverSpec::Hybrid { candidates, .. } = &cell.retriever {
                    truth.judge(&unfiltered_or_in_query(*candidates)?, set, corpus, max_k)
                } else {
                    judge_deep(exp.unit, &cell.chunker, set, truth, corpus, max_k, unfiltered_or_in_query)?
                };
                per_k.push((max_k, judged));
                pb.inc(1);
                let leaks = match allowed {
                    Some(a) => per_k
                        .iter()
                        .flat_map(|(_, j)| &j.returned)
                        .collect::<std::collections::HashSet<_>>()
                        .into_iter()
                        .filter(|&&c| !a.contains(c))
                        .count(),
                    None => 0,
                };
                Ok(score_case(cell, case, &per_k, &columns, &exp.k, &chunk_tokens[chunks], leaks))
            })
            .collect::<Result<_>>()?;
        let t = Instant::now();
        let (cell_rows, cell_slices) = aggregate_cell(exp, cell, &results, &tags, columns.len(), cost);
        rows.extend(cell_rows);
        slices.extend(cell_slices);
        aggregate_seconds += t.elapsed().as_secs_f64();
        on_cell(&results)?;
    }
    pb.finish_and_clear();
    stages.push(StageReport::new(
        "retrieve",
        format!(
            "{} cells × {} cases (hybrid components included), judged, scored and written",
            exp.cells.len(),
            cases.len()
        ),
        retrieve_started.elapsed().as_secs_f64() - aggregate_seconds,
    ));
    stages.push(StageReport::new(
        "aggregate",
        "means with bootstrap intervals, exact-term slices, abstention".into(),
        aggregate_seconds,
    ));

    // Stage: a timed pass, one case at a time after a warm-up (SPEC §8), so the parallel grid
    // does not distort latency. Query embeddings are computed live here, not read from the cache.
    let latency_started = Instant::now();
    let sample = latency_sample(cases, exp.latency_cases);
    let pb = bar(opts, exp.cells.len() * sample.len(), "latency");
    let mut latencies: Vec<Option<Latency>> = Vec::with_capacity(exp.cells.len());
    for (cell, sources) in exp.cells.iter().zip(&cell_sources) {
        if sample.is_empty() {
            latencies.push(None);
            continue;
        }
        let chunks = chunk_index(chunkers, &cell.chunker);
        let warm_up = sample.len().min(LATENCY_WARM_UP);
        let mut timings: Vec<[f64; 4]> = Vec::with_capacity(sample.len());
        for &ci in sample[..warm_up].iter().chain(&sample) {
            let question = &cases[ci].question;
            let allowed = allowed_sets.get(&(chunks, user_groups[ci]));
            let in_query = if cell.filter == Filter::InQuery { allowed } else { None };
            let (mut embed_s, mut search_s, mut fuse_s) = (0.0, 0.0, 0.0);
            let started = Instant::now();
            let mut run_side = |source: &(IndexKey, QueryParams), depth: usize| -> Result<Vec<Hit>> {
                let t = Instant::now();
                let vector = match source_model(source) {
                    Some(m) => load(m)?.embed_batch(&[question.as_str()], Role::Query)?.remove(0),
                    None => Vec::new(),
                };
                embed_s += t.elapsed().as_secs_f64();
                let t = Instant::now();
                let hits = search_with(source, question, &vector, depth, in_query)?;
                search_s += t.elapsed().as_secs_f64();
                Ok(hits)
            };
            let mut hits = match &cell.retriever {
                RetrieverSpec::Hybrid { fusion, candidates, .. } => {
                    let lexical = run_side(&sources[0], *candidates)?;
                    let dense = run_side(&sources[1], *candidates)?;
                    let t = Instant::now();
                    let fused = fusion::fuse(&lexical, &dense, *fusion, *candidates);
                    fuse_s += t.elapsed().as_secs_f64();
                    fused
                }
                _ => run_side(&sources[0], first_depth(exp.unit, &cell.chunker, max_k))?,
            };
            if cell.filter == Filter::Post {
                hits.retain(|h| allowed.is_some_and(|a| a.contains(h.chunk)));
            }
            std::hint::black_box(&hits);
            timings.push([started.elapsed().as_secs_f64(), embed_s, search_s, fuse_s]);
            pb.inc(1);
        }
        latencies.push(Some(Latency::of(&timings[warm_up..])));
    }
    pb.finish_and_clear();
    stages.push(StageReport::new(
        "latency",
        format!("timed pass: {} cells × {} cases, one at a time", exp.cells.len(), sample.len()),
        latency_started.elapsed().as_secs_f64(),
    ));

    for row in &mut rows {
        row.latency = latencies[exp.cells.iter().position(|c| c.id == row.cell).expect("a cell of the grid")];
    }
    let mut split_counts = BTreeMap::new();
    for case in cases {
        *split_counts.entry(case.split.unwrap_or(Split::Tuning).as_str()).or_insert(0) += 1;
    }
    Ok(RunResult {
        columns,
        rows,
        slices,
        case_info,
        stages,
        corpus_hash: corpus.hash.clone(),
        corpus_docs: corpus.docs.len(),
        golden_hash: golden_hash(cases),
        split_counts,
        models: models.clone(),
        counter: counter.name(),
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

/// What every build stage reads.
struct StageContext<'a> {
    corpus: &'a Corpus,
    models: &'a [ModelInfo],
    store: &'a StageCache,
    opts: &'a RunOptions,
}

/// The chunk sets of a run, one per distinct chunker, with the content key of the texts
/// each set indexes.
struct Chunked {
    chunkers: Vec<ChunkerSpec>,
    sets: Vec<ChunkSet>,
    text_keys: Vec<[u8; 32]>,
}

/// Stage: one chunk set per distinct chunker, from the stage cache when built before.
fn chunk_stage(exp: &Experiment, ctx: &StageContext<'_>, stages: &mut Vec<StageReport>) -> Result<Chunked> {
    let StageContext { corpus, store, opts, .. } = *ctx;
    let mut chunkers: Vec<ChunkerSpec> = Vec::new();
    for cell in &exp.cells {
        if !chunkers.contains(&cell.chunker) {
            chunkers.push(cell.chunker.clone());
        }
    }
    let pb = bar(opts, chunkers.len(), "chunk");
    let cached: Vec<(Cached<ChunkSet>, f64)> = chunkers
        .par_iter()
        .map(|spec| {
            let t = Instant::now();
            let key = stage_cache::key("chunks", &[corpus.hash.as_bytes(), format!("{spec:?}").as_bytes()]);
            let set = store.get_or_build(
                "chunks",
                &key,
                |dir| ChunkSet::build(corpus, spec).write(dir),
                |dir| ChunkSet::open(dir, spec),
            )?;
            pb.inc(1);
            Ok((set, t.elapsed().as_secs_f64()))
        })
        .collect::<Result<_>>()?;
    pb.finish_and_clear();
    let chunk_sets: Vec<ChunkSet> = cached
        .into_iter()
        .map(|(set, secs)| {
            let mut r = StageReport::new("chunk", set.value.spec.to_string(), secs);
            r.chunks = set.value.len();
            r.reused = set.reused;
            stages.push(r);
            set.value
        })
        .collect();
    let text_keys = chunk_sets
        .iter()
        .map(|set| {
            let mut h = blake3::Hasher::new();
            for i in 0..set.len() {
                let text = set.indexed_text(corpus, i);
                h.update(&(text.len() as u64).to_le_bytes());
                h.update(text.as_bytes());
            }
            *h.finalize().as_bytes()
        })
        .collect();
    Ok(Chunked { chunkers, sets: chunk_sets, text_keys })
}

/// An index, the seconds this run spent on it, and its stage-cache record (none for exact).
type Built = (BuiltIndex, f64, Option<Cached<()>>);

/// Stage: every planned index, from the on-disk stage cache when its content was built
/// before. Exact indexes are the vectors themselves: nothing to build.
fn index_stage(
    index_keys: &[IndexKey],
    chunked: &Chunked,
    passage_vectors: &HashMap<(usize, usize), Arc<Vec<f32>>>,
    ctx: &StageContext<'_>,
    stages: &mut Vec<StageReport>,
) -> Result<Vec<Built>> {
    let StageContext { corpus, models, store, opts } = *ctx;
    let Chunked { chunkers, sets: chunk_sets, text_keys } = chunked;
    let pb = bar(opts, index_keys.len(), "index");
    let built: Vec<Built> = index_keys
        .par_iter()
        .map(|key| {
            let t = Instant::now();
            let (index, cached) = match *key {
                IndexKey::Bm25 { chunks, analyzer } => {
                    let set = &chunk_sets[chunks];
                    let analyzer = Analyzer::new(analyzer);
                    let key = stage_cache::key("bm25", &[format!("{analyzer:?}").as_bytes(), &text_keys[chunks]]);
                    let c = store.get_or_build(
                        "bm25",
                        &key,
                        |dir| Bm25Index::write(dir, &analyzer, (0..set.len()).map(|i| set.indexed_text(corpus, i))),
                        |dir| Bm25Index::open(dir, &analyzer),
                    )?;
                    let (index, record) = c.into_parts();
                    (BuiltIndex::Bm25(index), Some(record))
                }
                IndexKey::Exact { chunks, model } => (
                    BuiltIndex::Exact(ExactIndex::new(models[model].dim, passage_vectors[&(chunks, model)].clone())),
                    None,
                ),
                IndexKey::Hnsw { chunks, model, params } => {
                    let exact = ExactIndex::new(models[model].dim, passage_vectors[&(chunks, model)].clone());
                    let key = stage_cache::key(
                        "hnsw",
                        &[
                            models[model].key().as_bytes(),
                            &text_keys[chunks],
                            &(params.m as u64).to_le_bytes(),
                            &(params.ef_construction as u64).to_le_bytes(),
                        ],
                    );
                    let c = store.get_or_build(
                        "hnsw",
                        &key,
                        |dir| HnswIndex::build(exact.clone(), params).write(dir),
                        |dir| HnswIndex::open(dir, exact.clone()),
                    )?;
                    let (index, record) = c.into_parts();
                    (BuiltIndex::Hnsw(index), Some(record))
                }
            };
            pb.inc(1);
            Ok((index, t.elapsed().as_secs_f64(), cached))
        })
        .collect::<Result<_>>()?;
    pb.finish_and_clear();
    for (key, (index, secs, cached)) in index_keys.iter().zip(&built) {
        let (chunks, name) = match key {
            IndexKey::Bm25 { chunks, analyzer } => (*chunks, format!("bm25({analyzer})")),
            IndexKey::Exact { chunks, model } => (*chunks, format!("exact({})", models[*model].id)),
            IndexKey::Hnsw { chunks, model, params } => {
                (*chunks, format!("hnsw({},m={},efc={})", models[*model].id, params.m, params.ef_construction))
            }
        };
        let mut r = StageReport::new("index", format!("{name} on {}", chunkers[chunks]), *secs);
        r.chunks = chunk_sets[chunks].len();
        r.bytes = index.size_bytes();
        r.reused = cached.as_ref().is_some_and(|c| c.reused);
        stages.push(r);
    }
    Ok(built)
}

fn query_vector<'v>(vectors: &'v [Option<Vec<f32>>], models: &[ModelInfo], model: usize, case: usize) -> &'v [f32] {
    let dim = models[model].dim;
    &vectors[model].as_ref().expect("queries embedded")[case * dim..(case + 1) * dim]
}

fn chunk_index(chunkers: &[ChunkerSpec], spec: &ChunkerSpec) -> usize {
    chunkers.iter().position(|c| c == spec).expect("planned")
}

/// Chunks fetched first: more than `max_k` when chunks collapse into documents or sections.
fn first_depth(unit: Unit, chunker: &ChunkerSpec, max_k: usize) -> usize {
    let collapses = unit != Unit::Evidence && chunker.kind != ChunkerKind::None;
    if collapses {
        max_k * 4
    } else {
        max_k
    }
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
    let mut depth = first_depth(unit, chunker, max_k);
    loop {
        let hits = search(depth)?;
        let judged = truth.judge(&hits, set, corpus, max_k);
        if judged.items.len() >= max_k || hits.len() < depth || depth >= set.len() {
            return Ok(judged);
        }
        depth *= 4;
    }
}

/// Scores a case. `per_k` ends with the deepest judged list; earlier entries hold the
/// lists of cut-offs that differ from it (late filters). Other cut-offs read the deepest list.
fn score_case(
    cell: &Cell,
    case: &GoldenCase,
    per_k: &[(usize, Judged)],
    columns: &[MetricAt],
    ks: &[usize],
    chunk_tokens: &[u32],
    leaks: usize,
) -> CaseResult {
    let judged = &per_k.last().expect("the deepest list").1;
    let list_for = |k: usize| per_k.iter().find(|(kk, _)| *kk == k).map_or(judged, |(_, j)| j);
    let values = columns.iter().map(|c| if case.answerable { c.metric.at(list_for(c.k), c.k) } else { None }).collect();
    CaseResult {
        cell: cell.id.clone(),
        case: case.id.clone(),
        split: case.split.unwrap_or(Split::Tuning),
        answerable: case.answerable,
        values,
        ranking: judged.items.iter().map(|i| (i.key.clone(), i.score)).collect(),
        short: ks.iter().map(|&k| list_for(k).items.len() < k).collect(),
        leaks,
        ctx_tokens: ks
            .iter()
            .map(|&k| list_for(k).returned.iter().take(k).map(|&c| chunk_tokens[c as usize]).sum())
            .collect(),
        first_relevant: judged.items.iter().position(|i| i.gain > 0.0).map(|p| p as u32 + 1),
        top_score: judged.items.first().map(|i| i.score),
    }
}

/// Each case's distinct exact-term tags.
fn case_tags(info: &[CaseInfo]) -> HashMap<String, Vec<Tag>> {
    info.iter()
        .map(|c| {
            let mut tags: Vec<Tag> = c.exact_terms.iter().flat_map(|t| t.tags.iter().copied()).collect();
            tags.sort();
            tags.dedup();
            (c.case.clone(), tags)
        })
        .collect()
}

/// A cell's matrix rows (one per split) and slice rows; latency is filled in after the timed pass.
fn aggregate_cell(
    exp: &Experiment,
    cell: &Cell,
    results: &[CaseResult],
    tags: &HashMap<String, Vec<Tag>>,
    width: usize,
    cost: &CellCost,
) -> (Vec<Row>, Vec<SliceRow>) {
    let means_of = |mine: &[&CaseResult]| -> Vec<Mean> {
        let columns: Vec<Vec<Option<f64>>> = (0..width).map(|i| mine.iter().map(|r| r.values[i]).collect()).collect();
        let cis = stats::bootstrap_means(&columns, stats::BOOTSTRAP_RESAMPLES, stats::SEED);
        columns.iter().zip(cis).map(|(c, ci)| Mean { ci, ..Mean::of(c.iter().copied()) }).collect()
    };
    let outcomes = |split: Split| -> Vec<Outcome> {
        results
            .iter()
            .filter(|r| r.split == split)
            .map(|r| Outcome { top_score: r.top_score, answerable: r.answerable })
            .collect()
    };
    let floor = cell.abstain.map(|a| match a {
        Abstain::Below(floor) => (floor, false),
        Abstain::Calibrate => (abstention::calibrate(&outcomes(Split::Tuning)), true),
    });
    let tags_of = |r: &CaseResult| tags.get(&r.case).map(Vec::as_slice).unwrap_or_default();
    let mut rows = Vec::new();
    let mut slices = Vec::new();
    for split in [Split::Tuning, Split::Reserved] {
        let mine: Vec<&CaseResult> = results.iter().filter(|r| r.split == split).collect();
        if mine.is_empty() {
            continue;
        }
        rows.push(Row {
            cell: cell.id.clone(),
            label: cell.label(),
            config: cell.config(),
            split,
            cases: mine.len(),
            unanswerable: mine.iter().filter(|r| !r.answerable).count(),
            means: means_of(&mine),
            leaks: mine.iter().map(|r| r.leaks).sum(),
            short_lists: (0..exp.k.len()).map(|i| mine.iter().filter(|r| r.short[i]).count()).collect(),
            latency: None,
            ctx_tokens: (0..exp.k.len())
                .map(|i| mine.iter().map(|r| f64::from(r.ctx_tokens[i])).sum::<f64>() / mine.len() as f64)
                .collect(),
            cost: cost.clone(),
            abstain: floor.map(|(floor, calibrated)| AbstainRow {
                floor,
                calibrated,
                rates: abstention::rates(&outcomes(split), floor),
            }),
        });
        let mut parts: Vec<(&str, Vec<&CaseResult>)> = vec![
            ("exact_term", mine.iter().copied().filter(|r| !tags_of(r).is_empty()).collect()),
            ("other", mine.iter().copied().filter(|r| tags_of(r).is_empty()).collect()),
        ];
        for tag in Tag::ALL {
            parts.push((tag.as_str(), mine.iter().copied().filter(|r| tags_of(r).contains(&tag)).collect()));
        }
        for (slice, members) in parts.into_iter().filter(|(_, m)| !m.is_empty()) {
            slices.push(SliceRow {
                cell: cell.id.clone(),
                split,
                slice: slice.to_string(),
                cases: members.len(),
                means: means_of(&members),
            });
        }
    }
    (rows, slices)
}

/// Each case's question and exact terms, tagged against the corpus's document frequencies.
fn case_info(cases: &[GoldenCase], corpus: &Corpus) -> Vec<CaseInfo> {
    let rarity = Rarity::of(corpus.docs.iter().map(|d| d.text.as_str()));
    cases
        .par_iter()
        .map(|c| CaseInfo {
            case: c.id.clone(),
            question: c.question.clone(),
            split: c.split.unwrap_or(Split::Tuning),
            answerable: c.answerable,
            exact_terms: exact_terms::tag(&c.question, &rarity, &exact_terms::relevant_text(c, corpus)),
        })
        .collect()
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
