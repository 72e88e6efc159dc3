//! Judged@k (SPEC §9): the share of k places that carry a judgment, as ir_measures counts it
//! (a short or empty list's missing places are unjudged): how complete the labels are.

use super::{Case, Family, Measure};

pub struct Judged;

impl Measure for Judged {
    fn family(&self) -> Family {
        Family::Completeness
    }

    fn value(&self, case: &Case<'_>) -> Option<f64> {
        Some(case.top().iter().filter(|i| i.judged).count() as f64 / case.k.max(1) as f64)
    }
}
