//! The serving engines by name, and the engines of one run: each started (or connected to)
//! once, and stopped when the run's build is dropped. What an engine does is its own module's
//! [`ServingEngine`]; this table is the one place a new engine is listed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crate::chunkers::served::ServedRows;
pub use crate::engine::registry::EngineSources;
use crate::engine::registry::{RunningEngine, ServerSpec, ServingEngine, UserServer};
use crate::error::{Error, Result};
use crate::vocab::EngineKind;

/// Every serving engine by the name experiments (`engine = "…"`) and commands give it, with
/// what it does: the one table a new engine joins, and the only place besides the catalog that
/// tells engines apart.
pub const ENGINES: [(EngineKind, &dyn ServingEngine); 4] = [
    (crate::engine::pgvector::ENGINE, &crate::engine::pgvector::Serving),
    (crate::engine::milvus::ENGINE, &crate::engine::milvus::Serving),
    (crate::engine::chroma::ENGINE, &crate::engine::chroma::Serving),
    (crate::engine::opensearch::ENGINE, &crate::engine::opensearch::Serving),
];

/// The engine named `name`.
pub fn engine_named(name: &str) -> Option<EngineKind> {
    ENGINES.iter().map(|(k, _)| *k).find(|k| k.name() == name)
}

/// The names of every engine, for a command's choices.
pub fn engine_names() -> Vec<&'static str> {
    ENGINES.iter().map(|(k, _)| k.name()).collect()
}

/// What engine `kind` does.
pub fn serving(kind: EngineKind) -> &'static dyn ServingEngine {
    ENGINES.iter().find(|(k, _)| *k == kind).map(|(_, e)| *e).expect("every engine is in the table")
}

/// [`ServingEngine::index_unused_advice`] of the engine named `name`.
pub fn index_unused_advice(name: &str) -> Option<&'static str> {
    engine_named(name).and_then(|k| serving(k).index_unused_advice())
}

/// The rows of a served index as (document id, text), read by its engine from the experiment's
/// own server.
pub fn served_rows(rows: &ServedRows, from: &EngineSources<'_>) -> Result<Vec<(String, String)>> {
    let kind = engine_named(&rows.engine)
        .ok_or_else(|| Error::EngineCannot(format!("no engine is named {:?}", rows.engine)))?;
    serving(kind).served_rows(from, rows)
}

/// The experiment's own servers, their secrets read, each as its engine keeps it.
pub fn user_servers(servers: &BTreeMap<EngineKind, ServerSpec>) -> Result<Vec<UserServer>> {
    servers.iter().map(|(kind, spec)| serving(*kind).user_server(spec)).collect()
}

/// The engines of one run, each kept as its own type.
#[derive(Default)]
pub struct Engines {
    running: Vec<(EngineKind, Box<dyn RunningEngine>)>,
}

impl Engines {
    /// Starts or connects to each of `kinds`; `report` gets the seconds each took, what was
    /// done, and a note when there is one. Engines in `written` are made ready for builds before
    /// the run says what it measured; the others are only read.
    pub fn start(
        kinds: &BTreeSet<EngineKind>,
        written: &BTreeSet<EngineKind>,
        from: &EngineSources<'_>,
        report: &mut dyn FnMut(f64, &str, Option<String>),
    ) -> Result<Engines> {
        let mut engines = Engines::default();
        for kind in kinds {
            let t = Instant::now();
            let started = serving(*kind).start(from, written.contains(kind))?;
            report(t.elapsed().as_secs_f64(), &started.what, started.note);
            engines.running.push((*kind, started.engine));
        }
        Ok(engines)
    }

    /// The running engine of type `E`, if the run started one.
    pub fn get<E: RunningEngine>(&self) -> Option<&E> {
        self.running.iter().find_map(|(_, e)| e.downcast())
    }

    /// The running engine of `kind`, which the plan started for the kinds that read it.
    pub fn of(&self, kind: EngineKind) -> &dyn RunningEngine {
        let running = self.running.iter().find(|(k, _)| *k == kind).map(|(_, e)| &**e);
        running.expect("an engine is started for the kinds that read it")
    }

    /// The running engine of type `E`, which the plan started for the kinds that read it.
    pub fn expect<E: RunningEngine>(&self) -> &E {
        self.get().expect("an engine is started for the kinds that read it")
    }

    /// Whether any engine runs (chunk ACLs are then loaded beside the chunks).
    pub fn any(&self) -> bool {
        !self.running.is_empty()
    }

    /// For `validate`: a line per engine of `kinds` saying it is installed and answers, or the
    /// error that says why not. Engines outside `written` only have served indexes read.
    pub fn check(
        kinds: &BTreeSet<EngineKind>,
        written: &BTreeSet<EngineKind>,
        from: &EngineSources<'_>,
    ) -> Result<Vec<String>> {
        kinds.iter().map(|kind| serving(*kind).check(from, written.contains(kind))).collect()
    }
}
