//! Judging and scoring: relevance units, metrics, statistics, abstention, exact-term tags
//! selection on the tuning split, `require` constraints, and where each cell stands against the best.

pub mod abstention;
pub mod aggregate;
pub mod answers;
pub mod causes;
pub mod columns;
pub mod context;
pub mod exact_terms;
pub mod label;
pub mod metrics;
pub mod ppi;
pub mod require;
pub mod selection;
pub mod stats;
pub mod ties;
