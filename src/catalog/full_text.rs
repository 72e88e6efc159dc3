//! PostgreSQL full-text search: `kind = "fulltext"` with `engine = "pg"`, and the lexical side
//! of a hybrid served by PostgreSQL (`tsvector` with the analyzer's text search configuration,
//! ranked by `ts_rank_cd`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::LexicalSpec;
use super::{analyzer_from, engine_record, Bad, BuiltIndex, Config, IndexIdentity, IndexInput, SourceKind};
use crate::analyze::AnalyzerKind;
use crate::engine::pgvector::{PgEngine, PgTable, PgTextSource};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{choice, Combo};
use crate::retrieve::source::RankingSource;
use crate::stages::cache;
use crate::vocab::{Bm25Params, EngineKind, Terms};

impl Terms {
    pub fn as_str(self) -> &'static str {
        match self {
            Terms::Any => "any",
            Terms::All => "all",
        }
    }
}

/// Its keys in a `[[retrievers]]` table (besides `engine`).
pub const KEYS: [&str; 2] = ["analyzer", "terms"];

/// The engine whose full-text search it is.
pub const ENGINE: Option<EngineKind> = Some(crate::engine::pgvector::ENGINE);

/// PostgreSQL full-text search (`tsvector` with the analyzer's text search configuration,
/// ranked by `ts_rank_cd`); what the manifest records of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FullText {
    pub analyzer: AnalyzerKind,
    pub terms: Terms,
}

/// `analyzer`, and whether a chunk must match `any` (the default) or `all` of the terms.
pub fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<LexicalSpec> {
    let terms = choice(combo, "terms", Terms::Any, &[("any", Terms::Any), ("all", Terms::All)], bad)?;
    Ok(LexicalSpec { analyzer: analyzer_from(combo, bad)?, params: Bm25Params::default(), full_text: Some(terms) })
}

impl SourceKind for FullText {
    fn engine(&self) -> Option<EngineKind> {
        ENGINE
    }

    fn label(&self) -> String {
        format!("pg fulltext({},{})", self.analyzer, self.terms.as_str())
    }

    fn config(&self, out: &mut Config) {
        out.push(("analyzer", self.analyzer.to_string()));
        out.push(("engine", "pg".into()));
        out.push(("terms", self.terms.as_str().into()));
    }

    fn index_identity(&self) -> IndexIdentity {
        IndexIdentity::of::<PgTable>(self.analyzer)
    }

    fn index_name(&self) -> String {
        format!("pg fulltext({})", self.analyzer)
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let key = cache::key("pg-text", &[format!("{:?}", self.analyzer).as_bytes(), input.text_key, input.acl_key]);
        let texts: Vec<String> = (0..input.chunks).map(input.text).collect();
        let engine = input.engines.expect::<PgEngine>();
        let table = engine.text_table(&key[..24], &texts, input.acl, self.analyzer)?;
        let record = engine_record(table.build_seconds, table.reused);
        Ok(BuiltIndex { bytes: table.bytes, index: Box::new(table), record })
    }

    fn source<'a>(&self, index: &'a BuiltIndex, engines: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        let engine = engines.expect::<PgEngine>();
        Arc::new(PgTextSource { engine, table: index.get::<PgTable>(), analyzer: self.analyzer, terms: self.terms })
    }
}
