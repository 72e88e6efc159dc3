//! Milvus as the ranking source of dense cells: the chunk vectors ragsweep computed, loaded into
//! a collection with each chunk's ACL as an array field, searched the way an application
//! searches (`array_contains_any(acl, [groups])` as the search's own filter expression), with
//! Milvus's index kinds and search parameters as grid axes.
//!
//! The server is a private Milvus standalone started from the PyPI wheel (`server.rs`), or the
//! user's own Milvus (standalone or cluster: the same gRPC API) at a URL with a token read from
//! an environment variable. Collections are content-keyed like every stage: a collection's name
//! is the key of what it holds, and it counts as built only once the alias made after its index
//! finished names it, so an interrupted build is dropped and redone. Runs sharing a server (the
//! shards of one grid on a user's Milvus) build a collection once: the build holds a lock on the
//! server itself, a collection `l_…` whose description names its holder; the others wait for the
//! alias and reuse what it names.

pub mod proto;
pub(crate) mod served;
pub(crate) mod server;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use prost::Message;

use self::proto::{field, kv, HasStatus};
use self::server::MilvusServer;
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
use crate::vocab::{EngineKind, ServedRows, INDEX_UNUSED};

const VECTOR_FIELD: &str = "embedding";
/// Rows per insert request: well under the proxy's 64 MiB message limit for 1,024 dimensions.
const INSERT_BYTES: usize = 16 << 20;
/// How long building an index or loading a collection may take before the run stops.
const WAIT_LIMIT: Duration = Duration::from_secs(3600);
/// How long a loaded collection may take to answer its first query.
const READY_LIMIT: Duration = Duration::from_secs(60);

/// What Milvus answers about a collection that does not exist: `code` since 2.3, the older
/// `error_code` (`CollectionNotExists`) before.
const COLLECTION_NOT_FOUND: i32 = 100;
const COLLECTION_NOT_EXISTS: i32 = 4;

pub(crate) fn fail(what: impl Into<String>) -> Error {
    Error::Engine { engine: ENGINE.name(), what: what.into(), source: None }
}

fn base64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// How Milvus indexes a collection's vectors (build-time parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MilvusBuild {
    /// `FLAT`: every vector compared, no approximation.
    Flat,
    Hnsw {
        m: usize,
        ef_construction: usize,
    },
    IvfFlat {
        nlist: usize,
    },
}

impl std::fmt::Display for MilvusBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MilvusBuild::Flat => write!(f, "flat"),
            MilvusBuild::Hnsw { m, ef_construction } => write!(f, "hnsw,m={m},efc={ef_construction}"),
            MilvusBuild::IvfFlat { nlist } => write!(f, "ivf_flat,nlist={nlist}"),
        }
    }
}

impl MilvusBuild {
    fn index_params(self) -> Vec<proto::KeyValuePair> {
        let (kind, params) = match self {
            MilvusBuild::Flat => ("FLAT", "{}".to_string()),
            MilvusBuild::Hnsw { m, ef_construction } => {
                ("HNSW", format!("{{\"M\": {m}, \"efConstruction\": {ef_construction}}}"))
            }
            MilvusBuild::IvfFlat { nlist } => ("IVF_FLAT", format!("{{\"nlist\": {nlist}}}")),
        };
        vec![kv("index_type", kind), kv("metric_type", "IP"), kv("params", params)]
    }
}

/// Query-time settings of a Milvus search: HNSW's `ef` and IVF's `nprobe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MilvusQuery {
    pub ef: usize,
    pub nprobe: usize,
}

/// A gRPC connection to a Milvus proxy, and the runtime its calls run on.
pub struct Client {
    runtime: tokio::runtime::Runtime,
    channel: tonic::transport::Channel,
    authorization: Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>,
}

impl Client {
    /// A client of the proxy at `url` (`http://host:port`) that logs in with `credential`
    /// (`user:password` or an API key; sent base64-encoded, as Milvus's clients send it);
    /// connects on first use.
    pub fn connect(url: &str, credential: Option<&str>) -> Result<Client> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| fail(format!("cannot start the gRPC runtime: {e}")))?;
        let endpoint = tonic::transport::Endpoint::from_shared(url.to_string())
            .map_err(|e| fail(format!("{url:?} is not a server address: {e}")))?
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true);
        let channel = {
            let _guard = runtime.enter();
            endpoint.connect_lazy()
        };
        let authorization = credential
            .map(|c| base64(c).parse().map_err(|_| fail("the token holds characters a request header cannot carry")))
            .transpose()?;
        Ok(Client { runtime, channel, authorization })
    }

    /// One unary call of `MilvusService/method`; a response whose status is not success is an
    /// error naming the method and Milvus's reason.
    pub fn call<Req, Resp>(&self, method: &str, request: Req) -> Result<Resp>
    where
        Req: Message + Send + Sync + 'static,
        Resp: Message + Default + HasStatus + Send + Sync + 'static,
    {
        let response: Resp = self.call_unchecked(method, request)?;
        if let Some(status) = response.status() {
            if status.error_code != 0 || status.code != 0 {
                return Err(fail(format!("{method}: {} (code {})", status.reason, status.code.max(status.error_code))));
            }
        }
        Ok(response)
    }

    /// [`Client::call`] without looking at the status the server put in its answer.
    fn call_unchecked<Req, Resp>(&self, method: &str, request: Req) -> Result<Resp>
    where
        Req: Message + Send + Sync + 'static,
        Resp: Message + Default + Send + Sync + 'static,
    {
        let path: tonic::codegen::http::uri::PathAndQuery = format!("/milvus.proto.milvus.MilvusService/{method}")
            .parse()
            .map_err(|_| fail(format!("bad method name {method}")))?;
        let mut request = tonic::Request::new(request);
        if let Some(auth) = &self.authorization {
            request.metadata_mut().insert("authorization", auth.clone());
        }
        let mut grpc = tonic::client::Grpc::new(self.channel.clone())
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(256 << 20);
        let response: Resp = self
            .runtime
            .block_on(async move {
                grpc.ready().await.map_err(|e| tonic::Status::unavailable(e.to_string()))?;
                grpc.unary(request, path, tonic_prost::ProstCodec::default()).await
            })
            .map_err(|s| fail(format!("{method}: {} {}", s.code(), s.message())))?
            .into_inner();
        Ok(response)
    }

    fn healthy(&self) -> Result<()> {
        let health: proto::CheckHealthResponse = self.call("CheckHealth", proto::Empty {})?;
        if health.is_healthy {
            Ok(())
        } else {
            Err(fail("the server says it is not healthy"))
        }
    }

    /// The collection (or alias) `collection`, `None` when the server says it does not exist.
    /// Any other error is the server's: a collection is never taken for missing (and rebuilt)
    /// because a server that restarts did not answer yet.
    fn describe(&self, collection: &str) -> Result<Option<proto::DescribeCollectionResponse>> {
        let request = || proto::CollectionName { collection_name: collection.into() };
        let described: proto::DescribeCollectionResponse = self.call_unchecked("DescribeCollection", request())?;
        match described.status.as_ref() {
            Some(s) if s.code == COLLECTION_NOT_FOUND || s.error_code == COLLECTION_NOT_EXISTS => Ok(None),
            // The checked call says what the server said.
            Some(s) if s.code != 0 || s.error_code != 0 => self.call("DescribeCollection", request()).map(Some),
            _ => Ok(Some(described)),
        }
    }

    /// Creates the collection `schema` names, with one shard.
    pub fn create_collection(&self, schema: &proto::CollectionSchema) -> Result<()> {
        let request = proto::CreateCollectionRequest {
            collection_name: schema.name.clone(),
            schema: schema.encode_to_vec(),
            shards_num: 1,
            consistency_level: 0,
        };
        self.call::<_, proto::Status>("CreateCollection", request).map(|_| ())
    }

    fn drop_collection(&self, collection: &str) -> Result<()> {
        self.call::<_, proto::Status>("DropCollection", proto::CollectionName { collection_name: collection.into() })
            .map(|_| ())
    }

    fn set_password(&self, user: &str, old: &str, new: &str) -> Result<()> {
        let request = proto::UpdateCredentialRequest {
            username: user.into(),
            old_password: base64(old),
            new_password: base64(new),
        };
        self.call::<_, proto::Status>("UpdateCredential", request).map(|_| ())
    }
}

pub use crate::engine::connect::MilvusEndpoint;

impl MilvusEndpoint {
    /// A client of the server, logged in with the token when there is one.
    fn client(&self) -> Result<Client> {
        Client::connect(&self.url, self.token.as_ref().map(Secret::expose))
    }
}

/// A running engine: a server of ours or the user's, and a client of it.
pub struct MilvusEngine {
    client: Arc<Client>,
    /// Finished builds, one file per alias (rows and build seconds): Milvus 2.3 keeps no
    /// collection property across a restart.
    records: std::path::PathBuf,
    /// Dropped after the client.
    _server: Option<MilvusServer>,
}

/// A collection built (or found) in the engine.
#[derive(Debug, Clone)]
pub struct MilvusCollection {
    pub name: String,
    /// The bytes loaded (vectors and ACLs); Milvus 2.3 does not report an index's size.
    pub bytes: u64,
    pub build_seconds: f64,
    pub reused: bool,
}

/// A Milvus string literal of `value`: quotes, backslashes and control characters escaped, so
/// a group name stays a value whatever it holds.
fn string_literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The filter expression of a restricted search: the user's groups and the public marker.
fn acl_filter(restrict: &Restriction<'_>) -> String {
    let groups: Vec<String> = asked_groups(restrict).into_iter().map(string_literal).collect();
    format!("array_contains_any(acl, [{}])", groups.join(", "))
}

/// The collection a build of alias `alias` (`v_…`) fills (`b_…`).
fn building(alias: &str) -> String {
    format!("b_{}", alias.trim_start_matches("v_"))
}

/// The lock a build of alias `alias` holds on a shared server: collection `l_…`, created by the
/// holder with its name in the description (a create that finds it made by another fails, or
/// with Milvus's idempotent create, leaves another's description), dropped when the build ends,
/// fails, or the run is interrupted.
struct BuildLock {
    client: Arc<Client>,
    name: String,
}

/// Locks held by this process, released on Ctrl-C ([`release_locks`]).
static HELD: std::sync::Mutex<Vec<(Arc<Client>, String)>> = std::sync::Mutex::new(Vec::new());

impl BuildLock {
    fn name(alias: &str) -> String {
        format!("l_{}", alias.trim_start_matches("v_"))
    }

    /// Takes the lock of `alias`'s build, or says another run holds it (`None`).
    fn take(client: &Arc<Client>, alias: &str) -> Result<Option<BuildLock>> {
        use proto::data_type::*;
        let name = BuildLock::name(alias);
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let me = format!("ragsweep process {} on {} ({nanos})", std::process::id(), host.trim());
        let schema = proto::CollectionSchema {
            name: name.clone(),
            description: me.clone(),
            fields: vec![
                proto::FieldSchema { is_primary_key: true, ..field("id", INT64, vec![]) },
                field("unused", FLOAT_VECTOR, vec![kv("dim", "2")]),
            ],
        };
        // A create can fail because another run holds the lock, and the lock be gone by the
        // time it is described: try again then, a few times, before taking the failure as it is.
        let mut failure = None;
        for _ in 0..3 {
            let created = client.create_collection(&schema);
            match client.describe(&name) {
                Ok(Some(d)) if d.schema.as_ref().is_some_and(|s| s.description == me) => {
                    HELD.lock().expect("locks").push((client.clone(), name.clone()));
                    return Ok(Some(BuildLock { client: client.clone(), name }));
                }
                Ok(Some(_)) => return Ok(None),
                Ok(None) => failure = Some(created.err().unwrap_or_else(|| fail(format!("lock {name} vanished")))),
                Err(e) => failure = Some(created.err().unwrap_or(e)),
            }
        }
        Err(failure.expect("three tries"))
    }

    /// Drops the lock collection; an error says the server refused.
    fn release(mut self) -> Result<()> {
        self.drop_now()
    }

    fn drop_now(&mut self) -> Result<()> {
        if self.name.is_empty() {
            return Ok(());
        }
        let name = std::mem::take(&mut self.name);
        HELD.lock().expect("locks").retain(|(_, n)| *n != name);
        self.client.drop_collection(&name)
    }

    /// The error of a run that waited [`WAIT_LIMIT`] for another's build of `alias`.
    fn held_too_long(client: &Client, alias: &str) -> Error {
        let name = BuildLock::name(alias);
        let holder = match client.describe(&name) {
            Ok(Some(d)) => format!(
                "{}, since {} s after the Unix epoch",
                d.schema.map(|s| s.description).unwrap_or_default(),
                d.created_utc_timestamp / 1000
            ),
            Ok(None) | Err(_) => "a run that has just released it".into(),
        };
        fail(format!(
            "waited {} s for another run's build of collection {alias}, locked by {holder}: when no run is building it, drop collection {name} and run again",
            WAIT_LIMIT.as_secs()
        ))
    }
}

impl Drop for BuildLock {
    fn drop(&mut self) {
        let _ = self.drop_now();
    }
}

/// Releases the build locks this process holds (on Ctrl-C, before the servers stop).
pub(crate) fn release_locks() {
    let held = std::mem::take(&mut *HELD.lock().unwrap_or_else(|e| e.into_inner()));
    for (client, name) in held {
        let _ = client.drop_collection(&name);
    }
}

/// Milvus, `engine = "milvus"`.
pub const ENGINE: EngineKind = EngineKind::named("milvus");

/// Milvus as a serving engine.
pub struct Serving;

impl RunningEngine for MilvusEngine {
    fn open_served(
        &self,
        spec: &ServedIndex,
        dim: usize,
        chunks: &[(String, String, bool)],
    ) -> Result<Box<dyn OpenedServed>> {
        let served = self.open_collection(spec, dim, chunks)?;
        Ok(Box::new(served))
    }

    /// Three collections: `FLAT`, HNSW, and IVF_FLAT with 128 lists.
    fn filter_bench<'a>(&'a self, input: FilterBenchInput<'a>) -> Result<Box<dyn FilterBench + 'a>> {
        let dim = input.dim();
        let FilterBenchInput { exact, acl, m, ef_construction, ef_search, name } = input;
        let collections =
            [MilvusBuild::Flat, MilvusBuild::Hnsw { m, ef_construction }, MilvusBuild::IvfFlat { nlist: 128 }]
                .into_iter()
                .map(|build| {
                    Ok((build, self.vector_collection(&name("milvus", &build), exact.vectors(), dim, acl, build)?))
                })
                .collect::<Result<_>>()?;
        Ok(Box::new(MilvusBench { engine: self, exact, collections, ef_search, m, ef_construction }))
    }
}

/// `bench-filter`'s collections in Milvus.
struct MilvusBench<'a> {
    engine: &'a MilvusEngine,
    exact: &'a ExactIndex,
    collections: Vec<(MilvusBuild, MilvusCollection)>,
    ef_search: usize,
    m: usize,
    ef_construction: usize,
}

impl FilterBench for MilvusBench<'_> {
    fn loaded(&self) -> String {
        format!(
            "milvus: {} vectors loaded three times (FLAT, HNSW m={} ef_construction={}, IVF_FLAT lists=128), built in {:.1}s",
            self.exact.len(),
            self.m,
            self.ef_construction,
            self.build_seconds()
        )
    }

    fn build_seconds(&self) -> f64 {
        self.collections.iter().map(|(_, c)| c.build_seconds).sum()
    }

    /// `FLAT`, HNSW at `ef_search`, IVF_FLAT with 8 probes.
    fn settings(&self) -> Vec<(String, Box<dyn RankingSource + '_>)> {
        let (engine, exact, ef_search) = (self.engine, self.exact, self.ef_search);
        self.collections
            .iter()
            .map(|(build, collection)| {
                let (query, name) = match *build {
                    MilvusBuild::Flat => (MilvusQuery { ef: 0, nprobe: 0 }, "milvus flat".to_string()),
                    MilvusBuild::Hnsw { m, ef_construction } => (
                        MilvusQuery { ef: ef_search, nprobe: 0 },
                        format!("milvus hnsw(m={m},efc={ef_construction},ef={ef_search})"),
                    ),
                    MilvusBuild::IvfFlat { nlist } => {
                        (MilvusQuery { ef: 0, nprobe: 8 }, format!("milvus ivf_flat(nlist={nlist},nprobe=8)"))
                    }
                };
                let source = MilvusVectorSource { engine, collection, exact, build: *build, query };
                (name, Box::new(source) as Box<dyn RankingSource + '_>)
            })
            .collect()
    }
}

impl ServingEngine for Serving {
    fn install(&self, engines: &Path, force: bool, step: &dyn Fn(&str)) -> Result<String> {
        let milvus = crate::engine::install::install_milvus(engines, force, step)?;
        Ok(format!("Milvus 2.3.5 standalone installed in {}", milvus.display()))
    }

    fn check(&self, from: &EngineSources<'_>, writes: bool) -> Result<String> {
        check(&from.engines_dir.join("milvus"), from.server::<MilvusEndpoint>(), writes)
    }

    fn serve(&self, engines: &Path, secret_file: Option<&Path>) -> Result<crate::engine::registry::Served> {
        let secret_file = secret_file.ok_or_else(|| {
            fail("Milvus logs in with a token: name the file it is written to with --secret-file".to_string())
        })?;
        let server = server::MilvusServer::start_private(&engines.join("milvus"))?;
        server::write_secret(secret_file, &format!("root:{}", server.password))?;
        Ok(crate::engine::registry::Served {
            url: format!("http://127.0.0.1:{}", server.port),
            what: "Milvus 2.3.5 (its token, root:PASSWORD, in the secret file)".into(),
            guard: Box::new(server),
        })
    }

    fn start(&self, from: &EngineSources<'_>, _writes: bool) -> Result<Started> {
        let (engine, note) = MilvusEngine::start(
            &from.engines_dir.join("milvus"),
            from.cache_dir,
            from.server::<MilvusEndpoint>().cloned(),
        )?;
        // Which server the numbers come from, as it names itself, recorded with the engine stage.
        let version: proto::GetVersionResponse = engine.client.call("GetVersion", proto::Empty {})?;
        let what = match from.server::<MilvusEndpoint>() {
            Some(server) => format!(
                "connected to the experiment's Milvus at {} (Milvus {})",
                crate::stages::endpoint::redacted(&server.url),
                version.version
            ),
            None => format!("Milvus standalone server started (Milvus {})", version.version),
        };
        Ok(Started { engine: Box::new(engine), what, note })
    }

    fn interrupted(&self) {
        release_locks();
        server::stop_all();
    }

    fn secret_keys(&self) -> &'static [&'static str] {
        &["token_env"]
    }

    fn server_url(&self, url: &str) -> std::result::Result<String, String> {
        MilvusEndpoint::parse(url)
    }

    fn user_server(&self, spec: &ServerSpec) -> Result<UserServer> {
        Ok(Box::new(MilvusEndpoint { url: spec.url.clone(), token: spec.secret("token_env")? }))
    }

    fn served_rows(&self, from: &EngineSources<'_>, rows: &ServedRows) -> Result<Vec<(String, String)>> {
        let endpoint = from.server::<MilvusEndpoint>().ok_or_else(|| {
            fail(format!("collection {} is read from the experiment's server: declare [engines.milvus]", rows.source))
        })?;
        served::milvus_rows(endpoint, rows)
    }
}

/// What `validate` says of the engine, without starting a server: the installed binary, or the
/// user's server answering a health check.
/// With `writes` false, the run only reads served collections: nothing is tried.
fn check(install: &Path, own: Option<&MilvusEndpoint>, writes: bool) -> Result<String> {
    if let (Some(endpoint), false) = (own, writes) {
        let client = endpoint.client()?;
        let version: proto::GetVersionResponse = client.call("GetVersion", proto::Empty {})?;
        client.healthy()?;
        return Ok(format!(
            "engine milvus: the experiment's server at {} (Milvus {}), healthy; its served collections are only read, nothing is written",
            endpoint.url, version.version
        ));
    }
    match own {
        None => {
            server::binary(install)?;
            Ok(format!(
                "engine milvus: Milvus 2.3.5 in {}, started by each run (its data in the stage cache)",
                install.display()
            ))
        }
        Some(endpoint) => {
            let client = Arc::new(endpoint.client()?);
            let version: proto::GetVersionResponse = client.call("GetVersion", proto::Empty {})?;
            client.healthy()?;
            // What a run does first on the server: a collection made and dropped (the build lock).
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let probe = format!("v_probe_{}_{}", std::process::id(), nanos.as_nanos());
            let refused = |e: Error| fail(format!("cannot do what a run does on {}: {e}", endpoint.url));
            BuildLock::take(&client, &probe).map_err(refused)?.map_or(Ok(()), BuildLock::release).map_err(refused)?;
            Ok(format!(
                "engine milvus: the experiment's server at {} (Milvus {}), healthy, may create and drop collections (tried)",
                endpoint.url, version.version
            ))
        }
    }
}

impl MilvusEngine {
    /// Starts a server from `install`, its data in the stage cache `cache`, or connects to
    /// `own`; returns a note when the cache could not be used.
    pub fn start(install: &Path, cache: &Path, own: Option<MilvusEndpoint>) -> Result<(MilvusEngine, Option<String>)> {
        match own {
            Some(endpoint) => {
                let client = endpoint.client()?;
                client.healthy()?;
                let server = blake3::hash(endpoint.url.as_bytes()).to_hex();
                let records = cache.join("milvus-servers").join(&server[..16]);
                std::fs::create_dir_all(&records).map_err(|e| Error::io(&records, e))?;
                Ok((MilvusEngine { client: Arc::new(client), records, _server: None }, None))
            }
            None => {
                let (server, note) = MilvusServer::start_cached(install, cache)?;
                let url = format!("http://127.0.0.1:{}", server.port);
                let client = Client::connect(&url, Some(&format!("root:{}", server.password)))?;
                let records = server.data.join("ragsweep-builds");
                std::fs::create_dir_all(&records).map_err(|e| Error::io(&records, e))?;
                Ok((MilvusEngine { client: Arc::new(client), records, _server: Some(server) }, note))
            }
        }
    }

    /// Polls `done` every 100 ms until it says yes, for at most [`WAIT_LIMIT`].
    fn wait(&self, what: &str, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
        let t = Instant::now();
        while !done()? {
            if t.elapsed() > WAIT_LIMIT {
                return Err(fail(format!("{what} did not finish within {} s", WAIT_LIMIT.as_secs())));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// The collection of alias `name` and its recorded build seconds when a finished build made
    /// the alias (it is made only once the index is built); `None` otherwise.
    fn registered(&self, name: &str, rows: usize) -> Result<Option<(String, f64)>> {
        let t = Instant::now();
        let described = loop {
            match self.client.describe(name) {
                Ok(described) => break described,
                Err(e) if t.elapsed() > READY_LIMIT => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        };
        let Some(described) = described else { return Ok(None) };
        let record = std::fs::read_to_string(self.records.join(name)).ok();
        let (found, seconds) = match record.as_deref().and_then(|r| r.split_once(' ')) {
            Some((found, seconds)) => (found.parse::<usize>().ok(), seconds.trim().parse().unwrap_or(0.0)),
            // Built by another machine on the user's server: its build time is not known here.
            None => (Some(rows), 0.0),
        };
        if found != Some(rows) {
            return Err(fail(format!(
                "collection {name} was recorded with {found:?} rows, its key says {rows}: remove the cache's milvus folder"
            )));
        }
        let name = if described.collection_name.is_empty() { building(name) } else { described.collection_name };
        Ok(Some((name, seconds)))
    }

    /// A collection of `vectors` (`dim` each, chunk ordinals as ids) with each chunk's ACL,
    /// indexed by `build` and loaded; `key` names its content.
    pub fn vector_collection(
        &self,
        key: &str,
        vectors: &[f32],
        dim: usize,
        acl: ChunkAcl<'_>,
        build: MilvusBuild,
    ) -> Result<MilvusCollection> {
        let name = format!("v_{key}");
        let rows = vectors.len() / dim.max(1);
        let acls: Vec<Vec<String>> = (0..rows).map(|i| stored_groups(acl(i))).collect();
        let bytes = vectors.len() as u64 * 4 + acls.iter().flatten().map(|g| g.len() as u64).sum::<u64>();
        let waiting = Instant::now();
        let (loading, build_seconds, reused) = loop {
            if let Some((found, seconds)) = self.registered(&name, rows)? {
                break (found, seconds, true);
            }
            if let Some(_lock) = BuildLock::take(&self.client, &name)? {
                // A build that finished while we took the lock, else what an interrupted one left.
                if let Some((found, seconds)) = self.registered(&name, rows)? {
                    break (found, seconds, true);
                }
                // Dropping a collection that does not exist fails: there is nothing to drop then.
                let _ = self.client.drop_collection(&building(&name));
                let (built, seconds) = self.build(&name, vectors, dim, &acls, build)?;
                break (built, seconds, false);
            }
            if waiting.elapsed() > WAIT_LIMIT {
                return Err(BuildLock::held_too_long(&self.client, &name));
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        self.client
            .call::<_, proto::Status>("LoadCollection", proto::CollectionName { collection_name: loading.clone() })?;
        self.wait("loading the collection", || {
            let state: proto::GetLoadStateResponse =
                self.client.call("GetLoadState", proto::GetLoadStateRequest { collection_name: loading.clone() })?;
            Ok(state.state == 3)
        })?;
        self.answering(&loading)?;
        Ok(MilvusCollection { name: loading, bytes, build_seconds, reused })
    }

    /// Waits until a loaded collection answers a query. Milvus standalone reports a collection
    /// loaded before its query node takes requests ("failed to get delegator … can not find
    /// client of node 1"); a cell's first search would fail then. After [`READY_LIMIT`] the
    /// query's own error stops the build.
    fn answering(&self, collection: &str) -> Result<()> {
        let t = Instant::now();
        loop {
            match served::count(&self.client, collection) {
                Ok(_) => return Ok(()),
                Err(e) if t.elapsed() > READY_LIMIT => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// Builds collection `b_…` of alias `alias`: created, filled with the rows, flushed and
    /// indexed; the alias is made last, so it names only a finished build. Returns the
    /// collection's name and the seconds the build took.
    fn build(
        &self,
        alias: &str,
        vectors: &[f32],
        dim: usize,
        acls: &[Vec<String>],
        build: MilvusBuild,
    ) -> Result<(String, f64)> {
        use proto::data_type::*;
        let started = Instant::now();
        let rows = vectors.len() / dim.max(1);
        let name = &building(alias);
        let capacity = acls.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let longest = acls.iter().flatten().map(String::len).max().unwrap_or(1).max(1);
        if capacity > 4096 || longest > 65_535 {
            return Err(fail(format!(
                "a chunk's ACL has {capacity} groups or a group of {longest} bytes: Milvus stores at most 4,096 groups of 65,535 bytes"
            )));
        }
        let schema = proto::CollectionSchema {
            name: name.into(),
            description: String::new(),
            fields: vec![
                proto::FieldSchema { is_primary_key: true, ..field("id", INT64, vec![]) },
                proto::FieldSchema {
                    element_type: VARCHAR,
                    ..field(
                        "acl",
                        ARRAY,
                        vec![kv("max_capacity", capacity.to_string()), kv("max_length", longest.to_string())],
                    )
                },
                field(VECTOR_FIELD, FLOAT_VECTOR, vec![kv("dim", dim.to_string())]),
            ],
        };
        self.client.create_collection(&schema)?;
        let per_batch = (INSERT_BYTES / (dim * 4 + 64)).max(1);
        for start in (0..rows).step_by(per_batch) {
            let end = (start + per_batch).min(rows);
            let acl_rows: Vec<proto::ScalarField> = acls[start..end]
                .iter()
                .map(|groups| proto::ScalarField {
                    data: Some(proto::scalar_field::Data::Strings(proto::StringArray { data: groups.clone() })),
                })
                .collect();
            let batch = &vectors[start * dim..end * dim];
            let request = proto::InsertRequest {
                collection_name: name.into(),
                num_rows: (end - start) as u32,
                fields_data: vec![
                    proto::FieldData {
                        r#type: INT64,
                        field_name: "id".into(),
                        scalars: Some(proto::ScalarField {
                            data: Some(proto::scalar_field::Data::Long(proto::LongArray {
                                data: (start as i64..end as i64).collect(),
                            })),
                        }),
                        vectors: None,
                    },
                    proto::FieldData {
                        r#type: ARRAY,
                        field_name: "acl".into(),
                        scalars: Some(proto::ScalarField {
                            data: Some(proto::scalar_field::Data::Array(proto::ArrayArray {
                                data: acl_rows,
                                element_type: VARCHAR,
                            })),
                        }),
                        vectors: None,
                    },
                    proto::FieldData {
                        r#type: FLOAT_VECTOR,
                        field_name: VECTOR_FIELD.into(),
                        scalars: None,
                        vectors: Some(proto::VectorField {
                            dim: dim as i64,
                            float_vector: Some(proto::FloatArray { data: batch.to_vec() }),
                        }),
                    },
                ],
            };
            let inserted: proto::MutationResult = self.client.call("Insert", request)?;
            if inserted.insert_cnt != (end - start) as i64 {
                return Err(fail(format!("Insert: {} of {} rows inserted", inserted.insert_cnt, end - start)));
            }
        }
        let flushed: proto::FlushResponse =
            self.client.call("Flush", proto::FlushRequest { collection_names: vec![name.into()] })?;
        let segments = flushed.coll_seg_ids.get(name).map(|s| s.data.clone()).unwrap_or_default();
        let flush_ts = flushed.coll_flush_ts.get(name).copied().unwrap_or(0);
        self.wait("flushing the collection", || {
            let state: proto::BoolResponse = self.client.call(
                "GetFlushState",
                proto::GetFlushStateRequest { segment_ids: segments.clone(), flush_ts, collection_name: name.into() },
            )?;
            Ok(state.value)
        })?;
        self.client.call::<_, proto::Status>(
            "CreateIndex",
            proto::CreateIndexRequest {
                collection_name: name.into(),
                field_name: VECTOR_FIELD.into(),
                extra_params: build.index_params(),
            },
        )?;
        self.wait("building the index", || {
            let described: proto::DescribeIndexResponse = self.client.call(
                "DescribeIndex",
                proto::DescribeIndexRequest { collection_name: name.into(), field_name: VECTOR_FIELD.into() },
            )?;
            let Some(index) = described.index_descriptions.first() else { return Ok(false) };
            if index.state == 4 {
                return Err(fail(format!("building the index failed: {}", index.index_state_fail_reason)));
            }
            Ok(index.state == 3 && index.indexed_rows >= rows as i64 && index.pending_index_rows == 0)
        })?;
        let seconds = started.elapsed().as_secs_f64();
        self.client.call::<_, proto::Status>(
            "CreateAlias",
            proto::CreateAliasRequest { collection_name: name.clone(), alias: alias.into() },
        )?;
        let record = self.records.join(alias);
        crate::atomic::write_atomic(&record, format!("{rows} {seconds}\n").as_bytes())?;
        Ok((name.clone(), seconds))
    }

    /// How the loaded collection is searched: `(rows in indexed segments, all rows)`. Milvus
    /// searches a segment it has no index for by brute force (segments under
    /// `minSegmentNumRowsToEnableIndex`, 1,024 rows by default, are never indexed).
    fn indexed_rows(&self, collection: &str) -> Result<(i64, i64)> {
        let info: proto::GetQuerySegmentInfoResponse = self
            .client
            .call("GetQuerySegmentInfo", proto::GetQuerySegmentInfoRequest { collection_name: collection.into() })?;
        let all = info.infos.iter().map(|s| s.num_rows).sum();
        let indexed = info.infos.iter().filter(|s| !s.index_name.is_empty()).map(|s| s.num_rows).sum();
        Ok((indexed, all))
    }

    /// The `depth` best chunks of `vector`, restricted by `filter` (a boolean expression).
    fn search(&self, collection: &str, vector: &[f32], depth: usize, filter: &str, params: String) -> Result<Vec<Hit>> {
        let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        let group = proto::PlaceholderGroup {
            placeholders: vec![proto::PlaceholderValue { tag: "$0".into(), r#type: 101, values: vec![bytes] }],
        };
        let request = proto::SearchRequest {
            collection_name: collection.into(),
            dsl: filter.into(),
            placeholder_group: group.encode_to_vec(),
            dsl_type: 1,
            output_fields: Vec::new(),
            search_params: vec![
                kv("anns_field", VECTOR_FIELD),
                kv("topk", depth.to_string()),
                kv("metric_type", "IP"),
                kv("params", params),
                kv("round_decimal", "-1"),
                kv("offset", "0"),
                kv("ignore_growing", "False"),
            ],
            nq: 1,
            // Everything searched was flushed, indexed and loaded before the first query: no
            // query waits for the server's clock (Strong would, up to a time tick).
            consistency_level: 3,
            use_default_consistency: false,
        };
        let found: proto::SearchResults = self.client.call("Search", request)?;
        let Some(results) = found.results else { return Ok(Vec::new()) };
        let ids = results.ids.and_then(|i| i.int_id).map(|l| l.data).unwrap_or_default();
        if ids.len() != results.scores.len() {
            return Err(fail(format!("Search: {} ids and {} scores", ids.len(), results.scores.len())));
        }
        let hits = ids
            .into_iter()
            .zip(results.scores)
            .map(|(id, score)| {
                u32::try_from(id).map(|chunk| Hit { chunk, score }).map_err(|_| fail(format!("Search: chunk id {id}")))
            })
            .collect::<Result<Vec<Hit>>>()?;
        Ok(top_hits(hits, depth))
    }
}

/// `vector` as a search asks it: as it is of an exact (FLAT) index, as [`unseen`] of an
/// approximate one (ragsweep's collections and a team's alike).
pub(super) fn as_asked(vector: &[f32], exact: bool) -> std::borrow::Cow<'_, [f32]> {
    if exact {
        std::borrow::Cow::Borrowed(vector)
    } else {
        unseen(vector).into()
    }
}

/// `vector` as a query Milvus has not seen: eight of its components moved by one unit in the
/// last place, differently for every call of the process and every process.
///
/// Milvus 2.3.5 answers an approximate (HNSW, IVF) search for a query vector it has already
/// answered since the collection was loaded differently from the first time (measured: 9 to 15 of
/// 60 lists at HNSW ef 40, the same again after a reload; neither waiting, nor searching other
/// vectors, nor another `params` string changes it, one unit in the last place does). A user's
/// query is new to the server; a rerun or a shard asks the golden set's questions again. So every
/// call asks a vector that is new, and every run measures what a new query gets: the run that
/// loaded the collection, a rerun and a shard alike. Scores move by about 1e-7 of a component.
fn unseen(vector: &[f32]) -> Vec<f32> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    static PROCESS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let process = *PROCESS.get_or_init(|| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32)
    });
    let mut state = process ^ CALLS.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = || {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut out = vector.to_vec();
    if out.is_empty() {
        return out;
    }
    for _ in 0..8 {
        let r = next();
        let i = (r % out.len() as u64) as usize;
        let bits = out[i].to_bits();
        // Away from or towards zero by one unit; zero itself stays a finite number.
        let moved = if r >> 63 == 0 || bits & 0x7fff_ffff == 0 { bits + 1 } else { bits - 1 };
        let moved = f32::from_bits(moved);
        if moved.is_finite() {
            out[i] = moved;
        }
    }
    out
}

/// A Milvus search over one collection.
pub struct MilvusVectorSource<'a> {
    pub engine: &'a MilvusEngine,
    pub collection: &'a MilvusCollection,
    /// The same vectors in process: the oracle, and cosines for `explain`.
    pub exact: &'a ExactIndex,
    pub build: MilvusBuild,
    pub query: MilvusQuery,
}

impl MilvusVectorSource<'_> {
    /// The search's `params`: Milvus refuses an HNSW `ef` below the number of results asked,
    /// so `ef` is at least `depth`.
    fn params(&self, depth: usize) -> String {
        match self.build {
            MilvusBuild::Flat => "{}".into(),
            MilvusBuild::Hnsw { .. } => format!("{{\"ef\": {}}}", self.query.ef.max(depth)),
            MilvusBuild::IvfFlat { .. } => format!("{{\"nprobe\": {}}}", self.query.nprobe),
        }
    }
}

impl RankingSource for MilvusVectorSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        let filter = restrict.map(acl_filter).unwrap_or_default();
        let vector = as_asked(query.vector, matches!(self.build, MilvusBuild::Flat));
        self.engine.search(&self.collection.name, &vector, depth, &filter, self.params(depth))
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

    /// A list of k is its own search: HNSW's `ef` grows with k.
    fn plans_each_depth(&self) -> bool {
        true
    }

    fn plan(&self, _query: &Query<'_>, _depth: usize, _restrict: Option<&Restriction<'_>>) -> Result<Option<String>> {
        let kind = match self.build {
            MilvusBuild::Flat => return Ok(Some("flat (exact)".into())),
            MilvusBuild::Hnsw { .. } => "hnsw index",
            MilvusBuild::IvfFlat { .. } => "ivf_flat index",
        };
        let (indexed, all) = self.engine.indexed_rows(&self.collection.name)?;
        Ok(Some(if indexed == all {
            kind.to_string()
        } else if indexed == 0 {
            format!("brute force (segments too small to index){INDEX_UNUSED}")
        } else {
            format!("{kind} on {indexed} of {all} rows, brute force on the rest")
        }))
    }

    fn oracle(&self) -> Option<Arc<dyn RankingSource + '_>> {
        Some(Arc::new(ExactSource { index: self.exact }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unseen_vector_differs_by_units_in_the_last_place_and_never_twice_alike() {
        let v: Vec<f32> = (0..384).map(|i| (i as f32 - 191.5) / 1000.0).collect();
        let (a, b) = (unseen(&v), unseen(&v));
        assert_ne!(a, b);
        for (x, y) in v.iter().zip(&a) {
            assert!((x.to_bits() as i64 - y.to_bits() as i64).abs() <= 8, "{x} {y}");
        }
        assert!(v.iter().zip(&a).filter(|(x, y)| x != y).count() >= 1);
        assert_eq!(unseen(&[0.0]).len(), 1);
        assert!(unseen(&[0.0])[0].is_finite());
    }

    #[test]
    fn group_names_stay_string_values_in_the_filter_expression() {
        assert_eq!(string_literal("g1"), "\"g1\"");
        assert_eq!(string_literal("a\"], [\"x"), "\"a\\\"], [\\\"x\"");
        assert_eq!(string_literal("back\\slash\nline"), "\"back\\\\slash\\u000aline\"");
        assert_eq!(string_literal("ação"), "\"ação\"");
    }

    #[test]
    fn only_a_plain_http_address_without_credentials_is_a_server() {
        assert_eq!(MilvusEndpoint::parse("http://db:19530/").unwrap(), "http://db:19530");
        assert!(MilvusEndpoint::parse("https://db:19530").unwrap_err().contains("TLS"));
        assert!(MilvusEndpoint::parse("http://root:pw@db:19530").unwrap_err().contains("token_env"));
    }
}
