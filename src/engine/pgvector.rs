//! PostgreSQL + pgvector as ranking sources of grid cells: the chunk set and vectors ragsweep
//! computed, loaded into tables with each chunk's ACL, searched the way an application
//! searches (`WHERE acl && groups ORDER BY embedding <#> q LIMIT n`, full text with
//! `ts_rank_cd`).
//!
//! Tables are content-keyed like every other stage: a table's name is the key of what it
//! holds (vectors or texts, ACLs, index and build parameters), and it is registered only in
//! the transaction that built it, so a later run reuses it and an interrupted build leaves
//! nothing. With the cluster in the stage cache, builds survive the run.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::engine::connect::Endpoint;
use crate::engine::pg::{binaries, fail, found, quoted, text_array_value, vector_literal, PgConn, PgServer};
use crate::engine::registry::{
    EngineSources, FilterBench, FilterBenchInput, OpenedServed, RunningEngine, ServedIndex, ServerSpec, ServingEngine,
    Started, UserServer,
};
use crate::engine::{asked_groups, stored_groups, ChunkAcl};
use crate::error::{Error, Result};
use crate::retrieve::dense::ExactIndex;
use crate::retrieve::hits::{top_hits, Hit};
use crate::retrieve::source::{ExactSource, Query, RankingSource, Restriction, ScoreNode, Side, SourceScore};
use crate::vocab::{EngineKind, IterativeScan, ServedRows, Terms, INDEX_UNUSED};

/// How the engine indexes a table of vectors (build-time parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VectorBuild {
    /// No vector index: the engine scans and sorts.
    Exact,
    Hnsw {
        m: usize,
        ef_construction: usize,
    },
    Ivfflat {
        lists: usize,
    },
}

impl std::fmt::Display for VectorBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VectorBuild::Exact => write!(f, "exact"),
            VectorBuild::Hnsw { m, ef_construction } => write!(f, "hnsw,m={m},efc={ef_construction}"),
            VectorBuild::Ivfflat { lists } => write!(f, "ivfflat,lists={lists}"),
        }
    }
}

/// Query-time settings of a vector search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorQuery {
    pub ef_search: usize,
    pub probes: usize,
    pub iterative_scan: IterativeScan,
    /// Walk the vector index even where the planner estimates a scan cheaper
    /// (`enable_seqscan` and `enable_bitmapscan` off for the query).
    pub force_index: bool,
}

/// A running engine: where it listens (a server of ours, private or with its data in the stage
/// cache, or the user's own) and a pool of connections.
pub struct PgEngine {
    /// The server this process started; `None` for the user's own.
    _server: Option<PgServer>,
    endpoint: Endpoint,
    idle: Mutex<Vec<PgConn>>,
    /// Whether the extension and the build log are there (made by the first build: a run that
    /// only reads a served table writes nothing).
    ready: Mutex<bool>,
}

/// A table built (or found) in the engine.
#[derive(Debug, Clone)]
pub struct PgTable {
    pub name: String,
    pub bytes: u64,
    /// Seconds loading and indexing took when the table was built.
    pub build_seconds: f64,
    pub reused: bool,
}

/// A value as a column of `COPY … FROM STDIN` (text format): backslashes, tabs and line breaks
/// escaped, NUL dropped.
fn copy_field(value: &str) -> String {
    value.replace('\0', "").replace('\\', "\\\\").replace('\t', "\\t").replace('\n', "\\n").replace('\r', "\\r")
}

/// A chunk's ACL as a `text[]` literal for `COPY`.
fn acl_literal(acl: Option<&[String]>) -> String {
    copy_field(&text_array_value(&stored_groups(acl)))
}

fn text_config(analyzer: crate::analyze::AnalyzerKind) -> &'static str {
    match analyzer {
        crate::analyze::AnalyzerKind::En => "english",
        crate::analyze::AnalyzerKind::Pt => "portuguese",
        crate::analyze::AnalyzerKind::Simple => "simple",
    }
}

/// The user's groups and the public marker, as the `text[]` parameter of a restricted search
/// (`acl && $n::text[]`).
fn acl_groups(restrict: &Restriction<'_>) -> String {
    text_array_value(&asked_groups(restrict))
}

/// PostgreSQL + pgvector, `engine = "pg"`.
pub const ENGINE: EngineKind = EngineKind::named("pg");

/// PostgreSQL + pgvector as a serving engine.
pub struct Serving;

impl RunningEngine for PgEngine {
    fn open_served(
        &self,
        spec: &ServedIndex,
        dim: usize,
        chunks: &[(String, String, bool)],
    ) -> Result<Box<dyn OpenedServed>> {
        Ok(Box::new(self.open_table(spec, dim, chunks)?))
    }

    /// Two tables: no vector index (the engine's exact scan) and HNSW over inner product.
    fn filter_bench<'a>(&'a self, input: FilterBenchInput<'a>) -> Result<Box<dyn FilterBench + 'a>> {
        let dim = input.dim();
        let FilterBenchInput { exact, acl, m, ef_construction, ef_search, .. } = input;
        let scan = self.vector_table("bench_exact", exact.vectors(), dim, acl, VectorBuild::Exact)?;
        let graph_build = VectorBuild::Hnsw { m, ef_construction };
        let graph =
            self.vector_table(&format!("bench_hnsw_{m}_{ef_construction}"), exact.vectors(), dim, acl, graph_build)?;
        Ok(Box::new(PgBench { engine: self, exact, scan, graph, graph_build, ef_search }))
    }
}

/// `bench-filter`'s tables in PostgreSQL.
struct PgBench<'a> {
    engine: &'a PgEngine,
    exact: &'a ExactIndex,
    scan: PgTable,
    graph: PgTable,
    graph_build: VectorBuild,
    ef_search: usize,
}

impl FilterBench for PgBench<'_> {
    fn loaded(&self) -> String {
        let (m, efc) = match self.graph_build {
            VectorBuild::Hnsw { m, ef_construction } => (m, ef_construction),
            _ => (0, 0),
        };
        format!(
            "pg: {} vectors loaded twice, GIN (acl) on both and HNSW m={m} ef_construction={efc} on one, built in {:.1}s",
            self.exact.len(),
            self.build_seconds()
        )
    }

    fn build_seconds(&self) -> f64 {
        self.scan.build_seconds + self.graph.build_seconds
    }

    /// Its exact scan, then HNSW at `ef_search` with each iterative-scan mode.
    fn settings(&self) -> Vec<(String, Box<dyn RankingSource + '_>)> {
        let (engine, exact, ef_search) = (self.engine, self.exact, self.ef_search);
        let query = |iterative_scan| VectorQuery { ef_search, probes: 0, iterative_scan, force_index: false };
        let scan = PgVectorSource {
            engine,
            table: &self.scan,
            exact,
            build: VectorBuild::Exact,
            query: query(IterativeScan::Off),
        };
        let mut settings: Vec<(String, Box<dyn RankingSource + '_>)> =
            vec![("pg exact (no vector index)".to_string(), Box::new(scan))];
        for mode in [IterativeScan::Off, IterativeScan::RelaxedOrder, IterativeScan::StrictOrder] {
            let graph =
                PgVectorSource { engine, table: &self.graph, exact, build: self.graph_build, query: query(mode) };
            settings.push((format!("pg hnsw ef_search={ef_search} iterative_scan={}", mode.as_str()), Box::new(graph)));
        }
        settings
    }
}

impl ServingEngine for Serving {
    fn install(&self, engines: &Path, force: bool, step: &dyn Fn(&str)) -> Result<String> {
        let pg = crate::engine::install::install_pg(engines, force, step)?;
        let version = std::process::Command::new(pg.join("bin/postgres"))
            .arg("--version")
            .output()
            .map_err(|e| crate::error::Error::io(&pg.join("bin/postgres"), e))?;
        Ok(format!("{}installed in {} (pgvector 0.8.5)", String::from_utf8_lossy(&version.stdout), pg.display()))
    }

    fn serve(&self, engines: &Path, _secret_file: Option<&Path>) -> Result<crate::engine::registry::Served> {
        // Logged into without a password, through a socket in a folder only its owner can enter.
        let server = PgServer::start(&engines.join("pg"))?;
        Ok(crate::engine::registry::Served {
            url: server.endpoint().shown(),
            what: "PostgreSQL with pgvector, on a unix socket only you can reach (no password)".into(),
            guard: Box::new(server),
        })
    }

    fn check(&self, from: &EngineSources<'_>, writes: bool) -> Result<String> {
        check(&from.engines_dir.join("pg"), from.server::<Endpoint>(), writes)
    }

    fn start(&self, from: &EngineSources<'_>, writes: bool) -> Result<Started> {
        let (engine, note) =
            PgEngine::start(&from.engines_dir.join("pg"), Some(from.cache_dir), from.server::<Endpoint>().cloned())?;
        if writes {
            engine.ready()?;
        }
        let what = match from.server::<Endpoint>() {
            Some(_) => "connected to the experiment's PostgreSQL server",
            None => "PostgreSQL + pgvector server started",
        };
        // Which server the numbers come from, recorded with the engine stage.
        let what = format!("{what} ({})", engine.provenance(from.server::<Endpoint>().is_some())?);
        Ok(Started { engine: Box::new(engine), what, note })
    }

    fn interrupted(&self) {
        crate::engine::pg::stop_all();
    }

    fn secret_keys(&self) -> &'static [&'static str] {
        &["password_env"]
    }

    fn index_unused_advice(&self) -> Option<&'static str> {
        Some("`force_index = true` measures the index")
    }

    fn server_url(&self, url: &str) -> std::result::Result<String, String> {
        Endpoint::parse(url).map(|_| url.to_string())
    }

    fn user_server(&self, spec: &ServerSpec) -> Result<UserServer> {
        let mut endpoint = Endpoint::parse(&spec.url).map_err(|e| Error::input(spec.at.clone(), e))?;
        endpoint.password = spec.secret("password_env")?;
        Ok(Box::new(endpoint))
    }

    fn served_rows(&self, from: &EngineSources<'_>, rows: &ServedRows) -> Result<Vec<(String, String)>> {
        let endpoint = from.server::<Endpoint>().ok_or_else(|| {
            fail(format!("table {} is read from the experiment's server: declare [engines.pg]", rows.source))
        })?;
        let mut conn = PgConn::connect(endpoint)?;
        found(&mut conn, &rows.source)?;
        let sql = format!(
            "SELECT {}::text, {}::text FROM {}",
            quoted(&rows.id_field),
            quoted(&rows.text_field),
            quoted(&rows.source)
        );
        let read = conn.query(&sql).map_err(|e| fail(format!("reading the rows of table {}: {e}", rows.source)))?;
        read.into_iter()
            .map(|row| match (row.first().cloned().flatten(), row.get(1).cloned().flatten()) {
                (Some(id), Some(text)) => Ok((id, text)),
                _ => Err(fail(format!(
                    "table {}: a row with no {} or no {}: every row needs its document id and its text",
                    rows.source, rows.id_field, rows.text_field
                ))),
            })
            .collect()
    }
}

/// What `validate` says of the engine, without starting a server or writing to the user's:
/// the installed PostgreSQL, or the user's server reached with pgvector available (and, when the
/// run `writes` tables, the rights to make them).
fn check(install: &Path, own: Option<&Endpoint>, writes: bool) -> Result<String> {
    if let (Some(endpoint), false) = (own, writes) {
        let mut conn = PgConn::connect(endpoint)?;
        let version = conn.query("SHOW server_version")?;
        let server = version.first().and_then(|r| r.first().cloned().flatten()).unwrap_or_default();
        return Ok(format!(
            "engine pg: the experiment's server (PostgreSQL {server}), logged in; its served tables are only read, nothing is written"
        ));
    }
    match own {
        None => {
            binaries(install)?;
            Ok(format!(
                "engine pg: PostgreSQL in {}, started by each run (its data in the stage cache)",
                install.display()
            ))
        }
        Some(endpoint) => {
            let mut conn = PgConn::connect(endpoint)?;
            let rows = conn.query("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")?;
            let version = rows.first().and_then(|r| r.first().cloned().flatten()).ok_or_else(|| {
                fail("the server has no pgvector (extension `vector` is not available): install it there")
            })?;
            let version_of = conn.query("SHOW server_version")?;
            let server = version_of.first().and_then(|r| r.first().cloned().flatten()).unwrap_or_default();
            // What a run will do, rolled back: the extension, the build log and a vector table.
            let probe = conn.query(
                "BEGIN; CREATE EXTENSION IF NOT EXISTS vector; \
                 CREATE TABLE IF NOT EXISTS ragsweep_builds (name text PRIMARY KEY, rows integer NOT NULL, seconds float8 NOT NULL); \
                 CREATE TABLE ragsweep_validate_probe (v vector(2)); ROLLBACK",
            );
            if let Err(e) = probe {
                let _ = conn.query("ROLLBACK");
                return Err(fail(format!(
                    "the server's user cannot do what a run does (create the `vector` extension if missing, and tables), tried and rolled back: {e}"
                )));
            }
            Ok(format!(
                "engine pg: the experiment's server (PostgreSQL {server}, pgvector {version} available), logged in, may create the extension and tables (tried, rolled back)"
            ))
        }
    }
}

impl PgEngine {
    /// Starts a server from `install`, its data folder in `cache` when given (so tables built by
    /// earlier runs are reused), or connects to `own` (the user's server); returns a note when the
    /// cache could not be used.
    pub fn start(install: &Path, cache: Option<&Path>, own: Option<Endpoint>) -> Result<(PgEngine, Option<String>)> {
        let (server, endpoint, note) = match own {
            Some(endpoint) => (None, endpoint, None),
            None => {
                let (server, note) = PgServer::start_cached(install, cache)?;
                let endpoint = server.endpoint();
                (Some(server), endpoint, note)
            }
        };
        let engine = PgEngine { _server: server, endpoint, idle: Mutex::new(Vec::new()), ready: Mutex::new(false) };
        Ok((engine, note))
    }

    /// What the run measured: the server's and pgvector's versions, and (for the experiment's
    /// own server) where it is, for the manifest.
    pub fn provenance(&self, own: bool) -> Result<String> {
        let rows = self.with(|c| {
            c.query("SELECT current_setting('server_version'), (SELECT extversion FROM pg_extension WHERE extname = 'vector')")
        })?;
        let get = |i: usize| rows.first().and_then(|r| r.get(i).cloned().flatten());
        let (server, vector) = (get(0).unwrap_or_default(), get(1).unwrap_or_else(|| "none".into()));
        let at = if own { format!(" at {}", self.endpoint.shown()) } else { String::new() };
        Ok(format!("PostgreSQL {server}, pgvector {vector}{at}"))
    }

    /// Runs `f` on a pooled connection (a new one when none is idle).
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut PgConn) -> Result<T>) -> Result<T> {
        let idle = self.idle.lock().expect("pool").pop();
        let mut conn = match idle {
            Some(c) => c,
            None => PgConn::connect(&self.endpoint)?,
        };
        let out = f(&mut conn)?;
        self.idle.lock().expect("pool").push(conn);
        Ok(out)
    }

    /// Makes the extension and the build log, once per run.
    fn ready(&self) -> Result<()> {
        let mut ready = self.ready.lock().expect("ready");
        if *ready {
            return Ok(());
        }
        // `IF NOT EXISTS` races between runs sharing a server (a duplicate key in pg_type):
        // one at a time, under a lock the transaction holds.
        self.with(|c| {
            c.query("BEGIN; SELECT pg_advisory_xact_lock(7395140962417601)")?;
            c.query(
                "CREATE EXTENSION IF NOT EXISTS vector; CREATE TABLE IF NOT EXISTS ragsweep_builds (name text PRIMARY KEY, rows integer NOT NULL, seconds float8 NOT NULL); COMMIT",
            )
            .inspect_err(|_| {
                let _ = c.query("ROLLBACK");
            })
        })?;
        *ready = true;
        Ok(())
    }

    /// The table `name` if a build registered it with `rows` rows.
    fn registered(&self, name: &str, rows: usize) -> Result<Option<PgTable>> {
        self.ready()?;
        self.with(|c| self.registered_on(c, name, rows))
    }

    fn registered_on(&self, c: &mut PgConn, name: &str, rows: usize) -> Result<Option<PgTable>> {
        let found = c.query_params(
            "SELECT b.rows, b.seconds, pg_total_relation_size(c.oid) FROM ragsweep_builds b JOIN pg_class c ON c.relname = b.name WHERE b.name = $1::text",
            &[name],
        )?;
        let Some(row) = found.first() else { return Ok(None) };
        let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        if get(0).parse::<usize>().ok() != Some(rows) {
            return Err(fail(format!(
                "table {name} in the engine cache holds {} rows, its key says {rows}: remove the cache's pg folder",
                get(0)
            )));
        }
        Ok(Some(PgTable {
            name: name.to_string(),
            bytes: get(2).parse().unwrap_or(0),
            build_seconds: get(1).parse().unwrap_or(0.0),
            reused: true,
        }))
    }

    /// Builds table `name` in one transaction: `create`, `COPY` of `data`, then `index`
    /// statements; registered in the same transaction.
    fn build(&self, name: &str, rows: usize, create: &str, copy: &str, data: &[u8], index: &str) -> Result<PgTable> {
        if let Some(table) = self.registered(name, rows)? {
            return Ok(table);
        }
        self.with(|c| {
            let started = Instant::now();
            // Runs sharing one server build a table once: the first takes the table's lock,
            // the others wait for it and then find the table registered.
            c.query("BEGIN")?;
            c.query_params("SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))", &[name])?;
            if let Some(table) = self.registered_on(c, name, rows)? {
                c.query("COMMIT")?;
                return Ok(table);
            }
            c.query(&format!("DROP TABLE IF EXISTS {name}; {create}"))?;
            let built = c.copy_in(copy, data).and_then(|()| {
                c.query(&format!("SET maintenance_work_mem = '512MB'; {index}; ANALYZE {name}"))?;
                let seconds = started.elapsed().as_secs_f64();
                c.query_params(&format!("INSERT INTO ragsweep_builds VALUES ($1::text, {rows}, {seconds})"), &[name])?;
                c.query("COMMIT")?;
                Ok(seconds)
            });
            let seconds = match built {
                Ok(s) => s,
                Err(e) => {
                    let _ = c.query("ROLLBACK");
                    return Err(e);
                }
            };
            let size = c.query(&format!("SELECT pg_total_relation_size('{name}')"))?;
            let bytes = size.first().and_then(|r| r.first().cloned().flatten()).and_then(|s| s.parse().ok());
            Ok(PgTable { name: name.to_string(), bytes: bytes.unwrap_or(0), build_seconds: seconds, reused: false })
        })
    }

    /// A table of `vectors` (`dim` each, chunk ordinals as ids) with each chunk's ACL, indexed
    /// by `build`; `key` names its content.
    pub fn vector_table(
        &self,
        key: &str,
        vectors: &[f32],
        dim: usize,
        acl: ChunkAcl<'_>,
        build: VectorBuild,
    ) -> Result<PgTable> {
        let name = format!("v_{key}");
        let rows = vectors.len() / dim.max(1);
        let mut data = Vec::with_capacity(vectors.len() * 12);
        for (i, v) in vectors.chunks_exact(dim).enumerate() {
            data.extend_from_slice(format!("{i}\t{}\t{}\n", acl_literal(acl(i)), vector_literal(v)).as_bytes());
        }
        let index = match build {
            VectorBuild::Exact => format!("CREATE INDEX ON {name} USING gin (acl)"),
            VectorBuild::Hnsw { m, ef_construction } => format!(
                "CREATE INDEX ON {name} USING gin (acl); CREATE INDEX ON {name} USING hnsw (embedding vector_ip_ops) WITH (m = {m}, ef_construction = {ef_construction})"
            ),
            VectorBuild::Ivfflat { lists } => format!(
                "CREATE INDEX ON {name} USING gin (acl); CREATE INDEX ON {name} USING ivfflat (embedding vector_ip_ops) WITH (lists = {lists})"
            ),
        };
        self.build(
            &name,
            rows,
            &format!(
                "CREATE TABLE {name} (id integer PRIMARY KEY, acl text[] NOT NULL, embedding vector({dim}) NOT NULL)"
            ),
            &format!("COPY {name} (id, acl, embedding) FROM STDIN"),
            &data,
            &index,
        )
    }

    /// A full-text table of `texts` (chunk ordinals as ids) with each chunk's ACL, its
    /// `tsvector` in the analyzer's text search configuration.
    pub fn text_table(
        &self,
        key: &str,
        texts: &[String],
        acl: ChunkAcl<'_>,
        analyzer: crate::analyze::AnalyzerKind,
    ) -> Result<PgTable> {
        let name = format!("t_{key}");
        let config = text_config(analyzer);
        let mut data = Vec::with_capacity(texts.iter().map(String::len).sum::<usize>() + texts.len() * 24);
        for (i, text) in texts.iter().enumerate() {
            data.extend_from_slice(format!("{i}\t{}\t{}\n", acl_literal(acl(i)), copy_field(text)).as_bytes());
        }
        self.build(
            &name,
            texts.len(),
            &format!(
                "CREATE TABLE {name} (id integer PRIMARY KEY, acl text[] NOT NULL, body text NOT NULL, tsv tsvector GENERATED ALWAYS AS (to_tsvector('{config}', body)) STORED)"
            ),
            &format!("COPY {name} (id, acl, body) FROM STDIN"),
            &data,
            &format!("CREATE INDEX ON {name} USING gin (acl); CREATE INDEX ON {name} USING gin (tsv)"),
        )
    }

    /// The plan PostgreSQL chooses for `sql` with `params` under the session `settings`
    /// (`EXPLAIN`, its text).
    fn explain(&self, settings: &str, sql: &str, params: &[&str]) -> Result<String> {
        let rows = self.with(|c| {
            if !settings.is_empty() {
                c.query(settings)?;
            }
            c.query_params(&format!("EXPLAIN {sql}"), params)
        })?;
        Ok(rows.into_iter().filter_map(|r| r.into_iter().next().flatten()).collect::<Vec<_>>().join("\n"))
    }

    /// Rows of `(id, score)` of `sql` run with `params` after the session `settings`, best
    /// first by the ties rule of every source.
    fn hits(&self, settings: &str, sql: &str, params: &[&str], depth: usize, negate: bool) -> Result<Vec<Hit>> {
        let rows = self.with(|c| {
            if !settings.is_empty() {
                c.query(settings)?;
            }
            c.query_params(sql, params)
        })?;
        let mut hits = Vec::with_capacity(rows.len());
        for row in rows {
            let field = |i: usize| {
                row.get(i).cloned().flatten().ok_or_else(|| fail(format!("a NULL in the result of {sql:.120}")))
            };
            let chunk: u32 = field(0)?.parse().map_err(|_| fail("a non-integer chunk id from the engine"))?;
            let score: f64 = field(1)?.parse().map_err(|_| fail("a non-numeric score from the engine"))?;
            hits.push(Hit { chunk, score: if negate { -score as f32 } else { score as f32 } });
        }
        Ok(top_hits(hits, depth))
    }
}

/// A pgvector search over one table.
pub struct PgVectorSource<'a> {
    pub engine: &'a PgEngine,
    pub table: &'a PgTable,
    /// The same vectors in process: the oracle, and cosines for `explain`.
    pub exact: &'a ExactIndex,
    pub build: VectorBuild,
    pub query: VectorQuery,
}

impl PgVectorSource<'_> {
    /// The session settings a query of this source runs under.
    fn settings(&self) -> String {
        let VectorQuery { ef_search, probes, iterative_scan, force_index } = self.query;
        // Connections are pooled: every setting a query depends on is set on every query.
        let scans = if force_index { "off" } else { "on" };
        let planner = format!("SET enable_seqscan = {scans}; SET enable_bitmapscan = {scans}; ");
        match self.build {
            VectorBuild::Exact => planner,
            VectorBuild::Hnsw { .. } => format!(
                "{planner}SET hnsw.ef_search = {ef_search}; SET hnsw.iterative_scan = {}; ",
                iterative_scan.as_str()
            ),
            VectorBuild::Ivfflat { .. } => format!(
                "{planner}SET ivfflat.probes = {probes}; SET ivfflat.iterative_scan = {}; ",
                iterative_scan.as_str()
            ),
        }
    }

    /// The query a search of `depth` runs, and its parameters.
    fn sql(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> (String, Vec<String>) {
        let groups = restrict.map(acl_groups);
        let filter = if groups.is_some() { " WHERE acl && $2::text[]" } else { "" };
        let sql = format!(
            "SELECT id, embedding <#> $1::vector FROM {}{filter} ORDER BY embedding <#> $1::vector LIMIT {depth}",
            self.table.name
        );
        (sql, std::iter::once(vector_literal(query.vector)).chain(groups).collect())
    }
}

/// What a plan of [`PgVectorSource`]'s query does, in a few words: `vector index` (an index
/// scan ordered by distance), `acl index, exact sort` (the GIN index on the ACL, then a sort of
/// the rows it allows) or `sequential scan` (every row read and sorted).
fn plan_summary(plan: &str, table: &str) -> String {
    if plan.contains(&format!("Index Scan using {table}_embedding_idx")) {
        "vector index".into()
    } else if plan.contains("Bitmap Index Scan on") {
        "acl index, exact sort".into()
    } else if plan.contains("Seq Scan") {
        "sequential scan".into()
    } else {
        plan.lines().next().unwrap_or("").split("  (").next().unwrap_or("").trim().to_string()
    }
}

impl RankingSource for PgVectorSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        let (sql, params) = self.sql(query, depth, restrict);
        let params: Vec<&str> = params.iter().map(String::as_str).collect();
        self.engine.hits(&self.settings(), &sql, &params, depth, true)
    }

    fn plan(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Option<String>> {
        let (sql, params) = self.sql(query, depth, restrict);
        let params: Vec<&str> = params.iter().map(String::as_str).collect();
        let summary = plan_summary(&self.engine.explain(&self.settings(), &sql, &params)?, &self.table.name);
        let approximate = !matches!(self.build, VectorBuild::Exact);
        Ok(Some(if approximate && summary != "vector index" { summary + INDEX_UNUSED } else { summary }))
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        ExactSource { index: self.exact }.explain(query, chunk)
    }

    fn size_bytes(&self) -> u64 {
        self.table.bytes
    }

    fn side(&self) -> Side {
        Side::Dense
    }

    fn plans_each_depth(&self) -> bool {
        true
    }

    fn oracle(&self) -> Option<Arc<dyn RankingSource + '_>> {
        Some(Arc::new(ExactSource { index: self.exact }))
    }
}

/// PostgreSQL full-text search over one table.
pub struct PgTextSource<'a> {
    pub engine: &'a PgEngine,
    pub table: &'a PgTable,
    pub analyzer: crate::analyze::AnalyzerKind,
    pub terms: Terms,
}

impl PgTextSource<'_> {
    /// The query as a `tsquery` of the question, which travels as parameter `$1`.
    fn tsquery(&self) -> String {
        let config = text_config(self.analyzer);
        let plain = format!("plainto_tsquery('{config}', $1::text)");
        match self.terms {
            Terms::All => plain,
            Terms::Any => format!("to_tsquery('{config}', replace({plain}::text, ' & ', ' | '))"),
        }
    }
}

impl RankingSource for PgTextSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        let groups = restrict.map(acl_groups);
        let filter = if groups.is_some() { " AND acl && $2::text[]" } else { "" };
        let sql = format!(
            "SELECT id, ts_rank_cd(tsv, q) AS r FROM {}, {} AS q WHERE tsv @@ q{filter} ORDER BY r DESC LIMIT {depth}",
            self.table.name,
            self.tsquery()
        );
        let params: Vec<&str> = std::iter::once(query.text).chain(groups.as_deref()).collect();
        self.engine.hits("", &sql, &params, depth, false)
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        let sql = format!(
            "SELECT id, ts_rank_cd(tsv, q) FROM {}, {} AS q WHERE id = {chunk}",
            self.table.name,
            self.tsquery()
        );
        let score = self.engine.hits("", &sql, &[query.text], 1, false)?.first().map(|h| h.score);
        let parts = vec![ScoreNode::leaf("ts_rank_cd of the chunk's tsvector and the question's tsquery", score)];
        Ok(SourceScore { score, parts, bm25: None })
    }

    fn size_bytes(&self) -> u64 {
        self.table.bytes
    }

    fn side(&self) -> Side {
        Side::Lexical
    }

    fn plans_each_depth(&self) -> bool {
        true
    }
}
