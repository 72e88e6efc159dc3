//! Builds what a [`Plan`] lists, each thing once: chunk sets, passage and query vectors,
//! token counts and indexes, from the on-disk stage cache when built before. Reports each
//! stage (time, size, reused or built) and what each cell's build cost (SPEC §8).

use std::sync::Arc;
use std::time::Instant;

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::catalog::{BuiltIndex, IndexInput};
use crate::engine::servers::{EngineSources, Engines};
use crate::error::{Error, Result};
use crate::input::corpus::Corpus;
use crate::input::golden::GoldenCase;
use crate::plan::{CellPlan, ChunkSetId, IndexId, ModelId, Plan};
use crate::results::{CellCost, StageReport};
use crate::retrieve::cell::{CellRetriever, Reranker};
use crate::retrieve::source::{RankingSource, Sliced};
use crate::stages::cache::{self, Cached, StageCache};
use crate::stages::chunk::ChunkSet;
use crate::stages::cost::Counter;
use crate::stages::embed::{self, EmbedStats, Embedding, ModelInfo, ModelKind, Role, VectorCache};
use crate::vocab::Prices;

/// Tokens the model sees for the texts at given indices (its prefix added, truncated).
pub fn token_counts<'a>(
    counter: &'a Counter,
    info: &'a ModelInfo,
    role: Role,
    texts: &'a [String],
) -> impl Fn(&[usize]) -> Result<Vec<u32>> + 'a {
    move |indices: &[usize]| counter.count(&indices.iter().map(|&i| info.prefixed(role, &texts[i])).collect::<Vec<_>>())
}

/// What build stages read.
pub struct BuildContext<'a, 'e> {
    pub corpus: &'a Corpus,
    pub cases: &'a [GoldenCase],
    pub models: &'a [ModelInfo],
    /// Loads (once) the embedder of a model.
    pub embedder: &'a (dyn Fn(ModelId) -> Result<&'e dyn Embedding> + Sync),
    pub store: &'a StageCache,
    pub cache_dir: &'a std::path::Path,
    /// The serving engines cells are served by: installed ones, or the experiment's own.
    pub engines: EngineSources<'a>,
    /// Makes a progress bar of a length and a name.
    pub bar: &'a dyn Fn(usize, &str) -> ProgressBar,
}

/// What one embedding job produced and cost.
pub struct Vectors {
    pub passages: Arc<Vec<f32>>,
    pub stats: EmbedStats,
    /// Passage tokens the model embedded (for cost), and what its truncation dropped.
    pub tokens: PassageTokens,
}

/// A chunk set's passages as one model reads them: the tokens it embeds (truncated at its
/// `max_length`), the tokens before truncation, and how many passages were truncated.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PassageTokens {
    pub passages: u64,
    pub embedded: u64,
    pub untruncated: u64,
    pub truncated_passages: u64,
}

impl PassageTokens {
    /// Share of passages longer than the model reads; `None` for a model that reads no tokens.
    pub fn truncated_share(&self) -> Option<f64> {
        (self.untruncated > 0).then(|| self.truncated_passages as f64 / self.passages.max(1) as f64)
    }

    /// Share of the passages' tokens the model never saw.
    pub fn dropped_share(&self) -> Option<f64> {
        (self.untruncated > 0).then(|| (self.untruncated - self.embedded) as f64 / self.untruncated as f64)
    }
}

/// One model's question vectors.
pub struct QueryVectors {
    /// Every case's vector, flat.
    pub vectors: Vec<f32>,
    pub dim: usize,
    /// Mean tokens of a question.
    pub mean_tokens: f64,
}

/// A cell's question vectors: per case, its models' vectors concatenated in the plan's order
/// (borrowed when the cell has one model; empty when it has none).
pub struct CellQueries<'a> {
    dim: usize,
    vectors: std::borrow::Cow<'a, [f32]>,
}

impl CellQueries<'_> {
    pub fn vector(&self, case: usize) -> &[f32] {
        &self.vectors[case * self.dim..(case + 1) * self.dim]
    }
}

/// Every built stage of a plan.
pub struct Built {
    pub sets: Vec<ChunkSet>,
    /// Per chunk set: the content key of the texts it indexes.
    text_keys: Vec<[u8; 32]>,
    pub vectors: Vec<Vectors>,
    /// Per model: every case's query vector.
    pub queries: Vec<QueryVectors>,
    /// Per index: the index, and what building it cost (when built before, its recorded cost).
    pub indexes: Vec<(BuiltIndex, f64)>,
    /// The serving engines cells are served by; stopped when the build is dropped.
    pub engines: Engines,
}

impl Built {
    pub fn set(&self, id: ChunkSetId) -> &ChunkSet {
        &self.sets[id.0]
    }

    pub fn built_index(&self, id: IndexId) -> &BuiltIndex {
        &self.indexes[id.0].0
    }

    /// A cell's question vectors.
    pub fn cell_queries(&self, cell: &CellPlan) -> CellQueries<'_> {
        match &cell.models[..] {
            [] => CellQueries { dim: 0, vectors: std::borrow::Cow::Borrowed(&[]) },
            [m] => {
                let q = &self.queries[m.0];
                CellQueries { dim: q.dim, vectors: std::borrow::Cow::Borrowed(&q.vectors) }
            }
            several => {
                let parts: Vec<&QueryVectors> = several.iter().map(|m| &self.queries[m.0]).collect();
                let cases = parts[0].vectors.len() / parts[0].dim.max(1);
                let vectors = (0..cases)
                    .flat_map(|c| parts.iter().flat_map(move |q| &q.vectors[c * q.dim..(c + 1) * q.dim]))
                    .copied()
                    .collect();
                CellQueries { dim: parts.iter().map(|q| q.dim).sum(), vectors: std::borrow::Cow::Owned(vectors) }
            }
        }
    }

    /// The retriever a cell searches with; with several models, each source reads its own
    /// model's part of the cell's question vector.
    pub fn retriever(&self, cell: &CellPlan) -> CellRetriever<'_> {
        let source = |s: &crate::plan::SourcePlan| -> Arc<dyn RankingSource + '_> {
            let built = s.kind.source(self.built_index(s.index), &self.engines);
            match s.model.filter(|_| cell.models.len() > 1) {
                Some(model) => {
                    let before = cell.models.iter().take_while(|&&m| m != model);
                    let start: usize = before.map(|m| self.queries[m.0].dim).sum();
                    Arc::new(Sliced { inner: built, at: start..start + self.queries[model.0].dim })
                }
                None => built,
            }
        };
        CellRetriever {
            sources: cell.retriever.sources.iter().map(source).collect(),
            names: cell.retriever.sources.iter().map(|s| s.kind.label()).collect(),
            fusion: cell.retriever.fusion.clone(),
            rerank: cell
                .retriever
                .rerank
                .iter()
                .map(|(s, n)| Reranker { source: source(s), candidates: *n, name: s.kind.label() })
                .collect(),
        }
    }

    /// What building a cell's stages cost; shared work is named by the experiment.
    pub fn cost(
        &self,
        plan: &Plan,
        planned: &CellPlan,
        shared: (Option<String>, Option<String>),
        prices: &Prices,
        models: &[crate::stages::embed::ModelInfo],
    ) -> CellCost {
        let mut cost = CellCost { chunks: self.set(planned.chunks).len(), ..Default::default() };
        for source in planned.retriever.all_sources() {
            let (index, seconds) = &self.indexes[source.index.0];
            cost.index_s += seconds;
            cost.index_bytes += index.bytes;
        }
        // Several models: their work adds up; truncation is the worst model's.
        let worst = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        for &embedding in &planned.embeddings {
            let v = &self.vectors[embedding.0];
            cost.tokens_embedded += v.tokens.embedded;
            cost.truncated_chunks = worst(cost.truncated_chunks, v.tokens.truncated_share());
            cost.truncated_tokens = worst(cost.truncated_tokens, v.tokens.dropped_share());
            cost.embed_s += v.stats.seconds;
            cost.reused_texts += v.stats.reused;
            let model = plan.embedding(embedding).model.0;
            let query_tokens = self.queries[model].mean_tokens;
            cost.query_tokens += query_tokens;
            // A model that declares its own price is priced by it, others by `[cost]`.
            let price =
                models.get(model).and_then(|m| m.usd_per_1m_tokens).unwrap_or(prices.embedding_usd_per_1m_tokens);
            cost.usd_index += crate::stages::cost::usd(v.tokens.embedded as f64, price);
            cost.usd_per_query += crate::stages::cost::usd(query_tokens, price);
        }
        (cost.shared_embeddings, cost.shared_index) = shared;
        cost
    }
}

/// Builds every stage of `plan`, appending a report per stage to `stages`.
pub fn build(plan: &Plan, ctx: &BuildContext<'_, '_>, stages: &mut Vec<StageReport>) -> Result<Built> {
    // The engine first: a server that cannot start stops the run before any work.
    let engines = engine_stage(plan, ctx, stages)?;
    let (sets, text_keys) = chunk_stage(plan, ctx, stages)?;
    let mut built = Built { sets, text_keys, vectors: Vec::new(), queries: Vec::new(), indexes: Vec::new(), engines };
    embed_stage(plan, ctx, &mut built, stages)?;
    index_stage(plan, ctx, &mut built, stages)?;
    let (repairs, seconds) = ctx.store.checks();
    report_checks(stages, "checksums of the stage entries read", repairs, seconds);
    Ok(built)
}

/// A `verify` report with the seconds checks took, and a `repair` report per entry rebuilt.
fn report_checks(stages: &mut Vec<StageReport>, what: &str, repairs: Vec<String>, seconds: f64) {
    stages.push(StageReport::new("verify", what.into(), seconds));
    stages.extend(repairs.into_iter().map(|why| StageReport::new("repair", why, 0.0)));
}

/// The plan's chunk sets alone (from the cache when built before): what scoring reads.
pub fn chunk_sets(plan: &Plan, ctx: &BuildContext<'_, '_>, stages: &mut Vec<StageReport>) -> Result<Vec<ChunkSet>> {
    Ok(chunk_stage(plan, ctx, stages)?.0)
}

/// A chunk larger than this is far more than a prompt holds: the chunker did not split where it
/// was meant to.
pub const LARGE_CHUNK_BYTES: usize = 32 << 10;

/// The documents a splitting chunker left in chunks over [`LARGE_CHUNK_BYTES`], largest first,
/// in words (`none` keeps whole documents on purpose: nothing to say).
fn oversized(set: &ChunkSet, corpus: &crate::input::corpus::Corpus) -> Option<String> {
    if set.spec.kind.keeps_whole_documents() {
        return None;
    }
    let mut largest: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for c in &set.chunks {
        let bytes = (c.end - c.start) as usize;
        if bytes > LARGE_CHUNK_BYTES {
            let size = largest.entry(corpus.docs[c.doc as usize].id.as_str()).or_insert(0);
            *size = (*size).max(bytes);
        }
    }
    if largest.is_empty() {
        return None;
    }
    let mut docs: Vec<(&str, usize)> = largest.into_iter().collect();
    docs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let listed: Vec<String> = docs.iter().take(5).map(|(d, b)| format!("{d} ({} KB)", b / 1024)).collect();
    Some(format!(
        "{} kept in chunks over {} KB: {}{}; no headings this chunker splits on, or sections far larger than a prompt (give it a size, e.g. markdown(2000), or use recursive)",
        crate::words::count(docs.len(), "document"),
        LARGE_CHUNK_BYTES / 1024,
        listed.join(", "),
        if docs.len() > 5 { format!(" and {} more", docs.len() - 5) } else { String::new() }
    ))
}

/// One chunk set per distinct chunker, and the content key of the texts each set indexes.
fn chunk_stage(
    plan: &Plan,
    ctx: &BuildContext<'_, '_>,
    stages: &mut Vec<StageReport>,
) -> Result<(Vec<ChunkSet>, Vec<[u8; 32]>)> {
    let corpus = ctx.corpus;
    let pb = (ctx.bar)(plan.chunkers.len(), "chunk");
    // The headings chunkers split on are part of what a chunk set is made from.
    let structure = corpus.structure_hash();
    let (store, engines) = (ctx.store, &ctx.engines);
    // Each set, the seconds it took, and what its reading found (a served index's rows placed
    // as whole documents, a brought file's overlaps and gaps).
    type Read = (Cached<ChunkSet>, Option<String>);
    let cached: Vec<(Read, f64)> = plan
        .chunkers
        .par_iter()
        .map(|spec| {
            let t = Instant::now();
            let fresh = |value: ChunkSet| Cached {
                value,
                build: cache::BuildRecord { seconds: t.elapsed().as_secs_f64() },
                reused: false,
            };
            // A served index's rows are read from its server every run: they are the team's
            // to change, not content this cache can key.
            let set = match spec.kind.served() {
                Some(rows) => {
                    let read = crate::engine::servers::served_rows(rows, engines)?;
                    let (value, whole) = ChunkSet::from_rows(corpus, spec, &read)?;
                    let note = (whole > 0).then(|| {
                        format!(
                            "{} with text not found in the document as the corpus reads it: counted as that whole document (unplaced = \"document\")",
                            crate::words::count(whole, "row")
                        )
                    });
                    (fresh(value), note)
                }
                // Placed every run (a file read and searched), so its note is said every run.
                None if spec.kind.brought().is_some() => {
                    let (value, note) = ChunkSet::from_brought(corpus, spec)?;
                    (fresh(value), note)
                }
                None => (
                    store.get_or_build(
                        "chunks",
                        &cache::key(
                            "chunks-v2",
                            &[corpus.hash.as_bytes(), structure.as_bytes(), format!("{spec:?}").as_bytes()],
                        ),
                        |dir| ChunkSet::build(corpus, spec).write(dir),
                        |dir| ChunkSet::open(dir, spec),
                    )?,
                    None,
                ),
            };
            pb.inc(1);
            Ok((set, t.elapsed().as_secs_f64()))
        })
        .collect::<Result<_>>()?;
    pb.finish_and_clear();
    let sets: Vec<ChunkSet> = cached
        .into_iter()
        .map(|((set, note), secs)| {
            let mut r = StageReport::new("chunk", set.value.spec.to_string(), secs);
            r.chunks = set.value.len();
            r.reused = set.reused;
            r.note = note.or_else(|| oversized(&set.value, corpus));
            stages.push(r);
            set.value
        })
        .collect();
    let text_keys = sets
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
    Ok((sets, text_keys))
}

/// Passage vectors once per (chunk set, model), query vectors once per model.
fn embed_stage(
    plan: &Plan,
    ctx: &BuildContext<'_, '_>,
    built: &mut Built,
    stages: &mut Vec<StageReport>,
) -> Result<()> {
    let corpus = ctx.corpus;
    let questions: Vec<String> = ctx.cases.iter().map(|c| c.question.clone()).collect();
    let mut passages: Vec<Option<Vectors>> = plan.embeddings.iter().map(|_| None).collect();
    // One model at a time, its cache closed before the next: a cache maps its whole segment
    // files, which would otherwise stay resident beside the vectors copied out of them.
    for (m, info) in ctx.models.iter().enumerate() {
        if info.kind == ModelKind::Vectors {
            brought_vectors(plan, ctx, built, m, &mut passages, stages)?;
            continue;
        }
        let mut cache = VectorCache::open(ctx.cache_dir, info)?;
        let what = format!("checksums and norms of the {} vector segments", info.id);
        report_checks(stages, &what, std::mem::take(&mut cache.repairs), cache.verify_seconds);
        let load = || (ctx.embedder)(ModelId(m));
        let counter = Counter::for_model(info)?;
        let counts = token_counts(&counter, info, Role::Query, &questions);
        let (vectors, stats) = embed::embed_all(&questions, Role::Query, &mut cache, &counts, &load, &|_, _| {})?;
        let tokens = count_prefixed(&counter, info, Role::Query, &questions)?;
        let mean_tokens = tokens as f64 / questions.len().max(1) as f64;
        let mut r = StageReport::new("embed", format!("{} queries", info.id), stats.seconds);
        r.embedding = Some(stats);
        stages.push(r);
        built.queries.push(QueryVectors { vectors, dim: info.dim, mean_tokens });
        for (e, job) in plan.jobs_of(m) {
            let set = &built.sets[job.chunks.0];
            let texts: Vec<String> = (0..set.len()).map(|i| set.indexed_text(corpus, i)).collect();
            let pb = (ctx.bar)(0, "embed");
            pb.set_message(format!("{} passages with {}", texts.len(), info.id));
            let counts = token_counts(&counter, info, Role::Passage, &texts);
            let (vectors, stats) = embed::embed_all(&texts, Role::Passage, &mut cache, &counts, &load, &|done, of| {
                pb.set_length(of as u64);
                pb.set_position(done as u64);
            })?;
            pb.finish_and_clear();
            passages[e] = Some(passage_vectors(ctx, built, info, job.chunks, &texts, vectors, stats, stages)?);
        }
    }
    built.vectors = passages.into_iter().map(|v| v.expect("every embedding job belongs to a model")).collect();
    Ok(())
}

/// One chunk set's vectors under one model, with the passages' tokens counted (for cost) and
/// both stages reported.
#[allow(clippy::too_many_arguments)]
fn passage_vectors(
    ctx: &BuildContext<'_, '_>,
    built: &Built,
    info: &ModelInfo,
    chunks: ChunkSetId,
    texts: &[String],
    vectors: Vec<f32>,
    stats: EmbedStats,
    stages: &mut Vec<StageReport>,
) -> Result<Vectors> {
    let set = &built.sets[chunks.0];
    let counting = Instant::now();
    let counted = ctx.store.get_or_build(
        "tokens",
        &cache::key("tokens-v2", &[info.key().as_bytes(), &built.text_keys[chunks.0]]),
        |dir| {
            let tokens = count_passages(info, texts)?;
            let path = dir.join("tokens.json");
            std::fs::write(&path, serde_json::to_vec(&tokens).expect("json")).map_err(|e| Error::io(&path, e))
        },
        |dir| crate::input::text::json::<PassageTokens>(&dir.join("tokens.json"), "token counts"),
    )?;
    let mut r = StageReport::new(
        "count",
        format!("{} tokens of {} passages", info.id, set.spec),
        counting.elapsed().as_secs_f64(),
    );
    r.reused = counted.reused;
    stages.push(r);
    // What an endpoint billed for the whole set, kept beside the counts once a pass embedded
    // every text with usage reported, so that a run from the cache prices the set the same.
    let billed = matches!(info.kind, crate::stages::embed::ModelKind::Http(_)).then(|| {
        let key = cache::key("usage-v1", &[info.key().as_bytes(), &built.text_keys[chunks.0]]);
        let open = |dir: &std::path::Path| crate::input::text::json::<u64>(&dir.join("usage.json"), "billed tokens");
        match stats.usage_tokens {
            Some(tokens) => ctx
                .store
                .get_or_build(
                    "usage",
                    &key,
                    |dir| {
                        let path = dir.join("usage.json");
                        std::fs::write(&path, tokens.to_string()).map_err(|e| Error::io(&path, e))
                    },
                    open,
                )
                .map(|c| Some(c.value)),
            None => ctx.store.get("usage", &key, open),
        }
    });
    let mut r = StageReport::new("embed", format!("{} passages: {}", info.id, set.spec), stats.seconds);
    r.chunks = set.len();
    r.embedding = Some(stats.clone());
    let mut tokens = counted.value;
    match billed.transpose()? {
        Some(Some(usage)) => tokens.embedded = usage,
        Some(None) => {
            r.note = Some(format!(
                "{}: the endpoint's usage does not cover every passage (a pass from the cache, or an answer without usage): tokens_embedded and usd_index count with its tokenizer",
                info.id
            ))
        }
        None => {}
    }
    stages.push(r);
    Ok(Vectors { passages: Arc::new(vectors), stats, tokens })
}

/// A vectors model's query and passage vectors, read from its folder for the questions and
/// every chunk set it is paired with (each id checked both ways), embedding nothing.
fn brought_vectors(
    plan: &Plan,
    ctx: &BuildContext<'_, '_>,
    built: &mut Built,
    m: usize,
    passages: &mut [Option<Vectors>],
    stages: &mut Vec<StageReport>,
) -> Result<()> {
    let info = &ctx.models[m];
    let started = Instant::now();
    let jobs: Vec<(usize, ChunkSetId)> = plan.jobs_of(m).map(|(e, job)| (e, job.chunks)).collect();
    let sets: Vec<&ChunkSet> = jobs.iter().map(|(_, c)| &built.sets[c.0]).collect();
    let brought = crate::stages::brought::resolve(&info.dir, info.dim, ctx.corpus, ctx.cases, &sets)?;
    let read = |texts: usize| EmbedStats {
        texts,
        reused: texts,
        seconds: started.elapsed().as_secs_f64(),
        ..Default::default()
    };
    let mut r = StageReport::new("embed", format!("{} queries (vectors made elsewhere)", info.id), 0.0);
    r.embedding = Some(read(ctx.cases.len()));
    stages.push(r);
    let counter = Counter::for_model(info)?;
    let questions: Vec<String> = ctx.cases.iter().map(|c| c.question.clone()).collect();
    let tokens = count_prefixed(&counter, info, Role::Query, &questions)?;
    built.queries.push(QueryVectors {
        vectors: brought.queries,
        dim: info.dim,
        mean_tokens: tokens as f64 / questions.len().max(1) as f64,
    });
    for ((e, chunks), vectors) in jobs.into_iter().zip(brought.passages) {
        let set = &built.sets[chunks.0];
        let texts: Vec<String> = (0..set.len()).map(|i| set.indexed_text(ctx.corpus, i)).collect();
        let stats = read(texts.len());
        passages[e] = Some(passage_vectors(ctx, built, info, chunks, &texts, vectors, stats, stages)?);
    }
    Ok(())
}

/// The passages' tokens as the model reads them (prefix added): untruncated, and cut at its
/// `max_length`, counted a block at a time so that no second copy of every text is held.
fn count_passages(info: &ModelInfo, texts: &[String]) -> Result<PassageTokens> {
    let counter = Counter::for_model(info)?.untruncated()?;
    let count = token_counts(&counter, info, Role::Passage, texts);
    let indices: Vec<usize> = (0..texts.len()).collect();
    let mut out = PassageTokens { passages: texts.len() as u64, ..Default::default() };
    let limit = if info.max_length == 0 { u64::MAX } else { info.max_length as u64 };
    for block in indices.chunks(4096) {
        for n in count(block)? {
            let n = u64::from(n);
            out.untruncated += n;
            out.embedded += n.min(limit);
            out.truncated_passages += u64::from(n > limit);
        }
    }
    if info.max_length == 0 {
        out.untruncated = 0;
    }
    Ok(out)
}

/// Tokens of all `texts` as the model sees them (prefix added), counted a block at a time
/// so that no second copy of every text is held.
fn count_prefixed(counter: &Counter, info: &ModelInfo, role: Role, texts: &[String]) -> Result<u64> {
    let count = token_counts(counter, info, role, texts);
    let indices: Vec<usize> = (0..texts.len()).collect();
    let mut total = 0u64;
    for block in indices.chunks(4096) {
        total += count(block)?.iter().map(|&n| u64::from(n)).sum::<u64>();
    }
    Ok(total)
}

/// The serving engines cells are served by: our servers started (their data in the stage
/// cache), or the experiment's own servers connected.
fn engine_stage(plan: &Plan, ctx: &BuildContext<'_, '_>, stages: &mut Vec<StageReport>) -> Result<Engines> {
    Engines::start(&plan.engines(), &plan.engines_written(), &ctx.engines, &mut |seconds, what, note| {
        let mut r = StageReport::new("engine", what.into(), seconds);
        if let Some(note) = note {
            r.key = format!("{}; {note}", r.key);
        }
        stages.push(r);
    })
}

/// The index `spec` over `set`, built by its kind from the chunks' texts, ACLs and documents,
/// its model and passage `vectors`, and the content `keys` of the texts and ACLs.
fn build_index(
    spec: &crate::plan::IndexSpec,
    set: &ChunkSet,
    (corpus, store, models): (&Corpus, &StageCache, &[ModelInfo]),
    vectors: Option<(&ModelInfo, &Arc<Vec<f32>>)>,
    keys: (&[u8; 32], &[u8; 32]),
    engines: &Engines,
) -> Result<BuiltIndex> {
    let doc = |i: usize| &corpus.docs[set.chunks[i].doc as usize];
    let text = |i: usize| set.indexed_text(corpus, i);
    let acl = |i: usize| doc(i).acl.as_deref();
    let doc_id = |i: usize| doc(i).id.as_str();
    let spans_document = |i: usize| set.chunks[i].start == 0 && set.chunks[i].end as usize == doc(i).text.len();
    let input = IndexInput {
        store,
        chunks: set.len(),
        text: &text,
        text_key: keys.0,
        acl: &acl,
        acl_key: keys.1,
        doc_id: &doc_id,
        spans_document: &spans_document,
        model: spec.kind.model().and_then(|m| models.iter().find(|info| info.id == m)),
        vectors,
        engines,
    };
    spec.kind.build(&input)
}

/// For `validate`: each index the team serves, opened as a run opens it over its chunk set in
/// `sets` (its fields, dimension and index read; nothing written), in a line.
pub fn open_served(plan: &Plan, ctx: &BuildContext<'_, '_>, sets: &[ChunkSet]) -> Result<Vec<String>> {
    let served: Vec<&crate::plan::IndexSpec> = plan.indexes.iter().filter(|i| i.kind.reads_only()).collect();
    if served.is_empty() {
        return Ok(Vec::new());
    }
    let kinds = served.iter().filter_map(|i| i.engine()).collect();
    let engines = Engines::start(&kinds, &Default::default(), &ctx.engines, &mut |_, _, _| {})?;
    served
        .iter()
        .map(|spec| {
            let set = &sets[spec.chunks.0];
            let parts = (ctx.corpus, ctx.store, ctx.models);
            let index = build_index(spec, set, parts, None, (&[0; 32], &[0; 32]), &engines)?;
            let described = spec.kind.describe(&index).map(|d| format!("; {d}")).unwrap_or_default();
            Ok(format!(
                "{}: {} placed in their documents{described}",
                spec.kind.index_name(),
                crate::words::count(set.len(), "chunk")
            ))
        })
        .collect()
}

/// Every planned index, each built by its kind (from the stage cache when its content was
/// built before).
fn index_stage(
    plan: &Plan,
    ctx: &BuildContext<'_, '_>,
    built: &mut Built,
    stages: &mut Vec<StageReport>,
) -> Result<()> {
    let (corpus, store, models) = (ctx.corpus, ctx.store, ctx.models);
    let pb = (ctx.bar)(plan.indexes.len(), "index");
    // Per chunk set: the content key of the chunks' ACLs, which engine tables and collections
    // store (no engine: nothing reads it).
    let acl_keys: Vec<[u8; 32]> = built
        .sets
        .iter()
        .map(|set| {
            if !built.engines.any() {
                return [0; 32];
            }
            let mut h = blake3::Hasher::new();
            for c in &set.chunks {
                let groups = corpus.docs[c.doc as usize].acl.as_deref();
                h.update(&[u8::from(groups.is_some())]);
                for g in groups.iter().flat_map(|g| g.iter()) {
                    h.update(&(g.len() as u64).to_le_bytes());
                    h.update(g.as_bytes());
                }
                h.update(&[0xff]);
            }
            *h.finalize().as_bytes()
        })
        .collect();
    let indexes: Vec<(BuiltIndex, f64)> = plan
        .indexes
        .par_iter()
        .map(|spec| {
            let t = Instant::now();
            let vectors = spec.embedding.map(|e| {
                let job = plan.embedding(e);
                (&models[job.model.0], &built.vectors[e.0].passages)
            });
            let keys = (&built.text_keys[spec.chunks.0], &acl_keys[spec.chunks.0]);
            let parts = (corpus, store, models);
            let index = build_index(spec, &built.sets[spec.chunks.0], parts, vectors, keys, &built.engines)?;
            pb.inc(1);
            Ok((index, t.elapsed().as_secs_f64()))
        })
        .collect::<Result<_>>()?;
    pb.finish_and_clear();
    for (i, (index, secs)) in indexes.into_iter().enumerate() {
        let spec = &plan.indexes[i];
        let mut r =
            StageReport::new("index", format!("{} on {}", spec.kind.index_name(), plan.chunkers[spec.chunks.0]), secs);
        r.chunks = built.sets[spec.chunks.0].len();
        r.bytes = index.bytes;
        r.reused = index.record.as_ref().is_some_and(|c| c.reused);
        r.builds_nothing = spec.kind.builds_nothing();
        r.note = spec.kind.describe(&index);
        stages.push(r);
        // A cached index costs what building it cost when it was built.
        let cost = index.record.as_ref().map_or(secs, |c| c.build.seconds);
        built.indexes.push((index, cost));
    }
    Ok(())
}
