//! How many questions a golden set needs (`ragsweep plan`), from the user's own run: the
//! spread of paired differences between cells gives the cases needed to detect a difference
//! with 80% power, and the spread of one cell's values the width of a mean's interval.

use std::fmt::Write as _;

use super::{case_values, RunData, Side, SUBSET_DRAWS, SUBSET_SIZES};
use crate::error::{Error, Result};
use crate::evaluate::stats;
use crate::input::golden::Split;

/// Two-sided level and power of the sample-size calculation.
pub const ALPHA: f64 = 0.05;
pub const POWER: f64 = 0.8;
/// Case counts at which the width of a mean's interval is shown.
pub const SIZES: [usize; 4] = [25, 50, 100, 200];

/// One other cell compared with the planned cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub cell: String,
    pub label: String,
    pub cases: usize,
    /// Mean of (other − planned) over the cases both score.
    pub mean_diff: f64,
    pub sd_diff: f64,
    /// Cases needed to detect `delta` (`None`: more than `stats::CASES_REACHABLE`).
    pub needed: Option<usize>,
    /// Cases needed to detect the observed difference (`None` when it is 0 or not reachable).
    pub needed_observed: Option<usize>,
}

/// The sample-size view of a run for one metric and split.
pub struct Plan {
    pub metric: String,
    pub split: Option<Split>,
    pub cell: String,
    pub label: String,
    pub values: Vec<f64>,
    pub delta: f64,
    pub pairs: Vec<Pair>,
    /// Golden cases waiting for review as drafts: questions closer than new ones.
    pub drafts_waiting: usize,
    /// Questions a chat model drafted that wait for review beside the golden set (`draft`).
    pub model_drafts_waiting: usize,
}

/// Plans from `planned` against `others` (every other cell when empty).
pub fn plan(
    run: &RunData,
    planned: &str,
    others: &[&str],
    metric: &str,
    split: Option<Split>,
    delta: f64,
) -> Result<Plan> {
    if !(delta.is_finite() && delta > 0.0) {
        return Err(Error::Comparison(format!("--delta must be a positive number, found {delta}")));
    }
    let cell = run.cell(planned)?;
    let base = Side { run, cell };
    let mine = case_values(&base, metric, split)?;
    let mut values: Vec<(&str, f64)> = mine.iter().map(|(c, v)| (*c, v.0)).collect();
    values.sort_by(|a, b| a.0.cmp(b.0));
    let mut pairs = Vec::new();
    let compared: Vec<&super::CellInfo> = if others.is_empty() {
        run.cells.iter().filter(|c| c.id != cell.id).collect()
    } else {
        others.iter().map(|o| run.cell(o)).collect::<Result<_>>()?
    };
    for other in compared {
        let theirs = case_values(&Side { run, cell: other }, metric, split)?;
        let diffs: Vec<f64> = values.iter().filter_map(|(case, v)| Some(theirs.get(case)?.0 - v)).collect();
        if diffs.len() < 2 {
            continue;
        }
        let mean_diff = diffs.iter().sum::<f64>() / diffs.len() as f64;
        let sd_diff = stats::sd(&diffs);
        pairs.push(Pair {
            cell: other.id.clone(),
            label: other.label.clone(),
            cases: diffs.len(),
            mean_diff,
            sd_diff,
            needed: stats::cases_needed(sd_diff, delta, ALPHA, POWER),
            needed_observed: (mean_diff != 0.0)
                .then(|| stats::cases_needed(sd_diff, mean_diff.abs(), ALPHA, POWER))
                .flatten(),
        });
    }
    Ok(Plan {
        metric: metric.to_string(),
        split,
        cell: cell.id.clone(),
        label: cell.label.clone(),
        values: values.into_iter().map(|v| v.1).collect(),
        delta,
        pairs,
        drafts_waiting: run.drafts_waiting,
        model_drafts_waiting: 0,
    })
}

/// A case count, or why there is none.
fn count(n: Option<usize>) -> String {
    n.map_or_else(|| format!("not reachable (> {} cases)", stats::CASES_REACHABLE), |n| n.to_string())
}

impl Plan {
    pub fn render(&self) -> String {
        let mut out = String::new();
        let split = self.split.map_or("all splits".to_string(), |s| format!("the {} split", s.as_str()));
        let n = self.values.len();
        let sd = stats::sd(&self.values);
        let _ = writeln!(out, "{} on {}, cell {} ({}), {n} scored cases", self.metric, split, self.cell, self.label);
        let z = stats::normal_quantile(1.0 - ALPHA / 2.0);
        let width = |cases: usize| 2.0 * z * sd / (cases as f64).sqrt();
        let widths: Vec<String> = SIZES.iter().map(|&c| format!("{:.3} at {c}", width(c))).collect();
        let _ = writeln!(
            out,
            "  per-case sd {sd:.3}; width of a mean's 95% interval: {} cases (this run: {:.3} at {n})",
            widths.join(", "),
            width(n.max(1))
        );
        let _ = writeln!(
            out,
            "\nCases needed to detect a difference of {} with a two-sided paired test at α = {ALPHA} and {:.0}% power,\nfrom each cell's paired differences with {} (n = ((z₁₋α/₂ + z_power)·sd/Δ)²):",
            crate::words::number(self.delta),
            100.0 * POWER,
            self.cell
        );
        let _ = writeln!(
            out,
            "| cell | configuration | cases | mean diff | sd of diffs | cases for Δ = {} | cases for the observed diff |",
            crate::words::number(self.delta)
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|");
        for p in &self.pairs {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:+.4} | {:.3} | {} | {} |",
                p.cell,
                p.label,
                p.cases,
                p.mean_diff,
                p.sd_diff,
                count(p.needed),
                if p.mean_diff == 0.0 { "–".into() } else { count(p.needed_observed) }
            );
        }
        if n < 30 {
            let _ = writeln!(out, "  (standard deviations estimated from {n} cases: treat these counts as rough)");
        }
        // The closest rival: what separating it from the planned cell takes, against what there is.
        if let Some(p) = self
            .pairs
            .iter()
            .filter(|p| p.mean_diff != 0.0)
            .min_by(|a, b| a.mean_diff.abs().total_cmp(&b.mean_diff.abs()).then_with(|| a.cell.cmp(&b.cell)))
        {
            let _ = writeln!(
                out,
                "  to separate {} and {} (observed difference {:+.4}): {}; you have {n}{}",
                self.cell,
                p.cell,
                p.mean_diff,
                p.needed_observed.map_or_else(|| count(None), |k| format!("about {k} questions")),
                [
                    (self.drafts_waiting > 0).then(|| {
                        format!(
                            "; {} wait for review in the golden set",
                            crate::words::count(self.drafts_waiting, "draft")
                        )
                    }),
                    (self.model_drafts_waiting > 0).then(|| {
                        format!(
                            "; {} drafted by a chat model wait in drafts.jsonl (ragsweep review)",
                            crate::words::count(self.model_drafts_waiting, "question")
                        )
                    }),
                ]
                .into_iter()
                .flatten()
                .collect::<String>()
            );
        }
        if self.pairs.len() > 1 {
            let mut needed: Vec<f64> =
                self.pairs.iter().map(|p| p.needed.map_or(f64::INFINITY, |n| n as f64)).collect();
            needed.sort_by(f64::total_cmp);
            let median = stats::nearest_rank(&needed, 0.5);
            let median = if median.is_finite() { format!("{median:.0} cases") } else { count(None) };
            let _ = writeln!(out, "  median over cells: {median}");
        }
        let ranges = stats::subset_ranges(&self.values, &SUBSET_SIZES, SUBSET_DRAWS, stats::SEED);
        if !ranges.is_empty() {
            let _ = writeln!(
                out,
                "\nWhat {} scores on random subsets of a few questions ({} draws):",
                self.cell, SUBSET_DRAWS
            );
            for r in ranges {
                let _ = writeln!(
                    out,
                    "  {:>3} questions: middle 95% {:.3}–{:.3}, extremes {:.3}–{:.3}",
                    r.size, r.p2_5, r.p97_5, r.min, r.max
                );
            }
        }
        out
    }
}
