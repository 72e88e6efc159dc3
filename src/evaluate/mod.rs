//! Judging and scoring: relevance units, metrics, statistics, abstention, exact-term tags
//! and selection on the tuning split.

pub mod abstention;
pub mod aggregate;
pub mod exact_terms;
pub mod label;
pub mod metrics;
pub mod selection;
pub mod stats;
