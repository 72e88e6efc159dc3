//! Filter parity: what an engine's filtered vector search returns against the in-process exact
//! search of the same vectors under the same access rule.
//!
//! Each chunk belongs to one of [`TENANTS`] groups (by the hash of its ordinal); a user allowed
//! a fraction f of the corpus is a member of the first f · TENANTS groups. The engine stores each
//! chunk's group list in an ACL column and is asked the way an application asks: `WHERE acl &&
//! groups ORDER BY distance LIMIT k`. Per setting the report gives the client-observed latency,
//! how many rows came back, how many queries got fewer than k although k visible chunks exist
//! (`under_return`), and the overlap with the exact filtered top k (`recall_vs_oracle`).

use std::time::Instant;

use crate::engine::pg::{text_array, vector_literal, PgConn, PgServer};
use crate::error::Result;
use crate::results::percentile;
use crate::retrieve::{Allowed, ExactIndex, FilteredSearch, HnswIndex};

/// Groups the chunks are spread over.
pub const TENANTS: usize = 100;

/// The group of chunk `i`.
pub fn tenant(i: usize) -> usize {
    let h = blake3::hash(&(i as u64).to_le_bytes());
    (u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes")) % TENANTS as u64) as usize
}

/// The groups of a user allowed `fraction` of the corpus.
pub fn groups(fraction: f64) -> Vec<String> {
    let n = ((fraction * TENANTS as f64).round() as usize).clamp(1, TENANTS);
    (0..n).map(|t| format!("t{t}")).collect()
}

/// How the engine indexes the vectors.
#[derive(Debug, Clone, Copy)]
pub struct HnswBuild {
    pub m: usize,
    pub ef_construction: usize,
}

/// One measured setting at one allowed fraction.
#[derive(Debug, Clone)]
pub struct ParityRow {
    pub fraction: f64,
    pub setting: String,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    /// Mean rows returned per query (of k).
    pub rows: f64,
    /// Queries that got fewer than k rows although at least k visible chunks exist.
    pub under_return: usize,
    pub queries: usize,
    /// Share of the exact filtered top k the setting returned.
    pub recall_vs_oracle: f64,
}

/// Loads `vectors` (unit length, `dim` each) with their ACLs into a fresh table, builds the
/// GIN index on the ACL and an HNSW index (inner product), and returns the build seconds.
pub fn load(conn: &mut PgConn, vectors: &[f32], dim: usize, hnsw: HnswBuild) -> Result<f64> {
    conn.query("CREATE EXTENSION IF NOT EXISTS vector")?;
    conn.query(&format!(
        "DROP TABLE IF EXISTS chunks; CREATE TABLE chunks (id integer PRIMARY KEY, acl text[] NOT NULL, embedding vector({dim}) NOT NULL)"
    ))?;
    let mut data = Vec::with_capacity(vectors.len() * 10);
    for (i, v) in vectors.chunks_exact(dim).enumerate() {
        data.extend_from_slice(format!("{i}\t{{t{}}}\t{}\n", tenant(i), vector_literal(v)).as_bytes());
    }
    conn.copy_in("COPY chunks (id, acl, embedding) FROM STDIN", &data)?;
    let started = Instant::now();
    conn.query("CREATE INDEX ON chunks USING gin (acl)")?;
    conn.query(&format!(
        "SET maintenance_work_mem = '512MB'; CREATE INDEX ON chunks USING hnsw (embedding vector_ip_ops) WITH (m = {}, ef_construction = {})",
        hnsw.m, hnsw.ef_construction
    ))?;
    conn.query("ANALYZE chunks")?;
    Ok(started.elapsed().as_secs_f64())
}

/// The settings measured: an exact scan in the engine (no vector index), then HNSW at
/// `ef_search` with each iterative-scan mode.
pub fn settings(ef_search: usize) -> Vec<(String, String)> {
    let mut out = vec![(
        "pg exact (no vector index)".to_string(),
        "SET enable_indexscan = off; SET hnsw.iterative_scan = off".to_string(),
    )];
    for mode in ["off", "relaxed_order", "strict_order"] {
        out.push((
            format!("pg hnsw ef_search={ef_search} iterative_scan={mode}"),
            format!("SET enable_indexscan = on; SET hnsw.ef_search = {ef_search}; SET hnsw.iterative_scan = {mode}"),
        ));
    }
    out
}

/// A user allowed `fraction`: the allowed set, how many chunks it holds, the exact top `k` of
/// each query under it (the oracle), and the groups.
fn access(
    exact: &ExactIndex,
    queries: &[&[f32]],
    k: usize,
    fraction: f64,
) -> (Allowed, usize, Vec<Vec<u32>>, Vec<String>) {
    let groups = groups(fraction);
    let cut = groups.len();
    let allowed = Allowed::from_fn(exact.len(), |i| tenant(i) < cut);
    let visible = allowed.count();
    let truth = queries.iter().map(|q| exact.search(q, k, Some(&allowed)).iter().map(|h| h.chunk).collect()).collect();
    (allowed, visible, truth, groups)
}

/// Accumulates one setting's queries into a row.
struct Tally {
    micros: Vec<f64>,
    rows: usize,
    under: usize,
    found: usize,
}

impl Tally {
    fn new() -> Tally {
        Tally { micros: Vec::new(), rows: 0, under: 0, found: 0 }
    }

    fn add(&mut self, micros: f64, ids: &[u32], truth: &[u32], k: usize, visible: usize) {
        self.micros.push(micros);
        self.rows += ids.len();
        if ids.len() < k && visible >= k {
            self.under += 1;
        }
        self.found += ids.iter().filter(|id| truth.contains(id)).count();
    }

    fn row(mut self, fraction: f64, setting: String, truth: &[Vec<u32>]) -> ParityRow {
        self.micros.sort_by(f64::total_cmp);
        let queries = self.micros.len();
        let wanted: usize = truth.iter().map(Vec::len).sum();
        ParityRow {
            fraction,
            setting,
            mean_us: self.micros.iter().sum::<f64>() / queries.max(1) as f64,
            p50_us: percentile(&self.micros, 0.5),
            p95_us: percentile(&self.micros, 0.95),
            rows: self.rows as f64 / queries.max(1) as f64,
            under_return: self.under,
            queries,
            recall_vs_oracle: self.found as f64 / wanted.max(1) as f64,
        }
    }
}

/// The in-process filtered graph search at `ef_search` on the same access, for reference.
pub fn measure_in_process(
    hnsw: &HnswIndex,
    exact: &ExactIndex,
    queries: &[&[f32]],
    k: usize,
    ef_search: usize,
    fractions: &[f64],
) -> Vec<ParityRow> {
    let mut out = Vec::new();
    for &fraction in fractions {
        let (allowed, visible, truth, _) = access(exact, queries, k, fraction);
        let mut tally = Tally::new();
        for (q, truth) in queries.iter().zip(&truth) {
            let started = Instant::now();
            let hits = hnsw.search_with(q, k, ef_search, Some(&allowed), FilteredSearch::Graph);
            let micros = started.elapsed().as_secs_f64() * 1e6;
            let ids: Vec<u32> = hits.iter().map(|h| h.chunk).collect();
            tally.add(micros, &ids, truth, k, visible);
        }
        out.push(tally.row(fraction, format!("in-process hnsw_rs filtered graph, ef_search={ef_search}"), &truth));
    }
    out
}

/// Measures every setting at every fraction with `queries` (unit vectors, `dim` each), top `k`.
pub fn measure(
    server: &PgServer,
    exact: &ExactIndex,
    queries: &[&[f32]],
    k: usize,
    ef_search: usize,
    fractions: &[f64],
) -> Result<Vec<ParityRow>> {
    let mut conn = server.connect()?;
    let mut out = Vec::new();
    for &fraction in fractions {
        let (_, visible, truth, groups) = access(exact, queries, k, fraction);
        let filter = text_array(&groups);
        for (setting, set) in settings(ef_search) {
            conn.query(&set)?;
            // Warm-up: the index pages in memory, as a serving engine has them.
            for q in queries.iter().take(10) {
                conn.query(&sql(&filter, q, k))?;
            }
            let mut tally = Tally::new();
            for (q, truth) in queries.iter().zip(&truth) {
                let text = sql(&filter, q, k);
                let started = Instant::now();
                let result = conn.query(&text)?;
                let micros = started.elapsed().as_secs_f64() * 1e6;
                let ids: Vec<u32> = result.iter().filter_map(|r| r.first()?.as_ref()?.parse().ok()).collect();
                tally.add(micros, &ids, truth, k, visible);
            }
            out.push(tally.row(fraction, setting, &truth));
        }
    }
    Ok(out)
}

/// The query an application sends: the filter inside the query, nearest first.
fn sql(filter: &str, q: &[f32], k: usize) -> String {
    format!("SELECT id FROM chunks WHERE acl && {filter} ORDER BY embedding <#> '{}' LIMIT {k}", vector_literal(q))
}
