//! Token-level recall (SPEC §3): |T ∩ C| / |T|, how much of the relevant text the context
//! holds.

use super::{Case, Family, Measure};

pub struct TokRecall;

impl Measure for TokRecall {
    fn family(&self) -> Family {
        Family::Token
    }

    fn value(&self, case: &Case<'_>) -> Option<f64> {
        case.overlap.and_then(|o| o.recall())
    }
}
