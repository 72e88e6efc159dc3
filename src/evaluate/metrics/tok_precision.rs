//! Token-level precision (SPEC §3): |T ∩ C| / |C|, how much of the context is relevant text;
//! undefined for an empty context.

use super::{Case, Family, Measure};

pub struct TokPrecision;

impl Measure for TokPrecision {
    fn family(&self) -> Family {
        Family::Token
    }

    fn value(&self, case: &Case<'_>) -> Option<f64> {
        case.overlap.and_then(|o| o.precision())
    }
}
