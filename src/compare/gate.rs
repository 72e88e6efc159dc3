//! The regression gate behind `check` (SPEC §7): it fails only on a drop larger than its
//! margin that is also significant at its alpha, and refuses runs that are not comparable
//! (another golden set, or other cases on the compared split).

use std::fmt::Write as _;

use super::{compare, Side};
use crate::error::Result;
use crate::evaluate::columns;
use crate::input::golden::Split;

/// One metric the gate watches, with the largest drop of its mean that still passes.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub metric: String,
    pub margin: f64,
}

impl Gate {
    /// A gate on a known column with a margin inside its range.
    pub fn new(metric: &str, margin: f64) -> Result<Gate, String> {
        let column = columns::column(metric).ok_or_else(|| format!("{metric:?} is not a column that can be gated"))?;
        column.check_margin(margin)?;
        Ok(Gate { metric: metric.trim().to_string(), margin })
    }
}

/// `ndcg@10:0.01,recall@5:0.02`.
pub fn parse_gates(s: &str) -> Result<Vec<Gate>, String> {
    s.split(',')
        .map(|part| {
            let (metric, margin) =
                part.trim().split_once(':').ok_or_else(|| format!("{part:?}: expected METRIC@K:MARGIN"))?;
            let margin: f64 = margin.trim().parse().map_err(|_| format!("{part:?}: the margin is not a number"))?;
            Gate::new(metric, margin).map_err(|e| format!("{part:?}: {e}"))
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    NotComparable,
}

impl Verdict {
    /// 0 pass, 1 fail, 2 not comparable.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::NotComparable => 2,
        }
    }
}

/// What the gate printed and decided.
pub struct Outcome {
    pub verdict: Verdict,
    pub report: String,
}

/// Gates `current` against `baseline` on each metric at `alpha` (1 keeps any drop beyond the
/// margin a failure).
pub fn check(
    baseline: &Side<'_>,
    current: &Side<'_>,
    gates: &[Gate],
    split: Option<Split>,
    alpha: f64,
) -> Result<Outcome> {
    let mut report = String::new();
    // Runs scored on different golden sets (or judgments) are refused first, never compared.
    if !baseline.run.same_golden(current.run) {
        let _ = writeln!(
            report,
            "NOT COMPARABLE: the runs used different golden sets ({})",
            baseline.run.golden_difference(current.run)
        );
        if let Some(c) = gates.first().and_then(|g| compare(baseline, current, &g.metric, split).ok()) {
            report.push_str(&cases_in_one_run(&c.only_a, &c.only_b));
        }
        return Ok(Outcome { verdict: Verdict::NotComparable, report });
    }
    let comparisons = gates.iter().map(|g| compare(baseline, current, &g.metric, split)).collect::<Result<Vec<_>>>()?;
    // So are runs that do not score the same cases: nothing is compared, nothing passes.
    if let Some(c) = comparisons.iter().find(|c| !c.only_a.is_empty() || !c.only_b.is_empty()) {
        report.push_str("NOT COMPARABLE: the runs do not score the same cases on this split.\n");
        report.push_str(&cases_in_one_run(&c.only_a, &c.only_b));
        return Ok(Outcome { verdict: Verdict::NotComparable, report });
    }
    let mut verdict = Verdict::Pass;
    for (gate, c) in gates.iter().zip(comparisons) {
        report.push_str(&c.render(baseline, current));
        let column = columns::column(&gate.metric).expect("gates are built on known columns");
        let (from, to) = (c.mean_a, c.mean_b);
        let drop = column.worsening(from, to);
        let moved = if to > from { "rose" } else { "fell" };
        let line = if drop > gate.margin && (c.p_value <= alpha || column.defect) {
            if verdict == Verdict::Pass {
                verdict = Verdict::Fail;
            }
            format!(
                "FAIL: {} {moved} {:.4} (from {from:.4} to {to:.4}; {}), worse by more than the margin {}{}; {} broke",
                gate.metric,
                (to - from).abs(),
                column.direction(),
                gate.margin,
                if column.defect {
                    " (a defect: any such change fails, significant or not)".to_string()
                } else if alpha >= 1.0 {
                    format!(" (α 1: any such drop fails; p = {:.4})", c.p_value)
                } else {
                    format!(" and significant (p = {:.4} ≤ α {alpha})", c.p_value)
                },
                crate::words::count(c.broke.len(), "question")
            )
        } else if drop > gate.margin {
            format!(
                "PASS: {} {moved} {:.4} (from {from:.4} to {to:.4}; {}), worse by more than the margin {}, but p = {:.4} > α {alpha}: not a significant change on {}",
                gate.metric,
                (to - from).abs(),
                column.direction(),
                gate.margin,
                c.p_value,
                crate::words::count(c.n, "case")
            )
        } else {
            format!(
                "PASS: {} {from:.4} → {to:.4} (change {}, margin {})",
                gate.metric,
                crate::words::signed(to - from, 4),
                gate.margin
            )
        };
        let _ = writeln!(report, "\n{line}");
    }
    Ok(Outcome { verdict, report })
}

/// The cases only one of two runs scored, as two indented lines (nothing when there are none).
fn cases_in_one_run(only_baseline: &[String], only_run: &[String]) -> String {
    if only_baseline.is_empty() && only_run.is_empty() {
        return String::new();
    }
    let list = |cases: &[String]| if cases.is_empty() { "none".to_string() } else { cases.join(", ") };
    format!("  only in the baseline: {}\n  only in the run: {}\n", list(only_baseline), list(only_run))
}

/// The gate's verdict and report as Markdown, for a pull-request comment.
pub fn markdown(outcome: &Outcome, baseline: &std::path::Path) -> String {
    let verdict = match outcome.verdict {
        Verdict::Pass => "PASS",
        Verdict::Fail => "FAIL",
        Verdict::NotComparable => "NOT COMPARABLE",
    };
    let report = crate::output::terminal_safe(&outcome.report);
    let fence = crate::output::summary::fence(&report);
    format!(
        "\n### ragsweep check: {verdict}\n\nagainst {}\n\n{fence}\n{report}{fence}\n",
        crate::output::summary::md(&baseline.display().to_string())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{CellInfo, RunData};
    use crate::results::{CaseLine, Ordered};

    fn run(golden: &str, values: &[(&str, f64)]) -> RunData {
        RunData {
            dir: "run".into(),
            cells: vec![CellInfo { id: "c01".into(), label: "bm25".into(), varying: "bm25".into(), retriever: None }],
            records: values
                .iter()
                .map(|&(case, v)| CaseLine {
                    cell: "c01".into(),
                    case: case.into(),
                    split: Split::Reserved,
                    answerable: true,
                    metrics: Ordered(vec![("hit@1".into(), Some(v))]),
                    first_relevant: None,
                    top_score: None,
                    top: vec![],
                    packed_items: Ordered::default(),
                    unjudged: vec![],
                    hits: None,
                    top_at: Ordered::default(),
                    leaks: 0,
                    restricted_hit: false,
                    spanning: (0, 0),
                    depth: 10,
                    misses: vec![],
                    budget_misses: vec![],
                    ctx_tokens: Ordered::default(),
                    short: Ordered::default(),
                    parity: Ordered::default(),
                    labels: String::new(),
                })
                .collect(),
            cases: Default::default(),
            selected: None,
            no_selection: None,
            golden_hash: golden.into(),
            golden_path: std::path::PathBuf::new(),
            drafts_waiting: 0,
            judgments_hash: None,
            decision_metric: "hit@1".into(),
        }
    }

    fn verdict(base: &RunData, current: &RunData, margin: f64, alpha: f64) -> Verdict {
        let sides = (Side { run: base, cell: &base.cells[0] }, Side { run: current, cell: &current.cells[0] });
        let gates = [Gate { metric: "hit@1".into(), margin }];
        check(&sides.0, &sides.1, &gates, Some(Split::Reserved), alpha).unwrap().verdict
    }

    #[test]
    fn exit_codes_follow_margin_significance_and_comparability() {
        let cases: Vec<String> = (0..40).map(|i| format!("q{i:02}")).collect();
        let all = |v: f64| cases.iter().map(|c| (c.as_str(), v)).collect::<Vec<_>>();
        let base = run("g", &all(1.0));
        assert_eq!(verdict(&base, &run("g", &all(1.0)), 0.01, 0.05), Verdict::Pass);
        // 20 of 40 cases broke: a drop of 0.5, significant.
        let broke: Vec<(&str, f64)> = cases.iter().enumerate().map(|(i, c)| (c.as_str(), (i % 2) as f64)).collect();
        assert_eq!(verdict(&base, &run("g", &broke), 0.01, 0.05), Verdict::Fail);
        assert_eq!(verdict(&base, &run("g", &broke), 0.6, 0.05), Verdict::Pass, "within the margin");
        // 2 of 40 broke: a drop of 0.05 beyond the margin 0.01, but p ≈ 0.5.
        let two: Vec<(&str, f64)> =
            cases.iter().enumerate().map(|(i, c)| (c.as_str(), if i < 2 { 0.0 } else { 1.0 })).collect();
        assert_eq!(verdict(&base, &run("g", &two), 0.01, 0.05), Verdict::Pass, "not significant at 0.05");
        assert_eq!(verdict(&base, &run("g", &two), 0.01, 1.0), Verdict::Fail, "α = 1: any drop beyond the margin");
        // Another golden set, or a case missing from the run.
        assert_eq!(verdict(&base, &run("h", &all(1.0)), 0.01, 0.05), Verdict::NotComparable);
        assert_eq!(verdict(&base, &run("g", &all(1.0)[1..]), 0.01, 0.05), Verdict::NotComparable);
    }

    #[test]
    fn gates_parse_with_their_margins() {
        assert_eq!(
            parse_gates("ndcg@10:0.01, recall@5:0.02").unwrap(),
            [Gate { metric: "ndcg@10".into(), margin: 0.01 }, Gate { metric: "recall@5".into(), margin: 0.02 }]
        );
        assert!(parse_gates("ndcg@10").is_err());
        assert!(parse_gates("ndcg@10:nan").is_err());
        assert!(parse_gates("ndcg@10:-1").is_err());
    }
}
