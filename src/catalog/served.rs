//! An index the team serves, read as it is: `kind = "dense"` with `engine = "pg"` and
//! `table = "…"`, or `engine = "milvus"` or `"chroma"` and `collection = "…"`, and the fields a
//! search reads (`id_field`, `text_field`, `vector_field`, `acl_field`). Its chunks are the rows
//! (`crate::chunkers::served`), its questions are embedded by the experiment's `model`, and its
//! oracle is an exact search of the same rows (pgvector's with index scans off; for Milvus and
//! Chroma, a scan of the rows as read).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use toml::Value;

use super::{Bad, BuiltIndex, Config, IndexIdentity, IndexInput, ServedShape, SourceKind};
use crate::chunkers::served::ServedRows;
use crate::engine::registry::{OpenedServed, ServerSpec};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{choice, forbid, int, only, Combo};
use crate::retrieve::source::RankingSource;
use crate::vocab::{Distance, EngineKind, IterativeScan, ServedIndex};

/// The key naming a served index's rows that a combination sets (`table`, `collection`).
fn source_key_set(combo: &Combo<'_>, shapes: &[&ServedShape]) -> Option<&'static str> {
    shapes.iter().map(|s| s.source_key).find(|key| combo.get(key).is_some())
}

/// The keys that name a served index's rows, one per engine that serves them.
pub(crate) fn source_keys() -> impl Iterator<Item = &'static str> {
    super::SERVED_SHAPES.iter().map(|s| s.source_key)
}

/// Whether a combination reads a served index (it names the table or collection).
pub fn declared(combo: &Combo<'_>) -> bool {
    source_key_set(combo, &super::SERVED_SHAPES).is_some()
}

/// A string value of `key`; `None` when absent.
fn text(combo: &Combo<'_>, key: &str, bad: Bad<'_>) -> Result<Option<String>> {
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
    let served_keys =
        super::distinct(shapes.iter().flat_map(|s| std::iter::once(s.source_key).chain(s.keys.iter().copied())));
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
    let others: Vec<&str> =
        served_keys.into_iter().filter(|k| *k != shape.source_key && !shape.keys.contains(k)).collect();
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
    let optional = |key: &str| -> Result<Option<usize>> {
        match combo.get(key) {
            None => Ok(None),
            Some(_) => match int(combo, key, None, bad)? {
                0 => Err(bad(combo.span_of(key), format!("`{key}` must be at least 1"))),
                n => Ok(Some(n)),
            },
        }
    };
    let distances: Vec<(&str, Option<Distance>)> = Distance::NAMES.iter().map(|(n, d)| (*n, Some(*d))).collect();
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
        distance: choice(combo, "distance", None, &distances, bad)?,
        ef_search: optional("ef_search")?,
        probes: optional("probes")?,
        force_index: crate::grid::boolean(combo, "force_index", bad)?,
        iterative_scan: choice(
            combo,
            "iterative_scan",
            None,
            &[
                ("off", Some(IterativeScan::Off)),
                ("relaxed_order", Some(IterativeScan::RelaxedOrder)),
                ("strict_order", Some(IterativeScan::StrictOrder)),
            ],
            bad,
        )?,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Served {
    pub model: String,
    pub index: ServedIndex,
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
        let i = &self.index;
        let mut label = format!("dense({},{} as served", self.model, self.source());
        if let Some(d) = i.distance {
            label.push_str(&format!(",distance={}", d.as_str()));
        }
        if let Some(ef) = i.ef_search {
            label.push_str(&format!(",ef_search={ef}"));
        }
        if let Some(p) = i.probes {
            label.push_str(&format!(",probes={p}"));
        }
        if let Some(scan) = i.iterative_scan {
            label.push_str(&format!(",iterative_scan={}", scan.as_str()));
        }
        if i.force_index {
            label.push_str(",force_index");
        }
        label + ")"
    }

    fn config(&self, out: &mut Config) {
        let i = &self.index;
        out.push(("model", self.model.clone()));
        out.push(("engine", i.rows.engine.clone()));
        out.push(("index", "served".into()));
        out.push(("served", i.rows.source.clone()));
        let opt = |v: Option<usize>| v.map(|v| v.to_string()).unwrap_or_default();
        out.push(("ef_search", opt(i.ef_search)));
        out.push(("probes", opt(i.probes)));
        out.push(("distance", i.distance.map(|d| d.as_str().to_string()).unwrap_or_default()));
        out.push(("force_index", i.force_index.to_string()));
        out.push(("iterative_scan", i.iterative_scan.map(|s| s.as_str().to_string()).unwrap_or_default()));
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
        let chunks: Vec<(String, String, bool)> = (0..input.chunks)
            .map(|i| ((input.doc_id)(i).to_string(), (input.text)(i), (input.spans_document)(i)))
            .collect();
        let served = input.engines.of(self.kind()).open_served(&self.index, dim, &chunks)?;
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
        let noun = super::SERVED_SHAPES.iter().find(|s| s.engine == self.kind()).map_or("index", |s| s.source_key);
        format!("{} {noun} {}", rows.engine, rows.source)
    }
}

/// What a served index is (`table`, `collection`) when the experiment declares no server of its
/// engine to read it on (`[engines.NAME]`); `None` when it does.
pub fn without_server(rows: &ServedRows, servers: &BTreeMap<EngineKind, ServerSpec>) -> Option<&'static str> {
    let shape = super::SERVED_SHAPES.iter().find(|s| s.engine.name() == rows.engine)?;
    (!servers.contains_key(&shape.engine)).then_some(shape.source_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fourth engine's served key, declared in its own shape only, is read on its cells and
    /// refused on another engine's by construction, with that engine's reason; a key no engine
    /// declares is misspelt.
    #[test]
    fn a_served_key_is_read_by_the_engine_that_declares_it_and_refused_on_the_others() {
        const SEARCH: ServedShape = ServedShape {
            engine: EngineKind::named("search"),
            source_key: "index",
            keys: &["id_field", "text_field", "query_template"],
            why: "is not a setting of a served search index",
            vector_field: None,
        };
        let shapes = [&crate::catalog::pgvector::SERVED, &SEARCH];
        let (table, template, id) = (Value::from("t"), Value::from("{q}"), Value::from("id"));
        let check = |engine: &'static str, source: (&'static str, &Value), extra: &'static str| {
            let mut values: BTreeMap<&str, (&Value, std::ops::Range<usize>)> = BTreeMap::new();
            values.insert(source.0, (source.1, 0..1));
            values.insert("id_field", (&id, 1..2));
            values.insert(extra, (&template, 7..9));
            let combo = Combo { values, kind: ("dense", 0..0), dir: std::path::Path::new(".") };
            let bad: Bad<'_> = &|span, message| crate::Error::Other(format!("{span:?} {message}"));
            shape_of(&combo, Some(EngineKind::named(engine)), &shapes, bad).map(|s| s.engine.name())
        };
        assert_eq!(check("search", ("index", &table), "query_template").unwrap(), "search");
        let refused = check("pg", ("table", &table), "query_template").unwrap_err().to_string();
        assert!(
            refused.contains("7..9") && refused.contains("not a setting of a served PostgreSQL table"),
            "{refused}"
        );
        let misspelt = check("search", ("index", &table), "query_templat").unwrap_err().to_string();
        assert!(misspelt.contains("query_templat"), "{misspelt}");
    }
}
