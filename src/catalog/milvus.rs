//! Milvus: `kind = "dense"` with `engine = "milvus"`, `index = "flat" | "hnsw" | "ivf_flat"`
//! and their search parameters. The collection keeps each chunk's ACL as an array field
//! (`in_query` is Milvus's own filter expression on it); the same vectors in process are its
//! oracle.

use std::sync::Arc;

use super::HNSW_KEYS;
use serde::{Deserialize, Serialize};

use super::{
    engine_key, engine_record, exact_of, hnsw_params, Bad, BuiltIndex, Config, DenseIndexKind, DenseIndexSpec,
    IndexIdentity, IndexInput, SourceKind,
};
use crate::engine::milvus::{MilvusBuild, MilvusCollection, MilvusEngine, MilvusQuery, MilvusVectorSource};
use crate::engine::registry::SearchKind;
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{choice, forbid, int, Combo};
use crate::retrieve::source::RankingSource;
use crate::retrieve::ExactIndex;
use crate::vocab::EngineKind;

#[derive(Debug)]
pub struct Milvus {
    pub model: String,
    pub index: MilvusIndex,
}

/// A collection the team serves, read as it is (`catalog::served`).
pub const SERVED: super::ServedShape = super::ServedShape {
    engine: crate::engine::milvus::ENGINE,
    source_key: "collection",
    keys: &["id_field", "text_field", "vector_field", "acl_field", "public_group", "unplaced"],
    search: SearchKind::of::<crate::engine::milvus::served::MilvusSearch>(),
    why: "is not a setting of a served Milvus collection: it is searched with its index's own metric",
    vector_field: None,
};

/// The collection and the exact scan over the same vectors.
struct Built {
    collection: MilvusCollection,
    exact: ExactIndex,
}

/// A vector index in Milvus, with its search-time parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MilvusIndex {
    /// `FLAT`: every vector compared.
    Flat,
    Hnsw {
        m: usize,
        ef_construction: usize,
        /// The search's `ef` (Milvus takes at least the number of results asked).
        ef_search: usize,
    },
    IvfFlat {
        lists: usize,
        probes: usize,
    },
}

/// A Milvus collection's index, as the manifest records it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct MilvusSpec {
    pub index: MilvusIndex,
}

impl DenseIndexKind for MilvusSpec {
    const TYPE: &'static str = "milvus";
    const ENGINE: Option<EngineKind> = Some(crate::engine::milvus::ENGINE);
    const KEYS: &'static [&'static str] = &["m", "ef_construction", "ef_search", "lists", "probes"];

    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<MilvusSpec> {
        Ok(MilvusSpec { index: parse(combo, bad)? })
    }
}

impl DenseIndexSpec for MilvusSpec {
    fn kind(&self, model: &str) -> Box<dyn SourceKind> {
        Box::new(Milvus { model: model.into(), index: self.index })
    }
}

/// A Milvus index and its search parameter: `flat` (the default), `hnsw` (`m`,
/// `ef_construction`, `ef_search` as Milvus accepts them) or `ivf_flat` (`lists`, `probes`).
fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<MilvusIndex> {
    let kind = choice(combo, "index", "flat", &[("flat", "flat"), ("hnsw", "hnsw"), ("ivf_flat", "ivf_flat")], bad)?;
    let forbid = |keys: &[&str], why: &str| forbid(combo, keys, why, bad);
    forbid(&["iterative_scan", "force_index"], super::pgvector::ONLY)?;
    if kind != "hnsw" {
        forbid(&HNSW_KEYS, "only applies to index = \"hnsw\"")?;
    }
    if kind != "ivf_flat" {
        forbid(&["lists", "probes"], "only applies to index = \"ivf_flat\"")?;
    }
    let index = match kind {
        "hnsw" => {
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
        "ivf_flat" => {
            let lists = int(combo, "lists", Some(128), bad)?;
            let probes = int(combo, "probes", Some(8), bad)?;
            if !(1..=65_536).contains(&lists) || probes == 0 || probes > lists {
                let span = combo.get("probes").or(combo.get("lists")).map_or(combo.kind.1.clone(), |g| g.1);
                return Err(bad(span, "`lists` must be between 1 and 65536, `probes` between 1 and `lists`".into()));
            }
            MilvusIndex::IvfFlat { lists, probes }
        }
        _ => MilvusIndex::Flat,
    };
    Ok(index)
}

impl Milvus {
    /// What the collection's index is built with, and how a search walks it.
    fn build_and_query(&self) -> (MilvusBuild, MilvusQuery) {
        let (build, ef, nprobe) = match self.index {
            MilvusIndex::Flat => (MilvusBuild::Flat, 0, 0),
            MilvusIndex::Hnsw { m, ef_construction, ef_search } => {
                (MilvusBuild::Hnsw { m, ef_construction }, ef_search, 0)
            }
            MilvusIndex::IvfFlat { lists, probes } => (MilvusBuild::IvfFlat { nlist: lists }, 0, probes),
        };
        (build, MilvusQuery { ef, nprobe })
    }
}

impl SourceKind for Milvus {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    fn engine(&self) -> Option<EngineKind> {
        MilvusSpec::ENGINE
    }

    fn label(&self) -> String {
        let index = match self.index {
            MilvusIndex::Flat => "flat".to_string(),
            MilvusIndex::Hnsw { m, ef_construction, ef_search } => {
                format!("hnsw,m={m},efc={ef_construction},ef={ef_search}")
            }
            MilvusIndex::IvfFlat { lists, probes } => format!("ivf_flat,lists={lists},probes={probes}"),
        };
        format!("dense({},milvus {index})", self.model)
    }

    fn config(&self, out: &mut Config) {
        out.push(("model", self.model.clone()));
        out.push(("engine", "milvus".into()));
        match self.index {
            MilvusIndex::Flat => out.push(("index", "flat".into())),
            MilvusIndex::Hnsw { m, ef_construction, ef_search } => {
                super::hnsw::config(out, m, ef_construction, ef_search)
            }
            MilvusIndex::IvfFlat { lists, probes } => super::ivf_config(out, "ivf_flat", lists, probes),
        }
    }

    fn index_identity(&self) -> IndexIdentity {
        IndexIdentity::of::<Built>((self.model.clone(), self.build_and_query().0))
    }

    fn index_name(&self) -> String {
        format!("milvus vectors({},{})", self.model, self.build_and_query().0)
    }

    fn graph(&self) -> Option<(usize, usize, usize)> {
        match self.index {
            MilvusIndex::Hnsw { m, ef_construction, ef_search } => Some((m, ef_construction, ef_search)),
            MilvusIndex::Flat | MilvusIndex::IvfFlat { .. } => None,
        }
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let (build, _) = self.build_and_query();
        let (info, passages) = input.vectors();
        let key = engine_key("milvus-vector", input, &build);
        let engine = input.engines.expect::<MilvusEngine>();
        let collection = engine.vector_collection(&key[..24], passages, info.dim, input.acl, build)?;
        let record = engine_record(collection.build_seconds, collection.reused);
        let bytes = collection.bytes;
        Ok(BuiltIndex { bytes, index: Box::new(Built { collection, exact: exact_of(input) }), record })
    }

    fn source<'a>(&self, index: &'a BuiltIndex, engines: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        let Built { collection, exact } = index.get::<Built>();
        let engine = engines.expect::<MilvusEngine>();
        let (build, query) = self.build_and_query();
        Arc::new(MilvusVectorSource { engine, collection, exact, build, query })
    }
}
