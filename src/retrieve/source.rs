//! The ranking-source interface: what every index a cell retrieves from implements, in
//! process (BM25, the exact scan, the HNSW graph) or in a serving engine (`engine::pg`).
//!
//! A source answers `search(query, depth, restriction)` with the restriction inside the
//! search; it explains its own score of one chunk, says how big it is, and, when it
//! approximates an exact search over the same data, hands out that exact search (the oracle
//! the approximation is measured against). What it is called is its catalog kind's label.

use std::sync::Arc;

use crate::analyze::Term;
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

/// A score and how it was made, as a tree (tantivy's `Explanation`): a source's score with its
/// parts below it, a fusion's node over its sources', a reranker's over the list it reordered.
/// Each step builds its own node from its children's; a new source or stage adds nodes, not
/// fields.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ScoreNode {
    pub name: String,
    pub value: Option<f32>,
    /// 1-based rank of the chunk in this node's list, where the node ranks a list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ScoreNode>,
    /// Which step of the cell made the node, for a reader of one step (not written).
    #[serde(skip)]
    pub role: NodeRole,
}

/// The step of a cell's retrieval a [`ScoreNode`] explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeRole {
    /// A part of its parent's score (a BM25 term, a cosine).
    #[default]
    Part,
    /// The cell's source at this position.
    Source(usize),
    /// The rank of its parent source's chunk in the exact search that source approximates.
    ExactRank,
    /// What its parent source adds to the fused score.
    FusedPart,
    Fusion,
    /// The cell's reranker at this position.
    Rerank(usize),
}

impl ScoreNode {
    pub fn leaf(name: impl Into<String>, value: Option<f32>) -> ScoreNode {
        ScoreNode { name: name.into(), value, rank: None, children: Vec::new(), role: NodeRole::Part }
    }

    /// The rank of a source's chunk in the exact search the source approximates.
    pub fn exact_rank(rank: u32) -> ScoreNode {
        let leaf = ScoreNode::leaf("the exact scan over the same vectors, same depth and filter", None);
        ScoreNode { rank: Some(rank), role: NodeRole::ExactRank, ..leaf }
    }

    /// The first node made by step `role`, depth first.
    pub fn find(&self, role: NodeRole) -> Option<&ScoreNode> {
        if self.role == role {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(role))
    }

    /// The tree as indented lines, one per node: `name = value (rank r)`.
    pub fn render(&self, indent: usize, out: &mut String) {
        let value = self.value.map_or_else(String::new, |v| format!(" = {v:.6}"));
        let rank = self.rank.map_or_else(String::new, |r| format!(" (rank {r})"));
        out.push_str(&format!("{:indent$}{}{value}{rank}\n", "", self.name));
        for child in &self.children {
            child.render(indent + 2, out);
        }
    }
}

/// How a source scores one chunk for a query, by itself.
#[derive(Debug, Clone)]
pub struct SourceScore {
    /// The source's score (BM25, cosine, `ts_rank_cd`); `None` when it does not score the chunk.
    pub score: Option<f32>,
    /// What the score is made of: BM25's terms, the cosine of the vectors.
    pub parts: Vec<ScoreNode>,
    /// BM25's per-term table, for in-process BM25 (the term-level diagnoses read it).
    pub bm25: Option<Bm25Explanation>,
}

/// What hosted rerank answers said they used: the calls, the tokens read (Jina, Voyage) and the
/// search units billed (Cohere); an API that says nothing adds only calls.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Used {
    pub calls: u64,
    pub tokens: u64,
    pub searches: u64,
}

impl Used {
    pub fn add(&mut self, other: Used) {
        self.calls += other.calls;
        self.tokens += other.tokens;
        self.searches += other.searches;
    }
}

/// What a hosted stage's answers said it used so far, and its prices (0 when none is declared).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    pub used: Used,
    pub usd_per_1m_tokens: f64,
    pub usd_per_1k_searches: f64,
}

/// One ranking source of a cell: an index and its query-time parameters.
pub trait RankingSource: Send + Sync {
    /// The top `depth` chunks for `query`, restricted in the search to `restrict` when given.
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>>;

    /// This source's own score of `chunk` for `query`.
    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore>;

    /// This source's scores of `chunks` for `query` (what a reranker orders by); a chunk it
    /// does not score gets `-inf`.
    fn rescore(&self, query: &Query<'_>, chunks: &[u32]) -> Result<Vec<f32>> {
        chunks.iter().map(|&c| Ok(self.explain(query, c)?.score.unwrap_or(f32::NEG_INFINITY))).collect()
    }

    fn size_bytes(&self) -> u64;

    fn side(&self) -> Side;

    /// What a hosted source's answers said its reranking used so far; `None` for a source that
    /// runs here or says nothing.
    fn usage(&self) -> Option<Usage> {
        None
    }

    /// The exact in-process search over the same data that this source approximates; `None`
    /// for an exact source.
    fn oracle(&self) -> Option<Arc<dyn RankingSource + '_>> {
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

    /// The terms this source's analyzer makes of `text`, each with its byte span in `text`;
    /// `None` for a source that does not analyze text.
    fn analyze(&self, _text: &str) -> Result<Option<Vec<Term>>> {
        Ok(None)
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
        let mut parts: Vec<ScoreNode> = e
            .terms
            .iter()
            .map(|t| {
                let name = format!(
                    "term {:?}: idf {:.4}, tf {}, {}× in the query, in {}",
                    t.term,
                    t.idf,
                    t.tf,
                    t.query_count,
                    crate::words::count(t.doc_freq as usize, "chunk")
                );
                ScoreNode::leaf(name, Some(t.contribution))
            })
            .collect();
        let length = format!("length {} terms (average {:.1}), k1 = {}, b = {}", e.length, e.avg_length, e.k1, e.b);
        parts.push(ScoreNode::leaf(length, None));
        Ok(SourceScore { score: Some(e.score), parts, bm25: Some(e) })
    }

    fn size_bytes(&self) -> u64 {
        self.index.size_bytes()
    }

    fn side(&self) -> Side {
        Side::Lexical
    }

    fn bm25(&self) -> Option<&Bm25Index> {
        Some(self.index)
    }

    fn analyze(&self, text: &str) -> Result<Option<Vec<Term>>> {
        Ok(Some(self.index.analyzer().analyze(text)))
    }
}

fn cosine_score(query: &Query<'_>, vector: &[f32]) -> SourceScore {
    let cosine = dot(query.vector, vector);
    let parts = vec![ScoreNode::leaf("cosine of the query and chunk vectors", Some(cosine))];
    SourceScore { score: Some(cosine), parts, bm25: None }
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

    fn rescore(&self, query: &Query<'_>, chunks: &[u32]) -> Result<Vec<f32>> {
        Ok(chunks.iter().map(|&c| dot(query.vector, self.index.vector(c as usize))).collect())
    }

    fn size_bytes(&self) -> u64 {
        self.index.size_bytes()
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

    fn side(&self) -> Side {
        Side::Dense
    }

    fn oracle(&self) -> Option<Arc<dyn RankingSource + '_>> {
        Some(Arc::new(ExactSource { index: self.index.exact() }))
    }
}

/// A source that reads its own model's part of the question vector: a cell whose sources
/// search with several models concatenates their question vectors, in the plan's order.
pub struct Sliced<'a> {
    pub inner: Arc<dyn RankingSource + 'a>,
    pub at: std::ops::Range<usize>,
}

impl Sliced<'_> {
    fn query<'q>(&self, query: &Query<'q>) -> Query<'q> {
        Query { text: query.text, vector: &query.vector[self.at.clone()] }
    }
}

impl RankingSource for Sliced<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        self.inner.search(&self.query(query), depth, restrict)
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        self.inner.explain(&self.query(query), chunk)
    }

    fn rescore(&self, query: &Query<'_>, chunks: &[u32]) -> Result<Vec<f32>> {
        self.inner.rescore(&self.query(query), chunks)
    }

    fn size_bytes(&self) -> u64 {
        self.inner.size_bytes()
    }

    fn side(&self) -> Side {
        self.inner.side()
    }

    fn oracle(&self) -> Option<Arc<dyn RankingSource + '_>> {
        Some(Arc::new(Sliced { inner: self.inner.oracle()?, at: self.at.clone() }))
    }

    fn plans_each_depth(&self) -> bool {
        self.inner.plans_each_depth()
    }

    fn plan(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Option<String>> {
        self.inner.plan(&self.query(query), depth, restrict)
    }

    fn bm25(&self) -> Option<&Bm25Index> {
        self.inner.bm25()
    }

    fn analyze(&self, text: &str) -> Result<Option<Vec<Term>>> {
        self.inner.analyze(text)
    }
}
