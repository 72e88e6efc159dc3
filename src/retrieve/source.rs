//! The ranking-source interface: what every index a cell retrieves from implements, in
//! process (BM25, the exact scan, the HNSW graph) or in a serving engine (`engine::pg`).
//!
//! A source answers `search(query, depth, restriction)` with the restriction inside the
//! search; it explains its own score of one chunk, says how big it is and what it is, and,
//! when it approximates an exact search over the same data, hands out that exact search
//! (the oracle the approximation is measured against).

use std::sync::Arc;

use crate::error::Result;
use crate::retrieve::bm25::{Bm25Explanation, Bm25Index, Bm25Params};
use crate::retrieve::dense::{dot, ExactIndex, HnswIndex};
use crate::retrieve::hits::{Allowed, Hit};

/// A question as a source takes it: its text (lexical) and its vector (dense; empty when the
/// cell has no dense side).
#[derive(Debug, Clone, Copy)]
pub struct Query<'q> {
    pub text: &'q str,
    pub vector: &'q [f32],
}

/// Who asks, for a search restricted to what they may see: the chunks as an in-process bitset,
/// and the user's groups as an engine's query names them (`WHERE acl && groups`).
#[derive(Debug, Clone, Copy)]
pub struct Restriction<'a> {
    pub allowed: &'a Allowed,
    pub groups: &'a [String],
}

/// Which side of a fusion a source's list is on (convex fusion weighs the sides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Lexical,
    Dense,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Lexical => "lexical",
            Side::Dense => "dense",
        }
    }
}

/// How a source scores one chunk for a query, by itself.
#[derive(Debug, Clone)]
pub struct SourceScore {
    /// The source's score (BM25, cosine, `ts_rank_cd`); `None` when it does not score the chunk.
    pub score: Option<f32>,
    /// BM25's per-term table, for in-process BM25.
    pub bm25: Option<Bm25Explanation>,
    /// The cosine of query and chunk vectors, for dense sources.
    pub cosine: Option<f32>,
}

/// One ranking source of a cell: an index and its query-time parameters.
pub trait RankingSource: Send + Sync {
    /// The top `depth` chunks for `query`, restricted in the search to `restrict` when given.
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>>;

    /// This source's own score of `chunk` for `query`.
    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore>;

    fn size_bytes(&self) -> u64;

    /// What the source is: kind, build and query parameters (`hnsw(m=16,efc=64,ef=40)`).
    fn identity(&self) -> String;

    fn side(&self) -> Side;

    /// The exact in-process search over the same data that this source approximates, and
    /// what it approximates with (`the graph (ef_search = 40)`); `None` for an exact source.
    fn oracle(&self) -> Option<(Arc<dyn RankingSource + '_>, String)> {
        None
    }

    /// Whether the source plans each depth on its own (an engine's planner may choose another
    /// plan for `LIMIT 10` than for `LIMIT 100`), so that a list of k is asked for as such.
    fn plans_each_depth(&self) -> bool {
        false
    }

    /// How a serving engine plans this search (its `EXPLAIN`, in a few words: `vector index`,
    /// `sequential scan (index unused)`); `None` for in-process sources, which have one way.
    fn plan(&self, _query: &Query<'_>, _depth: usize, _restrict: Option<&Restriction<'_>>) -> Result<Option<String>> {
        Ok(None)
    }

    /// The in-process BM25 index behind the source, for term-level diagnoses.
    fn bm25(&self) -> Option<&Bm25Index> {
        None
    }
}

/// In-process BM25 (tantivy) at given `k1`, `b`.
pub struct Bm25Source<'a> {
    pub index: &'a Bm25Index,
    pub params: Bm25Params,
}

impl RankingSource for Bm25Source<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        self.index.search(query.text, self.params, depth, restrict.map(|r| r.allowed))
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        let e = self.index.explain(query.text, self.params, chunk)?;
        Ok(SourceScore { score: Some(e.score), bm25: Some(e), cosine: None })
    }

    fn size_bytes(&self) -> u64 {
        self.index.size_bytes()
    }

    fn identity(&self) -> String {
        format!("bm25({:?},k1={},b={})", self.index.analyzer().kind(), self.params.k1, self.params.b)
    }

    fn side(&self) -> Side {
        Side::Lexical
    }

    fn bm25(&self) -> Option<&Bm25Index> {
        Some(self.index)
    }
}

fn cosine_score(query: &Query<'_>, vector: &[f32]) -> SourceScore {
    let cosine = dot(query.vector, vector);
    SourceScore { score: Some(cosine), bm25: None, cosine: Some(cosine) }
}

/// The exact scan over a chunk set's vectors.
pub struct ExactSource<'a> {
    pub index: &'a ExactIndex,
}

impl RankingSource for ExactSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        Ok(self.index.search(query.vector, depth, restrict.map(|r| r.allowed)))
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        Ok(cosine_score(query, self.index.vector(chunk as usize)))
    }

    fn size_bytes(&self) -> u64 {
        self.index.size_bytes()
    }

    fn identity(&self) -> String {
        "exact".into()
    }

    fn side(&self) -> Side {
        Side::Dense
    }
}

/// The in-process HNSW graph at a given `ef_search`.
pub struct HnswSource<'a> {
    pub index: &'a HnswIndex,
    pub ef_search: usize,
}

impl RankingSource for HnswSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        Ok(self.index.search(query.vector, depth, self.ef_search, restrict.map(|r| r.allowed)))
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        Ok(cosine_score(query, self.index.exact().vector(chunk as usize)))
    }

    fn size_bytes(&self) -> u64 {
        self.index.size_bytes()
    }

    fn identity(&self) -> String {
        format!("hnsw(ef_search={})", self.ef_search)
    }

    fn side(&self) -> Side {
        Side::Dense
    }

    fn oracle(&self) -> Option<(Arc<dyn RankingSource + '_>, String)> {
        let exact: Arc<dyn RankingSource + '_> = Arc::new(ExactSource { index: self.index.exact() });
        Some((exact, format!("the graph (ef_search = {})", self.ef_search)))
    }
}
