//! What a retriever is, as an experiment declares it and a manifest records it: its shape (one
//! source, a lexical and a dense side fused, a retriever reranked) and its sources' parameters.
//! A dense index's parameters are its kind's own type, recorded under its kind's `type` and
//! read back through [`DENSE_KINDS`](super::DENSE_KINDS): nothing here names a dense kind.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::fusion::Fusion;
use super::{bm25, full_text, opensearch, rerank, served, Bad, Composition, Config, SourceKind, DENSE_KINDS};
use crate::error::Result;
use crate::grid::Combo;
use crate::vocab::{AnalyzerKind, Bm25Params, EngineKind, Terms};

/// A retriever as one `[[retrievers]]` combination declares it, named in the manifest by its
/// `kind`; a lone source is its catalog kind's own type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum RetrieverSpec {
    Bm25(bm25::Bm25),
    /// BM25 served by OpenSearch over the grid's chunks.
    #[serde(rename = "opensearch_bm25")]
    OpenSearch(opensearch::OpenSearchBm25),
    /// An OpenSearch index the team serves, read as it is.
    #[serde(rename = "opensearch_served")]
    OpenSearchServed(opensearch::ServedBm25),
    FullText(full_text::FullText),
    Dense(DenseSpec),
    /// A lexical and a dense ranking fused; each side retrieves `candidates` chunks.
    Hybrid {
        lexical: LexicalSpec,
        dense: DenseSpec,
        fusion: Fusion,
        candidates: usize,
    },
    Served(served::Served),
    /// Another retriever's first `candidates` chunks reordered by a dense model's cosine (a
    /// bi-encoder reranker), the list then cut at the asked depth.
    Rerank {
        first: Box<RetrieverSpec>,
        model: String,
        candidates: usize,
    },
}

/// A hybrid's lexical side: in-process BM25, or PostgreSQL full text with its `terms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LexicalSpec {
    pub analyzer: AnalyzerKind,
    #[serde(flatten)]
    pub params: Bm25Params,
    /// Served by PostgreSQL full-text search with these terms instead of in-process BM25
    /// (`params` then unused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_text: Option<Terms>,
}

/// A dense retriever or side: its model, and its index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DenseSpec {
    pub model: String,
    pub index: DenseIndex,
}

impl DenseSpec {
    fn kind(&self) -> Box<dyn SourceKind> {
        self.index.kind(&self.model)
    }
}

impl LexicalSpec {
    /// Its source kind: in-process BM25, or PostgreSQL full text.
    fn kind(&self) -> Box<dyn SourceKind> {
        match self.full_text {
            None => Box::new(bm25::Bm25 { analyzer: self.analyzer, params: self.params }),
            Some(terms) => Box::new(full_text::FullText { analyzer: self.analyzer, terms }),
        }
    }
}

/// A dense kind's index and query-time parameters, as its kind's file declares them.
pub trait DenseIndexSpec: fmt::Debug + Send + Sync + Recorded {
    /// The source kind that searches this index with `model`.
    fn kind(&self, model: &str) -> Box<dyn SourceKind>;
}

/// A dense index kind: its `type` in the manifest, the engine that serves it (`None` in
/// process), and how a `[[retrievers]]` combination reads into its parameters.
pub trait DenseIndexKind: DenseIndexSpec + Clone + Serialize + DeserializeOwned + 'static {
    const TYPE: &'static str;
    const ENGINE: Option<EngineKind>;
    /// The keys its `[[retrievers]]` entry may set besides `model` and `index`.
    const KEYS: &'static [&'static str];

    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Self>;
}

/// How a dense index is recorded, cloned and compared: written once for every [`DenseIndexKind`].
pub trait Recorded {
    fn type_name(&self) -> &'static str;
    fn fields(&self) -> Value;
    fn boxed(&self) -> Box<dyn DenseIndexSpec>;
}

impl<T: DenseIndexKind> Recorded for T {
    fn type_name(&self) -> &'static str {
        T::TYPE
    }

    fn fields(&self) -> Value {
        serde_json::to_value(self).expect("a dense index's parameters serialize")
    }

    fn boxed(&self) -> Box<dyn DenseIndexSpec> {
        Box::new(self.clone())
    }
}

/// A dense index kind's entry in the catalog's table.
pub struct DenseKind {
    pub name: &'static str,
    pub engine: Option<EngineKind>,
    pub keys: &'static [&'static str],
    pub parse: fn(&Combo<'_>, Bad<'_>) -> Result<Box<dyn DenseIndexSpec>>,
    read: fn(Value) -> serde_json::Result<Box<dyn DenseIndexSpec>>,
}

impl DenseKind {
    pub const fn of<T: DenseIndexKind>() -> DenseKind {
        DenseKind { name: T::TYPE, engine: T::ENGINE, keys: T::KEYS, parse: parse_boxed::<T>, read: read_boxed::<T> }
    }
}

fn parse_boxed<T: DenseIndexKind>(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Box<dyn DenseIndexSpec>> {
    Ok(Box::new(T::parse(combo, bad)?))
}

fn read_boxed<T: DenseIndexKind>(fields: Value) -> serde_json::Result<Box<dyn DenseIndexSpec>> {
    Ok(Box::new(serde_json::from_value::<T>(fields)?))
}

/// A dense side's index: its kind's own parameters.
#[derive(Debug)]
pub struct DenseIndex(pub Box<dyn DenseIndexSpec>);

impl DenseIndex {
    /// The source kind that searches it with `model`.
    pub fn kind(&self, model: &str) -> Box<dyn SourceKind> {
        self.0.kind(model)
    }
}

impl Clone for DenseIndex {
    fn clone(&self) -> Self {
        DenseIndex(self.0.boxed())
    }
}

impl PartialEq for DenseIndex {
    fn eq(&self, other: &Self) -> bool {
        self.0.type_name() == other.0.type_name() && self.0.fields() == other.0.fields()
    }
}

impl Serialize for DenseIndex {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        super::record::write_tagged(serializer, "type", self.0.type_name(), self.0.fields())
    }
}

impl<'de> Deserialize<'de> for DenseIndex {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        super::record::read_tagged(deserializer, "type", "dense index", |name, fields| {
            DENSE_KINDS.iter().find(|k| k.name == name).map(|kind| (kind.read)(fields).map(DenseIndex))
        })
    }
}

impl RetrieverSpec {
    pub fn composition(&self) -> Composition {
        match self {
            RetrieverSpec::Bm25(kind) => Composition::of(Box::new(kind.clone())),
            RetrieverSpec::FullText(kind) => Composition::of(Box::new(kind.clone())),
            RetrieverSpec::OpenSearch(kind) => Composition::of(Box::new(kind.clone())),
            RetrieverSpec::OpenSearchServed(kind) => Composition::of(Box::new(kind.clone())),
            RetrieverSpec::Dense(dense) => Composition::of(dense.kind()),
            RetrieverSpec::Served(kind) => Composition::of(Box::new(kind.clone())),
            RetrieverSpec::Hybrid { lexical: l, dense: d, fusion, candidates } => Composition {
                sources: vec![l.kind(), d.kind()],
                fusion: Some((fusion.clone(), *candidates)),
                rerank: Vec::new(),
            },
            RetrieverSpec::Rerank { first, model, candidates } => {
                let mut composition = first.composition();
                composition.rerank.push((Box::new(rerank::Rerank { model: model.clone() }), *candidates));
                composition
            }
        }
    }

    /// The models its rerankers reorder by.
    pub fn rerank_models(&self) -> Vec<&str> {
        match self {
            RetrieverSpec::Rerank { first, model, .. } => {
                let mut models = first.rerank_models();
                models.push(model);
                models
            }
            _ => Vec::new(),
        }
    }

    /// `bm25`, `fulltext`, `dense` or `hybrid`: the `kind` the retriever was declared with.
    pub fn family(&self) -> &'static str {
        match self {
            RetrieverSpec::Bm25(_) | RetrieverSpec::OpenSearch(_) | RetrieverSpec::OpenSearchServed(_) => "bm25",
            RetrieverSpec::FullText(_) => "fulltext",
            RetrieverSpec::Dense(_) | RetrieverSpec::Served(_) => "dense",
            RetrieverSpec::Hybrid { .. } => "hybrid",
            RetrieverSpec::Rerank { first, .. } => first.family(),
        }
    }

    /// The embedding model of the dense side, else of the reranker, if any.
    pub fn model(&self) -> Option<&str> {
        match self {
            RetrieverSpec::Bm25(_)
            | RetrieverSpec::FullText(_)
            | RetrieverSpec::OpenSearch(_)
            | RetrieverSpec::OpenSearchServed(_) => None,
            RetrieverSpec::Dense(DenseSpec { model, .. }) | RetrieverSpec::Served(served::Served { model, .. }) => {
                Some(model)
            }
            RetrieverSpec::Hybrid { dense, .. } => Some(&dense.model),
            RetrieverSpec::Rerank { first, model, .. } => first.model().or(Some(model)),
        }
    }

    /// The analyzer of the lexical side, if any.
    pub fn analyzer(&self) -> Option<AnalyzerKind> {
        match self {
            RetrieverSpec::Bm25(bm25::Bm25 { analyzer, .. })
            | RetrieverSpec::FullText(full_text::FullText { analyzer, .. }) => Some(*analyzer),
            RetrieverSpec::Hybrid { lexical, .. } => Some(lexical.analyzer),
            RetrieverSpec::Dense(_)
            | RetrieverSpec::Served(_)
            | RetrieverSpec::OpenSearch(_)
            | RetrieverSpec::OpenSearchServed(_) => None,
            RetrieverSpec::Rerank { first, .. } => first.analyzer(),
        }
    }

    /// The rows of the index it reads as served, whose chunks its cells are judged on.
    pub fn served_rows(&self) -> Option<&crate::chunkers::served::ServedRows> {
        match self {
            RetrieverSpec::Served(kind) => Some(&kind.index.rows),
            RetrieverSpec::OpenSearchServed(kind) => Some(&kind.rows),
            RetrieverSpec::Rerank { first, .. } => first.served_rows(),
            _ => None,
        }
    }

    /// The field a served index keeps each row's groups in, for an in-query filter; `None`
    /// when it has none (or is not served).
    pub fn served_acl(&self) -> Option<Option<&str>> {
        match self {
            RetrieverSpec::Served(kind) => Some(kind.index.acl_field.as_deref()),
            RetrieverSpec::OpenSearchServed(kind) => Some(kind.acl_field.as_deref()),
            RetrieverSpec::Rerank { first, .. } => first.served_acl(),
            _ => None,
        }
    }

    /// What the retriever's indexes are built from, query-time parameters left out.
    pub fn index_identity(&self) -> Vec<super::IndexIdentity> {
        let composition = self.composition();
        let reranks = composition.rerank.iter().map(|r| &r.0);
        composition.sources.iter().chain(reranks).map(|s| s.index_identity()).collect()
    }

    /// The retriever's configuration columns.
    pub fn config(&self, out: &mut Config) {
        out.push(("retriever", self.family().into()));
        let composition = self.composition();
        for source in &composition.sources {
            source.config(out);
        }
        if let Some((fusion, candidates)) = composition.fusion {
            out.push(("fusion", fusion.name().into()));
            out.extend(fusion.columns());
            out.push(("candidates", candidates.to_string()));
        }
        for (kind, candidates) in &composition.rerank {
            kind.config(out);
            out.push(("rerank_candidates", candidates.to_string()));
        }
    }
}

impl fmt::Display for RetrieverSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let composition = self.composition();
        let labels: Vec<String> = composition.sources.iter().map(|s| s.label()).collect();
        let mut label = match composition.fusion {
            Some((fusion, candidates)) => format!("hybrid({fusion},n={candidates}; {})", labels.join(" + ")),
            None => labels.join(" + "),
        };
        for (kind, candidates) in &composition.rerank {
            label = format!("{}(n={candidates}; {label})", kind.label());
        }
        f.write_str(&label)
    }
}
