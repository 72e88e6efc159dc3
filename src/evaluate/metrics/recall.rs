//! Recall: the share of R found in the top k, each relevant unit counted once.

use super::{sum, Case, Measure};

pub struct Recall;

impl Measure for Recall {
    fn value(&self, case: &Case<'_>) -> Option<f64> {
        let j = case.judged;
        (j.relevant > 0).then(|| sum(case.top().iter().map(|i| f64::from(i.new))) / j.relevant as f64)
    }
}
