//! OpenSearch's BM25: `kind = "bm25"` with `engine = "opensearch"`. The grid's chunks go into an
//! index on the team's cluster with the analyzer the experiment names — one of OpenSearch's own
//! (`standard`, `english`, `portuguese`, …) or a custom one as a table (`{ tokenizer = "standard",
//! filter = ["lowercase", "porter_stem"] }`) or its JSON — and `k1`/`b` as the index's BM25
//! similarity (OpenSearch's defaults, 1.2 and 0.75, when absent), so each analyzer × `k1` × `b`
//! is an index of its own. ragsweep's own BM25 over the same chunks is the cell to compare it with.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toml::Value as Toml;

use super::{engine_record, Bad, BuiltIndex, Config, IndexIdentity, IndexInput, SourceKind};
use crate::chunkers::served::{RowChunks, ServedRows};
use crate::engine::opensearch::served::{OpenSearchServedSource, PLACEHOLDER};
use crate::engine::opensearch::{OpenSearchEngine, OpenSearchIndex, OpenSearchLexicalSource};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{forbid, Combo};
use crate::retrieve::source::RankingSource;
use crate::stages::cache;
use crate::vocab::{Bm25Params, EngineKind};

/// Its keys in a `[[retrievers]]` table (besides `engine`).
pub const KEYS: [&str; 3] = ["analyzer", "k1", "b"];

/// The engine whose BM25 it is.
pub const ENGINE: Option<EngineKind> = Some(crate::engine::opensearch::ENGINE);

/// OpenSearch's built-in analyzers an experiment may name.
const BUILT_IN: [&str; 11] = [
    "standard",
    "simple",
    "whitespace",
    "stop",
    "english",
    "portuguese",
    "brazilian",
    "spanish",
    "french",
    "german",
    "italian",
];

/// An index of the grid's chunks on the cluster, searched with `match` on their text; what the
/// manifest records of it. `analyzer` is a built-in analyzer's name, or a custom analyzer's
/// definition as compact JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenSearchBm25 {
    pub analyzer: String,
    pub k1: f32,
    pub b: f32,
}

/// `analyzer` (`standard` when absent), `k1` and `b`.
pub fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<OpenSearchBm25> {
    let analyzer = match combo.get("analyzer") {
        None => "standard".to_string(),
        Some((Toml::String(name), span)) if !name.trim_start().starts_with('{') => {
            if !BUILT_IN.contains(&name.as_str()) {
                return Err(bad(
                    span,
                    format!(
                        "analyzer {name:?} is not one of OpenSearch's built-in analyzers ({}); a custom one is a table such as {{ tokenizer = \"standard\", filter = [\"lowercase\"] }}",
                        BUILT_IN.join(", ")
                    ),
                ));
            }
            name.clone()
        }
        Some((Toml::String(text), span)) => {
            let definition: Value = serde_json::from_str(text)
                .map_err(|e| bad(span.clone(), format!("`analyzer` is not a JSON object: {e}")))?;
            custom(definition, span, bad)?
        }
        Some((Toml::Table(table), span)) => {
            let definition = serde_json::to_value(table).expect("a TOML table is JSON");
            custom(definition, span, bad)?
        }
        Some((v, span)) => {
            return Err(bad(span, format!("`analyzer` is a name or a table, found {}", v.type_str())));
        }
    };
    let Bm25Params { k1, b } = super::bm25::params(combo, Bm25Params { k1: 1.2, b: 0.75 }, bad)?;
    Ok(OpenSearchBm25 { analyzer, k1, b })
}

/// A custom analyzer's definition, `type = "custom"` unless it names another, as compact JSON.
fn custom(mut definition: Value, span: std::ops::Range<usize>, bad: Bad<'_>) -> Result<String> {
    let Some(object) = definition.as_object_mut() else {
        return Err(bad(span, "`analyzer` as JSON is an object (a custom analyzer's definition)".into()));
    };
    if !object.contains_key("tokenizer") && !object.contains_key("type") {
        return Err(bad(span, "a custom analyzer names its `tokenizer` (e.g. \"standard\")".into()));
    }
    object.entry("type").or_insert_with(|| json!("custom"));
    Ok(definition.to_string())
}

impl OpenSearchBm25 {
    /// Whether the analyzer is a custom definition (else a built-in's name).
    fn is_custom(&self) -> bool {
        self.analyzer.starts_with('{')
    }

    /// The analyzer as labels and columns name it: its name, or `custom:` and a short key of
    /// its definition.
    fn analyzer_name(&self) -> String {
        if self.is_custom() {
            format!("custom:{}", &cache::key("analyzer", &[self.analyzer.as_bytes()])[..8])
        } else {
            self.analyzer.clone()
        }
    }

    /// The index's settings (its similarity, and the custom analyzer as `ragsweep`) and its
    /// text field's mapping.
    fn index_body(&self) -> (Value, Value) {
        let mut settings = json!({"similarity": {"default": {"type": "BM25", "k1": self.k1, "b": self.b}}});
        let analyzer = if self.is_custom() {
            let definition: Value = serde_json::from_str(&self.analyzer).expect("a custom analyzer is JSON");
            settings["analysis"] = json!({"analyzer": {"ragsweep": definition}});
            "ragsweep".to_string()
        } else {
            self.analyzer.clone()
        };
        (settings, json!({"type": "text", "analyzer": analyzer}))
    }
}

impl SourceKind for OpenSearchBm25 {
    fn engine(&self) -> Option<EngineKind> {
        ENGINE
    }

    fn label(&self) -> String {
        format!("opensearch bm25({},k1={},b={})", self.analyzer_name(), self.k1, self.b)
    }

    fn config(&self, out: &mut Config) {
        out.push(("analyzer", self.analyzer_name()));
        out.push(("engine", "opensearch".into()));
        out.push(("k1", self.k1.to_string()));
        out.push(("b", self.b.to_string()));
    }

    /// `k1` and `b` are the index's similarity in OpenSearch: they are part of what is built.
    fn index_identity(&self) -> IndexIdentity {
        IndexIdentity::of::<OpenSearchIndex>((self.analyzer.clone(), self.k1.to_bits(), self.b.to_bits()))
    }

    fn index_name(&self) -> String {
        format!("opensearch index({},k1={},b={})", self.analyzer_name(), self.k1, self.b)
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let params = format!("{:?}", (&self.analyzer, self.k1.to_bits(), self.b.to_bits()));
        let key = cache::key("opensearch-bm25", &[params.as_bytes(), input.text_key, input.acl_key]);
        let texts: Vec<String> = (0..input.chunks).map(input.text).collect();
        let (settings, text_mapping) = self.index_body();
        let engine = input.engines.expect::<OpenSearchEngine>();
        let index = engine.lexical_index(
            &format!("ragsweep-bm25-{}", &key[..24]),
            &texts,
            input.acl,
            settings,
            text_mapping,
        )?;
        let record = engine_record(index.build_seconds, index.reused);
        Ok(BuiltIndex { bytes: index.bytes, index: Box::new(index), record })
    }

    fn source<'a>(&self, index: &'a BuiltIndex, engines: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        let engine = engines.expect::<OpenSearchEngine>();
        Arc::new(OpenSearchLexicalSource { engine, index: index.get::<OpenSearchIndex>() })
    }
}

/// The keys of a read-only cell over an index the team serves (besides `engine`).
pub const SERVED_KEYS: [&str; 6] = ["index", "id_field", "text_field", "acl_field", "public_group", "query"];

/// An index the team serves on its cluster, read as it is: its documents are the cells' chunks
/// (`id_field` names each one's document, `text_field` holds its text), searched with the team's
/// query template (`{{query}}` where the question goes; a `match` on `text_field` by default),
/// with the index's own analyzers and similarity; what the manifest records of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServedBm25 {
    #[serde(flatten)]
    pub rows: ServedRows,
    pub acl_field: Option<String>,
    pub public_group: Option<String>,
    /// The query template as compact JSON.
    pub query: String,
}

/// Whether a `kind = "bm25"` combination on OpenSearch reads an index the team serves.
pub fn reads_served(combo: &Combo<'_>) -> bool {
    combo.get("index").is_some()
}

/// `index`, its fields, and the query template (a JSON object, or a table, holding `{{query}}`).
pub fn parse_served(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ServedBm25> {
    forbid(
        combo,
        &["analyzer", "k1", "b"],
        "is the served index's own: it is searched with the analyzers and similarity it was made with",
        bad,
    )?;
    let required = |key: &str| -> Result<String> {
        super::served::text(combo, key, bad)?.ok_or_else(|| {
            bad(
                combo.kind.1.clone(),
                format!(
                    "a served OpenSearch index needs `{key}` (the field of each document's {})",
                    if key == "id_field" { "corpus id" } else { "text" }
                ),
            )
        })
    };
    let source = super::served::text(combo, "index", bad)?.expect("a served index names its index");
    let id_field = required("id_field")?;
    let text_field = required("text_field")?;
    let template = match combo.get("query") {
        None => json!({"match": {text_field.as_str(): {"query": PLACEHOLDER}}}),
        Some((Toml::String(text), span)) => {
            serde_json::from_str(text).map_err(|e| bad(span.clone(), format!("`query` is not JSON: {e}")))?
        }
        Some((Toml::Table(table), _)) => serde_json::to_value(table).expect("a TOML table is JSON"),
        Some((v, span)) => {
            return Err(bad(span, format!("`query` is a JSON object or a table, found {}", v.type_str())))
        }
    };
    if !template.is_object() || !template.to_string().contains(PLACEHOLDER) {
        return Err(bad(
            combo.span_of("query"),
            format!("`query` is a query object holding {PLACEHOLDER} where the question goes"),
        ));
    }
    let rows = ServedRows {
        engine: crate::engine::opensearch::ENGINE.name().to_string(),
        source,
        id_field,
        text_field,
        whole_document_when_not_found: false,
    };
    Ok(ServedBm25 {
        rows,
        acl_field: super::served::text(combo, "acl_field", bad)?,
        public_group: super::served::text(combo, "public_group", bad)?,
        query: template.to_string(),
    })
}

/// A served index as a run opened it: what a search reads, and its documents' chunks.
struct Opened {
    served: ServedBm25,
    chunk_of: RowChunks,
    documents: u64,
    template: Value,
}

impl SourceKind for ServedBm25 {
    fn engine(&self) -> Option<EngineKind> {
        ENGINE
    }

    fn reads_only(&self) -> bool {
        true
    }

    fn label(&self) -> String {
        format!(
            "opensearch bm25(index {} as served,query={})",
            self.rows.source,
            &cache::key("query", &[self.query.as_bytes()])[..8]
        )
    }

    fn config(&self, out: &mut Config) {
        out.push(("engine", "opensearch".into()));
        out.push(("served", self.rows.source.clone()));
        out.push(("query", self.query.clone()));
    }

    /// Everything it reads: cells that share it search the same way.
    fn index_identity(&self) -> IndexIdentity {
        IndexIdentity::of::<Opened>(self.clone())
    }

    fn index_name(&self) -> String {
        format!("opensearch index {} as served (read only)", self.rows.source)
    }

    fn builds_nothing(&self) -> bool {
        true
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let engine = input.engines.expect::<OpenSearchEngine>();
        let documents = engine.count(&self.rows.source)?;
        let chunks = input.placed_chunks();
        let bytes = chunks.iter().map(|c| c.1.len() as u64).sum();
        let chunk_of = RowChunks::new(&chunks, self.rows.whole_document_when_not_found);
        let template = serde_json::from_str(&self.query).expect("a query template is JSON");
        let opened = Opened { served: self.clone(), chunk_of, documents, template };
        Ok(BuiltIndex { bytes, index: Box::new(opened), record: None })
    }

    fn describe(&self, index: &BuiltIndex) -> Option<String> {
        Some(format!(
            "index {}: {} documents, searched with {}",
            self.rows.source,
            index.get::<Opened>().documents,
            self.query
        ))
    }

    fn source<'a>(&self, index: &'a BuiltIndex, engines: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        let opened = index.get::<Opened>();
        Arc::new(OpenSearchServedSource {
            engine: engines.expect::<OpenSearchEngine>(),
            rows: &opened.served.rows,
            template: &opened.template,
            acl_field: opened.served.acl_field.as_deref(),
            public_group: opened.served.public_group.as_deref(),
            chunk_of: &opened.chunk_of,
            bytes: index.bytes,
        })
    }
}
