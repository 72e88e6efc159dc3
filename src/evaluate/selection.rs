//! Choosing a configuration without fooling yourself (SPEC §6): the best cell is picked on
//! the tuning split only, then judged on the reserved split it never saw.

use crate::evaluate::metrics::MetricAt;
use crate::experiment::{Experiment, Prefer};
use crate::input::golden::Split;
use crate::results::{Row, Selection};
use crate::retrieve::access::Filter;

/// The cells that may not be selected, and why: a cell that leaked is never eligible when the
/// grid has a filtered cell (SPEC §5).
pub fn excluded(rows: &[Row]) -> Vec<(String, String)> {
    let filtered = rows.iter().any(|r| r.filter != Filter::None);
    let mut out: Vec<(String, String)> = Vec::new();
    for r in rows {
        if out.iter().any(|(c, _)| *c == r.cell) {
            continue;
        }
        let leaks: usize = rows.iter().filter(|o| o.cell == r.cell).map(|o| o.leaks).sum();
        if filtered && leaks > 0 {
            out.push((r.cell.clone(), format!("{leaks} leaked chunks")));
        }
    }
    out
}

/// The selection an experiment asks for over `rows`: none without `select`, and none for a
/// shard, which sees only part of the grid.
pub fn select_for(exp: &Experiment, rows: &[Row]) -> Option<Selection> {
    exp.select.filter(|_| exp.shard.is_none()).and_then(|m| select(rows, m, exp.prefer))
}

/// Selects on tuning among the eligible cells: the best score, or with `prefer` the fastest
/// or cheapest of the cells tied with it; `None` when no eligible cell has a tuning score
/// for `metric`.
pub fn select(rows: &[Row], metric: MetricAt, prefer: Prefer) -> Option<Selection> {
    let name = metric.to_string();
    let score = |cell: &str, split: Split| {
        rows.iter().find(|r| r.cell == cell && r.split == split).and_then(|r| r.metrics.get(&name)?.value)
    };
    let mut cells: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !cells.iter().any(|(c, _)| *c == r.cell) {
            cells.push((&r.cell, &r.label));
        }
    }
    let excluded = excluded(rows);
    let scored: Vec<(&str, &str, f64, Option<f64>)> = cells
        .iter()
        .filter(|(c, _)| !excluded.iter().any(|(e, _)| e == c))
        .filter_map(|&(c, l)| score(c, Split::Tuning).map(|t| (c, l, t, score(c, Split::Reserved))))
        .collect();
    let best = scored.iter().fold(None::<&(&str, &str, f64, Option<f64>)>, |best, s| match best {
        Some(b) if b.2 >= s.2 => Some(b),
        _ => Some(s),
    })?;
    let tuning_row = |cell: &str| rows.iter().find(|r| r.cell == cell && r.split == Split::Tuning);
    let mut tied: Vec<&(&str, &str, f64, Option<f64>)> = scored
        .iter()
        .filter(|s| s.0 == best.0 || tuning_row(s.0).and_then(|r| r.tied_with_best) == Some(true))
        .collect();
    tied.sort_by(|a, b| b.2.total_cmp(&a.2));
    let price = |cell: &str| -> Option<f64> {
        let r = tuning_row(cell)?;
        match prefer {
            Prefer::Quality => None,
            Prefer::Latency => r.latency.as_ref().map(|l| l.p50_ms),
            Prefer::Cost => r.usd_per_1k_queries.get(&format!("@{}", metric.k)).copied(),
        }
    };
    // The cheapest tied cell by the preference; the best when nothing is priced.
    let chosen = tied
        .iter()
        .filter_map(|s| price(s.0).map(|p| (p, *s)))
        .fold(None::<(f64, &(&str, &str, f64, Option<f64>))>, |c, (p, s)| match c {
            Some((cp, _)) if cp <= p => c,
            _ => Some((p, s)),
        })
        .map_or(best, |(_, s)| s);
    let reserved_rank = chosen.3.map(|mine| 1 + scored.iter().filter(|s| s.3.is_some_and(|r| r > mine)).count());
    let pairs: Vec<(f64, f64)> = scored.iter().filter_map(|s| s.3.map(|r| (s.2, r))).collect();
    let optimism = chosen.3.map(|r| chosen.2 - r);
    let optimisms: Vec<f64> = pairs.iter().map(|(t, r)| t - r).collect();
    let optimism_percentile = optimism
        .filter(|_| optimisms.len() > 1)
        .map(|mine| optimisms.iter().filter(|&&o| o < mine).count() as f64 / optimisms.len() as f64);
    Some(Selection {
        metric: name,
        cell: chosen.0.to_string(),
        label: chosen.1.to_string(),
        tuning: chosen.2,
        reserved: chosen.3,
        reserved_rank,
        cells: scored.len(),
        optimism,
        kendall_tau: kendall_tau_b(&pairs),
        excluded,
        prefer,
        best: best.0.to_string(),
        tied: tied.iter().map(|s| s.0.to_string()).collect(),
        optimism_percentile,
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
    use crate::evaluate::metrics::Metric;

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
        Row::of_mean(cell, split, "ndcg@10", v, 10)
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
        let s = select(&rows, m, Prefer::Quality).unwrap();
        assert_eq!(s.cell, "c2");
        assert_eq!(s.reserved, Some(0.55));
        assert_eq!(s.reserved_rank, Some(3));
        assert!((s.optimism.unwrap() - 0.25).abs() < 1e-12);
        // tuning order c2 > c1 > c3, reserved order c3 > c1 > c2: fully reversed.
        assert_eq!(s.kendall_tau, Some(-1.0));
    }

    #[test]
    fn a_leaking_cell_is_never_selected_beside_a_filtered_one() {
        let mut rows = vec![row("c1", Split::Tuning, 0.9), row("c2", Split::Tuning, 0.5)];
        rows[0].leaks = 3;
        rows[1].filter = Filter::InQuery;
        let m = MetricAt { metric: Metric::Ndcg, k: 10 };
        let s = select(&rows, m, Prefer::Quality).unwrap();
        assert_eq!(s.cell, "c2");
        assert_eq!(s.excluded, vec![("c1".to_string(), "3 leaked chunks".to_string())]);
        // Without a filtered cell, leaks are only measured: every cell is eligible.
        rows[1].filter = Filter::None;
        assert_eq!(select(&rows, m, Prefer::Quality).unwrap().cell, "c1");
    }
}
