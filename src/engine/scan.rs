//! The oracle of an index the team serves on an engine that cannot be told to skip its own
//! index (Milvus, Chroma): an exact scan, in process, of the rows as the engine returned them
//! (their vectors and groups), scored by the index's own metric and filtered by the same groups.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::retrieve::hits::{top_hits, Hit};
use crate::retrieve::source::{Query, RankingSource, Restriction, ScoreNode, Side, SourceScore};
use crate::vocab::Distance;

/// The rows of a served index as read, each placed as a chunk.
pub struct ServedScan {
    /// The engine, as errors name it (`milvus`, `chroma`), and what its index is called there.
    pub engine: &'static str,
    /// What the rows are, for messages (`collection team_pages`).
    pub what: String,
    pub metric: Distance,
    pub dim: usize,
    /// Each row's vector, its chunk and its groups.
    pub vectors: Vec<f32>,
    pub row_chunk: Vec<u32>,
    pub row_groups: Vec<Vec<String>>,
    /// Whether the rows carry groups (an `acl_field`), and the group public rows carry.
    pub has_acl: bool,
    pub public_group: Option<String>,
    /// Each row vector's length, for the cosine.
    norms: Vec<f32>,
}

/// A vector's length (never 0, so a cosine is always defined).
fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE)
}

impl ServedScan {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        engine: &'static str,
        what: String,
        metric: Distance,
        dim: usize,
        vectors: Vec<f32>,
        row_chunk: Vec<u32>,
        row_groups: Vec<Vec<String>>,
        has_acl: bool,
        public_group: Option<String>,
    ) -> Result<ServedScan> {
        if vectors.len() != row_chunk.len() * dim || row_groups.len() != row_chunk.len() {
            return Err(Error::Engine {
                engine,
                what: format!(
                    "{what}: {} vector values and {} group lists for {} rows",
                    vectors.len(),
                    row_groups.len(),
                    row_chunk.len()
                ),
                source: None,
            });
        }
        let norms = vectors.chunks_exact(dim.max(1)).map(norm).collect();
        Ok(ServedScan { engine, what, metric, dim, vectors, row_chunk, row_groups, has_acl, public_group, norms })
    }

    pub fn rows(&self) -> usize {
        self.row_chunk.len()
    }

    /// The groups a restricted search asks for (the user's and the public group), or an error
    /// when the rows carry none.
    pub fn asked(&self, restrict: &Restriction<'_>) -> Result<Vec<String>> {
        if !self.has_acl {
            let what = format!("{}: a filtered search needs its acl_field", self.what);
            return Err(Error::Engine { engine: self.engine, what, source: None });
        }
        Ok(restrict.groups.iter().chain(self.public_group.as_ref()).cloned().collect())
    }

    /// The chunk's score at its best row, as the index's metric scores it.
    pub fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        let score = self.scan(query.vector, None).into_iter().find(|h| h.chunk == chunk).map(|h| h.score);
        let name =
            format!("{} of the row's vector and the question's, as {} scores it", self.metric.as_str(), self.engine);
        Ok(SourceScore { score, parts: vec![ScoreNode::leaf(name, score)], bm25: None })
    }

    /// Every row scored exactly as the metric scores it (restricted to rows that carry one of
    /// `groups`), each chunk at its best row.
    fn scan(&self, q: &[f32], groups: Option<&[String]>) -> Vec<Hit> {
        let qn = norm(q);
        let mut best: HashMap<u32, f32> = HashMap::new();
        for (r, v) in self.vectors.chunks_exact(self.dim.max(1)).enumerate() {
            if groups.is_some_and(|groups| !self.row_groups[r].iter().any(|g| groups.contains(g))) {
                continue;
            }
            let dot: f32 = v.iter().zip(q).map(|(a, b)| a * b).sum();
            let score = match self.metric {
                Distance::Cosine => dot / (self.norms[r] * qn),
                Distance::Ip => dot,
                Distance::L2 => -v.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum::<f32>(),
            };
            let entry = best.entry(self.row_chunk[r]).or_insert(f32::NEG_INFINITY);
            *entry = entry.max(score);
        }
        best.into_iter().map(|(chunk, score)| Hit { chunk, score }).collect()
    }

    /// The oracle's source.
    pub fn oracle(&self) -> Arc<dyn RankingSource + '_> {
        Arc::new(ScanSource { scan: self })
    }
}

/// The exact scan as a ranking source.
struct ScanSource<'a> {
    scan: &'a ServedScan,
}

impl RankingSource for ScanSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        let groups = restrict.map(|r| self.scan.asked(r)).transpose()?;
        Ok(top_hits(self.scan.scan(query.vector, groups.as_deref()), depth))
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        self.scan.explain(query, chunk)
    }

    fn size_bytes(&self) -> u64 {
        (self.scan.vectors.len() * 4) as u64
    }

    fn side(&self) -> Side {
        Side::Dense
    }
}
