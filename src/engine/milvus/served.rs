//! A Milvus collection the team serves, measured as it is: their fields, vectors, ACL array
//! and index, searched with their metric and the experiment's `ef` or `nprobe`. Nothing is
//! created, loaded, inserted or dropped. Milvus cannot be told to ignore a built index, so the
//! oracle is an exact scan of the same rows as the server holds them (read once, with their
//! vectors and groups), filtered by the same groups.
//!
//! Field names are checked to be identifiers before they go into an expression; every group
//! name is a string literal.

use std::collections::HashMap;
use std::sync::Arc;

use super::proto::{self, data_type::*, kv, scalar_field::Data};
use super::{as_asked, fail, string_literal, Client, MilvusEndpoint, MilvusEngine};
use crate::chunkers::served::{RowChunks, ServedRows};
use serde::{Deserialize, Serialize};

use crate::engine::registry::{OpenedServed, RunningEngine, ServedIndex, ServedSearchKind};
use crate::engine::scan::ServedScan;
use crate::error::Result;
use crate::grid::{positive, Bad, Combo};
use crate::retrieve::hits::{top_hits, Hit};
use crate::retrieve::source::{Query, RankingSource, Restriction, Side, SourceScore};
use crate::vocab::{Distance, INDEX_UNUSED};

/// The search parameters of a served collection: HNSW's `ef` or IVF's `nprobe`; the index's own
/// when not given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MilvusSearch {
    pub ef_search: Option<usize>,
    pub probes: Option<usize>,
}

impl ServedSearchKind for MilvusSearch {
    const KEYS: &'static [&'static str] = &["ef_search", "probes"];

    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<MilvusSearch> {
        Ok(MilvusSearch { ef_search: positive(combo, "ef_search", bad)?, probes: positive(combo, "probes", bad)? })
    }

    fn settings(&self) -> Vec<(&'static str, String)> {
        let count = |v: Option<usize>| v.map(|v| v.to_string()).unwrap_or_default();
        vec![("ef_search", count(self.ef_search)), ("probes", count(self.probes))]
    }
}

/// Rows per query: Milvus refuses an offset plus limit above 16,384.
const PAGE: usize = 16_384;

/// Whether `name` can stand in a Milvus expression as a field name.
fn identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A collection's fields: name → (data type, element type, dimension), and its primary key.
struct Fields {
    types: HashMap<String, (i32, i32, usize)>,
    primary: (String, i32),
}

fn fields(client: &Client, collection: &str) -> Result<Fields> {
    let missing = |why: String| {
        fail(format!("collection {collection} is not on the experiment's Milvus (or its user may not see it): {why}"))
    };
    let described =
        client.describe(collection).map_err(|e| missing(e.to_string()))?.ok_or_else(|| missing("not found".into()))?;
    let schema = described.schema.unwrap_or_default();
    let mut types = HashMap::new();
    let mut primary = None;
    for f in schema.fields {
        let dim = f.type_params.iter().find(|p| p.key == "dim").and_then(|p| p.value.parse().ok()).unwrap_or(0);
        if f.is_primary_key {
            primary = Some((f.name.clone(), f.data_type));
        }
        types.insert(f.name, (f.data_type, f.element_type, dim));
    }
    let primary = primary.ok_or_else(|| fail(format!("collection {collection} has no primary key")))?;
    Ok(Fields { types, primary })
}

impl Fields {
    /// The type of `field` (its role in messages), or an error naming the collection's fields.
    fn of(&self, collection: &str, field: &str, role: &str) -> Result<(i32, i32, usize)> {
        if !identifier(field) {
            return Err(fail(format!("{role} {field:?} is not a field name Milvus's expressions can carry")));
        }
        self.types.get(field).copied().ok_or_else(|| {
            let mut names: Vec<&str> = self.types.keys().map(String::as_str).collect();
            names.sort();
            fail(format!("collection {collection} has no field {field:?} ({role}); its fields: {}", names.join(", ")))
        })
    }
}

/// The values of a scalar field as strings (ids and texts), row by row.
/// The rows `collection` counts (`count(*)`, strongly consistent); `None` when the answer holds
/// no number.
pub(super) fn count(client: &Client, collection: &str) -> Result<Option<usize>> {
    let request = proto::QueryRequest {
        collection_name: collection.into(),
        expr: String::new(),
        output_fields: vec!["count(*)".into()],
        query_params: Vec::new(),
        consistency_level: 0,
    };
    let counted: proto::QueryResults = client.call("Query", request)?;
    Ok(counted.fields_data.first().map(strings).transpose()?.and_then(|c| c.first()?.parse::<usize>().ok()))
}

fn strings(data: &proto::FieldData) -> Result<Vec<String>> {
    match data.scalars.as_ref().and_then(|s| s.data.as_ref()) {
        Some(Data::Strings(s)) => Ok(s.data.clone()),
        Some(Data::Long(l)) => Ok(l.data.iter().map(i64::to_string).collect()),
        Some(Data::Int(i)) => Ok(i.data.iter().map(i32::to_string).collect()),
        _ => Err(fail(format!("field {} is not text or an integer", data.field_name))),
    }
}

/// The values of an array-of-strings field, row by row.
fn string_arrays(data: &proto::FieldData) -> Result<Vec<Vec<String>>> {
    match data.scalars.as_ref().and_then(|s| s.data.as_ref()) {
        Some(Data::Array(a)) => a
            .data
            .iter()
            .map(|row| match &row.data {
                Some(Data::Strings(s)) => Ok(s.data.clone()),
                None => Ok(Vec::new()),
                _ => Err(fail(format!("field {} is not an array of text", data.field_name))),
            })
            .collect(),
        _ => Err(fail(format!("field {} is not an array", data.field_name))),
    }
}

/// The field named `name` among a response's fields.
fn named<'d>(fields: &'d [proto::FieldData], name: &str) -> Result<&'d proto::FieldData> {
    fields.iter().find(|f| f.field_name == name).ok_or_else(|| fail(format!("the response has no field {name}")))
}

/// Every row of `collection`: the `output` fields, page by page along the primary key; the
/// count is checked against the collection's own, so a page Milvus cut short is an error.
fn all_rows(
    client: &Client,
    collection: &str,
    primary: &(String, i32),
    output: &[&str],
) -> Result<Vec<proto::FieldData>> {
    let (pk, pk_type) = primary;
    let mut out: Vec<proto::FieldData> = Vec::new();
    let mut after: Option<String> = None;
    let mut outputs: Vec<String> = output.iter().map(|s| s.to_string()).collect();
    if !outputs.contains(pk) {
        outputs.push(pk.clone());
    }
    let mut rows = 0usize;
    loop {
        let expr = match (&after, *pk_type == VARCHAR) {
            (None, true) => format!("{pk} >= \"\""),
            // Milvus's parser cannot read i64::MIN; a row keyed by it fails the count below.
            (None, false) => format!("{pk} >= {}", i64::MIN + 1),
            (Some(last), true) => format!("{pk} > {}", string_literal(last)),
            (Some(last), false) => format!("{pk} > {last}"),
        };
        let request = proto::QueryRequest {
            collection_name: collection.into(),
            expr,
            output_fields: outputs.clone(),
            query_params: vec![kv("limit", PAGE.to_string()), kv("offset", "0")],
            consistency_level: 0,
        };
        let page: proto::QueryResults = client.call("Query", request)?;
        let keys = strings(named(&page.fields_data, pk)?)?;
        let n = keys.len();
        rows += n;
        // The largest key read so far: the next page starts after it.
        let last = if *pk_type == VARCHAR {
            keys.iter().max().cloned()
        } else {
            keys.iter().filter_map(|k| k.parse::<i64>().ok()).max().map(|k| k.to_string())
        };
        append(&mut out, page.fields_data);
        if n < PAGE {
            break;
        }
        after = last;
    }
    let count = count(client, collection)?;
    if count != Some(rows) {
        return Err(fail(format!("collection {collection}: read {rows} rows, it counts {count:?}: it changed while it was read, or a page was cut short")));
    }
    Ok(out)
}

/// `page`'s columns appended to `out`'s, field by field.
fn append(out: &mut Vec<proto::FieldData>, page: Vec<proto::FieldData>) {
    if out.is_empty() {
        *out = page;
        return;
    }
    for (into, from) in out.iter_mut().zip(page) {
        match (into.scalars.as_mut().and_then(|s| s.data.as_mut()), from.scalars.and_then(|s| s.data)) {
            (Some(Data::Strings(a)), Some(Data::Strings(b))) => a.data.extend(b.data),
            (Some(Data::Long(a)), Some(Data::Long(b))) => a.data.extend(b.data),
            (Some(Data::Int(a)), Some(Data::Int(b))) => a.data.extend(b.data),
            (Some(Data::Array(a)), Some(Data::Array(b))) => a.data.extend(b.data),
            _ => {}
        }
        if let (Some(a), Some(b)) =
            (into.vectors.as_mut().and_then(|v| v.float_vector.as_mut()), from.vectors.and_then(|v| v.float_vector))
        {
            a.data.extend(b.data);
        }
    }
}

/// Every row of a served collection as (document id, text), read once for its chunk set.
pub fn milvus_rows(endpoint: &MilvusEndpoint, rows: &ServedRows) -> Result<Vec<(String, String)>> {
    let client = endpoint.client()?;
    let fields = fields(&client, &rows.source)?;
    fields.of(&rows.source, &rows.id_field, "id_field")?;
    fields.of(&rows.source, &rows.text_field, "text_field")?;
    let read = all_rows(&client, &rows.source, &fields.primary, &[&rows.id_field, &rows.text_field])?;
    let ids = strings(named(&read, &rows.id_field)?)?;
    let texts = strings(named(&read, &rows.text_field)?)?;
    Ok(ids.into_iter().zip(texts).collect())
}

/// A served collection as found: its fields checked, the metric its index searches by, and its
/// rows as the oracle scans them.
pub struct MilvusServed {
    collection: String,
    id: String,
    text: String,
    vector: String,
    acl: Option<String>,
    /// The vector index: `index_type` and its build parameters.
    index: String,
    /// Whether the index searches exactly (FLAT): its queries are asked as they are.
    exact: bool,
    pub bytes: u64,
    chunk_of: RowChunks,
    /// The rows as read, the oracle's exact scan.
    scan: ServedScan,
}

impl MilvusEngine {
    /// Finds the served collection of `spec` and checks it (fields present and typed as a search
    /// reads them, the vector field of `dim` dimensions, indexed and loaded), and reads its rows
    /// for the oracle; `chunks` are the chunk set's (document id, text, whether it spans its
    /// document). Reads only.
    pub fn open_collection(
        &self,
        spec: &ServedIndex,
        dim: usize,
        chunks: &[(String, String, bool)],
    ) -> Result<MilvusServed> {
        let collection = &spec.rows.source;
        let client = &self.client;
        let fields = fields(client, collection)?;
        fields.of(collection, &spec.rows.id_field, "id_field")?;
        fields.of(collection, &spec.rows.text_field, "text_field")?;
        let (vector_type, _, vector_dim) = fields.of(collection, &spec.vector_field, "vector_field")?;
        if vector_type != FLOAT_VECTOR || vector_dim != dim {
            return Err(fail(format!(
                "collection {collection}: field {:?} holds {vector_dim}-dimensional vectors (type {vector_type}), the experiment's model makes {dim}: the questions must be embedded by the model that embedded the rows",
                spec.vector_field
            )));
        }
        if let Some(acl) = &spec.acl_field {
            let (t, element, _) = fields.of(collection, acl, "acl_field")?;
            if t != ARRAY || element != VARCHAR {
                return Err(fail(format!(
                    "collection {collection}: field {acl:?} is not an array of VarChar; an acl_field holds group names"
                )));
            }
        }
        let state: proto::GetLoadStateResponse =
            client.call("GetLoadState", proto::GetLoadStateRequest { collection_name: collection.clone() })?;
        if state.state != 3 {
            return Err(fail(format!(
                "collection {collection} is not loaded: a served collection is measured as it is served, and loading it is the team's to do"
            )));
        }
        let described: proto::DescribeIndexResponse = client.call(
            "DescribeIndex",
            proto::DescribeIndexRequest { collection_name: collection.clone(), field_name: spec.vector_field.clone() },
        )?;
        let index = described
            .index_descriptions
            .into_iter()
            .find(|d| d.field_name == spec.vector_field)
            .ok_or_else(|| fail(format!("collection {collection} has no index on {:?}", spec.vector_field)))?;
        let param = |key: &str| index.params.iter().find(|p| p.key == key).map(|p| p.value.clone()).unwrap_or_default();
        let metric = match param("metric_type").to_uppercase().as_str() {
            "COSINE" => Distance::Cosine,
            "L2" => Distance::L2,
            "IP" => Distance::Ip,
            other => return Err(fail(format!("collection {collection}: metric {other:?} is not one ragsweep scores"))),
        };
        let mut output: Vec<&str> = vec![&spec.rows.id_field, &spec.rows.text_field, &spec.vector_field];
        output.extend(spec.acl_field.as_deref());
        let read = all_rows(client, collection, &fields.primary, &output)?;
        let ids = strings(named(&read, &spec.rows.id_field)?)?;
        let texts = strings(named(&read, &spec.rows.text_field)?)?;
        let vectors = named(&read, &spec.vector_field)?
            .vectors
            .as_ref()
            .and_then(|v| v.float_vector.as_ref())
            .map(|f| f.data.clone())
            .unwrap_or_default();
        let row_groups = match &spec.acl_field {
            Some(acl) => string_arrays(named(&read, acl)?)?,
            None => vec![Vec::new(); ids.len()],
        };
        let chunk_of = RowChunks::new(chunks, spec.rows.whole_document_when_not_found);
        let row_chunk = ids
            .into_iter()
            .zip(&texts)
            .map(|(doc, text)| {
                chunk_of.get(&doc, text).ok_or_else(|| {
                    fail(format!("collection {collection} changed between reading its rows and its vectors"))
                })
            })
            .collect::<Result<Vec<u32>>>()?;
        let bytes = (vectors.len() * 4 + texts.iter().map(String::len).sum::<usize>()) as u64;
        let what = format!("collection {collection}");
        let has_acl = spec.acl_field.is_some();
        let public = spec.public_group.clone();
        let scan = ServedScan::new("milvus", what, metric, dim, vectors, row_chunk, row_groups, has_acl, public)?;
        Ok(MilvusServed {
            collection: collection.clone(),
            id: spec.rows.id_field.clone(),
            text: spec.rows.text_field.clone(),
            vector: spec.vector_field.clone(),
            acl: spec.acl_field.clone(),
            index: format!("{} {}", param("index_type"), param("params")).trim().to_string(),
            exact: param("index_type").eq_ignore_ascii_case("FLAT"),
            bytes,
            chunk_of,
            scan,
        })
    }
}

/// A search of a served collection with the experiment's `ef` or `nprobe` (none: the index's
/// own search parameters).
pub struct MilvusServedSource<'a> {
    pub engine: &'a MilvusEngine,
    pub served: &'a MilvusServed,
    pub search: MilvusSearch,
}

impl MilvusServedSource<'_> {
    fn params(&self, depth: usize) -> String {
        match (self.search.ef_search, self.search.probes) {
            (Some(ef), _) => format!("{{\"ef\": {}}}", ef.max(depth)),
            (None, Some(nprobe)) => format!("{{\"nprobe\": {nprobe}}}"),
            (None, None) => "{}".into(),
        }
    }

    /// Milvus's score as a score, higher better: L2 distances negated.
    fn score(&self, milvus: f32) -> f32 {
        match self.served.scan.metric {
            Distance::L2 => -milvus,
            Distance::Cosine | Distance::Ip => milvus,
        }
    }
}

impl RankingSource for MilvusServedSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        use prost::Message;
        let s = self.served;
        let filter = match restrict {
            None => String::new(),
            Some(r) => {
                let groups: Vec<String> = s.scan.asked(r)?.iter().map(|g| string_literal(g)).collect();
                format!("array_contains_any({}, [{}])", s.acl.as_deref().unwrap_or_default(), groups.join(", "))
            }
        };
        let vector = as_asked(query.vector, s.exact);
        let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        let group = proto::PlaceholderGroup {
            placeholders: vec![proto::PlaceholderValue { tag: "$0".into(), r#type: 101, values: vec![bytes] }],
        };
        let metric = match s.scan.metric {
            Distance::Cosine => "COSINE",
            Distance::L2 => "L2",
            Distance::Ip => "IP",
        };
        let request = proto::SearchRequest {
            collection_name: s.collection.clone(),
            dsl: filter,
            placeholder_group: group.encode_to_vec(),
            dsl_type: 1,
            output_fields: vec![s.id.clone(), s.text.clone()],
            search_params: vec![
                kv("anns_field", s.vector.clone()),
                kv("topk", depth.to_string()),
                kv("metric_type", metric),
                kv("params", self.params(depth)),
                kv("round_decimal", "-1"),
                kv("offset", "0"),
            ],
            nq: 1,
            consistency_level: 0,
            // The collection's own consistency, as the team's application searches it.
            use_default_consistency: true,
        };
        let found: proto::SearchResults = self.engine.client.call("Search", request)?;
        let Some(results) = found.results else { return Ok(Vec::new()) };
        if results.scores.is_empty() {
            return Ok(Vec::new());
        }
        let ids = strings(named(&results.fields_data, &s.id)?)?;
        let texts = strings(named(&results.fields_data, &s.text)?)?;
        let scored =
            ids.into_iter().zip(texts).zip(results.scores).map(|((doc, text), score)| (doc, text, self.score(score)));
        let ranked = s.chunk_of.ranked(scored).map_err(|doc| {
            fail(format!(
                "collection {}: a search returned a row of document {doc} that was not there when the run read it: it changed during the run",
                s.collection
            ))
        })?;
        let hits = ranked.into_iter().map(|(chunk, score)| Hit { chunk, score }).collect();
        Ok(top_hits(hits, depth))
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

    fn plan(&self, _query: &Query<'_>, _depth: usize, _restrict: Option<&Restriction<'_>>) -> Result<Option<String>> {
        let index = &self.served.index;
        if index.split_whitespace().next().is_some_and(|t| t.eq_ignore_ascii_case("FLAT")) {
            // Every vector compared, indexed or not: exact, with no index to leave unused.
            return Ok(Some("flat (exact)".into()));
        }
        let (indexed, all) = self.engine.indexed_rows(&self.served.collection)?;
        Ok(Some(if indexed == all {
            format!("{index} index")
        } else if indexed == 0 {
            format!("brute force (segments too small to index){INDEX_UNUSED}")
        } else {
            format!("{index} index on {indexed} of {all} rows, brute force on the rest")
        }))
    }

    fn oracle(&self) -> Option<Arc<dyn RankingSource + '_>> {
        Some(self.served.scan.oracle())
    }
}

impl OpenedServed for MilvusServed {
    fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Its vector index and metric, and the rows the oracle scans.
    fn describe(&self, _spec: &ServedIndex) -> String {
        format!("index {}; metric {}; {} rows", self.index, self.scan.metric.as_str(), self.scan.rows())
    }

    fn source<'a>(&'a self, engine: &'a dyn RunningEngine, spec: &ServedIndex) -> Arc<dyn RankingSource + 'a> {
        let engine = engine.downcast::<MilvusEngine>().expect("a served collection is searched by its engine");
        Arc::new(MilvusServedSource { engine, served: self, search: *spec.search() })
    }
}
