//! The catalog: every kind of ranking source ragsweep retrieves with, one file each.
//!
//! A kind's file reads its parameters from a `[[retrievers]]` combination (each error located
//! at its key), names itself (label, configuration columns, the identity of the index it
//! builds), builds that index from the stage cache or in a serving engine, and turns the built
//! index into a [`RankingSource`]. As in tantivy's `Query → Weight → Scorer`, only this folder
//! asks which kind a retriever is; the plan, the build and the runner hold [`SourceKind`]s and
//! built objects. A retriever is one source or a fusion of a lexical and a dense one, then
//! optionally reranked ([`spec`]); a dense kind's parameters are its own type, so a new dense
//! kind is its file here and its line in [`DENSE_KINDS`]. `tests/it/layout.rs` fails when a kind
//! is matched anywhere else.

pub(crate) mod bm25;
pub(crate) mod chroma;
pub(crate) mod cross_encoder;
pub(crate) mod exact;
pub(crate) mod full_text;
pub(crate) mod fusion;
pub(crate) mod hnsw;
pub(crate) mod milvus;
pub(crate) mod opensearch;
pub(crate) mod pgvector;
mod record;
pub(crate) mod rerank;
pub(crate) mod served;
pub(crate) mod spec;

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use toml::Value;

use crate::analyze::AnalyzerKind;
use crate::engine::servers::Engines;
use crate::engine::ChunkAcl;
use crate::error::Result;
pub use crate::grid::Bad;
use crate::grid::{choice, forbid, int, only, Combo};
use crate::retrieve::source::RankingSource;
use crate::stages::cache::{Cached, StageCache};
use crate::stages::embed::ModelInfo;
use crate::vocab::EngineKind;
use fusion::Fusion;
pub use spec::{DenseIndex, DenseIndexKind, DenseIndexSpec, DenseKind, DenseSpec, LexicalSpec, RetrieverSpec};

/// Default candidates per side of a hybrid retriever.
pub const HYBRID_CANDIDATES: usize = 100;

/// Configuration columns of a cell, in order: name and value.
pub type Config = Vec<(&'static str, String)>;

/// What an index is built from.
pub struct IndexInput<'a> {
    pub store: &'a StageCache,
    /// The chunk set's size and each chunk's indexed text.
    pub chunks: usize,
    pub text: &'a (dyn Fn(usize) -> String + Sync),
    /// The content key of those texts.
    pub text_key: &'a [u8; 32],
    /// Each chunk's ACL, and their content key (what an engine stores beside the chunk).
    pub acl: ChunkAcl<'a>,
    pub acl_key: &'a [u8; 32],
    /// Each chunk's document id, and whether the chunk spans its whole document.
    pub doc_id: &'a (dyn Fn(usize) -> &'a str + Sync),
    pub spans_document: &'a (dyn Fn(usize) -> bool + Sync),
    /// The model of a kind with one.
    pub model: Option<&'a ModelInfo>,
    /// The passage vectors and the model that made them, for a kind that embeds passages.
    pub vectors: Option<(&'a ModelInfo, &'a Arc<Vec<f32>>)>,
    pub engines: &'a Engines,
}

impl<'a> IndexInput<'a> {
    fn vectors(&self) -> (&'a ModelInfo, &'a Arc<Vec<f32>>) {
        self.vectors.expect("a kind with a model is given its vectors")
    }

    /// Each chunk as a served index's row is placed: its document id, its text, and whether it
    /// spans its whole document.
    fn placed_chunks(&self) -> Vec<(String, String, bool)> {
        (0..self.chunks).map(|i| ((self.doc_id)(i).to_string(), (self.text)(i), (self.spans_document)(i))).collect()
    }
}

/// A built index: what its kind keeps (read back by that kind alone), its size, and its
/// stage-cache record (`None` when nothing was built).
pub struct BuiltIndex {
    pub index: Box<dyn Any + Send + Sync>,
    pub bytes: u64,
    pub record: Option<Cached<()>>,
}

impl BuiltIndex {
    /// The index as the kind that built it keeps it.
    fn get<T: 'static>(&self) -> &T {
        self.index.downcast_ref().expect("an index is read by the kind that built it")
    }
}

/// What an index is built from, query-time parameters left out: the type its kind keeps the
/// built index as, and a value of the parameters that make it (a kind declares what must
/// rebuild by what it puts there). Cells whose sources have equal identities share one index, so
/// a kind only ever reads back ([`BuiltIndex::get`]) an index of the type it builds.
#[derive(Debug, Clone)]
pub struct IndexIdentity {
    built: std::any::TypeId,
    params: Arc<dyn BuildParams>,
}

impl IndexIdentity {
    /// The identity of an index kept as a `B`, built with `params`.
    pub fn of<B: Any>(params: impl BuildParams) -> IndexIdentity {
        IndexIdentity { built: std::any::TypeId::of::<B>(), params: Arc::new(params) }
    }
}

/// The parameters an index is built with, compared and hashed as their own type.
pub trait BuildParams: Any + fmt::Debug + Send + Sync {
    fn same(&self, other: &dyn BuildParams) -> bool;
    fn hash_into(&self, state: &mut dyn std::hash::Hasher);
}

impl<T: Any + fmt::Debug + Eq + std::hash::Hash + Send + Sync> BuildParams for T {
    fn same(&self, other: &dyn BuildParams) -> bool {
        (other as &dyn Any).downcast_ref::<T>() == Some(self)
    }

    fn hash_into(&self, mut state: &mut dyn std::hash::Hasher) {
        self.hash(&mut state);
    }
}

impl PartialEq for IndexIdentity {
    fn eq(&self, other: &Self) -> bool {
        self.built == other.built && self.params.same(&*other.params)
    }
}

impl Eq for IndexIdentity {}

impl std::hash::Hash for IndexIdentity {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.built.hash(state);
        self.params.hash_into(state);
    }
}

/// One kind of ranking source, with its parameters.
pub trait SourceKind: Send + Sync + fmt::Debug {
    /// The embedding model it searches with, if any.
    fn model(&self) -> Option<&str> {
        None
    }

    /// The serving engine that holds its index; `None` in process.
    fn engine(&self) -> Option<EngineKind> {
        None
    }

    /// Whether it only reads an index the team serves (nothing built or written in its engine).
    fn reads_only(&self) -> bool {
        false
    }

    /// Whether its model embeds the chunks (else only the questions: the index holds the
    /// passages' vectors already).
    fn embeds_passages(&self) -> bool {
        self.model().is_some()
    }

    /// How a cell label names it (`bm25(en,k1=0.9,b=0.4)`, `dense(e5-small,hnsw,m=16,…)`).
    fn label(&self) -> String;

    /// Its configuration columns.
    fn config(&self, out: &mut Config);

    /// What its index is built from, query-time parameters left out: over one chunk set, equal
    /// identities share one index.
    fn index_identity(&self) -> IndexIdentity;

    /// The index's name in the stage report.
    fn index_name(&self) -> String;

    /// Whether its index is the chunks or vectors as they are (nothing built, nothing to report).
    fn builds_nothing(&self) -> bool {
        false
    }

    /// The HNSW graph its index is (`m`, `ef_construction`, `ef_search`), if it is one.
    fn graph(&self) -> Option<(usize, usize, usize)> {
        None
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex>;

    /// What the built index is, when the run learns it from the engine (a served index's own
    /// definition), for the manifest and `validate`.
    fn describe(&self, _index: &BuiltIndex) -> Option<String> {
        None
    }

    /// The source that searches `index` (built by a kind of the same identity) with this
    /// kind's query-time parameters.
    fn source<'a>(&self, index: &'a BuiltIndex, engines: &'a Engines) -> Arc<dyn RankingSource + 'a>;
}

/// A retriever's composition: its sources (lexical first), how their lists fuse with the
/// candidates each fetches when there are several, and the rerankers that reorder the result,
/// each with the chunks it reorders.
pub struct Composition {
    pub sources: Vec<Box<dyn SourceKind>>,
    pub fusion: Option<(Fusion, usize)>,
    pub rerank: Vec<(Box<dyn SourceKind>, usize)>,
}

impl Composition {
    fn of(source: Box<dyn SourceKind>) -> Composition {
        Composition { sources: vec![source], fusion: None, rerank: Vec::new() }
    }

    /// The composition with each reranker whose model is one of the `cross` encoders
    /// reordering by that model's pair score instead of its vectors.
    pub fn with_cross_encoders(mut self, cross: &[ModelInfo]) -> Composition {
        for (kind, _) in &mut self.rerank {
            if let Some(info) = kind.model().and_then(|m| cross.iter().find(|c| c.id == m)) {
                *kind = Box::new(cross_encoder::CrossRerank { info: info.clone() });
            }
        }
        self
    }
}

/// `keys` in their first order, each once: the union of the keys several kinds declare.
fn distinct(keys: impl IntoIterator<Item = &'static str>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for key in keys {
        if !out.contains(&key) {
            out.push(key);
        }
    }
    out
}

/// The keys of a dense side: `model`, `index` and each dense kind's own, once each.
fn dense_keys() -> Vec<&'static str> {
    distinct(["model", "index"].into_iter().chain(DENSE_KINDS.iter().flat_map(|kind| kind.keys.iter().copied())))
}

/// What serves a retriever: a serving engine, or ragsweep in process (`None`, the default).
fn engine_of(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Option<EngineKind>> {
    let options: Vec<(&str, Option<EngineKind>)> = std::iter::once(("in_process", None))
        .chain(crate::engine::servers::ENGINES.iter().map(|(kind, _)| (kind.name(), Some(*kind))))
        .collect();
    choice(combo, "engine", None, &options, bad)
}

/// The model a dense kind embeds with.
fn model_from(combo: &Combo<'_>, bad: Bad<'_>) -> Result<String> {
    Ok(match combo.get("model") {
        Some((Value::String(s), _)) => s.clone(),
        Some((v, span)) => return Err(bad(span, format!("`model` must be a string, found {}", v.type_str()))),
        None => {
            return Err(bad(
                combo.kind.1.clone(),
                format!("kind {:?} needs `model` (e.g. \"minilm-l6\")", combo.kind.0),
            ))
        }
    })
}

/// Every dense index kind, in process and in each serving engine: how `[[retrievers]]` reads it
/// and how a manifest's `type` reads back. The first in-process kind, the exact scan, is the
/// default `index`.
pub const DENSE_KINDS: [DenseKind; 5] = [
    DenseKind::of::<exact::ExactSpec>(),
    DenseKind::of::<hnsw::HnswSpec>(),
    DenseKind::of::<pgvector::PgSpec>(),
    DenseKind::of::<milvus::MilvusSpec>(),
    DenseKind::of::<chroma::ChromaSpec>(),
];

/// How a served index of an engine is declared: the key that names it (`table`,
/// `collection`), the fields it reads, its engine's search settings (their keys and parser),
/// why another engine's served key is refused on it, and the field its vectors are in when the
/// engine fixes it. A key no engine declares is misspelt; a key only other engines declare is
/// refused with `why`.
pub struct ServedShape {
    pub engine: EngineKind,
    pub source_key: &'static str,
    pub keys: &'static [&'static str],
    pub search: crate::engine::registry::SearchKind,
    pub why: &'static str,
    pub vector_field: Option<&'static str>,
}

impl ServedShape {
    /// Every key a served index of this engine reads.
    fn declared_keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        std::iter::once(self.source_key).chain(self.keys.iter().copied()).chain(self.search.keys.iter().copied())
    }
}

/// Each engine that serves read-only indexes, as its catalog file declares them.
const SERVED_SHAPES: [&ServedShape; 3] = [&pgvector::SERVED, &milvus::SERVED, &chroma::SERVED];

/// A dense side: its model, and its index as the engine that serves it reads it (in process,
/// the kind its `index` names).
fn dense_from(combo: &Combo<'_>, bad: Bad<'_>) -> Result<DenseSpec> {
    let model = model_from(combo, bad)?;
    let engine = engine_of(combo, bad)?;
    let kind = match engine {
        Some(_) => DENSE_KINDS.iter().find(|k| k.engine == engine).ok_or_else(|| {
            bad(
                combo.span_of("engine"),
                "this engine serves no dense retrieval here: its cells are kind = \"bm25\"".into(),
            )
        })?,
        None => {
            forbid(combo, &["lists", "probes", "iterative_scan", "force_index"], pgvector::ONLY, bad)?;
            let in_process: Vec<(&str, Option<&DenseKind>)> = DENSE_KINDS
                .iter()
                .filter(|k| k.engine.is_none())
                .map(|k| (k.name, Some(k)))
                .chain([("ivfflat", None)])
                .collect();
            match choice(combo, "index", in_process[0].1, &in_process, bad)? {
                Some(kind) => kind,
                None => {
                    return Err(bad(
                        combo.span_of("index"),
                        "index = \"ivfflat\" is served by PostgreSQL + pgvector: add engine = \"pg\"".into(),
                    ))
                }
            }
        }
    };
    Ok(DenseSpec { model, index: DenseIndex((kind.parse)(combo, bad)?) })
}

/// Every retriever kind an experiment names, with what it needs beside it.
pub const RETRIEVER_KINDS: [(&str, &str); 4] = [
    ("bm25", "in process, or with engine = \"opensearch\""),
    ("dense", ""),
    ("hybrid", ""),
    ("fulltext", "with engine = \"pg\""),
];

/// The retriever kinds as a message lists them.
pub fn retriever_kind_list() -> String {
    let kinds =
        RETRIEVER_KINDS
            .iter()
            .map(|(name, needs)| if needs.is_empty() { name.to_string() } else { format!("{name} ({needs})") });
    kinds.collect::<Vec<_>>().join(", ")
}

/// A `[[retrievers]]` combination read into its spec (`abstain_below` taken out before).
pub fn retriever_from(combo: &Combo<'_>, bad: Bad<'_>) -> Result<RetrieverSpec> {
    let (first, reranker) = rerank::take(combo, bad)?;
    rerank::wrap(first_from(&first, bad)?, reranker, bad)
}

/// The retriever a reranker would reorder.
fn first_from(combo: &Combo<'_>, bad: Bad<'_>) -> Result<RetrieverSpec> {
    let engine = engine_of(combo, bad)?;
    let pg = engine.is_some() && engine == full_text::ENGINE;
    let lexical_engine = engine.is_some() && engine == opensearch::ENGINE;
    if lexical_engine && combo.kind.0 != "bm25" {
        return Err(bad(
            combo.span_of("engine"),
            format!(
                "engine = \"opensearch\" serves BM25 here: kind {:?} has no engine = \"opensearch\" (use kind = \"bm25\"; fuse it with ragsweep's dense side in process)",
                combo.kind.0
            ),
        ));
    }
    if let (Some(_), false, false, true) = (engine, pg, lexical_engine, combo.kind.0 != "dense") {
        let name = combo.get("engine").map(|(v, _)| v.to_string()).unwrap_or_default();
        return Err(bad(
            combo.span_of("engine"),
            format!(
                "engine = {name} serves dense retrieval only: kind {:?} has no engine = {name} (use kind = \"dense\")",
                combo.kind.0
            ),
        ));
    }
    // The reranker's keys were taken out before; they are listed for a misspelt key's message.
    let with_engine = |keys: &[&'static str]| -> Vec<&'static str> {
        ["engine"].iter().chain(keys).chain(&rerank::KEYS).copied().collect()
    };
    match combo.kind.0 {
        "bm25" if lexical_engine && opensearch::reads_served(combo) => {
            // Its own index's keys pass here so that parse_served says why they are refused.
            let keys: Vec<&'static str> = opensearch::SERVED_KEYS.iter().chain(&opensearch::KEYS).copied().collect();
            only(combo, &with_engine(&keys), bad)?;
            Ok(RetrieverSpec::OpenSearchServed(opensearch::parse_served(combo, bad)?))
        }
        "bm25" if lexical_engine => {
            only(combo, &with_engine(&opensearch::KEYS), bad)?;
            Ok(RetrieverSpec::OpenSearch(opensearch::parse(combo, bad)?))
        }
        "bm25" => {
            if pg {
                return Err(bad(
                    combo.span_of("engine"),
                    "PostgreSQL has no BM25: its lexical ranking is kind = \"fulltext\" (ts_rank_cd)".into(),
                ));
            }
            only(combo, &with_engine(&bm25::KEYS), bad)?;
            let LexicalSpec { analyzer, params, .. } = bm25::parse(combo, bad)?;
            Ok(RetrieverSpec::Bm25(bm25::Bm25 { analyzer, params }))
        }
        "fulltext" => {
            if !pg {
                return Err(bad(
                    combo.kind.1.clone(),
                    "kind \"fulltext\" is PostgreSQL's full-text search: add engine = \"pg\"".into(),
                ));
            }
            only(combo, &with_engine(&full_text::KEYS), bad)?;
            let spec = full_text::parse(combo, bad)?;
            Ok(RetrieverSpec::FullText(full_text::FullText {
                analyzer: spec.analyzer,
                terms: spec.full_text.expect("full text"),
            }))
        }
        "dense" if served::declared(combo) => Ok(RetrieverSpec::Served(served::Served {
            model: model_from(combo, bad)?,
            index: served::parse(combo, engine, bad)?,
        })),
        "dense" => {
            // pgvector's keys pass here so that, without the engine, they get their own message.
            only(combo, &with_engine(&dense_keys()), bad)?;
            Ok(RetrieverSpec::Dense(dense_from(combo, bad)?))
        }
        "hybrid" => {
            let lexical_keys: &[&'static str] = if pg { &full_text::KEYS } else { &bm25::KEYS };
            let mut keys: Vec<&'static str> = lexical_keys.iter().copied().chain(dense_keys()).collect();
            keys.extend(["fusion", "candidates"].into_iter().chain(fusion::keys()));
            only(combo, &with_engine(&keys), bad)?;
            let candidates = int(combo, "candidates", Some(HYBRID_CANDIDATES), bad)?;
            if candidates == 0 {
                return Err(bad(combo.span_of("candidates"), "`candidates` must be at least 1".into()));
            }
            Ok(RetrieverSpec::Hybrid {
                lexical: if pg { full_text::parse(combo, bad)? } else { bm25::parse(combo, bad)? },
                dense: dense_from(combo, bad)?,
                fusion: fusion::fusion_from(combo, bad)?,
                candidates,
            })
        }
        other => Err(bad(
            combo.kind.1.clone(),
            format!("unknown retriever kind {other:?} (expected {})", retriever_kind_list()),
        )),
    }
}

/// The analyzer of a lexical kind (`en` when absent).
fn analyzer_from(combo: &Combo<'_>, bad: Bad<'_>) -> Result<AnalyzerKind> {
    choice(
        combo,
        "analyzer",
        AnalyzerKind::En,
        &[("en", AnalyzerKind::En), ("pt", AnalyzerKind::Pt), ("simple", AnalyzerKind::Simple)],
        bad,
    )
}

/// The keys of an HNSW index.
const HNSW_KEYS: [&str; 3] = ["m", "ef_construction", "ef_search"];

/// An HNSW index's `m`, `ef_construction` and `ef_search`, hnswlib's defaults when absent; each
/// kind checks its own ranges.
fn hnsw_params(combo: &Combo<'_>, bad: Bad<'_>) -> Result<(usize, usize, usize)> {
    let (m, efc, ef) = hnsw::DEFAULTS;
    Ok((
        int(combo, "m", Some(m), bad)?,
        int(combo, "ef_construction", Some(efc), bad)?,
        int(combo, "ef_search", Some(ef), bad)?,
    ))
}

/// The columns of an inverted-file index (`ivfflat` in pgvector, `ivf_flat` in Milvus).
fn ivf_config(out: &mut Config, index: &str, lists: usize, probes: usize) {
    out.push(("index", index.into()));
    out.push(("lists", lists.to_string()));
    out.push(("probes", probes.to_string()));
}

/// The exact scan over the input's vectors: the exact kind's index, what a graph is built over,
/// and the oracle kept beside an engine's index.
fn exact_of(input: &IndexInput<'_>) -> crate::retrieve::ExactIndex {
    let (info, passages) = input.vectors();
    crate::retrieve::ExactIndex::new(info.dim, passages.clone())
}

/// An engine index's content key: model, texts, ACLs and build parameters.
fn engine_key(kind: &str, input: &IndexInput<'_>, build: &dyn fmt::Debug) -> String {
    let (info, _) = input.vectors();
    crate::stages::cache::key(
        kind,
        &[info.key().as_bytes(), input.text_key, input.acl_key, format!("{build:?}").as_bytes()],
    )
}

/// An engine table's or collection's build as a cache record: reused or built, and its cost.
fn engine_record(build_seconds: f64, reused: bool) -> Option<Cached<()>> {
    Some(Cached { value: (), build: crate::stages::cache::BuildRecord { seconds: build_seconds }, reused })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest's `type` names one dense kind, an engine serves at most one, and the default
    /// `index` is the exact scan.
    #[test]
    fn the_dense_kinds_table_names_each_kind_once() {
        let names: std::collections::BTreeSet<&str> = DENSE_KINDS.iter().map(|k| k.name).collect();
        assert_eq!(names.len(), DENSE_KINDS.len());
        for (engine, _) in crate::engine::servers::ENGINES {
            assert!(DENSE_KINDS.iter().filter(|k| k.engine == Some(engine)).count() <= 1, "{engine:?}");
        }
        let default = DENSE_KINDS.iter().find(|k| k.engine.is_none()).unwrap();
        assert_eq!(default.name, <exact::ExactSpec as DenseIndexKind>::TYPE);
    }
}
