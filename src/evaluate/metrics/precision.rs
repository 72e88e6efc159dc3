//! Precision: relevant units in the top k over k, even for a shorter list (trec_eval's P_k);
//! defined when R is empty.

use super::{Case, Measure};

pub struct Precision;

impl Measure for Precision {
    fn value(&self, case: &Case<'_>) -> Option<f64> {
        Some(case.top().iter().filter(|i| i.gain > 0.0).count() as f64 / case.k as f64)
    }
}
