//! Retrieval: indexes over a chunk set, fusion, the access rules of permission filters, and
//! one retriever per cell. Every ranking source (`source::RankingSource`, in process or in a
//! serving engine) answers `search(query, depth, restriction)`: the permission restriction is
//! part of the search call, never a post-processing step.

pub mod access;
pub(crate) mod bm25;
pub(crate) mod cell;
pub(crate) mod dense;
pub(crate) mod exact;
pub mod fusion;
pub(crate) mod graph;
pub(crate) mod hits;
pub mod source;

pub use bm25::{Bm25Index, Bm25Params};
pub use dense::{ExactIndex, FilteredSearch, HnswIndex, HnswParams};
pub use hits::{top_hits, Allowed, Hit};
