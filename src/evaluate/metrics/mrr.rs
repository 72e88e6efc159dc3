//! Reciprocal rank of the first relevant unit in the top k.

use super::{Case, Grading, Measure};

pub struct Mrr;

impl Measure for Mrr {
    fn value(&self, case: &Case<'_>) -> Option<f64> {
        (case.judged.relevant > 0)
            .then(|| case.top().iter().position(|i| i.gain > 0.0).map_or(0.0, |p| 1.0 / (p + 1) as f64))
    }

    /// A unit moves the value only when it ranks above the case's first relevant one.
    fn grading_effect(&self, g: &Grading) -> f64 {
        if g.after_first() {
            0.0
        } else {
            1.0 / f64::from(g.rank) - g.first.map_or(0.0, |f| 1.0 / f64::from(f))
        }
    }
}
