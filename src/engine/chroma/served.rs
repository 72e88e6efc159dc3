//! A Chroma collection the team serves, measured as it is: each record's text (its document, or
//! a metadata key), its document id (a metadata key) and its groups (a metadata key holding an
//! array of strings), searched with the collection's own space and `ef_search` and the filter as
//! Chroma's `where` (`$contains` on the groups). Nothing is created, added or dropped. Chroma
//! cannot be told to skip its index, so the oracle is an exact scan of the records as read.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::{any_of, fail, ChromaEndpoint, ChromaEngine, COLLECTIONS};
use crate::chunkers::served::{RowChunks, ServedRows};
use crate::engine::registry::{OpenedServed, RunningEngine, ServedIndex};
use crate::engine::scan::ServedScan;
use crate::error::Result;
use crate::retrieve::hits::{top_hits, Hit};
use crate::retrieve::source::{Query, RankingSource, Restriction, Side, SourceScore};
use crate::vocab::Distance;

/// `text_field` naming Chroma's own document of a record instead of a metadata key.
pub const DOCUMENT: &str = "document";

/// Records read per request.
const PAGE: usize = 1000;

/// A record as a served row: its document id, text, groups and vector.
struct Record {
    doc: String,
    text: String,
    groups: Vec<String>,
    vector: Vec<f32>,
}

impl ChromaEngine {
    /// The id and description of collection `name`, or an error saying it is not on the server.
    fn served_collection(&self, name: &str) -> Result<(String, Value)> {
        let described = self.request("GET", &format!("{COLLECTIONS}/{name}"), None).map_err(|e| {
            fail(format!("collection {name} is not on the experiment's Chroma (default tenant and database): {e}"))
        })?;
        let id = described["id"].as_str().ok_or_else(|| fail(format!("collection {name} has no id")))?.to_string();
        Ok((id, described))
    }

    /// Every record of `rows.source`, page by page; their count checked against the collection's.
    fn records(&self, id: &str, rows: &ServedRows, acl: Option<&str>, vectors: bool) -> Result<Vec<Record>> {
        let name = &rows.source;
        let count = self.request("GET", &format!("{COLLECTIONS}/{id}/count"), None)?.as_u64().unwrap_or(0) as usize;
        let mut include = vec!["metadatas", "documents"];
        if vectors {
            include.push("embeddings");
        }
        let mut out = Vec::with_capacity(count);
        for offset in (0..count).step_by(PAGE) {
            let body = json!({"include": include, "limit": PAGE, "offset": offset});
            let page = self.request("POST", &format!("{COLLECTIONS}/{id}/get"), Some(&body))?;
            let ids = page["ids"].as_array().cloned().unwrap_or_default();
            for (i, record) in ids.iter().enumerate() {
                let metadata = &page["metadatas"][i];
                let missing = |what: &str| fail(format!("collection {name}: record {record} has no {what}"));
                let doc = crate::engine::field_text(metadata, &rows.id_field)
                    .ok_or_else(|| missing(&format!("metadata {:?} (its document id)", rows.id_field)))?;
                let text = if rows.text_field == DOCUMENT {
                    page["documents"][i].as_str().map(str::to_string)
                } else {
                    crate::engine::field_text(metadata, &rows.text_field)
                }
                .ok_or_else(|| missing(&format!("text in {:?}", rows.text_field)))?;
                let groups = match acl {
                    None => Vec::new(),
                    Some(key) => match metadata.get(key) {
                        Some(Value::Array(groups)) => {
                            groups.iter().filter_map(|g| g.as_str().map(str::to_string)).collect()
                        }
                        Some(Value::String(g)) => vec![g.clone()],
                        _ => Vec::new(),
                    },
                };
                let vector = page["embeddings"][i]
                    .as_array()
                    .map(|v| v.iter().map(|x| x.as_f64().unwrap_or(f64::NAN) as f32).collect())
                    .unwrap_or_default();
                out.push(Record { doc, text, groups, vector });
            }
        }
        if out.len() != count {
            return Err(fail(format!(
                "collection {name}: {} records read of {count}: it changed while it was read",
                out.len()
            )));
        }
        Ok(out)
    }

    /// Finds the served collection of `spec` and checks it (its vectors of `dim` dimensions, its
    /// space one ragsweep scores), and reads its records for the oracle; `chunks` are the chunk
    /// set's (document id, text, whether it spans its document). Reads only.
    pub fn open_collection(
        &self,
        spec: &ServedIndex,
        dim: usize,
        chunks: &[(String, String, bool)],
    ) -> Result<ChromaServed> {
        let name = &spec.rows.source;
        let (id, described) = self.served_collection(name)?;
        let hnsw = &described["configuration_json"]["hnsw"];
        let metric = match hnsw["space"].as_str().unwrap_or("l2") {
            "cosine" => Distance::Cosine,
            "ip" => Distance::Ip,
            "l2" => Distance::L2,
            other => return Err(fail(format!("collection {name}: space {other:?} is not one ragsweep scores"))),
        };
        if let Some(found) = described["dimension"].as_u64().filter(|&d| d as usize != dim) {
            return Err(fail(format!(
                "collection {name} holds {found}-dimensional vectors, the experiment's model makes {dim}: the questions must be embedded by the model that embedded the records"
            )));
        }
        let records = self.records(&id, &spec.rows, spec.acl_field.as_deref(), true)?;
        let chunk_of = RowChunks::new(chunks, spec.rows.whole_document_when_not_found);
        let row_chunk = records
            .iter()
            .map(|r| {
                chunk_of.get(&r.doc, &r.text).ok_or_else(|| {
                    fail(format!(
                        "collection {name} changed between reading its records for the chunks and for the oracle"
                    ))
                })
            })
            .collect::<Result<Vec<u32>>>()?;
        let bytes = records.iter().map(|r| r.vector.len() * 4 + r.text.len()).sum::<usize>() as u64;
        let (mut vectors, mut groups) = (Vec::with_capacity(records.len() * dim), Vec::with_capacity(records.len()));
        for r in records {
            vectors.extend(r.vector);
            groups.push(r.groups);
        }
        let settings = ["max_neighbors", "ef_construction", "ef_search"]
            .map(|k| format!("{k}={}", hnsw[k].as_u64().map_or_else(|| "?".into(), |v| v.to_string())))
            .join(", ");
        let what = format!("collection {name}");
        let (has_acl, public) = (spec.acl_field.is_some(), spec.public_group.clone());
        let scan = ServedScan::new("chroma", what, metric, dim, vectors, row_chunk, groups, has_acl, public)?;
        Ok(ChromaServed {
            id,
            name: name.clone(),
            id_field: spec.rows.id_field.clone(),
            text_field: spec.rows.text_field.clone(),
            acl_field: spec.acl_field.clone(),
            index: format!("hnsw ({settings})"),
            bytes,
            chunk_of,
            scan,
        })
    }
}

/// Every record of a served collection as (document id, text), read once for its chunk set.
pub fn chroma_rows(endpoint: &ChromaEndpoint, rows: &ServedRows) -> Result<Vec<(String, String)>> {
    let engine = ChromaEngine::connect(endpoint)?;
    let (id, _) = engine.served_collection(&rows.source)?;
    Ok(engine.records(&id, rows, None, false)?.into_iter().map(|r| (r.doc, r.text)).collect())
}

/// A served collection as found: where its fields are, its index, and its records as the
/// oracle scans them.
pub struct ChromaServed {
    id: String,
    name: String,
    id_field: String,
    text_field: String,
    acl_field: Option<String>,
    /// Its HNSW settings, as the collection holds them.
    index: String,
    pub bytes: u64,
    chunk_of: RowChunks,
    scan: ServedScan,
}

impl OpenedServed for ChromaServed {
    fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Its index and space, and the records the oracle scans.
    fn describe(&self, _spec: &ServedIndex) -> String {
        format!("index {}; space {}; {} records", self.index, self.scan.metric.as_str(), self.scan.rows())
    }

    fn source<'a>(&'a self, engine: &'a dyn RunningEngine, _spec: &ServedIndex) -> Arc<dyn RankingSource + 'a> {
        let engine = engine.downcast::<ChromaEngine>().expect("a served collection is searched by its engine");
        Arc::new(ChromaServedSource { engine, served: self })
    }
}

impl ChromaServed {
    /// The `where` of a restricted search: the groups field holds one of the asked groups.
    fn acl_where(&self, restrict: &Restriction<'_>) -> Result<Value> {
        let field = self.acl_field.as_deref().unwrap_or_default();
        Ok(any_of(self.scan.asked(restrict)?.into_iter().map(|g| json!({ field: {"$contains": g} })).collect()))
    }
}

/// A search of a served collection, as the team's application asks it.
pub struct ChromaServedSource<'a> {
    pub engine: &'a ChromaEngine,
    pub served: &'a ChromaServed,
}

impl RankingSource for ChromaServedSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        let s = self.served;
        let filter = restrict.map(|r| s.acl_where(r)).transpose()?;
        let found = self.engine.query(&s.id, query.vector, depth, filter, &["documents", "metadatas", "distances"])?;
        let metadatas = found["metadatas"][0].as_array().cloned().unwrap_or_default();
        let documents = found["documents"][0].as_array().cloned().unwrap_or_default();
        let distances = found["distances"][0].as_array().cloned().unwrap_or_default();
        let empty = Value::Object(Map::new());
        let rows = (0..distances.len())
            .map(|i| {
                let metadata = metadatas.get(i).unwrap_or(&empty);
                let text = if s.text_field == DOCUMENT {
                    documents.get(i).and_then(Value::as_str).map(str::to_string)
                } else {
                    crate::engine::field_text(metadata, &s.text_field)
                };
                let doc = crate::engine::field_text(metadata, &s.id_field);
                let d = distances[i].as_f64().unwrap_or(f64::NAN) as f32;
                // Chroma's distances: 1 − cosine, 1 − dot product, squared L2.
                let score = match s.scan.metric {
                    Distance::L2 => -d,
                    Distance::Cosine | Distance::Ip => 1.0 - d,
                };
                (doc.unwrap_or_default(), text.unwrap_or_default(), score)
            })
            .collect::<Vec<_>>();
        let ranked = s.chunk_of.ranked(rows).map_err(|doc| {
            fail(format!(
                "collection {}: a search returned a record of document {doc:?} that was not there when the run read it: it changed during the run",
                s.name
            ))
        })?;
        Ok(top_hits(ranked.into_iter().map(|(chunk, score)| Hit { chunk, score }).collect(), depth))
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        self.served.scan.explain(query, chunk)
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
        Some(self.served.scan.oracle())
    }
}
