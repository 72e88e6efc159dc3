//! PostgreSQL + pgvector: `kind = "dense"` with `engine = "pg"`, `index = "exact" | "hnsw" |
//! "ivfflat"`, with pgvector's iterative scans and `force_index` as query-time parameters. The
//! table keeps each chunk's ACL (`in_query` is a `WHERE` on it); the same vectors in process are
//! its oracle.

use std::sync::Arc;

use super::HNSW_KEYS;
use serde::{Deserialize, Serialize};

use super::{
    engine_key, engine_record, exact_of, hnsw_params, Bad, BuiltIndex, Config, DenseIndexKind, DenseIndexSpec,
    IndexIdentity, IndexInput, SourceKind,
};
use crate::engine::pgvector::{PgEngine, PgTable, PgVectorSource, VectorBuild, VectorQuery};
use crate::engine::registry::SearchKind;
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{boolean, choice, forbid, int, Combo};
use crate::retrieve::source::RankingSource;
use crate::retrieve::ExactIndex;
use crate::vocab::{EngineKind, IterativeScan};

/// A table the team serves, read as it is (`catalog::served`).
pub const SERVED: super::ServedShape = super::ServedShape {
    engine: crate::engine::pgvector::ENGINE,
    source_key: "table",
    keys: &["id_field", "text_field", "vector_field", "acl_field", "public_group", "unplaced"],
    search: SearchKind::of::<crate::engine::served::PgSearch>(),
    why: "is not a setting of a served PostgreSQL table: with engine = \"pg\" name the `table`",
    vector_field: None,
};

/// The message of a pgvector key without `engine = "pg"`.
pub const ONLY: &str = "is a pgvector setting: it needs engine = \"pg\"";

#[derive(Debug)]
pub struct PgVector {
    pub model: String,
    pub index: PgVectorIndex,
    pub iterative_scan: IterativeScan,
    pub force_index: bool,
}

/// The table and the exact scan over the same vectors.
struct Built {
    table: PgTable,
    exact: ExactIndex,
}

/// A vector index in PostgreSQL + pgvector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum PgVectorIndex {
    /// No vector index: the engine scans and sorts.
    Exact,
    Hnsw {
        m: usize,
        ef_construction: usize,
        ef_search: usize,
    },
    Ivfflat {
        lists: usize,
        probes: usize,
    },
}

/// A pgvector index and its query-time settings.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct PgSpec {
    pub index: PgVectorIndex,
    pub iterative_scan: IterativeScan,
    /// Planner scans off for the query, so the vector index is walked (`force_index`).
    #[serde(default)]
    pub force_index: bool,
}

impl DenseIndexKind for PgSpec {
    const TYPE: &'static str = "pg";
    const ENGINE: Option<EngineKind> = Some(crate::engine::pgvector::ENGINE);
    const KEYS: &'static [&'static str] =
        &["m", "ef_construction", "ef_search", "lists", "probes", "iterative_scan", "force_index"];

    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<PgSpec> {
        parse(combo, bad)
    }
}

impl DenseIndexSpec for PgSpec {
    fn kind(&self, model: &str) -> Box<dyn SourceKind> {
        let PgSpec { index, iterative_scan, force_index } = *self;
        Box::new(PgVector { model: model.into(), index, iterative_scan, force_index })
    }
}

/// A pgvector index and its query-time settings, within the ranges pgvector accepts.
fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<PgSpec> {
    let kind = choice(combo, "index", "exact", &[("exact", "exact"), ("hnsw", "hnsw"), ("ivfflat", "ivfflat")], bad)?;
    let only_for =
        |keys: &[&str], index: &str| forbid(combo, keys, &format!("only applies to index = \"{index}\""), bad);
    let scans: Vec<(&str, IterativeScan)> = IterativeScan::ALL.iter().map(|s| (s.as_str(), *s)).collect();
    let iterative_scan = choice(combo, "iterative_scan", IterativeScan::Off, &scans, bad)?;
    let index = match kind {
        "hnsw" => {
            only_for(&["lists", "probes"], "ivfflat")?;
            let (m, ef_construction, ef_search) = hnsw_params(combo, bad)?;
            if !(2..=100).contains(&m) {
                return Err(bad(combo.span_of("m"), "pgvector's `m` must be between 2 and 100".into()));
            }
            if !(4..=1000).contains(&ef_construction) || ef_construction < 2 * m {
                return Err(bad(
                    combo.span_of("ef_construction"),
                    "pgvector's `ef_construction` must be between 4 and 1000, and at least 2·m".into(),
                ));
            }
            if !(1..=1000).contains(&ef_search) {
                return Err(bad(
                    combo.span_of("ef_search"),
                    "pgvector's `ef_search` must be between 1 and 1000".into(),
                ));
            }
            PgVectorIndex::Hnsw { m, ef_construction, ef_search }
        }
        "ivfflat" => {
            only_for(&HNSW_KEYS, "hnsw")?;
            if iterative_scan == IterativeScan::StrictOrder {
                return Err(bad(
                    combo.span_of("iterative_scan"),
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
        _ => {
            only_for(&HNSW_KEYS, "hnsw")?;
            only_for(&["lists", "probes"], "ivfflat")?;
            forbid(combo, &["iterative_scan", "force_index"], "applies to an hnsw or ivfflat index", bad)?;
            PgVectorIndex::Exact
        }
    };
    Ok(PgSpec { index, iterative_scan, force_index: boolean(combo, "force_index", bad)? })
}

impl PgVector {
    /// What the table's index is built with, and how a query walks it.
    fn build_and_query(&self) -> (VectorBuild, VectorQuery) {
        let (build, ef_search, probes) = match self.index {
            PgVectorIndex::Exact => (VectorBuild::Exact, 0, 0),
            PgVectorIndex::Hnsw { m, ef_construction, ef_search } => {
                (VectorBuild::Hnsw { m, ef_construction }, ef_search, 0)
            }
            PgVectorIndex::Ivfflat { lists, probes } => (VectorBuild::Ivfflat { lists }, 0, probes),
        };
        let query =
            VectorQuery { ef_search, probes, iterative_scan: self.iterative_scan, force_index: self.force_index };
        (build, query)
    }
}

impl SourceKind for PgVector {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    fn engine(&self) -> Option<EngineKind> {
        PgSpec::ENGINE
    }

    fn label(&self) -> String {
        let scan = self.iterative_scan.as_str();
        let mut label = match self.index {
            PgVectorIndex::Exact => format!("dense({},pg exact", self.model),
            PgVectorIndex::Hnsw { m, ef_construction, ef_search } => {
                format!("dense({},pg hnsw,m={m},efc={ef_construction},ef={ef_search},iterative_scan={scan}", self.model)
            }
            PgVectorIndex::Ivfflat { lists, probes } => {
                format!("dense({},pg ivfflat,lists={lists},probes={probes},iterative_scan={scan}", self.model)
            }
        };
        if self.force_index {
            label.push_str(",force_index");
        }
        label + ")"
    }

    fn config(&self, out: &mut Config) {
        out.push(("model", self.model.clone()));
        // A hybrid's full-text side has named the engine already.
        if !out.iter().any(|(k, _)| *k == "engine") {
            out.push(("engine", "pg".into()));
        }
        match self.index {
            PgVectorIndex::Exact => out.push(("index", "exact".into())),
            PgVectorIndex::Hnsw { m, ef_construction, ef_search } => {
                super::hnsw::config(out, m, ef_construction, ef_search)
            }
            PgVectorIndex::Ivfflat { lists, probes } => super::ivf_config(out, "ivfflat", lists, probes),
        }
        if self.index != PgVectorIndex::Exact {
            out.push(("iterative_scan", self.iterative_scan.as_str().into()));
            out.push(("force_index", self.force_index.to_string()));
        }
    }

    fn index_identity(&self) -> IndexIdentity {
        IndexIdentity::of::<Built>((self.model.clone(), self.build_and_query().0))
    }

    fn index_name(&self) -> String {
        format!("pg vectors({},{})", self.model, self.build_and_query().0)
    }

    fn graph(&self) -> Option<(usize, usize, usize)> {
        match self.index {
            PgVectorIndex::Hnsw { m, ef_construction, ef_search } => Some((m, ef_construction, ef_search)),
            PgVectorIndex::Exact | PgVectorIndex::Ivfflat { .. } => None,
        }
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let (build, _) = self.build_and_query();
        let (info, passages) = input.vectors();
        let key = engine_key("pg-vector", input, &build);
        let engine = input.engines.expect::<PgEngine>();
        let table = engine.vector_table(&key[..24], passages, info.dim, input.acl, build)?;
        let record = engine_record(table.build_seconds, table.reused);
        Ok(BuiltIndex { bytes: table.bytes, index: Box::new(Built { table, exact: exact_of(input) }), record })
    }

    fn source<'a>(&self, index: &'a BuiltIndex, engines: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        let Built { table, exact } = index.get::<Built>();
        let engine = engines.expect::<PgEngine>();
        let (build, query) = self.build_and_query();
        Arc::new(PgVectorSource { engine, table, exact, build, query })
    }
}
