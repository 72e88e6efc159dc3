//! `require` constraints (SPEC §7): what the user cares about besides the decision metric's
//! mean. A cell is eligible for selection only when every constraint holds on its tuning row
//! (or tuning slice); a value that was not measured fails the constraint, never passes it.

use crate::input::golden::Split;
use crate::results::{Row, SliceRow};
use crate::vocab::Requirement;

/// Why `cell` fails `req` on tuning (the value and the rule, or that there is none); `None`
/// when it holds.
pub fn unmet(req: &Requirement, rows: &[Row], slices: &[SliceRow], cell: &str) -> Option<String> {
    match value(req, rows, slices, cell) {
        Some(v) if req.op.holds(v, req.value) => None,
        Some(v) => Some(format!("{} (is {})", req.text, trim_number(v))),
        None => Some(format!("{} (no tuning value)", req.text)),
    }
}

/// The cell's tuning value of the constraint's column (or slice metric).
pub fn value(req: &Requirement, rows: &[Row], slices: &[SliceRow], cell: &str) -> Option<f64> {
    match &req.slice {
        None => rows.iter().find(|r| r.cell == cell && r.split == Split::Tuning).and_then(|r| r.value(&req.column)),
        Some(slice) => slices
            .iter()
            .find(|s| s.cell == cell && s.split == Split::Tuning && s.slice == *slice)
            .and_then(|s| s.metrics.get(&req.column)?.value),
    }
}

/// How far `v` is from meeting the constraint (0 when it does).
pub fn distance(req: &Requirement, v: f64) -> f64 {
    if req.op.holds(v, req.value) {
        0.0
    } else {
        (v - req.value).abs()
    }
}

pub fn trim_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{parse_requirement as parse, Comparison, Metric, MetricAt};

    #[test]
    fn constraints_parse_with_their_operator_and_refuse_unknown_columns() {
        let metrics = [MetricAt::at_k(Metric::Hit, 10)];
        let cuts = vec!["@10".to_string(), "@1024t".to_string()];
        let r = parse("exact_term:hit@10 >= 0.9", &metrics, &cuts).unwrap();
        assert_eq!(
            (r.slice.as_deref(), r.column.as_str(), r.op, r.value),
            (Some("exact_term"), "hit@10", Comparison::AtLeast, 0.9)
        );
        assert_eq!(parse("leaks == 0", &metrics, &cuts).unwrap().op, Comparison::Equal);
        assert_eq!(parse("p95_ms<=50", &metrics, &cuts).unwrap().op, Comparison::AtMost);
        assert_eq!(parse("ctx_tokens@1024t < 900", &metrics, &cuts).unwrap().op, Comparison::Below);
        assert!(parse("ctx_tokens@5 < 900", &metrics, &cuts).unwrap_err().contains("no such column"));
        assert!(parse("hit@5 >= 0.5", &metrics, &cuts).unwrap_err().contains("no such column"));
        assert!(parse("exact_term:leaks == 0", &metrics, &cuts).unwrap_err().contains("slice constraint"));
        assert!(parse("leaks = 0", &metrics, &cuts).unwrap_err().contains("expected"));
        assert!(parse("leaks == none", &metrics, &cuts).unwrap_err().contains("not a number"));
    }

    #[test]
    fn an_unmeasured_value_fails_the_constraint() {
        let rows = vec![Row::of_mean("c1", Split::Tuning, "hit@10", 0.8, 20)];
        let metrics = [MetricAt::at_k(Metric::Hit, 10)];
        let req = |t: &str| parse(t, &metrics, &["@10".to_string()]).unwrap();
        assert_eq!(unmet(&req("hit@10 >= 0.8"), &rows, &[], "c1"), None);
        assert_eq!(unmet(&req("hit@10 > 0.8"), &rows, &[], "c1").unwrap(), "hit@10 > 0.8 (is 0.8000)");
        assert_eq!(unmet(&req("p95_ms <= 50"), &rows, &[], "c1").unwrap(), "p95_ms <= 50 (no tuning value)");
        assert_eq!(
            unmet(&req("exact_term:hit@10 >= 0.9"), &rows, &[], "c1").unwrap(),
            "exact_term:hit@10 >= 0.9 (no tuning value)"
        );
    }
}
