//! Where each eligible cell stands against the best (SPEC §7). A grid is many comparisons at
//! once: every eligible cell is compared with the best eligible cell of its split on the
//! decision metric, paired by case (randomisation test, Holm–Bonferroni over the eligible
//! cells only), and its paired difference gets a bootstrap interval. Not significantly worse is
//! not equal: a cell is `equivalent` only when that interval lies inside ±margin.

use rayon::prelude::*;

use crate::evaluate::stats;
use crate::input::golden::Split;
use crate::results::Row;
use crate::vocab::{Interval, VsBest};

/// A cell is significantly worse than the best when its Holm-adjusted p-value is at most this.
pub const ALPHA: f64 = 0.05;

pub use crate::vocab::DEFAULT_MARGIN;

/// One cell's value of the decision metric for every case, in the run's case order (the
/// same order for every cell), with the case's split; `None` where the metric is undefined.
pub struct CellValues {
    pub cell: String,
    pub values: Vec<(Split, Option<f64>)>,
}

/// The verdict for a paired difference (best − cell) with interval `ci` and Holm-adjusted `p`.
pub fn verdict(mean_diff: f64, ci: Interval, p: f64, margin: f64) -> VsBest {
    if ci.lo > -margin && ci.hi < margin {
        VsBest::Equivalent
    } else if p <= ALPHA && mean_diff > 0.0 {
        VsBest::Worse
    } else {
        VsBest::Undecided
    }
}

/// Sets `p_vs_best`, `diff_vs_best` and `vs_best` on every eligible row of each split that has
/// a best cell. Cells in `excluded` (leaking, or failing a `require`) get none of them: they
/// cannot be chosen and do not count in the correction.
pub fn mark(rows: &mut [Row], cells: &[CellValues], metric: &str, excluded: &[String], margin: f64) {
    for split in [Split::Tuning, Split::Reserved] {
        let mean = |cell: &str| {
            rows.iter().find(|r| r.cell == cell && r.split == split).and_then(|r| r.metrics.get(metric)?.value)
        };
        let eligible: Vec<&CellValues> = cells.iter().filter(|c| !excluded.contains(&c.cell)).collect();
        let mut best: Option<(&CellValues, f64)> = None;
        for c in &eligible {
            if let Some(m) = mean(&c.cell) {
                if best.is_none_or(|(_, b)| m > b) {
                    best = Some((c, m));
                }
            }
        }
        let Some((best, _)) = best else { continue };
        let tested: Vec<(&str, f64, f64, Interval)> = eligible
            .par_iter()
            .filter(|c| c.cell != best.cell && mean(&c.cell).is_some())
            .filter_map(|c| {
                let diffs: Vec<f64> = c
                    .values
                    .iter()
                    .zip(&best.values)
                    .filter(|((s, _), _)| *s == split)
                    .filter_map(|((_, v), (_, b))| Some((*b)? - (*v)?))
                    .collect();
                let ci = stats::bootstrap_mean(&diffs, stats::BOOTSTRAP_RESAMPLES, stats::SEED)?;
                let p = stats::paired_randomization(&diffs, stats::SIGN_FLIPS, stats::SEED);
                Some((c.cell.as_str(), diffs.iter().sum::<f64>() / diffs.len() as f64, p, ci))
            })
            .collect();
        let adjusted = stats::holm(&tested.iter().map(|t| t.2).collect::<Vec<_>>());
        for row in rows.iter_mut().filter(|r| r.split == split) {
            if row.cell == best.cell {
                row.p_vs_best = Some(1.0);
                row.diff_vs_best = Some(Interval { lo: 0.0, hi: 0.0 });
                row.vs_best = Some(VsBest::Best);
            } else if let Some(i) = tested.iter().position(|t| t.0 == row.cell) {
                let (_, mean_diff, _, ci) = tested[i];
                row.p_vs_best = Some(adjusted[i]);
                row.diff_vs_best = Some(ci);
                row.vs_best = Some(verdict(mean_diff, ci, adjusted[i], margin));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cell: &str, values: &[f64]) -> Row {
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        Row::of_mean(cell, Split::Tuning, "hit@1", mean, values.len())
    }

    #[test]
    fn a_cell_that_loses_often_is_worse_and_one_case_apart_of_forty_is_undecided() {
        let best: Vec<f64> = (0..40).map(|i| if i % 10 == 0 { 0.0 } else { 1.0 }).collect();
        let near: Vec<f64> = (0..40).map(|i| if i % 10 == 0 || i == 1 { 0.0 } else { 1.0 }).collect();
        let worse: Vec<f64> = (0..40).map(|i| if i % 2 == 0 { 0.0 } else { 1.0 }).collect();
        let mut rows = vec![row("c1", &near), row("c2", &best), row("c3", &worse)];
        let cells: Vec<CellValues> = [("c1", &near), ("c2", &best), ("c3", &worse)]
            .iter()
            .map(|(c, v)| CellValues {
                cell: c.to_string(),
                values: v.iter().map(|&x| (Split::Tuning, Some(x))).collect(),
            })
            .collect();
        mark(&mut rows, &cells, "hit@1", &[], 0.05);
        assert_eq!(rows[1].p_vs_best, Some(1.0));
        assert_eq!(rows[1].vs_best, Some(VsBest::Best));
        // One case apart of 40: not worse, and with a 0.05 margin not shown equivalent either
        // (the interval of a 0.025 mean difference reaches 0.075).
        assert_eq!(rows[0].vs_best, Some(VsBest::Undecided), "one case apart: {:?}", rows[0].diff_vs_best);
        assert_eq!(rows[2].vs_best, Some(VsBest::Worse), "16 cases worse: {:?}", rows[2].p_vs_best);
        // Holm: the smaller raw p is multiplied by 2.
        let raw = stats::paired_randomization(&[-1.0; 16], stats::SIGN_FLIPS, stats::SEED);
        assert!((rows[2].p_vs_best.unwrap() - (2.0 * raw).min(1.0)).abs() < 1e-12);
    }

    #[test]
    fn a_small_consistent_difference_on_many_cases_is_equivalent_though_significant() {
        // 2,000 cases, the cell misses 20 the best finds: p ≈ 0 after Holm, but the paired
        // difference is 0.01 with an interval well inside ±0.02.
        let best = vec![1.0; 2000];
        let close: Vec<f64> = (0..2000).map(|i| if i < 20 { 0.0 } else { 1.0 }).collect();
        let cells: Vec<CellValues> = [("c1", &best), ("c2", &close)]
            .iter()
            .map(|(c, v)| CellValues {
                cell: c.to_string(),
                values: v.iter().map(|&x| (Split::Tuning, Some(x))).collect(),
            })
            .collect();
        let mut rows = vec![row("c1", &best), row("c2", &close)];
        mark(&mut rows, &cells, "hit@1", &[], DEFAULT_MARGIN);
        assert!(rows[1].p_vs_best.unwrap() < ALPHA);
        let ci = rows[1].diff_vs_best.unwrap();
        assert!(ci.lo > 0.0 && ci.hi < DEFAULT_MARGIN, "{ci:?}");
        assert_eq!(rows[1].vs_best, Some(VsBest::Equivalent));
        // An excluded cell gets no verdict and does not count in Holm's correction.
        let mut rows = vec![row("c1", &best), row("c2", &close)];
        mark(&mut rows, &cells, "hit@1", &["c2".to_string()], DEFAULT_MARGIN);
        assert_eq!((rows[1].vs_best, rows[1].p_vs_best), (None, None));
    }

    #[test]
    fn verdicts_by_hand() {
        let ci = |lo, hi| Interval { lo, hi };
        assert_eq!(verdict(0.01, ci(0.0, 0.019), 0.001, 0.02), VsBest::Equivalent);
        assert_eq!(verdict(0.01, ci(-0.01, 0.03), 0.2, 0.02), VsBest::Undecided);
        assert_eq!(verdict(0.1, ci(0.05, 0.15), 0.01, 0.02), VsBest::Worse);
        assert_eq!(verdict(0.1, ci(-0.05, 0.25), 0.06, 0.02), VsBest::Undecided, "p = 0.085 is not equal");
    }
}
