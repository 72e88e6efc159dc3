//! Chroma: `kind = "dense"` with `engine = "chroma"` and `index = "hnsw"` (the default and
//! Chroma's only index here): `m` (Chroma's `max_neighbors`), `ef_construction` and
//! `ef_search`, all three set when the collection is made. Each chunk's groups are metadata
//! (`in_query` is Chroma's own `where` on them); the same vectors in process are its oracle.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{
    engine_key, engine_record, exact_of, hnsw_params, Bad, BuiltIndex, Config, DenseIndexKind, DenseIndexSpec,
    IndexIdentity, IndexInput, SourceKind,
};
use crate::engine::chroma::{ChromaBuild, ChromaCollection, ChromaEngine, ChromaVectorSource};
use crate::engine::registry::{SearchKind, ServerSettings};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{choice, forbid, Combo};
use crate::retrieve::source::RankingSource;
use crate::retrieve::ExactIndex;
use crate::vocab::EngineKind;

#[derive(Debug)]
pub struct Chroma {
    pub model: String,
    pub build: ChromaBuild,
}

/// A collection the team serves, read as it is (`catalog::served`): its records hold one
/// vector each, searched with the collection's own space and `ef_search`.
pub const SERVED: super::ServedShape = super::ServedShape {
    engine: crate::engine::chroma::ENGINE,
    source_key: "collection",
    keys: &["id_field", "text_field", "acl_field", "public_group", "unplaced"],
    search: SearchKind::of::<ServerSettings>(),
    why: "is not a setting of a served Chroma collection: it is searched with its own space and ef_search, and its records hold one vector each",
    vector_field: Some("embedding"),
};

/// The collection and the exact scan over the same vectors.
struct Built {
    collection: ChromaCollection,
    exact: ExactIndex,
}

/// A Chroma collection's HNSW parameters, all three set when the collection is made.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ChromaSpec {
    pub m: usize,
    pub ef_construction: usize,
    pub ef_search: usize,
}

impl DenseIndexKind for ChromaSpec {
    const TYPE: &'static str = "chroma";
    const ENGINE: Option<EngineKind> = Some(crate::engine::chroma::ENGINE);
    const KEYS: &'static [&'static str] = &super::HNSW_KEYS;

    /// Chroma's HNSW parameters, hnswlib's defaults when absent.
    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChromaSpec> {
        choice(combo, "index", "hnsw", &[("hnsw", "hnsw")], bad)?;
        forbid(combo, &["iterative_scan", "force_index"], super::pgvector::ONLY, bad)?;
        forbid(combo, &["lists", "probes"], "is an inverted-file setting: Chroma builds HNSW graphs", bad)?;
        let (m, ef_construction, ef_search) = hnsw_params(combo, bad)?;
        for (key, value) in [("m", m), ("ef_construction", ef_construction), ("ef_search", ef_search)] {
            if value == 0 {
                return Err(bad(combo.span_of(key), format!("`{key}` must be at least 1")));
            }
        }
        Ok(ChromaSpec { m, ef_construction, ef_search })
    }
}

impl DenseIndexSpec for ChromaSpec {
    fn kind(&self, model: &str) -> Box<dyn SourceKind> {
        let ChromaSpec { m, ef_construction, ef_search } = *self;
        Box::new(Chroma { model: model.into(), build: ChromaBuild { max_neighbors: m, ef_construction, ef_search } })
    }
}

impl SourceKind for Chroma {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    fn engine(&self) -> Option<EngineKind> {
        ChromaSpec::ENGINE
    }

    fn label(&self) -> String {
        let ChromaBuild { max_neighbors, ef_construction, ef_search } = self.build;
        format!("dense({},chroma hnsw,m={max_neighbors},efc={ef_construction},ef={ef_search})", self.model)
    }

    fn config(&self, out: &mut Config) {
        out.push(("model", self.model.clone()));
        out.push(("engine", "chroma".into()));
        let ChromaBuild { max_neighbors, ef_construction, ef_search } = self.build;
        super::hnsw::config(out, max_neighbors, ef_construction, ef_search);
    }

    /// `ef_search` is a collection's setting in Chroma: it is part of what is built.
    fn index_identity(&self) -> IndexIdentity {
        // Chroma sets `ef_search` when the collection is made: all three rebuild it.
        IndexIdentity::of::<Built>((self.model.clone(), self.build))
    }

    fn index_name(&self) -> String {
        let ChromaBuild { max_neighbors, ef_construction, ef_search } = self.build;
        format!("chroma vectors({},hnsw,m={max_neighbors},efc={ef_construction},ef={ef_search})", self.model)
    }

    fn graph(&self) -> Option<(usize, usize, usize)> {
        let ChromaBuild { max_neighbors, ef_construction, ef_search } = self.build;
        Some((max_neighbors, ef_construction, ef_search))
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let (info, passages) = input.vectors();
        let key = engine_key("chroma-vector", input, &self.build);
        let engine = input.engines.expect::<ChromaEngine>();
        let collection = engine.vector_collection(&key[..24], passages, info.dim, input.acl, self.build)?;
        let record = engine_record(collection.build_seconds, collection.reused);
        Ok(BuiltIndex {
            bytes: collection.bytes,
            index: Box::new(Built { collection, exact: exact_of(input) }),
            record,
        })
    }

    fn source<'a>(&self, index: &'a BuiltIndex, engines: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        let Built { collection, exact } = index.get::<Built>();
        let engine = engines.expect::<ChromaEngine>();
        Arc::new(ChromaVectorSource { engine, collection, exact })
    }
}
