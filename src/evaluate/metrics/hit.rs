//! Hit: whether any relevant unit is in the top k.

use super::{Case, Grading, Measure};

pub struct Hit;

impl Measure for Hit {
    fn value(&self, case: &Case<'_>) -> Option<f64> {
        (case.judged.relevant > 0).then(|| f64::from(u8::from(case.top().iter().any(|i| i.gain > 0.0))))
    }

    /// Only a case's first relevant unit within the cut-off counts.
    fn grading_effect(&self, g: &Grading) -> f64 {
        if g.after_first() || g.first.is_some_and(|f| g.depth.is_some_and(|d| f <= d)) {
            0.0
        } else {
            1.0
        }
    }
}
