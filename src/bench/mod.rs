//! The benchmark harnesses behind `ragsweep bench-ann`, `bench-filter` and `vectors`: the
//! in-process dense index timed on given or embedded vectors, and beside a serving engine on
//! the same vectors and access ([`parity`]). They measure; the library's results never depend
//! on them.

pub(crate) mod parity;

use std::path::{Path, PathBuf};

use crate::error::{Error, Location, Result};
use crate::experiment::Experiment;

/// The passage and query vectors of an experiment's first dense cell (of `model`'s cells, when
/// given), embedding what the cache lacks, with the cell's HNSW parameters (the defaults for an
/// exact cell).
pub struct DenseVectors {
    pub dim: usize,
    pub passages: Vec<f32>,
    pub queries: Vec<f32>,
    /// Each passage vector's chunk id and each query vector's question id, in order.
    pub passage_ids: Vec<String>,
    pub query_ids: Vec<String>,
    /// The cell's HNSW `(m, ef_construction, ef_search)`.
    pub hnsw: (usize, usize, usize),
}

pub fn dense_vectors(
    experiment: &Path,
    queries: usize,
    models: &Path,
    cache: &Path,
    model: Option<&str>,
) -> Result<DenseVectors> {
    use crate::stages::embed::{embed_all, find_model, LazyEmbedder, ModelKind, Role, VectorCache};

    let mut exp = Experiment::load(experiment)?;
    if let Some(name) = model {
        // Only that model's cells are prepared: the grid's other models need not be installed.
        exp.cells.retain(|c| c.retriever.composition().sources.iter().any(|s| s.model() == Some(name)));
        if exp.cells.is_empty() {
            return Err(Error::input(Location::file(experiment), format!("no dense cell embeds with {name:?}")));
        }
    }
    let prepared = crate::runner::prepare(&exp, models)?;
    let (cell, source) = exp
        .cells
        .iter()
        .find_map(|c| {
            let composition = c.retriever.composition();
            let [source] = <[_; 1]>::try_from(composition.sources).ok()?;
            source.model().is_some().then_some((c, source))
        })
        .ok_or_else(|| Error::input(Location::file(experiment), "bench-filter and vectors need a dense retriever"))?;
    let model = source.model().expect("a dense source");
    let hnsw = source.graph().unwrap_or(crate::catalog::hnsw::DEFAULTS);
    let info = find_model(models, model)?;
    let set = crate::stages::chunk::ChunkSet::made(&prepared.corpus, &cell.chunker)?;
    let cases = &prepared.cases[..queries.min(prepared.cases.len())];
    let passage_ids = set.chunks.iter().map(|c| c.id.clone()).collect();
    let query_ids = cases.iter().map(|c| c.id.clone()).collect();
    if info.kind == ModelKind::Vectors {
        let brought = crate::stages::brought::resolve(&info.dir, info.dim, &prepared.corpus, &prepared.cases, &[&set])?;
        let queries = brought.queries[..cases.len() * info.dim].to_vec();
        let passages = brought.passages.into_iter().next().expect("one chunk set");
        return Ok(DenseVectors { dim: info.dim, passages, queries, passage_ids, query_ids, hnsw });
    }
    let mut cache = VectorCache::open(cache, &info)?;
    let embedder = LazyEmbedder::new(models, &info, rayon::current_num_threads());
    let load = || -> Result<&dyn crate::stages::embed::Embedding> { Ok(embedder.get()?) };
    let texts: Vec<String> = (0..set.len()).map(|i| set.indexed_text(&prepared.corpus, i)).collect();
    let counter = crate::stages::cost::Counter::for_model(&info)?;
    let passage_counts = crate::build::token_counts(&counter, &info, Role::Passage, &texts);
    let (passages, stats) = embed_all(&texts, Role::Passage, &mut cache, &passage_counts, &load, &|_, _| {})?;
    let questions: Vec<String> = cases.iter().map(|c| c.question.clone()).collect();
    let query_counts = crate::build::token_counts(&counter, &info, Role::Query, &questions);
    let (queries, _) = embed_all(&questions, Role::Query, &mut cache, &query_counts, &load, &|_, _| {})?;
    eprintln!("{} chunks ({} embedded now), {} queries, {}", set.len(), stats.embedded, questions.len(), info.id);
    Ok(DenseVectors { dim: info.dim, passages, queries, passage_ids, query_ids, hnsw })
}

/// `bench-ann`: exact scan and HNSW on `passages` and `queries` (.npy, unit vectors): build
/// time, queries/s one query at a time, and HNSW recall@k against the scan at `ef_search` and
/// over a sweep of beams; one JSON line to `out`.
pub fn ann(
    passages: &Path,
    queries: &Path,
    m: usize,
    ef_construction: usize,
    ef_search: usize,
    k: usize,
    out: &mut dyn FnMut(&str),
) -> Result<()> {
    use crate::retrieve::{ExactIndex, HnswIndex, HnswParams};
    use std::time::Instant;

    let (vectors, dim) = crate::npy::read_f32(passages)?;
    let (qv, qdim) = crate::npy::read_f32(queries)?;
    if qdim != dim {
        return Err(Error::input(Location::file(queries), format!("{qdim} columns, {} has {dim}", passages.display())));
    }
    let unit = |v: &[f32]| (v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-3;
    if !vectors.chunks_exact(dim).chain(qv.chunks_exact(dim)).all(unit) {
        return Err(Error::input(
            Location::file(passages),
            "every vector (and every query's) must have unit length: scores are dot products",
        ));
    }
    let n = vectors.len() / dim;
    let exact = ExactIndex::new(dim, vectors);
    let t = Instant::now();
    let hnsw = HnswIndex::build(exact.clone(), HnswParams { m, ef_construction });
    let build_s = t.elapsed().as_secs_f64();
    let timed = |search: &dyn Fn(&[f32]) -> Vec<u32>| {
        let t = Instant::now();
        let lists: Vec<Vec<u32>> = qv.chunks_exact(dim).map(search).collect();
        (lists, qv.len() as f64 / dim as f64 / t.elapsed().as_secs_f64())
    };
    let (truth, exact_qps) = timed(&|q| exact.search(q, k, None).iter().map(|h| h.chunk).collect());
    let wanted: usize = truth.iter().map(Vec::len).sum();
    let at = |ef: usize| {
        let (found, qps) = timed(&|q| hnsw.search(q, k, ef, None).iter().map(|h| h.chunk).collect());
        let hits: usize = truth.iter().zip(&found).map(|(t, f)| f.iter().filter(|c| t.contains(c)).count()).sum();
        (qps, hits as f64 / wanted.max(1) as f64)
    };
    let (hnsw_qps, hnsw_recall) = at(ef_search);
    // Queries/s against recall over a range of beams, for recall-matched comparisons.
    let sweep: Vec<[f64; 3]> = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
        .into_iter()
        .filter(|&ef| ef >= k)
        .map(|ef| {
            let (qps, recall) = at(ef);
            [ef as f64, qps, recall]
        })
        .collect();
    out(&format!(
        "{}",
        serde_json::json!({
            "passages": n, "queries": truth.len(), "dim": dim, "k": k, "threads": rayon::current_num_threads(),
            "m": m, "ef_construction": ef_construction, "ef_search": ef_search,
            "hnsw_build_s": build_s, "exact_qps": exact_qps, "hnsw_qps": hnsw_qps,
            "hnsw_recall": hnsw_recall, "sweep": sweep,
        })
    ));
    Ok(())
}

/// The serving engine `bench-filter --engine` measures beside the in-process index.
pub struct BenchEngine {
    pub kind: crate::vocab::EngineKind,
    /// Where engines are installed.
    pub engines: PathBuf,
    /// The HNSW candidate list of the engine's search.
    pub ef_search: usize,
}

/// `bench-filter`: filtered vector search on an experiment's first dense cell at 1% to 90%
/// allowed — the filtered graph, the exact scan of the allowed vectors and the planner's
/// choice — and, with `engine`, the same beside PostgreSQL + pgvector, Milvus or Chroma ([`parity`]);
/// Markdown table lines to `out`.
pub fn filter(
    experiment: &Path,
    queries: usize,
    engine: Option<BenchEngine>,
    models: &Path,
    cache: &Path,
    out: &mut dyn FnMut(&str),
) -> Result<()> {
    use crate::results::percentile;
    use crate::retrieve::{Allowed, ExactIndex, FilteredSearch, HnswIndex, HnswParams};
    use std::time::Instant;

    let DenseVectors { dim, passages: vectors, queries: qv, hnsw: (m, efc, ef), .. } =
        dense_vectors(experiment, queries, models, cache, None)?;
    let n_chunks = vectors.len() / dim;
    let queries: Vec<&[f32]> = qv.chunks_exact(dim).collect();
    let n_queries = queries.len();
    let exact = ExactIndex::new(dim, vectors);
    let t = Instant::now();
    let hnsw = HnswIndex::build(exact.clone(), HnswParams { m, ef_construction: efc });
    eprintln!("hnsw m={m} ef_construction={efc} built in {:.1}s; ef_search={ef}, k=10", t.elapsed().as_secs_f64());
    out("| allowed | strategy | mean µs | p50 µs | p95 µs | recall@10 vs exact |");
    out("|---:|---|---:|---:|---:|---:|");
    {
        let mut micros: Vec<f64> = (0..n_queries)
            .map(|q| {
                let v = queries[q];
                let t = Instant::now();
                std::hint::black_box(hnsw.search(v, 10, ef, None));
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        micros.sort_by(f64::total_cmp);
        let mean = micros.iter().sum::<f64>() / micros.len() as f64;
        out(&format!(
            "| 100% | graph, no filter | {mean:.0} | {:.0} | {:.0} | – |",
            percentile(&micros, 0.5),
            percentile(&micros, 0.95)
        ));
    }
    for fraction in [0.01, 0.05, 0.10, 0.20, 0.30, 0.50, 0.90] {
        let allowed: Vec<Allowed> = (0..n_queries)
            .map(|q| {
                Allowed::from_fn(n_chunks, |i| {
                    let h = blake3::hash(&[(q as u64).to_le_bytes(), (i as u64).to_le_bytes()].concat());
                    (u64::from_le_bytes(h.as_bytes()[..8].try_into().unwrap()) as f64 / u64::MAX as f64) < fraction
                })
            })
            .collect();
        let truth: Vec<Vec<u32>> = (0..n_queries)
            .map(|q| {
                let v = queries[q];
                exact.search(v, 10, Some(&allowed[q])).iter().map(|h| h.chunk).collect()
            })
            .collect();
        for (name, strategy) in
            [("graph", FilteredSearch::Graph), ("scan", FilteredSearch::Scan), ("auto", FilteredSearch::Auto)]
        {
            let mut micros = Vec::with_capacity(n_queries);
            let mut found = 0usize;
            for q in 0..n_queries {
                let v = queries[q];
                let t = Instant::now();
                let hits = hnsw.search_with(v, 10, ef, Some(&allowed[q]), strategy);
                micros.push(t.elapsed().as_secs_f64() * 1e6);
                found += hits.iter().filter(|h| truth[q].contains(&h.chunk)).count();
            }
            micros.sort_by(f64::total_cmp);
            let mean = micros.iter().sum::<f64>() / micros.len() as f64;
            let wanted: usize = truth.iter().map(Vec::len).sum();
            out(&format!(
                "| {:.0}% | {name} | {mean:.0} | {:.0} | {:.0} | {:.4} |",
                fraction * 100.0,
                percentile(&micros, 0.5),
                percentile(&micros, 0.95),
                found as f64 / wanted.max(1) as f64
            ));
        }
    }
    if let Some(engine) = engine {
        let fractions = [0.01, 0.10, 0.50, 0.90];
        let ef_search = engine.ef_search;
        let mut rows = parity::measure_in_process(&hnsw, &exact, &queries, 10, ef_search, &fractions);
        let started = std::time::Instant::now();
        let sources =
            crate::engine::servers::EngineSources { engines_dir: &engine.engines, cache_dir: cache, servers: &[] };
        let started_engines = crate::engine::servers::Engines::start(
            &[engine.kind].into(),
            &[engine.kind].into(),
            &sources,
            &mut |_, _, _| {},
        )?;
        let groups = parity::tenant_groups(&exact);
        let acl = |i: usize| Some(&groups[i][..]);
        let name = |kind: &str, build: &dyn std::fmt::Debug| parity::content_name(kind, &exact, build);
        let input = crate::engine::registry::FilterBenchInput {
            exact: &exact,
            acl: &acl,
            m,
            ef_construction: efc,
            ef_search,
            name: &name,
        };
        let bench = started_engines.of(engine.kind).filter_bench(input)?;
        let ready = started.elapsed().as_secs_f64() - bench.build_seconds();
        eprintln!("\nserver ready in {ready:.1}s; {}", bench.loaded());
        rows.extend(parity::measure(&bench.settings(), &exact, &queries, 10, &fractions)?);
        rows.sort_by(|a, b| a.fraction.total_cmp(&b.fraction));
        out(&format!(
            "\nFilter parity: each chunk in one of {} groups, the user in the first f of them; the engine's filtered search for the top 10 (`WHERE acl && groups ORDER BY distance LIMIT 10`, Milvus's `array_contains_any`, or Chroma's `where`) against the exact filtered top 10 of the same vectors.\n",
            parity::TENANTS
        ));
        out("| allowed | search | mean µs | p50 µs | p95 µs | rows (of 10) | under_return@10 | recall_vs_oracle@10 |");
        out("|---:|---|---:|---:|---:|---:|---:|---:|");
        for r in &rows {
            out(&format!(
                "| {:.0}% | {} | {:.0} | {:.0} | {:.0} | {:.2} | {} of {} | {:.4} |",
                r.fraction * 100.0,
                r.setting,
                r.mean_us,
                r.p50_us,
                r.p95_us,
                r.rows,
                r.under_return,
                r.queries,
                r.recall_vs_oracle
            ));
        }
    }
    Ok(())
}
