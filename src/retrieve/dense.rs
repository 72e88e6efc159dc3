//! Dense indexes over L2-normalised vectors: an exact dot-product scan and an HNSW graph
//! ([`crate::retrieve::graph`]), and the filter planner that chooses between them.
//! Scores are cosine similarities (dot products of unit vectors).

use std::path::Path;

use crate::error::Result;
pub use crate::retrieve::exact::{dot, ExactIndex};
use crate::retrieve::graph::FlatGraph;
use crate::retrieve::hits::{Allowed, Hit};

/// How an HNSW index answers a filtered query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilteredSearch {
    /// The filtered graph search (falls back to a scan when it finds too few).
    Graph,
    /// An exact scan of the allowed vectors.
    Scan,
    /// Scan when the allowed set is small ([`SCAN_MAX_ALLOWED`]) or a minority of the index
    /// ([`GRAPH_MIN_ALLOWED_FRACTION`]), else graph.
    Auto,
}

/// A filtered query scans the allowed vectors exactly when fewer than this fraction of the
/// index is allowed, instead of walking the graph: filtered graph search slows down as the
/// filter gets selective (it walks forbidden nodes to reach allowed ones), while the scan gets
/// cheaper.
///
/// Measured with `scripts/bench-filter.sh --queries 300` on SciFact sentence chunks (24,772 ×
/// 384, MiniLM, m = 16, ef_construction = 200, ef_search = 128, k = 10, one query at a time,
/// 2-core machine), mean µs per query, graph vs scan: 1% allowed 11,106 vs 70; 10% 2,777 vs
/// 666; 20% 1,649 vs 1,342; 30% 957 vs 1,874; 50% 675 vs 2,811; 90% 410 vs 2,881 (unfiltered
/// graph: 426). The crossover lies between a fifth and three tenths allowed.
pub const GRAPH_MIN_ALLOWED_FRACTION: f64 = 0.25;

/// Allowed sets up to this size are always scanned: 2,048 vectors scan in about 0.45 ms (0.23 µs
/// a vector in the same measurement), what the unfiltered graph search took (0.43 ms), so no
/// filtered graph search can beat it.
pub const SCAN_MAX_ALLOWED: usize = 2_048;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct HnswParams {
    pub m: usize,
    pub ef_construction: usize,
}

/// Names how graphs are built; part of their cache key, so a change to the distance or the
/// build must change it.
pub const GRAPH_VERSION: &str = "ragsweep-hnsw-batched-v5";

/// Approximate search on an HNSW graph ([`FlatGraph`]).
pub struct HnswIndex {
    graph: FlatGraph,
    exact: ExactIndex,
}

impl HnswIndex {
    /// Builds the graph (in parallel, the same graph on any number of threads) over `exact`'s
    /// vectors, which it keeps for rescoring.
    pub fn build(exact: ExactIndex, params: HnswParams) -> Self {
        HnswIndex { graph: FlatGraph::build(&exact, params.m, params.ef_construction), exact }
    }

    /// Writes the graph into `dir` (for [`HnswIndex::open`]).
    pub fn write(&self, dir: &Path) -> Result<()> {
        self.graph.write(dir)
    }

    /// Loads a graph written by [`HnswIndex::write`] over the same vectors as `exact`.
    pub fn open(dir: &Path, exact: ExactIndex) -> Result<Self> {
        Ok(HnswIndex { graph: FlatGraph::open(dir, exact.len())?, exact })
    }

    /// The vectors the graph was built over, as an exact index.
    pub fn exact(&self) -> &ExactIndex {
        &self.exact
    }

    pub fn size_bytes(&self) -> u64 {
        self.exact.size_bytes() + self.graph.size_bytes()
    }

    pub fn search(&self, query: &[f32], depth: usize, ef_search: usize, allowed: Option<&Allowed>) -> Vec<Hit> {
        self.search_with(query, depth, ef_search, allowed, FilteredSearch::Auto)
    }

    pub fn search_with(
        &self,
        query: &[f32],
        depth: usize,
        ef_search: usize,
        allowed: Option<&Allowed>,
        strategy: FilteredSearch,
    ) -> Vec<Hit> {
        let depth = depth.min(self.exact.len());
        let ef = ef_search.max(depth);
        let Some(a) = allowed else { return self.graph.search(&self.exact, query, depth, ef, None) };
        let fraction = a.count() as f64 / self.exact.len().max(1) as f64;
        let scan = match strategy {
            FilteredSearch::Scan => true,
            FilteredSearch::Graph => false,
            FilteredSearch::Auto => a.count() <= SCAN_MAX_ALLOWED || fraction < GRAPH_MIN_ALLOWED_FRACTION,
        };
        if !scan {
            let found = self.graph.search(&self.exact, query, depth, ef, Some(a));
            if found.len() >= depth.min(a.count()) {
                return found;
            }
            // The graph could not reach enough allowed points: never return a short list.
        }
        self.exact.search(query, depth, Some(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::exact::tests::random_unit_vectors as random_vectors;

    #[test]
    fn filtered_hnsw_returns_only_allowed_and_never_a_short_list() {
        let (n, dim) = (3000, 16);
        let hnsw =
            HnswIndex::build(ExactIndex::new(dim, random_vectors(n, dim, 5)), HnswParams { m: 8, ef_construction: 64 });
        let queries = random_vectors(20, dim, 11);
        for (fraction, seed) in [(0.005, 1u64), (0.05, 2), (0.5, 3)] {
            let allowed = Allowed::from_fn(n, |i| (i as u64 * 2654435761 + seed) % 1000 < (fraction * 1000.0) as u64);
            for strategy in [FilteredSearch::Graph, FilteredSearch::Scan, FilteredSearch::Auto] {
                for q in queries.chunks_exact(dim) {
                    let hits = hnsw.search_with(q, 10, 32, Some(&allowed), strategy);
                    assert_eq!(hits.len(), 10.min(allowed.count()), "{fraction} {strategy:?}");
                    assert!(hits.iter().all(|h| allowed.contains(h.chunk)));
                }
            }
        }
    }

    #[test]
    fn hnsw_finds_nearly_what_exact_finds() {
        let (n, dim) = (2000, 32);
        let vectors = random_vectors(n, dim, 7);
        let queries = random_vectors(50, dim, 99);
        let exact = ExactIndex::new(dim, vectors.clone());
        let hnsw = HnswIndex::build(ExactIndex::new(dim, vectors), HnswParams { m: 16, ef_construction: 200 });
        let mut found = 0;
        for q in queries.chunks_exact(dim) {
            let want: Vec<u32> = exact.search(q, 10, None).iter().map(|h| h.chunk).collect();
            let got: Vec<u32> = hnsw.search(q, 10, 100, None).iter().map(|h| h.chunk).collect();
            found += want.iter().filter(|c| got.contains(c)).count();
        }
        assert!(found as f64 / 500.0 >= 0.95, "recall@10 of HNSW vs exact: {}", found as f64 / 500.0);
    }

    #[test]
    fn a_written_graph_reopens_with_the_same_results() {
        let (n, dim) = (500, 8);
        let exact = ExactIndex::new(dim, random_vectors(n, dim, 7));
        let built = HnswIndex::build(exact.clone(), HnswParams { m: 8, ef_construction: 32 });
        let dir = tempfile::tempdir().unwrap();
        built.write(dir.path()).unwrap();
        let opened = HnswIndex::open(dir.path(), exact).unwrap();
        for q in random_vectors(10, dim, 3).chunks_exact(dim) {
            assert_eq!(built.search(q, 10, 16, None), opened.search(q, 10, 16, None));
        }
    }

    #[test]
    fn searches_on_many_threads_at_once_each_use_their_own_query() {
        use rayon::prelude::*;
        let (n, dim) = (1000, 16);
        let hnsw =
            HnswIndex::build(ExactIndex::new(dim, random_vectors(n, dim, 5)), HnswParams { m: 8, ef_construction: 64 });
        let queries = random_vectors(64, dim, 11);
        let alone: Vec<Vec<Hit>> = queries.chunks_exact(dim).map(|q| hnsw.search(q, 10, 32, None)).collect();
        for _ in 0..4 {
            let together: Vec<Vec<Hit>> = queries.par_chunks_exact(dim).map(|q| hnsw.search(q, 10, 32, None)).collect();
            assert_eq!(alone, together);
        }
    }
}
