//! ragsweep: measure retrieval for RAG systems.
//!
//! Data flows one way: an experiment file expands to a grid of cells; each cell chunks a
//! corpus, indexes the chunks, retrieves for every golden case, judges the ranking in the
//! experiment's relevance unit and scores it. Stages are shared between cells that need
//! the same work. See `ARCHITECTURE.md` for the map.

pub mod abstention;
pub mod analyze;
pub mod chunk;
pub mod compare;
pub mod corpus;
pub mod cost;
pub mod embed;
pub mod error;
pub mod exact_terms;
pub mod experiment;
pub mod frontmatter;
pub mod fusion;
pub mod golden;
pub mod index;
pub mod label;
pub mod merge;
pub mod metrics;
pub mod permissions;
pub mod report;
pub mod runner;
pub mod selection;
pub mod stage_cache;
pub mod stats;

pub use error::{Error, Location, Result};
