//! Average precision over the top k, divided by |R| (trec_eval's AP at a cut-off).

use super::{Case, Measure};

pub struct Ap;

impl Measure for Ap {
    fn value(&self, case: &Case<'_>) -> Option<f64> {
        let j = case.judged;
        if j.relevant == 0 {
            return None;
        }
        let (mut hits, mut sum) = (0.0, 0.0);
        for (i, it) in case.top().iter().enumerate() {
            if it.gain > 0.0 {
                hits += 1.0;
                sum += hits / (i + 1) as f64;
            }
        }
        Some(sum / j.relevant as f64)
    }
}
