//! Which cells the data cannot tell apart from the best (SPEC §7). A grid is many comparisons
//! at once: every cell is compared with the best eligible cell of its split on the decision
//! metric, paired by case (randomisation test), with Holm–Bonferroni correction over the grid.

use rayon::prelude::*;

use crate::evaluate::selection::excluded;
use crate::evaluate::stats;
use crate::input::golden::Split;
use crate::results::Row;

/// A cell is tied with the best when its Holm-adjusted p-value is above this.
pub const ALPHA: f64 = 0.05;

/// One cell's value of the decision metric for every case, in the run's case order (the
/// same order for every cell), with the case's split; `None` where the metric is undefined.
pub struct CellValues {
    pub cell: String,
    pub values: Vec<(Split, Option<f64>)>,
}

/// Sets `p_vs_best` and `tied_with_best` on every row of each split that has a best cell;
/// cells that may not be selected get a p-value but no `tied_with_best`.
pub fn mark(rows: &mut [Row], cells: &[CellValues], metric: &str) {
    let excluded: Vec<String> = excluded(rows).into_iter().map(|(cell, _)| cell).collect();
    for split in [Split::Tuning, Split::Reserved] {
        let mean = |cell: &str| {
            rows.iter().find(|r| r.cell == cell && r.split == split).and_then(|r| r.metrics.get(metric)?.value)
        };
        let mut best: Option<(&CellValues, f64)> = None;
        for c in cells.iter().filter(|c| !excluded.contains(&c.cell)) {
            if let Some(m) = mean(&c.cell) {
                if best.is_none_or(|(_, b)| m > b) {
                    best = Some((c, m));
                }
            }
        }
        let Some((best, _)) = best else { continue };
        let tested: Vec<(&str, f64)> = cells
            .par_iter()
            .filter(|c| c.cell != best.cell && mean(&c.cell).is_some())
            .filter_map(|c| {
                let diffs: Vec<f64> = c
                    .values
                    .iter()
                    .zip(&best.values)
                    .filter(|((s, _), _)| *s == split)
                    .filter_map(|((_, v), (_, b))| Some((*v)? - (*b)?))
                    .collect();
                (!diffs.is_empty())
                    .then(|| (c.cell.as_str(), stats::paired_randomization(&diffs, stats::SIGN_FLIPS, stats::SEED)))
            })
            .collect();
        let adjusted = stats::holm(&tested.iter().map(|t| t.1).collect::<Vec<_>>());
        for row in rows.iter_mut().filter(|r| r.split == split) {
            let p = if row.cell == best.cell {
                Some(1.0)
            } else {
                tested.iter().position(|t| t.0 == row.cell).map(|i| adjusted[i])
            };
            row.p_vs_best = p;
            // An ineligible (leaking) cell is never "tied": it cannot be chosen.
            row.tied_with_best = p.map(|p| p > ALPHA).filter(|_| !excluded.contains(&row.cell));
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
    fn a_cell_that_loses_on_every_case_is_not_tied_and_a_near_copy_is() {
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
        mark(&mut rows, &cells, "hit@1");
        assert_eq!(rows[1].p_vs_best, Some(1.0));
        assert_eq!(rows[1].tied_with_best, Some(true));
        assert_eq!(rows[0].tied_with_best, Some(true), "one case apart: {:?}", rows[0].p_vs_best);
        assert_eq!(rows[2].tied_with_best, Some(false), "16 cases worse: {:?}", rows[2].p_vs_best);
        // Holm: the smaller raw p is multiplied by 2.
        let raw = stats::paired_randomization(&[-1.0; 16], stats::SIGN_FLIPS, stats::SEED);
        assert!((rows[2].p_vs_best.unwrap() - (2.0 * raw).min(1.0)).abs() < 1e-12);
    }
}
