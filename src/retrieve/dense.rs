//! Dense indexes over L2-normalised vectors: an exact dot-product scan and an HNSW graph.
//! Scores are cosine similarities (dot products of unit vectors).

use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use hnsw_rs::prelude::{Distance, Hnsw};

use crate::error::{Error, Result};

use crate::retrieve::hits::{top_hits, Allowed, Hit};

/// Exact search: a scan of every (allowed) vector.
#[derive(Clone)]
pub struct ExactIndex {
    dim: usize,
    vectors: Arc<Vec<f32>>,
}

/// Independent partial sums of [`dot`]: element `i` goes to sum `i % LANES`. Four 8-wide
/// registers' worth, so that additions overlap instead of waiting on one another.
const LANES: usize = 32;

/// The dot product of two vectors of one length, in one fixed order of operations on every
/// CPU: element `i`'s product (rounded) added to partial sum `i % 32`, the partial sums added
/// in order, then the products of the elements past the last multiple of 32. AVX, when the
/// CPU has it (checked once, at run time: a binary is built for any x86-64), does exactly
/// these operations eight at a time, so a score never depends on the machine.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX.
        return unsafe { dot_avx(a, b) };
    }
    dot_portable(a, b)
}

/// The partial sums added in order, then the products past the last full block.
#[inline(always)]
fn finish(acc: &[f32; LANES], a: &[f32], b: &[f32], body: usize) -> f32 {
    let tail = a[body..].iter().zip(&b[body..]).fold(0.0f32, |s, (x, y)| s + x * y);
    acc.iter().fold(0.0f32, |s, v| s + v) + tail
}

fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let body = n / LANES * LANES;
    let mut acc = [0f32; LANES];
    for (x, y) in a[..body].chunks_exact(LANES).zip(b[..body].chunks_exact(LANES)) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    finish(&acc, &a[..n], &b[..n], body)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn dot_avx(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::{_mm256_add_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps, _mm256_storeu_ps};
    let n = a.len().min(b.len());
    let body = n / LANES * LANES;
    let mut sums = [_mm256_setzero_ps(); LANES / 8];
    let mut i = 0;
    while i < body {
        for (j, sum) in sums.iter_mut().enumerate() {
            // SAFETY: i + 8j + 8 <= body <= n, the length of both slices.
            let (x, y) =
                unsafe { (_mm256_loadu_ps(a.as_ptr().add(i + 8 * j)), _mm256_loadu_ps(b.as_ptr().add(i + 8 * j))) };
            *sum = _mm256_add_ps(*sum, _mm256_mul_ps(x, y));
        }
        i += LANES;
    }
    let mut acc = [0f32; LANES];
    for (j, sum) in sums.iter().enumerate() {
        // SAFETY: acc holds LANES = 8 × sums.len() floats.
        unsafe { _mm256_storeu_ps(acc.as_mut_ptr().add(8 * j), *sum) };
    }
    finish(&acc, &a[..n], &b[..n], body)
}

impl ExactIndex {
    /// `vectors` is `n × dim`, one row per chunk ordinal.
    pub fn new(dim: usize, vectors: impl Into<Arc<Vec<f32>>>) -> Self {
        let vectors = vectors.into();
        assert_eq!(vectors.len() % dim, 0);
        ExactIndex { dim, vectors }
    }

    pub fn len(&self) -> usize {
        self.vectors.len() / self.dim
    }

    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    pub fn size_bytes(&self) -> u64 {
        (self.vectors.len() * 4) as u64
    }

    pub fn vector(&self, ord: usize) -> &[f32] {
        &self.vectors[ord * self.dim..(ord + 1) * self.dim]
    }

    /// Every vector, `len × dim`, by chunk ordinal.
    pub fn vectors(&self) -> &[f32] {
        &self.vectors
    }

    /// Scores every vector, or with `allowed` only the allowed ones.
    pub fn search(&self, query: &[f32], depth: usize, allowed: Option<&Allowed>) -> Vec<Hit> {
        let hits = match allowed {
            None => self
                .vectors
                .chunks_exact(self.dim)
                .enumerate()
                .map(|(i, v)| Hit { chunk: i as u32, score: dot(query, v) })
                .collect(),
            Some(a) => a.iter().map(|i| Hit { chunk: i, score: dot(query, self.vector(i as usize)) }).collect(),
        };
        top_hits(hits, depth)
    }
}

/// How an HNSW index answers a filtered query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilteredSearch {
    /// hnsw_rs's filtered graph search (falls back to a scan when it finds too few).
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
/// Measured with `ragsweep bench-filter experiments/bench-filter.toml --queries 300` on SciFact
/// sentence chunks (24,772 × 384, MiniLM, m = 16, ef_construction = 200, ef_search = 128,
/// k = 10, one query at a time, 2-core machine, AVX dot products), mean µs per query, graph vs
/// scan: 1% allowed 60,599 vs 68; 10% 14,215 vs 656; 50% 4,606 vs 2,626; 90% 2,159 vs 2,930
/// (unfiltered graph: 1,114). The crossover lies between half and nine tenths allowed.
pub const GRAPH_MIN_ALLOWED_FRACTION: f64 = 0.5;

/// Allowed sets up to this size are always scanned: 16k vectors scan in about 1.5 ms, less
/// than any filtered graph search took in the same measurement (2.1 ms at 90% allowed).
pub const SCAN_MAX_ALLOWED: usize = 16_384;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct HnswParams {
    pub m: usize,
    pub ef_construction: usize,
}

const GRAPH_FILE: &str = "graph";

/// Names how graphs are built; part of their cache key, so a change to the distance or the
/// build must change it.
pub const GRAPH_VERSION: &str = "ordinals-unit-dot-v4";

/// The graph point that stands for the query being searched on the current thread.
const QUERY_POINT: u32 = u32::MAX;

thread_local! {
    static QUERY: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// The graph's distance, 1 − cosine with [`dot`]'s fixed-order partial sums (hnsw_rs's `DistDot`
/// adds one product at a time). Graph points are chunk ordinals, not vectors: the distance
/// reads the vectors from the exact index, so hnsw_rs keeps no second copy of them (1.5 GB
/// at a million 384-d chunks). The query is the point [`QUERY_POINT`], whose vector
/// [`HnswIndex::search_with`] puts in a thread-local slot (hnsw_rs searches on the calling
/// thread).
#[derive(Clone)]
pub struct OrdinalDot {
    exact: ExactIndex,
}

impl Distance<u32> for OrdinalDot {
    fn eval(&self, a: &[u32], b: &[u32]) -> f32 {
        let similarity = match (a[0], b[0]) {
            (QUERY_POINT, o) | (o, QUERY_POINT) => QUERY.with_borrow(|q| dot(q, self.exact.vector(o as usize))),
            (x, y) => dot(self.exact.vector(x as usize), self.exact.vector(y as usize)),
        };
        (1.0 - similarity).max(0.0)
    }
}

/// Approximate search on an HNSW graph (hnsw_rs).
pub struct HnswIndex {
    graph: Hnsw<'static, u32, OrdinalDot>,
    exact: ExactIndex,
}

impl HnswIndex {
    /// Builds the graph (in parallel) over `exact`'s vectors, which it keeps for rescoring.
    pub fn build(exact: ExactIndex, params: HnswParams) -> Self {
        let n = exact.len().max(1);
        // hnsw_rs only writes graphs built with its maximum of 16 layers; levels are drawn
        // with scale 1/ln(m), so upper layers stay empty on any realistic corpus.
        let mut graph = Hnsw::new(params.m, n, 16, params.ef_construction, OrdinalDot { exact: exact.clone() });
        let ordinals: Vec<u32> = (0..exact.len() as u32).collect();
        let data: Vec<(&[u32], usize)> = ordinals.iter().map(|o| (std::slice::from_ref(o), *o as usize)).collect();
        graph.parallel_insert_slice(&data);
        graph.set_searching_mode(true);
        HnswIndex { graph, exact }
    }

    /// Writes the graph into `dir` (for [`HnswIndex::open`]).
    pub fn write(&self, dir: &Path) -> Result<()> {
        self.graph.file_dump(dir, GRAPH_FILE).map_err(|e| Error::Other(format!("{}: {e}", dir.display())))?;
        Ok(())
    }

    /// Loads a graph written by [`HnswIndex::write`] over the same vectors as `exact`.
    pub fn open(dir: &Path, exact: ExactIndex) -> Result<Self> {
        // hnsw_rs ties a loaded graph's lifetime to its loader. Without mmap the graph owns
        // its data, so the (small) loader is leaked to give the graph a 'static lifetime.
        let io: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(dir, GRAPH_FILE)));
        let mut graph: Hnsw<'static, u32, OrdinalDot> = io
            .load_hnsw_with_dist(OrdinalDot { exact: exact.clone() })
            .map_err(|e| Error::Other(format!("{}: {e}", dir.display())))?;
        if graph.get_nb_point() != exact.len() {
            return Err(Error::Other(format!("{}: the graph does not match the vectors", dir.display())));
        }
        graph.set_searching_mode(true);
        Ok(HnswIndex { graph, exact })
    }

    /// The vectors the graph was built over, as an exact index.
    pub fn exact(&self) -> &ExactIndex {
        &self.exact
    }

    pub fn size_bytes(&self) -> u64 {
        // Vectors plus up to 2·m neighbour ids per point on layer 0.
        self.exact.size_bytes() + (self.exact.len() * 2 * self.graph.get_max_nb_connection() as usize * 8) as u64
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
        // A graph search allocates for its depth: never more than the points it holds.
        let depth = depth.min(self.exact.len());
        let ef = ef_search.max(depth);
        QUERY.with_borrow_mut(|q| {
            q.clear();
            q.extend_from_slice(query);
        });
        let neighbours = match allowed {
            None => self.graph.search(&[QUERY_POINT], depth, ef),
            Some(a) => {
                let fraction = a.count() as f64 / self.exact.len().max(1) as f64;
                let scan = match strategy {
                    FilteredSearch::Scan => true,
                    FilteredSearch::Graph => false,
                    FilteredSearch::Auto => a.count() <= SCAN_MAX_ALLOWED || fraction < GRAPH_MIN_ALLOWED_FRACTION,
                };
                if scan {
                    return self.exact.search(query, depth, Some(a));
                }
                let filter = |id: &usize| a.contains(*id as u32);
                let found = self.graph.search_filter(&[QUERY_POINT], depth, ef, Some(&filter));
                if found.len() < depth.min(a.count()) {
                    // The graph could not reach enough allowed points: never return a short list.
                    return self.exact.search(query, depth, Some(a));
                }
                found
            }
        };
        // Exact scores for the candidates the graph found, so ties and order match the scan.
        let hits = neighbours
            .into_iter()
            .map(|n| Hit { chunk: n.d_id as u32, score: dot(query, self.exact.vector(n.d_id)) })
            .collect();
        top_hits(hits, depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn random_vectors(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        let mut out = Vec::with_capacity(n * dim);
        for _ in 0..n {
            let v: Vec<f32> = (0..dim)
                .map(|_| {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5
                })
                .collect();
            out.extend(unit(&v));
        }
        out
    }

    #[test]
    fn exact_ranks_by_cosine_and_respects_allowed() {
        let idx = ExactIndex::new(2, [unit(&[1.0, 0.0]), unit(&[1.0, 1.0]), unit(&[0.0, 1.0])].concat());
        let q = unit(&[1.0, 0.2]);
        let hits = idx.search(&q, 3, None);
        assert_eq!(hits.iter().map(|h| h.chunk).collect::<Vec<_>>(), [0, 1, 2]);
        let allowed = Allowed::from_fn(3, |i| i == 2);
        assert_eq!(idx.search(&q, 3, Some(&allowed)).iter().map(|h| h.chunk).collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn dot_is_the_same_number_with_and_without_avx() {
        for len in [0, 1, 7, 31, 32, 33, 64, 100, 384, 385, 768, 1000] {
            let (a, b) = (random_vectors(1, len, 3), random_vectors(1, len, 4));
            let portable = dot_portable(&a, &b);
            assert_eq!(dot(&a, &b).to_bits(), portable.to_bits(), "length {len}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx") {
                assert_eq!(unsafe { dot_avx(&a, &b) }.to_bits(), portable.to_bits(), "length {len}");
            }
        }
    }

    #[test]
    fn dot_matches_naive_sum() {
        let a: Vec<f32> = (0..21).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..21).map(|i| 1.0 - i as f32 * 0.1).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-4);
    }

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
