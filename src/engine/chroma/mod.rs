//! Chroma as the ranking source of dense cells: the Rust server of the PyPI wheel `chromadb`
//! (`chroma run`, its `chromadb_rust_bindings` module run by python3, nothing else of the
//! wheel), listening on 127.0.0.1 only, with its data in the stage cache (or a temporary folder
//! when another run holds it); or the user's own Chroma (`[engines.chroma]`). The chunk vectors
//! ragsweep computed go into a collection whose HNSW settings are its build parameters, each
//! chunk's groups as boolean metadata (`acl:GROUP`), and `in_query` is Chroma's own `where` on
//! them. Collections are content-keyed: a collection's name is the key of what it holds,
//! counted before reuse. Runs sharing a server (shards of one grid) build a collection once: the
//! build holds a lock collection (`l_…`, whose create fails for everyone else), fills `b_…`,
//! and renames it to its name (`v_…`) last, so that name only ever holds a finished build.
//!
//! Chroma sets `ef_search` per collection, not per query, so it is part of what a collection
//! is built with.

pub(crate) mod served;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::engine::connect::Secret;
use crate::engine::registry::{
    EngineSources, FilterBench, FilterBenchInput, OpenedServed, RunningEngine, ServedIndex, ServerSpec, ServingEngine,
    Started, UserServer,
};
use crate::engine::{asked_groups, stored_groups, ChunkAcl};
use crate::error::{Error, Result};
use crate::retrieve::dense::ExactIndex;
use crate::retrieve::hits::{top_hits, Hit};
use crate::retrieve::source::{ExactSource, Query, RankingSource, Restriction, Side, SourceScore};
use crate::vocab::{EngineKind, ServedRows};

/// The Chroma the install pins, for messages and provenance.
pub const VERSION: &str = "1.5.9";
/// The collection metadata key holding the seconds its build took.
const BUILD_SECONDS: &str = "ragsweep_build_seconds";
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a run waits for another run's build of the same collection.
const WAIT_LIMIT: Duration = Duration::from_secs(3600);
const COLLECTIONS: &str = "/api/v2/tenants/default_tenant/databases/default_database/collections";

fn fail(what: impl Into<String>) -> Error {
    Error::Engine { engine: ENGINE.name(), what: what.into(), source: None }
}

/// Process groups of the servers this process started, and their private folders.
static RUNNING: Mutex<Vec<(u32, Option<PathBuf>)>> = Mutex::new(Vec::new());

/// Ends every server of this process and removes its private folder (the Ctrl-C handler).
fn stop_all() {
    for (group, private) in RUNNING.lock().map(|r| r.clone()).unwrap_or_default() {
        kill(group);
        if let Some(dir) = private {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn kill(group: u32) {
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).stderr(Stdio::null()).status();
}

/// The folder of the installed server module (`engines/chroma`), absolute.
pub fn installed(install: &Path) -> Result<PathBuf> {
    if !install.join("chromadb_rust_bindings").is_dir() {
        return Err(fail(format!(
            "no Chroma in {}: run scripts/install-engines.sh (or pass --engines)",
            install.display()
        )));
    }
    std::path::absolute(install).map_err(|e| Error::io(install, e))
}

/// The user's own Chroma (`[engines.chroma]`): its `http://host:port` and the token a proxy in
/// front of it or Chroma Cloud asks for, sent as `x-chroma-token` and as a bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChromaEndpoint {
    pub url: String,
    pub token: Option<Secret>,
}

/// Chroma, `engine = "chroma"`.
pub const ENGINE: EngineKind = EngineKind::named("chroma");

/// Chroma as a serving engine: a private server, or the user's own.
pub struct Serving;

impl RunningEngine for ChromaEngine {
    fn open_served(
        &self,
        spec: &ServedIndex,
        dim: usize,
        chunks: &[(String, String, bool)],
    ) -> Result<Box<dyn OpenedServed>> {
        let served = self.open_collection(spec, dim, chunks)?;
        Ok(Box::new(served))
    }

    /// Two collections of the same HNSW graph (Chroma sets `ef_search` per collection): at
    /// `ef_search`, and searched with a list as long as the collection.
    fn filter_bench<'a>(&'a self, input: FilterBenchInput<'a>) -> Result<Box<dyn FilterBench + 'a>> {
        let dim = input.dim();
        let FilterBenchInput { exact, acl, m, ef_construction, ef_search, name } = input;
        let collections = [ef_search, exact.len().max(ef_search)]
            .into_iter()
            .map(|ef_search| {
                let build = ChromaBuild { max_neighbors: m, ef_construction, ef_search };
                self.vector_collection(&name("chroma", &build), exact.vectors(), dim, acl, build)
            })
            .collect::<Result<_>>()?;
        Ok(Box::new(ChromaBench { engine: self, exact, collections }))
    }
}

/// `bench-filter`'s collections in Chroma.
struct ChromaBench<'a> {
    engine: &'a ChromaEngine,
    exact: &'a ExactIndex,
    collections: Vec<ChromaCollection>,
}

impl FilterBench for ChromaBench<'_> {
    fn loaded(&self) -> String {
        let efs: Vec<String> = self.collections.iter().map(|c| c.build.ef_search.to_string()).collect();
        let ChromaBuild { max_neighbors, ef_construction, .. } = self.collections[0].build;
        format!(
            "chroma: {} vectors loaded twice (HNSW m={max_neighbors} ef_construction={ef_construction}, ef_search {}), built in {:.1}s",
            self.exact.len(),
            efs.join(" and "),
            self.build_seconds()
        )
    }

    fn build_seconds(&self) -> f64 {
        self.collections.iter().map(|c| c.build_seconds).sum()
    }

    fn settings(&self) -> Vec<(String, Box<dyn RankingSource + '_>)> {
        let (engine, exact) = (self.engine, self.exact);
        self.collections
            .iter()
            .map(|collection| {
                let ChromaBuild { max_neighbors, ef_construction, ef_search } = collection.build;
                let name = format!("chroma hnsw(m={max_neighbors},efc={ef_construction},ef={ef_search})");
                (name, Box::new(ChromaVectorSource { engine, collection, exact }) as Box<dyn RankingSource + '_>)
            })
            .collect()
    }
}

impl ServingEngine for Serving {
    fn install(&self, engines: &Path, force: bool, step: &dyn Fn(&str)) -> Result<String> {
        let chroma = crate::engine::install::install_chroma(engines, force, step)?;
        Ok(format!("Chroma {VERSION} (its Rust server) installed in {}", chroma.display()))
    }

    fn serve(&self, engines: &Path, _secret_file: Option<&Path>) -> Result<crate::engine::registry::Served> {
        /// The server, then its data folder: dropped in that order.
        struct Kept(ChromaEngine, PathBuf);
        impl Drop for Kept {
            fn drop(&mut self) {
                self.0.server.take();
                let _ = std::fs::remove_dir_all(&self.1);
            }
        }
        let data = crate::engine::private_folder(&std::env::temp_dir(), "chroma-serve");
        let (engine, _) = ChromaEngine::start(&engines.join("chroma"), &data).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&data);
        })?;
        Ok(crate::engine::registry::Served {
            url: engine.base.clone(),
            what: format!("Chroma {VERSION}, on loopback (no token)"),
            guard: Box::new(Kept(engine, data)),
        })
    }

    /// The installed server module, or the user's server answering; with `writes`, a
    /// collection made and dropped there, as a run's first build does.
    fn check(&self, from: &EngineSources<'_>, writes: bool) -> Result<String> {
        let Some(endpoint) = from.server::<ChromaEndpoint>() else {
            let dir = installed(&from.engines_dir.join("chroma"))?;
            return Ok(format!(
                "engine chroma: Chroma {VERSION} in {}, started by each run (its data in the stage cache)",
                dir.display()
            ));
        };
        let engine = ChromaEngine::connect(endpoint)?;
        let version = engine.version()?;
        if !writes {
            return Ok(format!(
                "engine chroma: the experiment's server at {} ({version}) answers; nothing is written",
                endpoint.url
            ));
        }
        let probe = format!("ragsweep_probe_{}", std::process::id());
        engine.request("POST", COLLECTIONS, Some(&json!({"name": probe})))?;
        engine.request("DELETE", &format!("{COLLECTIONS}/{probe}"), None)?;
        Ok(format!(
            "engine chroma: the experiment's server at {} ({version}) answers; a collection was created and dropped there, as a run's first build does",
            endpoint.url
        ))
    }

    fn start(&self, from: &EngineSources<'_>, _writes: bool) -> Result<Started> {
        if let Some(endpoint) = from.server::<ChromaEndpoint>() {
            let engine = ChromaEngine::connect(endpoint)?;
            let what = format!("connected to the experiment's Chroma at {} ({})", endpoint.url, engine.version()?);
            return Ok(Started { engine: Box::new(engine), what, note: None });
        }
        let (engine, note) = ChromaEngine::start(&from.engines_dir.join("chroma"), from.cache_dir)?;
        Ok(Started { engine: Box::new(engine), what: format!("Chroma {VERSION} server started"), note })
    }

    fn interrupted(&self) {
        release_locks();
        stop_all();
    }

    fn secret_keys(&self) -> &'static [&'static str] {
        &["token_env"]
    }

    fn server_url(&self, url: &str) -> std::result::Result<String, String> {
        crate::engine::connect::http_address(url)
    }

    fn user_server(&self, spec: &ServerSpec) -> Result<UserServer> {
        Ok(Box::new(ChromaEndpoint { url: spec.url.clone(), token: spec.secret("token_env")? }))
    }

    fn served_rows(&self, from: &EngineSources<'_>, rows: &ServedRows) -> Result<Vec<(String, String)>> {
        let endpoint = from.server::<ChromaEndpoint>().ok_or_else(|| {
            fail(format!("collection {} is read from the experiment's server: declare [engines.chroma]", rows.source))
        })?;
        served::chroma_rows(endpoint, rows)
    }
}

/// The build lock of one collection on a shared server: collection `l_…`, whose create fails
/// for every run but the first; dropped when the build ends or fails, or on Ctrl-C.
struct BuildLock<'e> {
    engine: &'e ChromaEngine,
    name: String,
}

/// Locks held by this process, as (server, token, lock name), dropped on Ctrl-C.
static HELD: Mutex<Vec<(String, Option<Secret>, String)>> = Mutex::new(Vec::new());

impl<'e> BuildLock<'e> {
    /// Takes the lock of collection `key`'s build, or says another run holds it (`None`).
    fn take(engine: &'e ChromaEngine, key: &str) -> Result<Option<BuildLock<'e>>> {
        let name = format!("l_{key}");
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let holder = format!("ragsweep process {} on {}", std::process::id(), host.trim());
        let mut failure = None;
        // A create can fail because another run holds the lock, and the lock be gone by the time
        // it is looked up: try again then, a few times.
        for _ in 0..3 {
            let body = json!({"name": name, "metadata": {"holder": holder}});
            match engine.request("POST", COLLECTIONS, Some(&body)) {
                Ok(_) => {
                    HELD.lock().expect("locks").push((engine.base.clone(), engine.token.clone(), name.clone()));
                    return Ok(Some(BuildLock { engine, name }));
                }
                Err(e) => match engine.found(&name)? {
                    Some(_) => return Ok(None),
                    None => failure = Some(e),
                },
            }
        }
        Err(failure.expect("three tries"))
    }
}

impl Drop for BuildLock<'_> {
    fn drop(&mut self) {
        HELD.lock().map(|mut h| h.retain(|(_, _, n)| *n != self.name)).unwrap_or_default();
        let _ = self.engine.request("DELETE", &format!("{COLLECTIONS}/{}", self.name), None);
    }
}

/// Drops the build locks this process holds (on Ctrl-C, before its servers stop).
fn release_locks() {
    let held = std::mem::take(&mut *HELD.lock().unwrap_or_else(|e| e.into_inner()));
    for (base, token, name) in held {
        if let Ok(engine) = ChromaEngine::connect(&ChromaEndpoint { url: base, token }) {
            let _ = engine.request("DELETE", &format!("{COLLECTIONS}/{name}"), None);
        }
    }
}

/// A server this process started.
struct ChromaServer {
    child: Child,
    private: Option<PathBuf>,
    _lock: Option<std::fs::File>,
}

impl Drop for ChromaServer {
    fn drop(&mut self) {
        let group = self.child.id();
        kill(group);
        let _ = self.child.wait();
        if let Ok(mut running) = RUNNING.lock() {
            running.retain(|(g, _)| *g != group);
        }
        if let Some(dir) = &self.private {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A running Chroma and an HTTP agent for it.
pub struct ChromaEngine {
    /// The server this process started; `None` on the user's own.
    server: Option<ChromaServer>,
    /// `http://host:port`.
    base: String,
    token: Option<Secret>,
    agent: ureq::Agent,
}

/// A collection built (or found) in the engine.
#[derive(Debug, Clone)]
pub struct ChromaCollection {
    pub id: String,
    /// What it was built with.
    pub build: ChromaBuild,
    pub bytes: u64,
    pub build_seconds: f64,
    pub reused: bool,
}

/// How a collection's HNSW graph is built and searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChromaBuild {
    pub max_neighbors: usize,
    pub ef_construction: usize,
    pub ef_search: usize,
}

impl ChromaEngine {
    /// Starts a server from `install` with its data in `cache/chroma`, or in a private folder
    /// (and a note that says why) when another run holds that one.
    pub fn start(install: &Path, cache: &Path) -> Result<(ChromaEngine, Option<String>)> {
        let install = installed(install)?;
        let folder = cache.join("chroma");
        let (data, private, lock, note) = match crate::engine::lock_folder(&folder)? {
            Some(lock) => (folder.join(format!("data-{VERSION}")), None, Some(lock), None),
            None => {
                let dir = crate::engine::private_folder(&std::env::temp_dir(), "chroma");
                let note = format!(
                    "the engine cache {} is in use by another run: collections built in a private server",
                    folder.display()
                );
                (dir.clone(), Some(dir), None, Some(note))
            }
        };
        std::fs::create_dir_all(&data).map_err(|e| Error::io(&data, e))?;
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .map_err(|e| fail(format!("no free port: {e}")))?
            .port();
        let log_path = data.join("server.log");
        let log = std::fs::File::create(&log_path).map_err(|e| Error::io(&log_path, e))?;
        let stderr = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
        crate::engine::install_interrupt_handler();
        use std::os::unix::process::CommandExt;
        let args = format!(
            "import chromadb_rust_bindings as b; b.cli(['chroma', 'run', '--path', {:?}, '--host', '127.0.0.1', '--port', '{port}'])",
            data.display().to_string()
        );
        let child = Command::new("python3")
            .args(["-c", &args])
            .env("PYTHONPATH", &install)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .map_err(|e| fail(format!("cannot start python3 for Chroma's server: {e}")))?;
        RUNNING.lock().expect("lock").push((child.id(), private.clone()));
        let mut engine = ChromaEngine {
            server: Some(ChromaServer { child, private, _lock: lock }),
            base: format!("http://127.0.0.1:{port}"),
            token: None,
            agent: crate::engine::connect::http_agent(),
        };
        let started = Instant::now();
        while engine.request("GET", "/api/v2/heartbeat", None).is_err() {
            let child = &mut engine.server.as_mut().expect("started").child;
            if let Ok(Some(status)) = child.try_wait() {
                let text = std::fs::read_to_string(&log_path).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(5).collect();
                return Err(fail(format!("Chroma exited ({status}) while starting: {}", tail.join(" | "))));
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(fail(format!(
                    "Chroma did not answer within {} s (log: {})",
                    START_TIMEOUT.as_secs(),
                    log_path.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok((engine, note))
    }

    /// The user's own server, answering its heartbeat.
    pub fn connect(endpoint: &ChromaEndpoint) -> Result<ChromaEngine> {
        let engine = ChromaEngine {
            server: None,
            base: endpoint.url.clone(),
            token: endpoint.token.clone(),
            agent: crate::engine::connect::http_agent(),
        };
        engine
            .request("GET", "/api/v2/heartbeat", None)
            .map_err(|e| fail(format!("the experiment's Chroma at {} does not answer: {e}", endpoint.url)))?;
        Ok(engine)
    }

    /// What the server says of its version: Chroma's `/api/v2/version` is its HTTP API's (1.0.0
    /// for Chroma 1.5.9); no endpoint reports the release.
    fn version(&self) -> Result<String> {
        let api = self.request("GET", "/api/v2/version", None)?;
        Ok(format!("HTTP API {}; the server does not report its release", api.as_str().unwrap_or("of unknown version")))
    }

    /// `request` with the token, when the server asks for one.
    fn signed<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(token) => {
                let token = token.expose();
                request.header("x-chroma-token", token).header("Authorization", format!("Bearer {token}"))
            }
            None => request,
        }
    }

    /// One request; the JSON it answers with, or an error naming the path and Chroma's message.
    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let url = format!("{}{path}", self.base);
        let response = match (method, body) {
            (_, Some(body)) => {
                let request = if method == "PUT" { self.agent.put(&url) } else { self.agent.post(&url) };
                self.signed(request).header("Content-Type", "application/json").send(body.to_string().as_bytes())
            }
            ("DELETE", _) => self.signed(self.agent.delete(&url)).call(),
            _ => self.signed(self.agent.get(&url)).call(),
        }
        .map_err(|e| fail(format!("{method} {path}: {e}")))?;
        let status = response.status().as_u16();
        let text = response.into_body().read_to_string().map_err(|e| fail(format!("{method} {path}: {e}")))?;
        if status >= 400 {
            return Err(fail(format!("{method} {path}: {status} {}", crate::words::clip(&text, 300))));
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| fail(format!("{method} {path}: not JSON ({e})")))
    }

    /// Chroma's answer to one query of collection `id`: the `depth` records nearest `vector`
    /// under `filter` (a `where`), with the fields `include` names (`Null` for depth 0).
    fn query(&self, id: &str, vector: &[f32], depth: usize, filter: Option<Value>, include: &[&str]) -> Result<Value> {
        if depth == 0 {
            return Ok(Value::Null);
        }
        let mut body = json!({"query_embeddings": [vector], "n_results": depth, "include": include});
        if let Some(filter) = filter {
            body["where"] = filter;
        }
        self.request("POST", &format!("{COLLECTIONS}/{id}/query"), Some(&body))
    }

    /// The id, row count and recorded build seconds (0 when none) of collection `name`, if it
    /// exists. One that another run drops between the two requests (a build lock released) is
    /// not found.
    fn found(&self, name: &str) -> Result<Option<(String, usize, f64)>> {
        let Ok(described) = self.request("GET", &format!("{COLLECTIONS}/{name}"), None) else { return Ok(None) };
        let id = described["id"].as_str().ok_or_else(|| fail(format!("collection {name} has no id")))?.to_string();
        let seconds = described["metadata"][BUILD_SECONDS].as_f64().unwrap_or(0.0);
        let Ok(count) = self.request("GET", &format!("{COLLECTIONS}/{id}/count"), None) else { return Ok(None) };
        Ok(Some((id, count.as_u64().unwrap_or(0) as usize, seconds)))
    }

    /// A collection of `vectors` (`dim` each, chunk ordinals as ids) with each chunk's groups,
    /// built with `build`; `key` names its content. A collection found with every row is reused;
    /// while another run builds it, this one waits; one left short is dropped and built again.
    pub fn vector_collection(
        &self,
        key: &str,
        vectors: &[f32],
        dim: usize,
        acl: ChunkAcl<'_>,
        build: ChromaBuild,
    ) -> Result<ChromaCollection> {
        let name = format!("v_{key}");
        let rows = vectors.len() / dim.max(1);
        let bytes = vectors.len() as u64 * 4;
        let waiting = Instant::now();
        loop {
            if let Some((id, _, build_seconds)) = self.found(&name)?.filter(|f| f.1 == rows) {
                return Ok(ChromaCollection { id, build, bytes, build_seconds, reused: true });
            }
            if let Some(_lock) = BuildLock::take(self, key)? {
                // A build that finished while the lock was taken, else what an interrupted one left.
                match self.found(&name)? {
                    Some((id, count, build_seconds)) if count == rows => {
                        return Ok(ChromaCollection { id, build, bytes, build_seconds, reused: true })
                    }
                    Some(_) => self.drop_collection(&name)?,
                    None => {}
                }
                let started = Instant::now();
                let id = self.fill(key, vectors, dim, acl, build)?;
                let build_seconds = started.elapsed().as_secs_f64();
                // The build's own time stays with the collection: a run that reuses it reports it.
                let renamed = json!({"new_name": name, "new_metadata": {BUILD_SECONDS: build_seconds}});
                self.request("PUT", &format!("{COLLECTIONS}/{id}"), Some(&renamed))?;
                return Ok(ChromaCollection { id, build, bytes, build_seconds, reused: false });
            }
            if waiting.elapsed() > WAIT_LIMIT {
                return Err(fail(format!(
                    "waited {} s for another run's build of collection {name}: when no run is building it, drop collection l_{key} and run again",
                    WAIT_LIMIT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn drop_collection(&self, name: &str) -> Result<()> {
        self.request("DELETE", &format!("{COLLECTIONS}/{name}"), None).map(|_| ())
    }

    /// Collection `b_{key}` made anew and filled; its id.
    fn fill(&self, key: &str, vectors: &[f32], dim: usize, acl: ChunkAcl<'_>, build: ChromaBuild) -> Result<String> {
        let building = format!("b_{key}");
        if self.found(&building)?.is_some() {
            self.drop_collection(&building)?;
        }
        let rows = vectors.len() / dim.max(1);
        let hnsw = json!({
            "space": "ip",
            "max_neighbors": build.max_neighbors,
            "ef_construction": build.ef_construction,
            "ef_search": build.ef_search,
        });
        let created =
            self.request("POST", COLLECTIONS, Some(&json!({"name": building, "configuration": {"hnsw": hnsw}})))?;
        let id = created["id"].as_str().ok_or_else(|| fail("a created collection without an id"))?.to_string();
        let limits = self.request("GET", "/api/v2/pre-flight-checks", None)?;
        let batch = limits["max_batch_size"].as_u64().unwrap_or(1000).max(1) as usize;
        for start in (0..rows).step_by(batch) {
            let end = (start + batch).min(rows);
            let ids: Vec<String> = (start..end).map(|i| i.to_string()).collect();
            let embeddings: Vec<&[f32]> = (start..end).map(|i| &vectors[i * dim..(i + 1) * dim]).collect();
            let metadatas: Vec<Value> = (start..end)
                .map(|i| {
                    Value::Object(
                        stored_groups(acl(i)).into_iter().map(|g| (format!("acl:{g}"), Value::Bool(true))).collect(),
                    )
                })
                .collect();
            let body = json!({"ids": ids, "embeddings": embeddings, "metadatas": metadatas});
            self.request("POST", &format!("{COLLECTIONS}/{id}/add"), Some(&body))?;
        }
        Ok(id)
    }
}

/// The `where` of a restricted search: any of the user's groups or the public marker.
fn acl_where(restrict: &Restriction<'_>) -> Value {
    any_of(asked_groups(restrict).into_iter().map(|g| json!({ format!("acl:{g}"): {"$eq": true} })).collect())
}

/// A `where` that holds when any of `conditions` does (Chroma's `$or` takes two or more).
fn any_of(mut conditions: Vec<Value>) -> Value {
    if conditions.len() == 1 {
        conditions.pop().expect("one")
    } else {
        json!({ "$or": conditions })
    }
}

/// A Chroma search over one collection.
pub struct ChromaVectorSource<'a> {
    pub engine: &'a ChromaEngine,
    pub collection: &'a ChromaCollection,
    /// The same vectors in process: the oracle, and cosines for `explain`.
    pub exact: &'a ExactIndex,
}

impl RankingSource for ChromaVectorSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        let filter = restrict.map(acl_where);
        let found = self.engine.query(&self.collection.id, query.vector, depth, filter, &["distances"])?;
        let ids = found["ids"][0].as_array().cloned().unwrap_or_default();
        let distances = found["distances"][0].as_array().cloned().unwrap_or_default();
        if ids.len() != distances.len() {
            return Err(fail(format!("query: {} ids and {} distances", ids.len(), distances.len())));
        }
        let hits = ids
            .iter()
            .zip(&distances)
            .map(|(id, d)| {
                let chunk = id
                    .as_str()
                    .and_then(|s| s.parse::<u32>().ok())
                    .ok_or_else(|| fail(format!("query: chunk id {id}")))?;
                // Inner-product space: the distance is 1 − the dot product.
                let score = 1.0 - d.as_f64().ok_or_else(|| fail("query: a distance that is not a number"))? as f32;
                Ok(Hit { chunk, score })
            })
            .collect::<Result<Vec<Hit>>>()?;
        Ok(top_hits(hits, depth))
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        ExactSource { index: self.exact }.explain(query, chunk)
    }

    fn size_bytes(&self) -> u64 {
        self.collection.bytes
    }

    fn side(&self) -> Side {
        Side::Dense
    }

    fn plans_each_depth(&self) -> bool {
        false
    }

    fn oracle(&self) -> Option<Arc<dyn RankingSource + '_>> {
        Some(Arc::new(ExactSource { index: self.exact }))
    }
}
