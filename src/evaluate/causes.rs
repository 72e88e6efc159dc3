//! Why a cell missed a case: the first pipeline stage that lost the evidence.
//!
//! A miss is an answerable case with no relevant item in a cell's top k. Each miss gets
//! exactly one cause, the first that holds in pipeline order (chunking, visibility, the
//! analyzer, the ANN graph, fusion, a late filter, the cut-off, the ranking itself), with
//! the evidence that decided it. The runner gathers the evidence (`runner::diagnose`); this
//! module names the causes; `output::misses` writes them out.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// No chunk of the cell's chunker counts as a relevant unit: the evidence was cut.
    Chunking,
    /// Every relevant unit is invisible to the case's groups.
    NotVisible,
    /// BM25: no query term, after the cell's analyzer, occurs in the relevant text.
    LexicalMismatch,
    /// HNSW: the exact scan over the same vectors ranks a relevant unit within k.
    Approximation,
    /// Hybrid: a component ranks a relevant unit within k, the fused list does not.
    Fusion,
    /// `post`: the in-query filter ranks a relevant unit within k; dropping invisible items
    /// from the unfiltered list left the list short of it.
    FilterLate,
    /// A relevant unit is retrieved just below k: at most [`CUTOFF_MARGIN`] ranks past it.
    Cutoff,
    /// No relevant unit within k + [`CUTOFF_MARGIN`], for none of the reasons above (the
    /// evidence gives its rank when the diagnostic search found it deeper).
    Ranking,
    /// The evidence cannot decide: an evidence span found in none of the documents its
    /// labels name (the golden-set loader makes this rare).
    Undecided,
}

impl Cause {
    pub const ALL: [Cause; 9] = [
        Cause::Chunking,
        Cause::NotVisible,
        Cause::LexicalMismatch,
        Cause::Approximation,
        Cause::Fusion,
        Cause::FilterLate,
        Cause::Cutoff,
        Cause::Ranking,
        Cause::Undecided,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Chunking => "chunking",
            Cause::NotVisible => "not_visible",
            Cause::LexicalMismatch => "lexical_mismatch",
            Cause::Approximation => "approximation",
            Cause::Fusion => "fusion",
            Cause::FilterLate => "filter_late",
            Cause::Cutoff => "cutoff",
            Cause::Ranking => "ranking",
            Cause::Undecided => "undecided",
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

/// One miss of one case in one cell at cut-off `k`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Miss {
    pub k: usize,
    pub cause: Cause,
    /// The rank that decided the cause (of the relevant unit in the list the evidence names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// What decided it, in words a user can check against the text.
    pub evidence: String,
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
