//! Why a cell missed a case: the first pipeline stage that lost the evidence.
//!
//! A miss is an answerable case with no relevant item in a cell's top k. Each miss gets
//! exactly one cause, the first that holds in pipeline order (chunking, visibility, the
//! analyzer, the ANN graph, fusion, a late filter, the cut-off, the ranking itself), with
//! the evidence that decided it. The runner gathers the evidence (`runner::diagnose`); this
//! module names the causes; `output::misses` writes them out.

use std::fmt;

pub use crate::vocab::{BudgetMiss, Cause, Miss};

impl Cause {
    /// Every cause a run gives at a cut-off k, in pipeline order (`Unjudged` is only read from
    /// older runs: unjudged items above the cut are now a flag on the miss; `Budget` is only
    /// given at a context budget).
    pub const ALL: [Cause; 10] = [
        Cause::Chunking,
        Cause::NotVisible,
        Cause::LexicalMismatch,
        Cause::Approximation,
        Cause::Fusion,
        Cause::Rerank,
        Cause::FilterLate,
        Cause::Cutoff,
        Cause::Ranking,
        Cause::Undecided,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Unjudged => "unjudged",
            Cause::Chunking => "chunking",
            Cause::NotVisible => "not_visible",
            Cause::LexicalMismatch => "lexical_mismatch",
            Cause::Approximation => "approximation",
            Cause::Fusion => "fusion",
            Cause::Rerank => "rerank",
            Cause::FilterLate => "filter_late",
            Cause::Cutoff => "cutoff",
            Cause::Ranking => "ranking",
            Cause::Undecided => "undecided",
            Cause::Budget => "budget",
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A miss is `cutoff` only when the relevant unit is at most this many ranks past k; deeper,
/// raising k is not the fix, and the miss is `ranking`. A fixed margin, not a share of the
/// corpus, so the cause means the same on a 300- and a 3-million-document corpus.
pub const CUTOFF_MARGIN: usize = 10;

/// Items the diagnostic search of a miss reads when the scored list (max k items) holds no
/// relevant unit, before calling the miss `ranking`.
pub fn diagnostic_depth(max_k: usize) -> usize {
    (10 * max_k).max(100)
}

/// The slice name of cases whose first cause in the best cell is `cause`.
pub fn slice_name(cause: Cause) -> String {
    format!("miss:{cause}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_serialise_in_snake_case() {
        for c in Cause::ALL {
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{c}\""));
        }
    }
}
