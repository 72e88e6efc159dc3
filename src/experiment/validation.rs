//! Each grid combination checked and read into its typed spec: chunkers, and retrievers of each
//! kind and engine (in process, PostgreSQL + pgvector, Milvus), every error located at the key
//! that caused it.

use std::ops::Range;

use toml::Value;

use crate::analyze::AnalyzerKind;
use crate::error::{Error, Result};
use crate::vocab::EngineKind;
use crate::vocab::{Bm25Params, ChunkerKind, ChunkerSpec, Fusion, Norm};
use crate::vocab::{
    DenseIndex, DenseSpec, IterativeScan, LexicalSpec, MilvusIndex, PgVectorIndex, RetrieverSpec, Terms,
};

use super::expansion::{boolean, choice, float, forbid, int, only, Combo};
use super::{Abstain, HNSW_DEFAULTS, HYBRID_CANDIDATES};

pub(super) fn chunker_from(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<ChunkerSpec> {
    let sized = |size_key: &str| -> Result<(usize, usize)> {
        only(combo, &[size_key, "overlap", "title", "headings"], bad)?;
        let size = int(combo, size_key, None, bad)?;
        let overlap = int(combo, "overlap", Some(0), bad)?;
        if size == 0 {
            return Err(bad(combo.get(size_key).unwrap().1, format!("`{size_key}` must be at least 1")));
        }
        Ok((size, overlap))
    };
    let kind = match combo.kind.0 {
        "none" => {
            only(combo, &["title", "headings"], bad)?;
            ChunkerKind::None
        }
        "fixed" => {
            let (size, overlap) = sized("size")?;
            if overlap >= size {
                return Err(bad(combo.get("overlap").unwrap().1, "`overlap` must be smaller than `size`".into()));
            }
            ChunkerKind::Fixed { size, overlap }
        }
        "sentence" => {
            let (max_chars, overlap) = sized("max_chars")?;
            ChunkerKind::Sentence { max_chars, overlap }
        }
        "recursive" => {
            let (size, overlap) = sized("size")?;
            if overlap >= size {
                return Err(bad(combo.get("overlap").unwrap().1, "`overlap` must be smaller than `size`".into()));
            }
            ChunkerKind::Recursive { size, overlap }
        }
        "markdown" => {
            only(combo, &["max_chars", "title", "headings"], bad)?;
            let max_chars = combo.get("max_chars").map(|_| int(combo, "max_chars", None, bad)).transpose()?;
            if max_chars == Some(0) {
                return Err(bad(combo.get("max_chars").unwrap().1, "`max_chars` must be at least 1".into()));
            }
            ChunkerKind::Markdown { max_chars }
        }
        other => {
            return Err(bad(
                combo.kind.1.clone(),
                format!("unknown chunker kind {other:?} (expected none, fixed, sentence, recursive, markdown)"),
            ))
        }
    };
    Ok(ChunkerSpec { kind, title: boolean(combo, "title", bad)?, headings: boolean(combo, "headings", bad)? })
}

const LEXICAL_KEYS: [&str; 3] = ["analyzer", "k1", "b"];
const FULL_TEXT_KEYS: [&str; 2] = ["analyzer", "terms"];
const DENSE_KEYS: [&str; 9] =
    ["model", "index", "m", "ef_construction", "ef_search", "lists", "probes", "iterative_scan", "force_index"];

fn analyzer_from(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<AnalyzerKind> {
    choice(
        combo,
        "analyzer",
        AnalyzerKind::En,
        &[("en", AnalyzerKind::En), ("pt", AnalyzerKind::Pt), ("simple", AnalyzerKind::Simple)],
        bad,
    )
}

/// What serves a retriever: a serving engine, or ragsweep in process (`None`, the default).
fn engine_of(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<Option<EngineKind>> {
    choice(
        combo,
        "engine",
        None,
        &[("in_process", None), ("pg", Some(EngineKind::Pg)), ("milvus", Some(EngineKind::Milvus))],
        bad,
    )
}

fn full_text_from(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<LexicalSpec> {
    let terms = choice(combo, "terms", Terms::Any, &[("any", Terms::Any), ("all", Terms::All)], bad)?;
    Ok(LexicalSpec { analyzer: analyzer_from(combo, bad)?, params: Bm25Params::default(), full_text: Some(terms) })
}

fn lexical_from(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<LexicalSpec> {
    let analyzer = analyzer_from(combo, bad)?;
    let k1 = float(combo, "k1", 0.9, bad)?;
    let b = float(combo, "b", 0.4, bad)?;
    if k1 < 0.0 {
        return Err(bad(combo.get("k1").unwrap().1, "`k1` must be non-negative".into()));
    }
    if !(0.0..=1.0).contains(&b) {
        return Err(bad(combo.get("b").unwrap().1, "`b` must be between 0 and 1".into()));
    }
    Ok(LexicalSpec { analyzer, params: Bm25Params { k1: k1 as f32, b: b as f32 }, full_text: None })
}

fn dense_from(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<DenseSpec> {
    let model = match combo.get("model") {
        Some((Value::String(s), _)) => s.clone(),
        Some((v, span)) => return Err(bad(span, format!("`model` must be a string, found {}", v.type_str()))),
        None => {
            return Err(bad(
                combo.kind.1.clone(),
                format!("kind {:?} needs `model` (e.g. \"minilm-l6\")", combo.kind.0),
            ))
        }
    };
    match engine_of(combo, bad)? {
        Some(EngineKind::Pg) => return Ok(DenseSpec { model, index: pg_dense_from(combo, bad)? }),
        Some(EngineKind::Milvus) => return Ok(DenseSpec { model, index: milvus_dense_from(combo, bad)? }),
        None => {}
    }
    forbid(combo, &["lists", "probes", "iterative_scan", "force_index"], PGVECTOR_ONLY, bad)?;
    let index_span = combo.get("index").map(|i| i.1);
    let hnsw = choice(combo, "index", false, &[("exact", false), ("hnsw", true), ("ivfflat", false)], bad)?;
    if matches!(combo.get("index"), Some((Value::String(s), _)) if s == "ivfflat") {
        return Err(bad(
            index_span.expect("index given"),
            "index = \"ivfflat\" is served by PostgreSQL + pgvector: add engine = \"pg\"".into(),
        ));
    }
    let index = if !hnsw {
        forbid(combo, &HNSW_KEYS, "only applies to index = \"hnsw\"", bad)?;
        DenseIndex::Exact
    } else {
        let (m, efc, ef) = HNSW_DEFAULTS;
        let m = int(combo, "m", Some(m), bad)?;
        if !(2..=255).contains(&m) {
            return Err(bad(combo.span_of("m"), "`m` must be between 2 and 255".into()));
        }
        DenseIndex::Hnsw {
            m,
            ef_construction: int(combo, "ef_construction", Some(efc), bad)?,
            ef_search: int(combo, "ef_search", Some(ef), bad)?,
        }
    };
    Ok(DenseSpec { model, index })
}

/// pgvector's HNSW `m`, `ef_construction` and `ef_search` (hnswlib's defaults when absent),
/// within the ranges pgvector accepts.
fn pg_hnsw_params(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<(usize, usize, usize)> {
    let (m, efc, ef) = hnsw_params(combo, bad)?;
    let at = |key: &str| combo.span_of(key);
    if !(2..=100).contains(&m) {
        return Err(bad(at("m"), "pgvector's `m` must be between 2 and 100".into()));
    }
    if !(4..=1000).contains(&efc) || efc < 2 * m {
        return Err(bad(
            at("ef_construction"),
            "pgvector's `ef_construction` must be between 4 and 1000, and at least 2·m".into(),
        ));
    }
    if !(1..=1000).contains(&ef) {
        return Err(bad(at("ef_search"), "pgvector's `ef_search` must be between 1 and 1000".into()));
    }
    Ok((m, efc, ef))
}

/// The keys of an HNSW index, and the message of a pgvector key outside engine = "pg".
const HNSW_KEYS: [&str; 3] = ["m", "ef_construction", "ef_search"];
const PGVECTOR_ONLY: &str = "is a pgvector setting: it needs engine = \"pg\"";

/// An HNSW index's `m`, `ef_construction` and `ef_search`, hnswlib's defaults when absent; each
/// engine checks its own ranges.
fn hnsw_params(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<(usize, usize, usize)> {
    let (m, efc, ef) = HNSW_DEFAULTS;
    Ok((
        int(combo, "m", Some(m), bad)?,
        int(combo, "ef_construction", Some(efc), bad)?,
        int(combo, "ef_search", Some(ef), bad)?,
    ))
}

/// A Milvus index and its search parameter: `flat` (the default), `hnsw` (`m`,
/// `ef_construction`, `ef_search` as Milvus accepts them) or `ivf_flat` (`lists`, `probes`).
fn milvus_dense_from(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<DenseIndex> {
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Flat,
        Hnsw,
        IvfFlat,
    }
    let kind = choice(
        combo,
        "index",
        Kind::Flat,
        &[("flat", Kind::Flat), ("hnsw", Kind::Hnsw), ("ivf_flat", Kind::IvfFlat)],
        bad,
    )?;
    let forbid = |keys: &[&str], why: &str| forbid(combo, keys, why, bad);
    forbid(&["iterative_scan", "force_index"], PGVECTOR_ONLY)?;
    let index = match kind {
        Kind::Flat => {
            forbid(&HNSW_KEYS, "only applies to index = \"hnsw\"")?;
            forbid(&["lists", "probes"], "only applies to index = \"ivf_flat\"")?;
            MilvusIndex::Flat
        }
        Kind::Hnsw => {
            forbid(&["lists", "probes"], "only applies to index = \"ivf_flat\"")?;
            let (m, ef_construction, ef_search) = hnsw_params(combo, bad)?;
            if !(2..=2048).contains(&m) {
                return Err(bad(combo.span_of("m"), "Milvus's HNSW `m` must be between 2 and 2048".into()));
            }
            if ef_construction == 0 || ef_search == 0 {
                let key = if ef_construction == 0 { "ef_construction" } else { "ef_search" };
                return Err(bad(combo.span_of(key), format!("`{key}` must be at least 1")));
            }
            MilvusIndex::Hnsw { m, ef_construction, ef_search }
        }
        Kind::IvfFlat => {
            forbid(&HNSW_KEYS, "only applies to index = \"hnsw\"")?;
            let lists = int(combo, "lists", Some(128), bad)?;
            let probes = int(combo, "probes", Some(8), bad)?;
            if !(1..=65_536).contains(&lists) || probes == 0 || probes > lists {
                let span = combo.get("probes").or(combo.get("lists")).map_or(combo.kind.1.clone(), |g| g.1);
                return Err(bad(span, "`lists` must be between 1 and 65536, `probes` between 1 and `lists`".into()));
            }
            MilvusIndex::IvfFlat { lists, probes }
        }
    };
    Ok(DenseIndex::Milvus { index })
}

/// A pgvector index and its query-time settings.
fn pg_dense_from(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<DenseIndex> {
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Exact,
        Hnsw,
        Ivfflat,
    }
    let kind = choice(
        combo,
        "index",
        Kind::Exact,
        &[("exact", Kind::Exact), ("hnsw", Kind::Hnsw), ("ivfflat", Kind::Ivfflat)],
        bad,
    )?;
    let only_for =
        |keys: &[&str], index: &str| forbid(combo, keys, &format!("only applies to index = \"{index}\""), bad);
    let iterative_scan = choice(
        combo,
        "iterative_scan",
        IterativeScan::Off,
        &[
            ("off", IterativeScan::Off),
            ("relaxed_order", IterativeScan::RelaxedOrder),
            ("strict_order", IterativeScan::StrictOrder),
        ],
        bad,
    )?;
    let index = match kind {
        Kind::Exact => {
            only_for(&HNSW_KEYS, "hnsw")?;
            only_for(&["lists", "probes"], "ivfflat")?;
            forbid(combo, &["iterative_scan", "force_index"], "applies to an hnsw or ivfflat index", bad)?;
            PgVectorIndex::Exact
        }
        Kind::Hnsw => {
            only_for(&["lists", "probes"], "ivfflat")?;
            let (m, ef_construction, ef_search) = pg_hnsw_params(combo, bad)?;
            PgVectorIndex::Hnsw { m, ef_construction, ef_search }
        }
        Kind::Ivfflat => {
            only_for(&HNSW_KEYS, "hnsw")?;
            if iterative_scan == IterativeScan::StrictOrder {
                let span = combo.get("iterative_scan").expect("given").1;
                return Err(bad(
                    span,
                    "pgvector's ivfflat has no strict_order iterative scan (off or relaxed_order)".into(),
                ));
            }
            let lists = int(combo, "lists", Some(100), bad)?;
            let probes = int(combo, "probes", Some(1), bad)?;
            if lists == 0 || probes == 0 || probes > lists {
                let span = combo.get("probes").or(combo.get("lists")).map_or(combo.kind.1.clone(), |g| g.1);
                return Err(bad(span, "`lists` and `probes` must be at least 1, and `probes` at most `lists`".into()));
            }
            PgVectorIndex::Ivfflat { lists, probes }
        }
    };
    Ok(DenseIndex::Pg { index, iterative_scan, force_index: boolean(combo, "force_index", bad)? })
}

fn fusion_from(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<Fusion> {
    let (method, span) = match combo.get("fusion") {
        Some((Value::String(s), span)) => (s.as_str(), span),
        Some((v, span)) => return Err(bad(span, format!("`fusion` must be a string, found {}", v.type_str()))),
        None => return Err(bad(combo.kind.1.clone(), "kind \"hybrid\" needs `fusion` (rrf, convex or dbsf)".into())),
    };
    let why = format!("does not apply to fusion = {method:?}");
    let forbid = |keys: &[&str]| forbid(combo, keys, &why, bad);
    Ok(match method {
        "rrf" => {
            forbid(&["alpha", "norm"])?;
            let k = float(combo, "k", 60.0, bad)?;
            if k <= 0.0 {
                return Err(bad(combo.get("k").unwrap().1, "`k` must be positive".into()));
            }
            Fusion::Rrf { k: k as f32 }
        }
        "convex" => {
            forbid(&["k"])?;
            let alpha = float(combo, "alpha", 0.5, bad)?;
            if !(0.0..=1.0).contains(&alpha) {
                return Err(bad(combo.get("alpha").unwrap().1, "`alpha` must be between 0 and 1".into()));
            }
            let norm = choice(
                combo,
                "norm",
                Norm::MinMax,
                &[("minmax", Norm::MinMax), ("zscore", Norm::ZScore), ("none", Norm::None)],
                bad,
            )?;
            Fusion::Convex { alpha: alpha as f32, norm }
        }
        "dbsf" => {
            forbid(&["k", "alpha", "norm"])?;
            Fusion::Dbsf
        }
        other => return Err(bad(span, format!("unknown fusion {other:?} (expected rrf, convex, dbsf)"))),
    })
}

/// A retriever and its `abstain_below` floor (a number or `"calibrate"`), which any
/// retriever kind may sweep.
pub(super) fn retriever_cell_from(
    combo: &Combo<'_>,
    bad: &dyn Fn(Range<usize>, String) -> Error,
) -> Result<(RetrieverSpec, Option<Abstain>)> {
    let abstain = match combo.get("abstain_below") {
        None => None,
        Some((Value::Float(f), span)) if !f.is_finite() => {
            return Err(bad(span, format!("`abstain_below` must be a finite score, found {f}")));
        }
        Some((Value::Float(f), _)) => Some(Abstain::Below(*f)),
        Some((Value::Integer(i), _)) => Some(Abstain::Below(*i as f64)),
        Some((Value::String(s), _)) if s == "calibrate" => Some(Abstain::Calibrate),
        Some((v, span)) => {
            return Err(bad(span, format!("`abstain_below` takes a score or \"calibrate\", found {v}")));
        }
    };
    let mut rest = Combo { values: combo.values.clone(), kind: combo.kind.clone() };
    rest.values.remove("abstain_below");
    Ok((retriever_from(&rest, bad)?, abstain))
}

fn retriever_from(combo: &Combo<'_>, bad: &dyn Fn(Range<usize>, String) -> Error) -> Result<RetrieverSpec> {
    let engine = engine_of(combo, bad)?;
    if engine == Some(EngineKind::Milvus) && combo.kind.0 != "dense" {
        let span = combo.get("engine").expect("given").1;
        return Err(bad(
            span,
            format!(
                "Milvus 2.3 serves dense retrieval only: kind {:?} has no engine = \"milvus\" (use kind = \"dense\")",
                combo.kind.0
            ),
        ));
    }
    let pg = engine == Some(EngineKind::Pg);
    fn with_engine<'k>(keys: &[&'k str]) -> Vec<&'k str> {
        let mut all = vec!["engine"];
        all.extend_from_slice(keys);
        all
    }
    match combo.kind.0 {
        "bm25" => {
            if pg {
                let span = combo.get("engine").expect("given").1;
                return Err(bad(
                    span,
                    "PostgreSQL has no BM25: its lexical ranking is kind = \"fulltext\" (ts_rank_cd)".into(),
                ));
            }
            only(combo, &with_engine(&LEXICAL_KEYS), bad)?;
            let LexicalSpec { analyzer, params, .. } = lexical_from(combo, bad)?;
            Ok(RetrieverSpec::Bm25 { analyzer, params })
        }
        "fulltext" => {
            if !pg {
                return Err(bad(
                    combo.kind.1.clone(),
                    "kind \"fulltext\" is PostgreSQL's full-text search: add engine = \"pg\"".into(),
                ));
            }
            only(combo, &with_engine(&FULL_TEXT_KEYS), bad)?;
            let spec = full_text_from(combo, bad)?;
            Ok(RetrieverSpec::FullText { analyzer: spec.analyzer, terms: spec.full_text.expect("full text") })
        }
        "dense" => {
            // pgvector's keys pass here so that, without the engine, they get their own message.
            only(combo, &with_engine(&DENSE_KEYS), bad)?;
            let DenseSpec { model, index } = dense_from(combo, bad)?;
            Ok(RetrieverSpec::Dense { model, index })
        }
        "hybrid" => {
            let lexical_keys: &[&str] = if pg { &FULL_TEXT_KEYS } else { &LEXICAL_KEYS };
            let mut keys: Vec<&str> = lexical_keys.iter().chain(&DENSE_KEYS).copied().collect();
            keys.extend(["fusion", "k", "alpha", "norm", "candidates"]);
            only(combo, &with_engine(&keys), bad)?;
            let candidates = int(combo, "candidates", Some(HYBRID_CANDIDATES), bad)?;
            if candidates == 0 {
                return Err(bad(combo.get("candidates").unwrap().1, "`candidates` must be at least 1".into()));
            }
            Ok(RetrieverSpec::Hybrid {
                lexical: if pg { full_text_from(combo, bad)? } else { lexical_from(combo, bad)? },
                dense: dense_from(combo, bad)?,
                fusion: fusion_from(combo, bad)?,
                candidates,
            })
        }
        other => Err(bad(
            combo.kind.1.clone(),
            format!(
                "unknown retriever kind {other:?} (expected bm25, dense, hybrid; with engine = \"pg\" also fulltext)"
            ),
        )),
    }
}
