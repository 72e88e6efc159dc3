//! Judging and scoring: relevance units, metrics, statistics, abstention, exact-term tags
//! selection on the tuning split, `require` constraints, and where each cell stands against the best.

pub(crate) mod abstention;
pub(crate) mod aggregate;
pub mod answers;
pub(crate) mod causes;
pub mod columns;
pub(crate) mod context;
pub(crate) mod exact_terms;
pub mod label;
pub mod metrics;
pub(crate) mod ppi;
pub(crate) mod require;
pub(crate) mod selection;
pub mod stats;
pub mod ties;
