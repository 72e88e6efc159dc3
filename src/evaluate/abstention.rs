//! Abstention (SPEC §4): a case abstains when its top score is below a floor. A good floor
//! abstains on unanswerable questions and answers the rest; it can be calibrated on the
//! tuning split and then judged on the reserved split.

pub use crate::vocab::Rates;

/// What one case offers for abstention: its top score (`None` when nothing was returned)
/// and whether it is answerable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    pub top_score: Option<f32>,
    pub answerable: bool,
}

impl Outcome {
    pub fn abstains(&self, floor: f64) -> bool {
        self.top_score.is_none_or(|s| f64::from(s) < floor)
    }
}

pub fn rates(cases: &[Outcome], floor: f64) -> Rates {
    let rate = |answerable: bool| {
        let mine: Vec<&Outcome> = cases.iter().filter(|c| c.answerable == answerable).collect();
        (!mine.is_empty()).then(|| mine.iter().filter(|c| c.abstains(floor)).count() as f64 / mine.len() as f64)
    };
    Rates { ok: rate(false), wrong: rate(true) }
}

/// The floor that maximises `abstain_ok − abstain_wrong` on `cases` (Youden's J). Candidates
/// are "never abstain" and the midpoints between consecutive distinct top scores (and just
/// above the highest); ties go to the lowest floor, which abstains least.
pub fn calibrate(cases: &[Outcome]) -> f64 {
    let mut scores: Vec<f64> = cases.iter().filter_map(|c| c.top_score.map(f64::from)).collect();
    scores.sort_by(f64::total_cmp);
    scores.dedup();
    let mut candidates = vec![f64::NEG_INFINITY];
    candidates.extend(scores.windows(2).map(|w| (w[0] + w[1]) / 2.0));
    if let Some(&top) = scores.last() {
        candidates.push(top + 1e-6_f64.max(top.abs() * 1e-6));
    }
    let j = |floor: f64| {
        let r = rates(cases, floor);
        r.ok.unwrap_or(0.0) - r.wrong.unwrap_or(0.0)
    };
    let mut best = (f64::NEG_INFINITY, j(f64::NEG_INFINITY));
    for &floor in &candidates[1..] {
        let value = j(floor);
        if value > best.1 + 1e-12 {
            best = (floor, value);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(score: f32, answerable: bool) -> Outcome {
        Outcome { top_score: Some(score), answerable }
    }

    #[test]
    fn rates_count_each_side_and_null_empty_sides() {
        let cases = [case(0.2, false), case(0.9, false), case(0.3, true), case(0.8, true), case(0.7, true)];
        assert_eq!(rates(&cases, 0.5), Rates { ok: Some(0.5), wrong: Some(1.0 / 3.0) });
        assert_eq!(rates(&cases[2..], 0.5), Rates { ok: None, wrong: Some(1.0 / 3.0) });
        let empty = Outcome { top_score: None, answerable: false };
        assert!(empty.abstains(f64::NEG_INFINITY), "an empty list always abstains");
    }

    #[test]
    fn calibration_separates_the_sides() {
        // Unanswerable tops 0.1 and 0.2, answerable 0.4 and 0.6: any floor in (0.2, 0.4]
        // gives J = 1; the midpoint 0.3 is chosen.
        let cases = [case(0.1, false), case(0.2, false), case(0.4, true), case(0.6, true)];
        assert!((calibrate(&cases) - 0.3).abs() < 1e-6, "midpoint of f32 scores");
        // Overlap: unanswerable 0.5, answerable 0.3 and 0.7. Floor 0.6 gives J = 1 − ½.
        let cases = [case(0.5, false), case(0.3, true), case(0.7, true)];
        assert!((calibrate(&cases) - 0.6).abs() < 1e-6);
        // Without unanswerable cases the best floor never abstains.
        assert_eq!(calibrate(&[case(0.5, true)]), f64::NEG_INFINITY);
    }
}
