//! An index the team already serves, measured as it is: a pgvector table with the team's own
//! rows, vectors, ACL field and index settings, searched the way their application searches
//! it. Nothing is created, uploaded or written; the oracle is the same server's exact search
//! (index scans off) over the same rows, so parity needs no copy of the vectors.
//!
//! Field and table names are identifiers quoted for PostgreSQL; every value (the question's
//! vector, the user's groups) travels as a parameter.

use std::collections::HashMap;
use std::sync::Arc;

use crate::chunkers::served::RowChunks;
use crate::engine::pg::{fail, found, quoted, text_array_value, vector_literal};
use crate::engine::pgvector::PgEngine;
use serde::{Deserialize, Serialize};

use crate::engine::registry::{OpenedServed, RunningEngine, ServedIndex, ServedSearchKind};
use crate::error::Result;
use crate::grid::{boolean, choice, positive, Bad, Combo};
use crate::retrieve::hits::{top_hits, Hit};
use crate::retrieve::source::{Query, RankingSource, Restriction, ScoreNode, Side, SourceScore};
use crate::vocab::{Distance, IterativeScan, INDEX_UNUSED};

/// The query-time settings of a search of a served table; the server's own where not given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PgSearch {
    /// The distance the search orders by; the index's own when not given.
    pub distance: Option<Distance>,
    /// `hnsw.ef_search`.
    pub ef_search: Option<usize>,
    /// `ivfflat.probes`.
    pub probes: Option<usize>,
    /// Sequential and bitmap scans off, so the vector index is walked.
    #[serde(default)]
    pub force_index: bool,
    /// `hnsw.iterative_scan` and `ivfflat.iterative_scan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterative_scan: Option<IterativeScan>,
}

impl ServedSearchKind for PgSearch {
    const KEYS: &'static [&'static str] = &["distance", "ef_search", "probes", "force_index", "iterative_scan"];

    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<PgSearch> {
        let distances: Vec<(&str, Option<Distance>)> = Distance::NAMES.iter().map(|(n, d)| (*n, Some(*d))).collect();
        let scans: Vec<(&str, Option<IterativeScan>)> =
            IterativeScan::ALL.iter().map(|s| (s.as_str(), Some(*s))).collect();
        Ok(PgSearch {
            distance: choice(combo, "distance", None, &distances, bad)?,
            ef_search: positive(combo, "ef_search", bad)?,
            probes: positive(combo, "probes", bad)?,
            force_index: boolean(combo, "force_index", bad)?,
            iterative_scan: choice(combo, "iterative_scan", None, &scans, bad)?,
        })
    }

    fn settings(&self) -> Vec<(&'static str, String)> {
        let count = |v: Option<usize>| v.map(|v| v.to_string()).unwrap_or_default();
        vec![
            ("distance", self.distance.map(|d| d.as_str().to_string()).unwrap_or_default()),
            ("ef_search", count(self.ef_search)),
            ("probes", count(self.probes)),
            ("iterative_scan", self.iterative_scan.map(|s| s.as_str().to_string()).unwrap_or_default()),
            ("force_index", self.force_index.to_string()),
        ]
    }
}

/// A served table as found: its fields checked against what a search reads, its vector index
/// and the distance that index orders by, and a map from rows back to chunks.
pub struct PgServed {
    table: String,
    id: String,
    text: String,
    vector: String,
    acl: Option<String>,
    public_group: Option<String>,
    /// `hnsw (…)` or `ivfflat (…)`: the vector index definition's method and options, if any.
    pub index: Option<String>,
    /// The distance the index orders by, if it has one.
    index_distance: Option<Distance>,
    pub bytes: u64,
    /// Each row's chunk, by its document id and text.
    chunk_of: RowChunks,
    /// Each chunk's document id.
    doc_of: Vec<String>,
}

/// pgvector's distance operator and operator class of a distance.
fn operator(distance: Distance) -> (&'static str, &'static str) {
    match distance {
        Distance::Cosine => ("<=>", "vector_cosine_ops"),
        Distance::L2 => ("<->", "vector_l2_ops"),
        Distance::Ip => ("<#>", "vector_ip_ops"),
    }
}

impl PgEngine {
    /// Finds the served table of `spec` and checks it (fields present and typed as a search
    /// reads them, the vector field of `dim` dimensions, a distance to order by); `chunks` are the chunk set's
    /// (document id, text, whether it spans its document) in ordinal order. Reads only.
    pub fn open_table(&self, spec: &ServedIndex, dim: usize, chunks: &[(String, String, bool)]) -> Result<PgServed> {
        let table = &spec.rows.source;
        self.with(|c| {
            let oid = found(c, table)?;
            let columns = c.query_params(
                "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::oid AND attnum > 0 AND NOT attisdropped",
                &[&oid],
            )?;
            let types: HashMap<String, String> = columns
                .into_iter()
                .filter_map(|r| Some((r.first().cloned().flatten()?, r.get(1).cloned().flatten()?)))
                .collect();
            let type_of = |field: &str, role: &str| {
                types.get(field).cloned().ok_or_else(|| {
                    let mut names: Vec<&String> = types.keys().collect();
                    names.sort();
                    fail(format!(
                        "table {table} has no field {field:?} ({role}); its fields: {}",
                        names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                    ))
                })
            };
            type_of(&spec.rows.id_field, "id_field")?;
            type_of(&spec.rows.text_field, "text_field")?;
            let vector_type = type_of(&spec.vector_field, "vector_field")?;
            if vector_type != format!("vector({dim})") {
                return Err(fail(format!(
                    "table {table}: field {:?} is {vector_type}, the experiment's model makes vector({dim}): the questions must be embedded by the model that embedded the rows",
                    spec.vector_field
                )));
            }
            if let Some(acl) = &spec.acl_field {
                let acl_type = type_of(acl, "acl_field")?;
                if acl_type != "text[]" && acl_type != "character varying[]" {
                    return Err(fail(format!(
                        "table {table}: field {acl:?} is {acl_type}; an acl_field is an array of group names (text[])"
                    )));
                }
            }
            let defs = c.query_params("SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = $1::oid", &[&oid])?;
            let vector_index = defs.into_iter().filter_map(|r| r.into_iter().next().flatten()).find(|def| {
                (def.contains("USING hnsw") || def.contains("USING ivfflat"))
                    && (def.contains(&format!("({} ", spec.vector_field)) || def.contains(&format!("({} ", quoted(&spec.vector_field))))
            });
            let index_distance = vector_index.as_deref().and_then(|def| {
                Distance::NAMES.iter().map(|(_, d)| *d).find(|d| def.contains(operator(*d).1))
            });
            let index =
                vector_index.as_deref().map(|def| def.split_once(" USING ").map_or(def, |(_, m)| m).to_string());
            let size = c.query_params("SELECT pg_total_relation_size($1::oid)", &[&oid])?;
            let bytes = size.first().and_then(|r| r.first().cloned().flatten()).and_then(|s| s.parse().ok());
            let chunk_of = RowChunks::new(chunks, spec.rows.whole_document_when_not_found);
            let served = PgServed {
                table: quoted(table),
                id: quoted(&spec.rows.id_field),
                text: quoted(&spec.rows.text_field),
                vector: quoted(&spec.vector_field),
                acl: spec.acl_field.as_deref().map(quoted),
                public_group: spec.public_group.clone(),
                index,
                index_distance,
                bytes: bytes.unwrap_or(0),
                chunk_of,
                doc_of: chunks.iter().map(|(doc, _, _)| doc.clone()).collect(),
            };
            served.distance(spec.search::<PgSearch>().distance, table)?;
            Ok(served)
        })
    }
}

impl PgServed {
    /// Its vector index and the distance a search orders by (`asked`, else the index's).
    fn summary(&self, asked: Option<Distance>) -> String {
        let distance = asked.or(self.index_distance).map_or("none", Distance::as_str);
        match &self.index {
            Some(index) => format!("index {index}; distance {distance}"),
            None => format!("no vector index (every search scans); distance {distance}"),
        }
    }

    /// The distance a search orders by: the experiment's, else the index's.
    pub fn distance(&self, asked: Option<Distance>, table: &str) -> Result<Distance> {
        asked.or(self.index_distance).ok_or_else(|| {
            fail(format!(
                "table {table} has no vector index to read the distance from: say which (distance = \"cosine\", \"l2\" or \"ip\")"
            ))
        })
    }
}

/// A search of a served table, with the query-time settings the experiment gives (the
/// server's own otherwise).
pub struct PgServedSource<'a> {
    pub engine: &'a PgEngine,
    pub served: &'a PgServed,
    pub distance: Distance,
    pub search: PgSearch,
    /// Index scans off: the same server's exact search over the same rows.
    pub exact: bool,
}

impl PgServedSource<'_> {
    /// The session settings of a query (connections are pooled: each setting is set or reset).
    fn settings(&self) -> String {
        let set = |name: &str, value: Option<String>| match value {
            Some(v) => format!("SET {name} = {v}; "),
            None => format!("RESET {name}; "),
        };
        let PgSearch { ef_search, probes, force_index, iterative_scan, .. } = self.search;
        let scan = || iterative_scan.map(|s| s.as_str().to_string());
        let on = |yes: bool| if yes { "on" } else { "off" };
        let (index, others) = if self.exact { (false, true) } else { (true, !force_index) };
        format!(
            "SET enable_indexscan = {}; SET enable_seqscan = {}; SET enable_bitmapscan = {}; {}{}{}{}",
            on(index),
            on(others),
            on(others),
            set("hnsw.ef_search", ef_search.map(|v| v.to_string())),
            set("ivfflat.probes", probes.map(|v| v.to_string())),
            set("hnsw.iterative_scan", scan()),
            // IVFFlat has no strict order: the server's setting stays.
            set("ivfflat.iterative_scan", scan().filter(|s| s != "strict_order"))
        )
    }

    /// The query of a search of `depth` and its parameters: the question's vector, then the
    /// groups a restricted search asks for.
    fn sql(
        &self,
        query: &Query<'_>,
        depth: usize,
        restrict: Option<&Restriction<'_>>,
    ) -> Result<(String, Vec<String>)> {
        let s = self.served;
        let op = operator(self.distance).0;
        let mut params = vec![vector_literal(query.vector)];
        let filter = match (restrict, &s.acl) {
            (None, _) => String::new(),
            (Some(r), Some(acl)) => {
                let groups: Vec<&str> = r.groups.iter().map(String::as_str).chain(s.public_group.as_deref()).collect();
                params.push(text_array_value(&groups));
                format!(" WHERE {acl} && $2::text[]")
            }
            (Some(_), None) => {
                return Err(fail(format!("table {}: a filtered search needs its acl_field", s.table)));
            }
        };
        let sql = format!(
            "SELECT {id}::text, {text}::text, {v} {op} $1::vector FROM {t}{filter} ORDER BY {v} {op} $1::vector LIMIT {depth}",
            id = s.id,
            text = s.text,
            v = s.vector,
            t = s.table
        );
        Ok((sql, params))
    }

    /// The chunks of the rows `sql` returns (document id, text, distance), each once at its
    /// first row, with its score.
    fn hits(&self, settings: &str, sql: &str, params: &[String]) -> Result<Vec<Hit>> {
        let params: Vec<&str> = params.iter().map(String::as_str).collect();
        let rows = self.engine.with(|c| {
            c.query(settings)?;
            c.query_params(sql, &params)
        })?;
        let mut scored = Vec::with_capacity(rows.len());
        for row in rows {
            let field = |i: usize| row.get(i).cloned().flatten();
            let (Some(doc), Some(text), Some(distance)) = (field(0), field(1), field(2)) else {
                return Err(fail(format!(
                    "table {}: a NULL id, text or distance in a search's rows",
                    self.served.table
                )));
            };
            let distance: f64 = distance.parse().map_err(|_| fail("a non-numeric distance from the engine"))?;
            scored.push((doc, text, self.score(distance)));
        }
        // Rows with the same text in one document are one chunk, at its best place.
        let ranked = self.served.chunk_of.ranked(scored).map_err(|doc| {
            fail(format!(
                "table {}: a search returned a row of document {doc} that was not there when the run read the table: it changed during the run",
                self.served.table
            ))
        })?;
        Ok(ranked.into_iter().map(|(chunk, score)| Hit { chunk, score }).collect())
    }

    /// A distance as a score, higher better: cosine similarity, inner product, or −L2.
    fn score(&self, distance: f64) -> f32 {
        match self.distance {
            Distance::Cosine => (1.0 - distance) as f32,
            Distance::L2 | Distance::Ip => -distance as f32,
        }
    }
}

impl RankingSource for PgServedSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        let (sql, params) = self.sql(query, depth, restrict)?;
        Ok(top_hits(self.hits(&self.settings(), &sql, &params)?, depth))
    }

    fn plan(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Option<String>> {
        let (sql, params) = self.sql(query, depth, restrict)?;
        let params: Vec<&str> = params.iter().map(String::as_str).collect();
        let settings = self.settings();
        let plan = self.engine.with(|c| {
            c.query(&settings)?;
            c.query_params(&format!("EXPLAIN {sql}"), &params)
        })?;
        let text: Vec<String> = plan.into_iter().filter_map(|r| r.into_iter().next().flatten()).collect();
        let walks_index = text.iter().any(|l| l.contains("Index Scan using") && !l.contains("Bitmap"));
        let summary = if walks_index {
            "vector index".to_string()
        } else if text.iter().any(|l| l.contains("Bitmap Index Scan")) {
            "acl index, exact sort".to_string()
        } else {
            "sequential scan".to_string()
        };
        Ok(Some(if self.served.index.is_some() && !walks_index { summary + INDEX_UNUSED } else { summary }))
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        // The rows of the chunk's document, their distances as the engine computes them.
        let s = self.served;
        let doc = s.doc_of.get(chunk as usize).ok_or_else(|| fail(format!("no chunk {chunk} in table {}", s.table)))?;
        let sql = format!(
            "SELECT {id}::text, {text}::text, {v} {op} $1::vector FROM {t} WHERE {id}::text = $2::text",
            id = s.id,
            text = s.text,
            v = s.vector,
            op = operator(self.distance).0,
            t = s.table
        );
        let exact = "SET enable_indexscan = off; SET enable_seqscan = on; SET enable_bitmapscan = on";
        let hits = self.hits(exact, &sql, &[vector_literal(query.vector), doc.clone()])?;
        let score = hits.iter().find(|h| h.chunk == chunk).map(|h| h.score);
        let name = format!("{} distance of the row's vector and the question's, as a score", self.distance.as_str());
        Ok(SourceScore { score, parts: vec![ScoreNode::leaf(name, score)], bm25: None })
    }

    fn size_bytes(&self) -> u64 {
        self.served.bytes
    }

    fn side(&self) -> Side {
        Side::Dense
    }

    fn plans_each_depth(&self) -> bool {
        true
    }

    fn oracle(&self) -> Option<Arc<dyn RankingSource + '_>> {
        (!self.exact).then(|| {
            Arc::new(PgServedSource {
                engine: self.engine,
                served: self.served,
                distance: self.distance,
                search: PgSearch { force_index: false, iterative_scan: None, ..self.search },
                exact: true,
            }) as Arc<dyn RankingSource + '_>
        })
    }
}

impl OpenedServed for PgServed {
    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn describe(&self, spec: &ServedIndex) -> String {
        self.summary(spec.search::<PgSearch>().distance)
    }

    fn source<'a>(&'a self, engine: &'a dyn RunningEngine, spec: &ServedIndex) -> Arc<dyn RankingSource + 'a> {
        let engine = engine.downcast::<PgEngine>().expect("a served table is searched by its engine");
        let search = *spec.search::<PgSearch>();
        let distance = self.distance(search.distance, &spec.rows.source).expect("checked when opened");
        Arc::new(PgServedSource { engine, served: self, distance, search, exact: false })
    }
}
