//! The token-level metrics (SPEC §3): each a ratio of the relevant text's tokens T and the
//! context's C that [`Overlap`] defines — recall |T ∩ C| / |T|, precision |T ∩ C| / |C| and
//! IoU |T ∩ C| / |T ∪ C|.

use super::{Case, Family, Measure};
use crate::evaluate::context::Overlap;

/// A token-level metric: its ratio of the case's overlap, undefined where the unit has no text.
pub struct Tokens(pub fn(&Overlap) -> Option<f64>);

impl Measure for Tokens {
    fn family(&self) -> Family {
        Family::Token
    }

    fn value(&self, case: &Case<'_>) -> Option<f64> {
        case.overlap.as_ref().and_then(self.0)
    }
}
