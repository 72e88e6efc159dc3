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
use crate::engine::opensearch::{OpenSearchEngine, OpenSearchIndex, OpenSearchLexicalSource};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{float, Combo};
use crate::retrieve::source::RankingSource;
use crate::stages::cache;
use crate::vocab::EngineKind;

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
    let k1 = float(combo, "k1", 1.2, bad)?;
    let b = float(combo, "b", 0.75, bad)?;
    if k1 < 0.0 {
        return Err(bad(combo.span_of("k1"), "`k1` must be non-negative".into()));
    }
    if !(0.0..=1.0).contains(&b) {
        return Err(bad(combo.span_of("b"), "`b` must be between 0 and 1".into()));
    }
    Ok(OpenSearchBm25 { analyzer, k1: k1 as f32, b: b as f32 })
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
