//! Choosing a configuration without fooling yourself (SPEC §6): the best cell is picked on
//! the tuning split only, then judged on the reserved split it never saw.

use serde::Serialize;

use crate::golden::Split;
use crate::metrics::MetricAt;
use crate::runner::Row;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selection {
    pub metric: String,
    /// The cell with the best tuning score (ties: the first cell).
    pub cell: String,
    pub label: String,
    pub tuning: f64,
    pub reserved: Option<f64>,
    /// 1-based rank of the selected cell among all cells by reserved score.
    pub reserved_rank: Option<usize>,
    pub cells: usize,
    /// Tuning minus reserved score of the selected cell.
    pub optimism: Option<f64>,
    /// Kendall's tau-b between the cells' tuning and reserved scores.
    pub kendall_tau: Option<f64>,
}

/// Selects on tuning; `None` when no cell has a tuning score for `metric`.
pub fn select(rows: &[Row], columns: &[MetricAt], metric: MetricAt) -> Option<Selection> {
    let col = columns.iter().position(|c| *c == metric)?;
    let score = |cell: &str, split: Split| {
        rows.iter().find(|r| r.cell == cell && r.split == split).and_then(|r| r.means[col].value)
    };
    let mut cells: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !cells.iter().any(|(c, _)| *c == r.cell) {
            cells.push((&r.cell, &r.label));
        }
    }
    let scored: Vec<(&str, &str, f64, Option<f64>)> = cells
        .iter()
        .filter_map(|&(c, l)| score(c, Split::Tuning).map(|t| (c, l, t, score(c, Split::Reserved))))
        .collect();
    let best = scored.iter().fold(None::<&(&str, &str, f64, Option<f64>)>, |best, s| match best {
        Some(b) if b.2 >= s.2 => Some(b),
        _ => Some(s),
    })?;
    let reserved_rank = best.3.map(|mine| 1 + scored.iter().filter(|s| s.3.is_some_and(|r| r > mine)).count());
    let pairs: Vec<(f64, f64)> = scored.iter().filter_map(|s| s.3.map(|r| (s.2, r))).collect();
    Some(Selection {
        metric: metric.to_string(),
        cell: best.0.to_string(),
        label: best.1.to_string(),
        tuning: best.2,
        reserved: best.3,
        reserved_rank,
        cells: scored.len(),
        optimism: best.3.map(|r| best.2 - r),
        kendall_tau: kendall_tau_b(&pairs),
    })
}

/// Kendall's tau-b (ties in either ranking handled); `None` for fewer than two pairs or
/// when one side is constant.
pub fn kendall_tau_b(pairs: &[(f64, f64)]) -> Option<f64> {
    let (mut concordant, mut discordant, mut ties_x, mut ties_y) = (0i64, 0i64, 0i64, 0i64);
    for i in 0..pairs.len() {
        for j in i + 1..pairs.len() {
            let dx = pairs[i].0 - pairs[j].0;
            let dy = pairs[i].1 - pairs[j].1;
            match (dx == 0.0, dy == 0.0) {
                (true, true) => {
                    ties_x += 1;
                    ties_y += 1;
                }
                (true, false) => ties_x += 1,
                (false, true) => ties_y += 1,
                (false, false) if (dx > 0.0) == (dy > 0.0) => concordant += 1,
                (false, false) => discordant += 1,
            }
        }
    }
    let n0 = (pairs.len() * pairs.len().saturating_sub(1) / 2) as f64;
    let denom = ((n0 - ties_x as f64) * (n0 - ties_y as f64)).sqrt();
    (denom > 0.0).then(|| (concordant - discordant) as f64 / denom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Mean, Metric};

    #[test]
    fn tau_by_hand() {
        assert_eq!(kendall_tau_b(&[(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]), Some(1.0));
        assert_eq!(kendall_tau_b(&[(1.0, 3.0), (2.0, 2.0), (3.0, 1.0)]), Some(-1.0));
        // 4 items, one discordant pair of 6: (5 - 1) / 6.
        let t = kendall_tau_b(&[(1.0, 1.0), (2.0, 3.0), (3.0, 2.0), (4.0, 4.0)]).unwrap();
        assert!((t - 4.0 / 6.0).abs() < 1e-12);
        // Ties: x = [1, 1, 2], y = [1, 2, 3]: C = 2, D = 0, n0 = 3, ties_x = 1 → 2 / sqrt(2 · 3).
        let t = kendall_tau_b(&[(1.0, 1.0), (1.0, 2.0), (2.0, 3.0)]).unwrap();
        assert!((t - 2.0 / 6f64.sqrt()).abs() < 1e-12);
        assert_eq!(kendall_tau_b(&[(1.0, 1.0)]), None);
    }

    fn row(cell: &str, split: Split, v: f64) -> Row {
        Row {
            cell: cell.into(),
            label: format!("label {cell}"),
            config: vec![],
            split,
            cases: 10,
            unanswerable: 0,
            means: vec![Mean { value: Some(v), n: 10, ci: None }],
            leaks: 0,
            short_lists: vec![],
            latency: None,
            ctx_tokens: vec![],
            cost: Default::default(),
            abstain: None,
        }
    }

    #[test]
    fn selects_on_tuning_and_reports_reserved_rank_and_optimism() {
        let rows = vec![
            row("c1", Split::Tuning, 0.70),
            row("c1", Split::Reserved, 0.60),
            row("c2", Split::Tuning, 0.80),
            row("c2", Split::Reserved, 0.55),
            row("c3", Split::Tuning, 0.60),
            row("c3", Split::Reserved, 0.65),
        ];
        let m = MetricAt { metric: Metric::Ndcg, k: 10 };
        let s = select(&rows, &[m], m).unwrap();
        assert_eq!(s.cell, "c2");
        assert_eq!(s.reserved, Some(0.55));
        assert_eq!(s.reserved_rank, Some(3));
        assert!((s.optimism.unwrap() - 0.25).abs() < 1e-12);
        // tuning order c2 > c1 > c3, reserved order c3 > c1 > c2: fully reversed.
        assert_eq!(s.kendall_tau, Some(-1.0));
    }
}
