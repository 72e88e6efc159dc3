//! Token-level intersection over union (SPEC §3): |T ∩ C| / |T ∪ C|.

use super::{Case, Family, Measure};

pub struct TokIou;

impl Measure for TokIou {
    fn family(&self) -> Family {
        Family::Token
    }

    fn value(&self, case: &Case<'_>) -> Option<f64> {
        case.overlap.and_then(|o| o.iou())
    }
}
