//! An index the team serves, read as it is: `kind = "dense"` with `engine = "pg"` and
//! `table = "…"`, or `engine = "milvus"` or `"chroma"` and `collection = "…"`, and the fields a
//! search reads (`id_field`, `text_field`, `vector_field`, `acl_field`). Its chunks are the rows
//! (`crate::chunkers::served`), its questions are embedded by the experiment's `model`, and its
//! oracle is an exact search of the same rows (pgvector's with index scans off; for Milvus and
//! Chroma, a scan of the rows as read).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value as JsonValue;
use toml::Value;

use super::{Bad, BuiltIndex, Config, IndexIdentity, IndexInput, ServedShape, SourceKind};
use crate::chunkers::served::ServedRows;
use crate::engine::registry::{OpenedServed, ServedIndex, ServerSpec};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{choice, forbid, only, Combo};
use crate::retrieve::source::RankingSource;
use crate::vocab::EngineKind;

/// The key naming a served index's rows that a combination sets (`table`, `collection`).
fn source_key_set(combo: &Combo<'_>, shapes: &[&ServedShape]) -> Option<&'static str> {
    shapes.iter().map(|s| s.source_key).find(|key| combo.get(key).is_some())
}

/// The keys that name a served index's rows, one per engine that serves them.
pub(crate) fn source_keys() -> impl Iterator<Item = &'static str> {
    super::SERVED_SHAPES.iter().map(|s| s.source_key)
}

/// What each engine's served index reads, for help: `pg table (id_field text_field …)`.
pub fn help() -> String {
    let shapes = super::SERVED_SHAPES.iter().map(|s| {
        let keys: Vec<&str> = s.declared_keys().skip(1).collect();
        format!("{} {} ({})", s.engine.name(), s.source_key, keys.join(" "))
    });
    shapes.collect::<Vec<_>>().join(", ")
}

/// The served-index shape of the engine named `engine`, if it serves read-only indexes.
fn shape_named(engine: &str) -> Option<&'static ServedShape> {
    super::SERVED_SHAPES.iter().copied().find(|s| s.engine.name() == engine)
}

/// Whether a combination reads a served index (it names the table or collection).
pub fn declared(combo: &Combo<'_>) -> bool {
    source_key_set(combo, &super::SERVED_SHAPES).is_some()
}

/// A string value of `key`; `None` when absent.
pub(super) fn text(combo: &Combo<'_>, key: &str, bad: Bad<'_>) -> Result<Option<String>> {
    match combo.get(key) {
        None => Ok(None),
        Some((Value::String(s), span)) if s.trim().is_empty() => Err(bad(span, format!("`{key}` cannot be empty"))),
        Some((Value::String(s), _)) => Ok(Some(s.clone())),
        Some((v, span)) => Err(bad(span, format!("`{key}` must be a string, found {}", v.type_str()))),
    }
}

/// The shape of `engine`'s served index among `shapes`, once the combination's keys are
/// checked against them: a key no engine's served index reads is misspelt, and one that only
/// other engines read is refused with this engine's reason.
fn shape_of<'s>(
    combo: &Combo<'_>,
    engine: Option<EngineKind>,
    shapes: &[&'s ServedShape],
    bad: Bad<'_>,
) -> Result<&'s ServedShape> {
    let served_keys = super::distinct(shapes.iter().flat_map(|s| s.declared_keys()));
    let mut known = vec!["kind", "engine", "model"];
    known.extend(&served_keys);
    known.extend(super::rerank::KEYS);
    only(combo, &known, bad)?;
    let Some(shape) = shapes.iter().find(|s| Some(s.engine) == engine) else {
        let key = source_key_set(combo, shapes).expect("a served index names its rows");
        let engines: Vec<String> =
            shapes.iter().map(|s| format!("\"{}\" (a {})", s.engine.name(), s.source_key)).collect();
        return Err(bad(
            combo.span_of(key),
            format!("`{key}` is read on the team's own server: add engine = {}", engines.join(" or ")),
        ));
    };
    let own: Vec<&str> = shape.declared_keys().collect();
    let others: Vec<&str> = served_keys.into_iter().filter(|k| !own.contains(k)).collect();
    forbid(combo, &others, shape.why, bad)?;
    Ok(shape)
}

/// The served index a combination declares, read by `engine` (named as the experiment names it).
pub fn parse(combo: &Combo<'_>, engine: Option<EngineKind>, bad: Bad<'_>) -> Result<ServedIndex> {
    let shape = shape_of(combo, engine, &super::SERVED_SHAPES, bad)?;
    let (engine_name, source_key) = (shape.engine.name(), shape.source_key);
    let required = |key: &str| -> Result<String> {
        text(combo, key, bad)?.ok_or_else(|| {
            bad(combo.kind.1.clone(), format!("a served table needs `{key}` (the field {})", role(key, source_key)))
        })
    };
    Ok(ServedIndex {
        rows: ServedRows {
            engine: engine_name.into(),
            source: required(source_key)?,
            id_field: required("id_field")?,
            text_field: required("text_field")?,
            whole_document_when_not_found: choice(
                combo,
                "unplaced",
                false,
                &[("stop", false), ("document", true)],
                bad,
            )?,
        },
        vector_field: match shape.vector_field {
            Some(field) => field.into(),
            None => required("vector_field")?,
        },
        acl_field: text(combo, "acl_field", bad)?,
        public_group: text(combo, "public_group", bad)?,
        search: (shape.search.parse)(combo, bad)?,
    })
}

/// What a field of a served table holds, for a message (`source_key` names the rows).
fn role(key: &str, source_key: &str) -> &'static str {
    match key {
        _ if key == source_key => "holding the rows",
        "id_field" => "of each row's document id",
        "text_field" => "of each row's text",
        _ => "of each row's vector",
    }
}

/// A dense index the team already serves (`table` or `collection`), searched as it is: nothing
/// uploaded, built or written; what the manifest records of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    pub model: String,
    pub index: ServedIndex,
}

/// The fields of a served index that every engine's record holds.
#[derive(Serialize, Deserialize)]
struct Fields<'a> {
    #[serde(flatten)]
    rows: Cow<'a, ServedRows>,
    vector_field: Cow<'a, str>,
    acl_field: Option<Cow<'a, str>>,
    public_group: Option<Cow<'a, str>>,
}

/// `{"model": …, "index": {its rows and fields, its engine's search settings…}}`.
impl Serialize for Served {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let i = &self.index;
        let fields = Fields {
            rows: Cow::Borrowed(&i.rows),
            vector_field: Cow::Borrowed(&i.vector_field),
            acl_field: i.acl_field.as_deref().map(Cow::Borrowed),
            public_group: i.public_group.as_deref().map(Cow::Borrowed),
        };
        let mut index = serde_json::to_value(fields).map_err(serde::ser::Error::custom)?;
        if let (Some(index), JsonValue::Object(search)) = (index.as_object_mut(), i.search.record()) {
            index.extend(search);
        }
        serde_json::json!({"model": self.model, "index": index}).serialize(serializer)
    }
}

/// Read back through the shape of the engine the record names.
impl<'de> Deserialize<'de> for Served {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Served, D::Error> {
        #[derive(Deserialize)]
        struct Record {
            model: String,
            index: JsonValue,
        }
        let Record { model, index } = Record::deserialize(deserializer)?;
        let fields = Fields::deserialize(&index).map_err(D::Error::custom)?;
        let shape = shape_named(&fields.rows.engine)
            .ok_or_else(|| D::Error::custom(format!("no engine {:?} serves a read-only index", fields.rows.engine)))?;
        let search = (shape.search.read)(index).map_err(D::Error::custom)?;
        Ok(Served {
            model,
            index: ServedIndex {
                rows: fields.rows.into_owned(),
                vector_field: fields.vector_field.into_owned(),
                acl_field: fields.acl_field.map(Cow::into_owned),
                public_group: fields.public_group.map(Cow::into_owned),
                search,
            },
        })
    }
}

impl SourceKind for Served {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    fn engine(&self) -> Option<EngineKind> {
        crate::engine::servers::engine_named(&self.index.rows.engine)
    }

    fn embeds_passages(&self) -> bool {
        false
    }

    fn reads_only(&self) -> bool {
        true
    }

    fn label(&self) -> String {
        format!("dense({},{} as served{})", self.model, self.source(), self.index.search.label())
    }

    fn config(&self, out: &mut Config) {
        let i = &self.index;
        out.push(("model", self.model.clone()));
        out.push(("engine", i.rows.engine.clone()));
        out.push(("index", "served".into()));
        out.push(("served", i.rows.source.clone()));
        out.extend(i.search.columns());
    }

    fn index_identity(&self) -> IndexIdentity {
        let i = self.index.clone();
        let rows = (i.rows.engine, i.rows.source, i.rows.text_field);
        IndexIdentity::of::<Box<dyn OpenedServed>>((
            rows,
            i.vector_field,
            self.model.clone(),
            i.acl_field,
            i.public_group,
        ))
    }

    fn index_name(&self) -> String {
        format!("{} as served (read only)", self.source())
    }

    fn builds_nothing(&self) -> bool {
        true
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let dim = input.model.expect("a served index is given its model").dim;
        let served = input.engines.of(self.kind()).open_served(&self.index, dim, &input.placed_chunks())?;
        Ok(BuiltIndex { bytes: served.bytes(), index: Box::new(served), record: None })
    }

    fn describe(&self, index: &BuiltIndex) -> Option<String> {
        Some(index.get::<Box<dyn OpenedServed>>().describe(&self.index))
    }

    fn source<'a>(&self, index: &'a BuiltIndex, engines: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        index.get::<Box<dyn OpenedServed>>().source(engines.of(self.kind()), &self.index)
    }
}

impl Served {
    /// The engine that serves it (its name was checked when the experiment was read).
    fn kind(&self) -> EngineKind {
        self.engine().expect("a served index names its engine")
    }

    /// `pg table NAME`, `milvus collection NAME`, `chroma collection NAME`.
    fn source(&self) -> String {
        let rows = &self.index.rows;
        let noun = shape_named(&rows.engine).map_or("index", |s| s.source_key);
        format!("{} {noun} {}", rows.engine, rows.source)
    }
}

/// What a served index is (`table`, `collection`) when the experiment declares no server of its
/// engine to read it on (`[engines.NAME]`); `None` when it does.
pub fn without_server(rows: &ServedRows, servers: &BTreeMap<EngineKind, ServerSpec>) -> Option<&'static str> {
    let shape = shape_named(&rows.engine)?;
    (!servers.contains_key(&shape.engine)).then_some(shape.source_key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::registry::{SearchKind, ServedSearchKind};

    /// A planted engine's search setting: its own type, keys and parser, nowhere else.
    #[derive(Debug, Serialize, Deserialize)]
    struct Template {
        query_template: Option<String>,
    }

    impl ServedSearchKind for Template {
        const KEYS: &'static [&'static str] = &["query_template"];

        fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Template> {
            Ok(Template { query_template: text(combo, "query_template", bad)? })
        }

        fn settings(&self) -> Vec<(&'static str, String)> {
            vec![("query_template", self.query_template.clone().unwrap_or_default())]
        }
    }

    /// A fourth engine's served key, declared by its own search type only, is read on its
    /// cells (into that type, labelled and recorded from it) and refused on another engine's by
    /// construction, with that engine's reason; a key no engine declares is misspelt.
    #[test]
    fn a_served_key_is_read_by_the_engine_that_declares_it_and_refused_on_the_others() {
        const SEARCH: ServedShape = ServedShape {
            engine: EngineKind::named("search"),
            source_key: "index",
            keys: &["id_field", "text_field"],
            search: SearchKind::of::<Template>(),
            why: "is not a setting of a served search index",
            vector_field: None,
        };
        let shapes = [&crate::catalog::pgvector::SERVED, &SEARCH];
        let (table, template, id) = (Value::from("t"), Value::from("{q}"), Value::from("id"));
        let at = || crate::Location::file(std::path::Path::new("e.toml"));
        let bad: Bad<'_> = &|span, message| crate::Error::input(at(), format!("{span:?} {message}"));
        let check = |engine: &'static str, source: (&'static str, &Value), extra: &'static str| {
            let mut values: BTreeMap<&str, (&Value, std::ops::Range<usize>)> = BTreeMap::new();
            values.insert(source.0, (source.1, 0..1));
            values.insert("id_field", (&id, 1..2));
            values.insert(extra, (&template, 7..9));
            let combo = Combo { values, kind: ("dense", 0..0), dir: std::path::Path::new(".") };
            let shape = shape_of(&combo, Some(EngineKind::named(engine)), &shapes, bad)?;
            Ok::<_, crate::Error>((shape.engine.name(), (shape.search.parse)(&combo, bad)?))
        };
        let (engine, search) = check("search", ("index", &table), "query_template").unwrap();
        assert_eq!((engine, search.label()), ("search", ",query_template={q}".to_string()));
        assert_eq!(search.record(), serde_json::json!({"query_template": "{q}"}));
        let read = (SEARCH.search.read)(serde_json::json!({"query_template": "{q}", "id_field": "id"})).unwrap();
        assert_eq!(read.columns(), search.columns());
        let refused = check("pg", ("table", &table), "query_template").unwrap_err().to_string();
        assert!(
            refused.contains("7..9") && refused.contains("not a setting of a served PostgreSQL table"),
            "{refused}"
        );
        let misspelt = check("search", ("index", &table), "query_templat").unwrap_err().to_string();
        assert!(misspelt.contains("query_templat"), "{misspelt}");
    }

    /// A manifest's served cell reads back as written, its settings as its engine's type; a
    /// record written before the settings were the engine's (every engine's keys, nulls where
    /// unset) reads as the same cell.
    #[test]
    fn a_served_cell_reads_back_from_its_manifest_record() {
        use crate::engine::milvus::served::MilvusSearch;
        use crate::engine::served::PgSearch;
        let rows = |engine: &str| ServedRows {
            engine: engine.into(),
            source: "team.chunks".into(),
            id_field: "doc".into(),
            text_field: "body".into(),
            whole_document_when_not_found: false,
        };
        let pg = PgSearch {
            ef_search: Some(40),
            force_index: true,
            iterative_scan: Some(crate::vocab::IterativeScan::RelaxedOrder),
            ..PgSearch::default()
        };
        let served = |engine: &str, search: Arc<dyn crate::engine::registry::ServedSearch>| Served {
            model: "e5".into(),
            index: ServedIndex {
                rows: rows(engine),
                vector_field: "v".into(),
                acl_field: Some("groups".into()),
                public_group: None,
                search,
            },
        };
        let written = served("pg", Arc::new(pg));
        let record = serde_json::to_value(&written).unwrap();
        assert_eq!(record["index"]["ef_search"], 40);
        let read: Served = serde_json::from_value(record).unwrap();
        assert_eq!(read, written);
        assert_eq!(*read.index.search::<PgSearch>(), pg);
        let before = serde_json::json!({"model": "e5", "index": {
            "engine": "milvus", "source": "team.chunks", "id_field": "doc", "text_field": "body",
            "vector_field": "v", "acl_field": "groups", "public_group": null, "distance": null,
            "ef_search": 64, "probes": null, "force_index": false}});
        let read: Served = serde_json::from_value(before).unwrap();
        let milvus = MilvusSearch { ef_search: Some(64), probes: None };
        assert_eq!(read, served("milvus", Arc::new(milvus)));
        let unknown = serde_json::json!({"model": "e5", "index": {
            "engine": "nowhere", "source": "t", "id_field": "d", "text_field": "b", "vector_field": "v"}});
        let err = serde_json::from_value::<Served>(unknown).unwrap_err().to_string();
        assert!(err.contains("nowhere"), "{err}");
    }
}
