//! The plan: an experiment's grid turned into the distinct work it needs, as data.
//!
//! Chunk sets, models, embedding jobs and indexes are each listed once (cells that need the
//! same work share it), and every cell says which of them it reads through typed ids. The
//! runner builds what the plan lists and never has to guess which position holds what.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::catalog::{Composition, SourceKind};
use crate::chunkers::ChunkerSpec;
use crate::experiment::Experiment;
use crate::retrieve::fusion::Fusion;
use crate::stages::embed::ModelInfo;
use crate::vocab::EngineKind;

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub usize);
    };
}

id!(
    /// A chunk set: one per distinct chunker.
    ChunkSetId
);
id!(
    /// An embedding model, by its position in [`Plan::models`].
    ModelId
);
id!(
    /// Passage vectors of one chunk set by one model.
    EmbeddingId
);
id!(
    /// An index over a chunk set.
    IndexId
);

/// Passage vectors to compute: one chunk set embedded by one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddingJob {
    pub chunks: ChunkSetId,
    pub model: ModelId,
}

/// An index to build: its kind's identity over a chunk set (query-time parameters are not
/// part of it), and the passage vectors it reads, if any.
#[derive(Debug, Clone)]
pub struct IndexSpec {
    pub chunks: ChunkSetId,
    pub embedding: Option<EmbeddingId>,
    pub identity: crate::catalog::IndexIdentity,
    /// The kind that builds it (the first cell's; every kind of the same identity reads it).
    pub kind: Arc<dyn SourceKind>,
}

impl IndexSpec {
    /// The serving engine that holds the index; `None` in process.
    pub fn engine(&self) -> Option<EngineKind> {
        self.kind.engine()
    }
}

/// One ranking source of a cell: an index, the kind (with its query-time parameters) that
/// searches it, and the model that embeds its questions, if any.
#[derive(Debug, Clone)]
pub struct SourcePlan {
    pub index: IndexId,
    pub kind: Arc<dyn SourceKind>,
    pub model: Option<ModelId>,
}

/// A cell's retrieval as a composition: its sources, fused when there are several, then
/// reranked.
#[derive(Debug, Clone)]
pub struct RetrieverPlan {
    pub sources: Vec<SourcePlan>,
    /// How several sources' lists fuse, and the candidates each fetches.
    pub fusion: Option<(Fusion, usize)>,
    /// Each reranker's source and the chunks it reorders.
    pub rerank: Vec<(SourcePlan, usize)>,
}

impl RetrieverPlan {
    /// Every source the cell reads: the ranking ones, then the rerankers'.
    pub fn all_sources(&self) -> impl Iterator<Item = &SourcePlan> {
        self.sources.iter().chain(self.rerank.iter().map(|r| &r.0))
    }
}

/// What one cell reads.
#[derive(Debug, Clone)]
pub struct CellPlan {
    pub chunks: ChunkSetId,
    /// The passage vectors of each model the cell's sources search with, in source order.
    pub embeddings: Vec<EmbeddingId>,
    /// Those models: the cell's question vector is theirs, concatenated in this order.
    pub models: Vec<ModelId>,
    pub retriever: RetrieverPlan,
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub chunkers: Vec<ChunkerSpec>,
    /// Model ids as the experiment names them.
    pub models: Vec<String>,
    pub embeddings: Vec<EmbeddingJob>,
    pub indexes: Vec<IndexSpec>,
    /// One per experiment cell, in grid order.
    pub cells: Vec<CellPlan>,
}

/// The position of `item` in `list`, appending it when new.
fn intern<T: PartialEq>(list: &mut Vec<T>, item: T) -> usize {
    match list.iter().position(|x| *x == item) {
        Some(i) => i,
        None => {
            list.push(item);
            list.len() - 1
        }
    }
}

impl Plan {
    pub fn new(exp: &Experiment) -> Plan {
        Plan::with_cross_encoders(exp, &[])
    }

    /// The plan where rerankers by one of the `cross` models score pairs with it (they embed
    /// nothing).
    pub fn with_cross_encoders(exp: &Experiment, cross: &[ModelInfo]) -> Plan {
        let mut plan = Plan {
            chunkers: Vec::new(),
            models: Vec::new(),
            embeddings: Vec::new(),
            indexes: Vec::new(),
            cells: Vec::new(),
        };
        for cell in &exp.cells {
            let chunks = ChunkSetId(intern(&mut plan.chunkers, cell.chunker.clone()));
            let Composition { sources, fusion, rerank } = cell.retriever.composition().with_cross_encoders(cross);
            let sources: Vec<SourcePlan> = sources.into_iter().map(|kind| plan.source(chunks, kind.into())).collect();
            let rerank = rerank.into_iter().map(|(kind, n)| (plan.source(chunks, kind.into()), n)).collect();
            let retriever = RetrieverPlan { sources, fusion: fusion.map(|(f, n)| (f.fuse(), n)), rerank };
            let mut embeddings = Vec::new();
            for e in retriever.all_sources().filter_map(|s| plan.indexes[s.index.0].embedding) {
                intern(&mut embeddings, e);
            }
            let mut models = Vec::new();
            for m in retriever.all_sources().filter_map(|s| s.model) {
                intern(&mut models, m);
            }
            plan.cells.push(CellPlan { chunks, embeddings, models, retriever });
        }
        plan
    }

    /// A source over `chunks`: its model's embedding job and its index, each listed once.
    fn source(&mut self, chunks: ChunkSetId, kind: Arc<dyn SourceKind>) -> SourcePlan {
        let model = kind.model().map(|model| ModelId(intern(&mut self.models, model.to_string())));
        let embedding = model
            .filter(|_| kind.embeds_passages())
            .map(|model| EmbeddingId(intern(&mut self.embeddings, EmbeddingJob { chunks, model })));
        let identity = kind.index_identity();
        let index = match self.indexes.iter().position(|i| i.chunks == chunks && i.identity == identity) {
            Some(i) => i,
            None => {
                self.indexes.push(IndexSpec { chunks, embedding, identity, kind: kind.clone() });
                self.indexes.len() - 1
            }
        };
        SourcePlan { index: IndexId(index), kind, model }
    }

    /// The serving engines the plan's indexes live in.
    pub fn engines(&self) -> BTreeSet<EngineKind> {
        self.indexes.iter().filter_map(IndexSpec::engine).collect()
    }

    /// The serving engines the run builds indexes in (the others only have served indexes read).
    pub fn engines_written(&self) -> BTreeSet<EngineKind> {
        self.indexes.iter().filter(|i| !i.kind.reads_only()).filter_map(IndexSpec::engine).collect()
    }

    pub fn embedding(&self, id: EmbeddingId) -> EmbeddingJob {
        self.embeddings[id.0]
    }

    /// The embedding jobs of model `m` (its position in `models`), with their positions.
    pub fn jobs_of(&self, m: usize) -> impl Iterator<Item = (usize, EmbeddingJob)> + '_ {
        self.embeddings.iter().copied().enumerate().filter(move |(_, job)| job.model.0 == m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(toml: &str) -> Plan {
        let exp = Experiment::parse(Path::new("e.toml"), toml).unwrap();
        Plan::new(&exp)
    }

    const HEAD: &str = "name = \"p\"\nk = [1, 5]\n[corpus]\npath = \"c\"\n[golden]\npath = \"g.json\"\n";

    #[test]
    fn a_hybrid_alone_plans_its_model_embedding_and_both_indexes() {
        let p = plan(&format!(
            "{HEAD}[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"hybrid\"\nanalyzer = \"pt\"\nmodel = \"e5-small\"\nfusion = \"rrf\"\n"
        ));
        assert_eq!(p.models, vec!["e5-small".to_string()]);
        assert_eq!(p.embeddings.len(), 1);
        assert_eq!(p.indexes.len(), 2);
        let [lexical, dense] = &p.cells[0].retriever.sources[..] else { panic!("two sources") };
        assert!(p.cells[0].retriever.fusion.is_some());
        assert_eq!(p.indexes[lexical.index.0].kind.index_name(), "bm25(pt)");
        assert_eq!(p.indexes[dense.index.0].kind.index_name(), "exact(e5-small)");
        assert_eq!(p.cells[0].models, [ModelId(0)]);
    }

    #[test]
    fn query_time_parameters_share_one_index() {
        let p = plan(&format!(
            "{HEAD}[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"en\"\nk1 = [0.9, 1.2]\nb = [0.4, 0.75]\n"
        ));
        assert_eq!(p.cells.len(), 4);
        assert_eq!(p.indexes.len(), 1);
        assert!(p.cells.iter().all(|c| c.retriever.sources[0].index == IndexId(0)));
    }
}
