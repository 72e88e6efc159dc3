//! The plan: an experiment's grid turned into the distinct work it needs, as data.
//!
//! Chunk sets, models, embedding jobs and indexes are each listed once (cells that need the
//! same work share it), and every cell says which of them it reads through typed ids. The
//! runner builds what the plan lists and never has to guess which position holds what.

use crate::analyze::AnalyzerKind;
use crate::engine::milvus::{MilvusBuild, MilvusQuery};
use crate::engine::pgvector::{VectorBuild, VectorQuery};
use crate::experiment::{
    DenseIndex, DenseSpec, Experiment, LexicalSpec, MilvusIndex, PgVectorIndex, RetrieverSpec, Terms,
};
use crate::retrieve::HnswParams;
use crate::vocab::{Bm25Params, ChunkerSpec, Fusion};

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

/// What an index is built from; query-time parameters are not part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexSpec {
    Bm25 {
        chunks: ChunkSetId,
        analyzer: AnalyzerKind,
    },
    Exact {
        embedding: EmbeddingId,
    },
    Hnsw {
        embedding: EmbeddingId,
        params: HnswParams,
    },
    /// A PostgreSQL table of the vectors with the chunks' ACLs, and its pgvector index.
    PgVector {
        embedding: EmbeddingId,
        build: VectorBuild,
    },
    /// A PostgreSQL full-text table of the chunks' texts with their ACLs.
    PgText {
        chunks: ChunkSetId,
        analyzer: AnalyzerKind,
    },
    /// A Milvus collection of the vectors with the chunks' ACLs, and its index.
    MilvusVector {
        embedding: EmbeddingId,
        build: MilvusBuild,
    },
}

pub use crate::vocab::EngineKind;

impl IndexSpec {
    /// The serving engine that holds the index; `None` in process.
    pub fn engine(&self) -> Option<EngineKind> {
        match self {
            IndexSpec::PgVector { .. } | IndexSpec::PgText { .. } => Some(EngineKind::Pg),
            IndexSpec::MilvusVector { .. } => Some(EngineKind::Milvus),
            IndexSpec::Bm25 { .. } | IndexSpec::Exact { .. } | IndexSpec::Hnsw { .. } => None,
        }
    }
}

/// Query-time parameters of one source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueryParams {
    Bm25(Bm25Params),
    Exact,
    Hnsw { ef_search: usize },
    PgVector(VectorQuery),
    PgText(Terms),
    MilvusVector(MilvusQuery),
}

/// One ranking source of a cell: an index and how it is queried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourcePlan {
    pub index: IndexId,
    pub query: QueryParams,
}

/// A cell's retrieval as a composition: its sources, fused when there are several.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrieverPlan {
    pub sources: Vec<SourcePlan>,
    /// How several sources' lists fuse, and the candidates each fetches.
    pub fusion: Option<(Fusion, usize)>,
}

/// What one cell reads.
#[derive(Debug, Clone, PartialEq)]
pub struct CellPlan {
    pub chunks: ChunkSetId,
    /// The passage vectors of the cell's dense side, if it has one.
    pub embedding: Option<EmbeddingId>,
    pub retriever: RetrieverPlan,
}

#[derive(Debug, Clone, PartialEq)]
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
        let mut plan = Plan {
            chunkers: Vec::new(),
            models: Vec::new(),
            embeddings: Vec::new(),
            indexes: Vec::new(),
            cells: Vec::new(),
        };
        for cell in &exp.cells {
            let chunks = ChunkSetId(intern(&mut plan.chunkers, cell.chunker.clone()));
            let planned = match &cell.retriever {
                RetrieverSpec::Bm25 { .. } | RetrieverSpec::FullText { .. } => {
                    let spec = match cell.retriever {
                        RetrieverSpec::Bm25 { analyzer, params } => LexicalSpec { analyzer, params, full_text: None },
                        RetrieverSpec::FullText { analyzer, terms } => {
                            LexicalSpec { analyzer, params: Bm25Params::default(), full_text: Some(terms) }
                        }
                        _ => unreachable!("matched above"),
                    };
                    let lexical = plan.lexical(chunks, &spec);
                    let retriever = RetrieverPlan { sources: vec![lexical], fusion: None };
                    CellPlan { chunks, embedding: None, retriever }
                }
                RetrieverSpec::Dense { model, index } => {
                    let (dense, embedding) = plan.dense(chunks, &DenseSpec { model: model.clone(), index: *index });
                    let retriever = RetrieverPlan { sources: vec![dense], fusion: None };
                    CellPlan { chunks, embedding: Some(embedding), retriever }
                }
                RetrieverSpec::Hybrid { lexical, dense, fusion, candidates } => {
                    let lexical = plan.lexical(chunks, lexical);
                    let (dense, embedding) = plan.dense(chunks, dense);
                    CellPlan {
                        chunks,
                        embedding: Some(embedding),
                        retriever: RetrieverPlan {
                            sources: vec![lexical, dense],
                            fusion: Some((*fusion, *candidates)),
                        },
                    }
                }
            };
            plan.cells.push(planned);
        }
        plan
    }

    fn lexical(&mut self, chunks: ChunkSetId, spec: &LexicalSpec) -> SourcePlan {
        let (index, query) = match spec.full_text {
            None => (IndexSpec::Bm25 { chunks, analyzer: spec.analyzer }, QueryParams::Bm25(spec.params)),
            Some(terms) => (IndexSpec::PgText { chunks, analyzer: spec.analyzer }, QueryParams::PgText(terms)),
        };
        SourcePlan { index: IndexId(intern(&mut self.indexes, index)), query }
    }

    fn dense(&mut self, chunks: ChunkSetId, spec: &DenseSpec) -> (SourcePlan, EmbeddingId) {
        let model = ModelId(intern(&mut self.models, spec.model.clone()));
        let embedding = EmbeddingId(intern(&mut self.embeddings, EmbeddingJob { chunks, model }));
        let (index, query) = match spec.index {
            DenseIndex::Exact => (IndexSpec::Exact { embedding }, QueryParams::Exact),
            DenseIndex::Hnsw { m, ef_construction, ef_search } => (
                IndexSpec::Hnsw { embedding, params: HnswParams { m, ef_construction } },
                QueryParams::Hnsw { ef_search },
            ),
            DenseIndex::Pg { index, iterative_scan, force_index } => {
                let (build, ef_search, probes) = match index {
                    PgVectorIndex::Exact => (VectorBuild::Exact, 0, 0),
                    PgVectorIndex::Hnsw { m, ef_construction, ef_search } => {
                        (VectorBuild::Hnsw { m, ef_construction }, ef_search, 0)
                    }
                    PgVectorIndex::Ivfflat { lists, probes } => (VectorBuild::Ivfflat { lists }, 0, probes),
                };
                (
                    IndexSpec::PgVector { embedding, build },
                    QueryParams::PgVector(VectorQuery { ef_search, probes, iterative_scan, force_index }),
                )
            }
            DenseIndex::Milvus { index } => {
                let (build, ef, nprobe) = match index {
                    MilvusIndex::Flat => (MilvusBuild::Flat, 0, 0),
                    MilvusIndex::Hnsw { m, ef_construction, ef_search } => {
                        (MilvusBuild::Hnsw { m, ef_construction }, ef_search, 0)
                    }
                    MilvusIndex::IvfFlat { lists, probes } => (MilvusBuild::IvfFlat { nlist: lists }, 0, probes),
                };
                (IndexSpec::MilvusVector { embedding, build }, QueryParams::MilvusVector(MilvusQuery { ef, nprobe }))
            }
        };
        (SourcePlan { index: IndexId(intern(&mut self.indexes, index)), query }, embedding)
    }

    pub fn embedding(&self, id: EmbeddingId) -> EmbeddingJob {
        self.embeddings[id.0]
    }

    /// The model that embeds a cell's queries, if it has a dense side.
    pub fn cell_model(&self, cell: &CellPlan) -> Option<ModelId> {
        cell.embedding.map(|e| self.embedding(e).model)
    }

    /// The chunk set an index is built over.
    pub fn index_chunks(&self, id: IndexId) -> ChunkSetId {
        match self.indexes[id.0] {
            IndexSpec::Bm25 { chunks, .. } | IndexSpec::PgText { chunks, .. } => chunks,
            IndexSpec::Exact { embedding }
            | IndexSpec::Hnsw { embedding, .. }
            | IndexSpec::PgVector { embedding, .. }
            | IndexSpec::MilvusVector { embedding, .. } => self.embedding(embedding).chunks,
        }
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
        let [lexical, dense] = p.cells[0].retriever.sources[..] else { panic!("two sources") };
        assert!(p.cells[0].retriever.fusion.is_some());
        assert!(matches!(p.indexes[lexical.index.0], IndexSpec::Bm25 { .. }));
        assert!(matches!(p.indexes[dense.index.0], IndexSpec::Exact { .. }));
        assert_eq!(p.cell_model(&p.cells[0]), Some(ModelId(0)));
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
