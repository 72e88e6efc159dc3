//! nDCG with linear gains (SPEC §3); over a packed context, against the ideal packed context.

use super::{dcg, Case, Measure};

pub struct Ndcg;

impl Measure for Ndcg {
    fn value(&self, case: &Case<'_>) -> Option<f64> {
        let j = case.judged;
        if j.relevant == 0 {
            return None;
        }
        // A packed context: every packed item against R's best `ideal` grades, at most 1
        // (fragments of several sections can hold more relevant items than their whole spans).
        let (gains, ideal, most) = match case.packed_ideal {
            Some(ideal) => (&j.items[..], ideal.max(1), 1.0),
            None => (case.top(), case.k, f64::INFINITY),
        };
        let idcg = dcg(j.ideal.iter().take(ideal).copied());
        Some(if idcg > 0.0 { (dcg(gains.iter().map(|i| i.gain)) / idcg).min(most) } else { 0.0 })
    }
}
