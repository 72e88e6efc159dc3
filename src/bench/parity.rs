//! Filter parity: what an engine's filtered vector search returns against the in-process exact
//! search of the same vectors under the same access rule.
//!
//! Each chunk belongs to one of [`TENANTS`] groups (by the hash of its ordinal); a user allowed
//! a fraction f of the corpus is a member of the first f · TENANTS groups. The engine stores each
//! chunk's group list in an ACL column (PostgreSQL), an array field (Milvus) or boolean metadata
//! (Chroma) and is asked the way an application asks: `WHERE acl && groups ORDER BY distance
//! LIMIT k`, Milvus's `array_contains_any` filter expression, or Chroma's `where`. Each setting is searched through the source a grid
//! cell uses. Per setting the report gives the client-observed latency,
//! how many rows came back, how many queries got a shorter list than the exact filtered search
//! (`under_return`), and the mean overlap with its top k (`recall_vs_oracle`): the rule of the
//! grid's parity columns.

use std::time::Instant;

use crate::error::Result;
use crate::results::{percentile, Parity};
use crate::retrieve::source::{Query, RankingSource, Restriction};
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
    /// Queries that got fewer rows than the exact filtered search found.
    pub under_return: usize,
    pub queries: usize,
    /// Mean share of the exact filtered top k the setting returned.
    pub recall_vs_oracle: f64,
}

/// Each chunk's tenant group, as an engine's ACL.
pub fn tenant_groups(exact: &ExactIndex) -> Vec<[String; 1]> {
    (0..exact.len()).map(|i| [format!("t{}", tenant(i))]).collect()
}

/// A name for what an engine holds of `exact`'s vectors built with `build`: their content, so a
/// collection or table kept from an earlier benchmark is reused only for the same vectors.
pub fn content_name(kind: &str, exact: &ExactIndex, build: &dyn std::fmt::Debug) -> String {
    let mut h = blake3::Hasher::new();
    for v in exact.vectors() {
        h.update(&v.to_le_bytes());
    }
    h.update(format!("{build:?}").as_bytes());
    format!("bench_{kind}_{}", &h.finalize().to_hex()[..16])
}

/// A user allowed `fraction`: the allowed set, the exact top `k` of each query under it (the
/// oracle), and the groups.
fn access(exact: &ExactIndex, queries: &[&[f32]], k: usize, fraction: f64) -> (Allowed, Vec<Vec<u32>>, Vec<String>) {
    let groups = groups(fraction);
    let cut = groups.len();
    let allowed = Allowed::from_fn(exact.len(), |i| tenant(i) < cut);
    let truth = queries.iter().map(|q| exact.search(q, k, Some(&allowed)).iter().map(|h| h.chunk).collect()).collect();
    (allowed, truth, groups)
}

/// Accumulates one setting's queries into a row, each query's list against its oracle list by
/// the rule of the grid's parity columns ([`Parity::of`]).
struct Tally {
    micros: Vec<f64>,
    rows: usize,
    parity: Vec<Parity>,
}

impl Tally {
    fn new() -> Tally {
        Tally { micros: Vec::new(), rows: 0, parity: Vec::new() }
    }

    fn add(&mut self, micros: f64, ids: &[u32], truth: &[u32]) {
        self.micros.push(micros);
        self.rows += ids.len();
        self.parity.push(Parity::of(ids, truth));
    }

    fn row(mut self, fraction: f64, setting: String) -> ParityRow {
        self.micros.sort_by(f64::total_cmp);
        let queries = self.micros.len();
        let recalls: Vec<f64> = self.parity.iter().filter_map(|p| p.recall_vs_oracle).collect();
        ParityRow {
            fraction,
            setting,
            mean_us: self.micros.iter().sum::<f64>() / queries.max(1) as f64,
            p50_us: percentile(&self.micros, 0.5),
            p95_us: percentile(&self.micros, 0.95),
            rows: self.rows as f64 / queries.max(1) as f64,
            under_return: self.parity.iter().filter(|p| p.under_return).count(),
            queries,
            recall_vs_oracle: recalls.iter().sum::<f64>() / recalls.len().max(1) as f64,
        }
    }
}

/// The in-process dense index on the same access, for reference: the filtered graph at
/// `ef_search` and the exact scan of the allowed vectors (the filter planner off), and the
/// planner choosing per query (on).
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
        let (allowed, truth, _) = access(exact, queries, k, fraction);
        for (strategy, setting) in [
            (FilteredSearch::Graph, format!("in-process filtered graph, ef_search={ef_search} (planner off)")),
            (FilteredSearch::Scan, "in-process scan of the allowed (planner off)".to_string()),
            (FilteredSearch::Auto, "in-process planner (on)".to_string()),
        ] {
            let mut tally = Tally::new();
            for (q, truth) in queries.iter().zip(&truth) {
                let started = Instant::now();
                let hits = hnsw.search_with(q, k, ef_search, Some(&allowed), strategy);
                let micros = started.elapsed().as_secs_f64() * 1e6;
                let ids: Vec<u32> = hits.iter().map(|h| h.chunk).collect();
                tally.add(micros, &ids, truth);
            }
            out.push(tally.row(fraction, setting));
        }
    }
    out
}

/// Measures each of an engine's `settings` at every fraction with `queries` (unit vectors), top
/// `k`: each query is a grid cell's search, the filter inside it.
pub fn measure(
    settings: &[(String, Box<dyn RankingSource + '_>)],
    exact: &ExactIndex,
    queries: &[&[f32]],
    k: usize,
    fractions: &[f64],
) -> Result<Vec<ParityRow>> {
    let mut out = Vec::new();
    for &fraction in fractions {
        let (allowed, truth, groups) = access(exact, queries, k, fraction);
        let restriction = Restriction { allowed: &allowed, groups: &groups };
        for (setting, source) in settings {
            let search = |q: &[f32]| source.search(&Query { text: "", vector: q }, k, Some(&restriction));
            // Warm-up: the index pages in memory, as a serving engine has them.
            for q in queries.iter().take(10) {
                search(q)?;
            }
            let mut tally = Tally::new();
            for (q, truth) in queries.iter().zip(&truth) {
                let started = Instant::now();
                let hits = search(q)?;
                let micros = started.elapsed().as_secs_f64() * 1e6;
                let ids: Vec<u32> = hits.iter().map(|h| h.chunk).collect();
                tally.add(micros, &ids, truth);
            }
            out.push(tally.row(fraction, setting.clone()));
        }
    }
    Ok(out)
}
