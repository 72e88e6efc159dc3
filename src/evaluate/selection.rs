//! Choosing a configuration without fooling yourself (SPEC §6): the best cell is picked on
//! the tuning split only, then judged on the reserved split it never saw.

use crate::evaluate::metrics::MetricAt;
use crate::evaluate::{require, stats};
use crate::experiment::{Experiment, Prefer};
use crate::input::golden::Split;
use crate::results::{Row, Selection, SliceRow, SuggestedGrades};
use crate::retrieve::access::Filter;
use crate::vocab::{Interval, Requirement, VsBest};

/// The cells that may not be selected, and why: a cell that leaked when the grid has a
/// filtered cell (SPEC §5), and a cell that fails a `require` constraint on tuning (SPEC §7),
/// naming each constraint it failed.
pub fn excluded(rows: &[Row], slices: &[SliceRow], requirements: &[Requirement]) -> Vec<(String, String)> {
    let filtered = rows.iter().any(|r| r.filter != Filter::None);
    let mut out: Vec<(String, String)> = Vec::new();
    for r in rows {
        if out.iter().any(|(c, _)| *c == r.cell) {
            continue;
        }
        let mut reasons: Vec<String> = Vec::new();
        let leaks: Vec<(Split, usize)> =
            rows.iter().filter(|o| o.cell == r.cell && o.leaks > 0).map(|o| (o.split, o.leaks)).collect();
        if filtered && !leaks.is_empty() {
            let each: Vec<String> = leaks.iter().map(|(split, n)| format!("{n} on {}", split.as_str())).collect();
            reasons.push(format!("leaked chunks: {}", each.join(", ")));
        }
        reasons.extend(requirements.iter().filter_map(|q| require::unmet(q, rows, slices, &r.cell)));
        if !reasons.is_empty() {
            out.push((r.cell.clone(), reasons.join("; ")));
        }
    }
    out
}

/// Where each eligible cell stands against the best of its split on the experiment's decision
/// metric (`ties::mark`), leaking cells and cells failing a `require` left out; `values` holds
/// each cell's per-case values of that metric.
pub fn mark_standing(
    exp: &Experiment,
    rows: &mut [Row],
    slices: &[SliceRow],
    values: &[crate::evaluate::ties::CellValues],
) {
    let excluded: Vec<String> = excluded(rows, slices, &exp.require).into_iter().map(|(cell, _)| cell).collect();
    crate::evaluate::ties::mark(rows, values, &exp.decision_metric().to_string(), &excluded, exp.margin);
}

/// The selection an experiment asks for over `rows`: none without `select`, and none for a
/// shard, which sees only part of the grid.
/// With it, why there is none when one was asked for.
pub fn select_for(
    exp: &Experiment,
    rows: &[Row],
    slices: &[SliceRow],
) -> (Option<Selection>, Option<crate::results::NoSelection>) {
    select_on(exp, rows, slices, rows)
}

/// The selection over `ranked` (the rows as some estimate values them), the cells left out
/// those people's `rows` leave out (leaks, `require`).
fn select_on(
    exp: &Experiment,
    rows: &[Row],
    slices: &[SliceRow],
    ranked: &[Row],
) -> (Option<Selection>, Option<crate::results::NoSelection>) {
    let excluded = excluded(rows, slices, &exp.require);
    let selection =
        exp.select.filter(|_| exp.shard.is_none()).and_then(|m| select(ranked, m, exp.prefer, excluded, exp.margin));
    let none = why_none(exp, rows, slices, selection.as_ref());
    (selection, none)
}

/// The selection an experiment leaning on a chat model's grades asks for: [`select_for`] on
/// the rows as PPI values them ([`rows_by_ppi`]), the cells left out still those people's rows
/// leave out (leaks, `require`).
pub fn select_by_ppi(
    exp: &Experiment,
    rows: &[Row],
    slices: &[SliceRow],
    grades: &SuggestedGrades,
) -> (Option<Selection>, Option<crate::results::NoSelection>) {
    let (selection, none) = select_on(exp, rows, slices, &rows_by_ppi(rows, grades));
    (selection.map(|s| Selection { grades_by: Some(grades.model.clone()), ..s }), none)
}

/// `rows` with the decision metric's mean on each split PPI estimated replaced by the cell's
/// PPI estimate (none where it has none), and their standing by its PPI difference to the
/// best; a split without estimates keeps people's values.
pub fn rows_by_ppi(rows: &[Row], grades: &SuggestedGrades) -> Vec<Row> {
    let mut out = rows.to_vec();
    for row in &mut out {
        let Some(split) = grades.splits.iter().find(|s| s.split == row.split && s.best.is_some()) else { continue };
        let cell = split.cells.iter().find(|c| c.cell == row.cell);
        let estimate = cell.and_then(|c| c.ppi);
        if let Some(mean) = row.metrics.0.iter_mut().find(|(name, _)| *name == grades.metric).map(|(_, m)| m) {
            mean.value = estimate.map(|e| e.mean);
            mean.ci = estimate.map(|e| Interval { lo: e.lo, hi: e.hi });
        }
        row.vs_best = cell.and_then(|c| c.standing);
        row.diff_vs_best = cell.and_then(|c| c.vs_best).map(|d| Interval { lo: d.lo, hi: d.hi });
        row.p_vs_best = None;
    }
    out
}

/// Why `selection` is none when the experiment asked for one: each rule that left cells out,
/// with the best value any cell reached (`None` when there is a selection, none was asked
/// for, or the run is a shard).
pub fn why_none(
    exp: &Experiment,
    rows: &[Row],
    slices: &[SliceRow],
    selection: Option<&Selection>,
) -> Option<crate::results::NoSelection> {
    let metric = exp.select.filter(|_| exp.shard.is_none() && selection.is_none())?;
    let excluded = excluded(rows, slices, &exp.require);
    let mut rules: Vec<(String, String)> = Vec::new();
    let cells: Vec<&str> = {
        let mut c: Vec<&str> = rows.iter().map(|r| r.cell.as_str()).collect();
        c.dedup();
        c
    };
    if rows.iter().any(|r| r.filter != Filter::None) {
        let leaks = |cell: &str| rows.iter().filter(|r| r.cell == cell).map(|r| r.leaks).sum::<usize>();
        if let Some(fewest) = cells.iter().min_by_key(|c| leaks(c)).filter(|c| leaks(c) > 0) {
            let why = format!("fewest: {fewest}, {} leaked chunks", leaks(fewest));
            rules.push(("no leaked chunk in a grid with a filter (SPEC §5)".into(), why));
        }
    }
    for req in &exp.require {
        let failing = cells.iter().filter(|c| require::unmet(req, rows, slices, c).is_some()).count();
        if failing == 0 {
            continue;
        }
        let best = cells
            .iter()
            .filter_map(|c| require::value(req, rows, slices, c).map(|v| (*c, v)))
            .min_by(|a, b| require::distance(req, a.1).total_cmp(&require::distance(req, b.1)));
        let why = match best {
            Some((cell, v)) => format!("best: {cell}, {}", require::trim_number(v)),
            None => "no cell has a tuning value".into(),
        };
        rules.push((format!("require {}", req.text), why));
    }
    if rules.is_empty() {
        rules.push(("a tuning score".into(), format!("no eligible cell has a tuning {metric}")));
    }
    Some(crate::results::NoSelection { metric: metric.to_string(), rules, excluded })
}

/// Selects on tuning among the eligible cells (those not in `excluded`): the best score, or
/// with `prefer` the fastest or cheapest of the cells equivalent to it (`vs_best`, set by
/// `ties::mark`); `None` when no eligible cell has a tuning score for `metric`.
pub fn select(
    rows: &[Row],
    metric: MetricAt,
    prefer: Prefer,
    excluded: Vec<(String, String)>,
    margin: f64,
) -> Option<Selection> {
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
    let standing = |cell: &str| tuning_row(cell).and_then(|r| r.vs_best);
    let mut equivalent: Vec<&(&str, &str, f64, Option<f64>)> =
        scored.iter().filter(|s| s.0 == best.0 || standing(s.0) == Some(VsBest::Equivalent)).collect();
    equivalent.sort_by(|a, b| b.2.total_cmp(&a.2));
    let undecided: Vec<String> =
        scored.iter().filter(|s| standing(s.0) == Some(VsBest::Undecided)).map(|s| s.0.to_string()).collect();
    let order = |cell: &str| cells.iter().position(|(c, _)| *c == cell).unwrap_or(usize::MAX);
    // A `post` cell is cheaper and faster than its `in_query` twin (the same retrieval) only
    // because the late filter threw context away after retrieving it: a preference never picks
    // it over that twin.
    let has_in_query_twin = |cell: &str| {
        tuning_row(cell).is_some_and(|r| {
            r.filter == Filter::Post
                && equivalent
                    .iter()
                    .filter_map(|s| tuning_row(s.0))
                    .any(|t| t.filter == Filter::InQuery && same_retrieval(r, t))
        })
    };
    let candidates: Vec<Candidate> = equivalent
        .iter()
        .filter(|s| !has_in_query_twin(s.0))
        .map(|s| {
            let r = tuning_row(s.0);
            Candidate {
                cell: s.0,
                order: order(s.0),
                score: s.2,
                p50_ms: r.and_then(|r| r.latency.as_ref()).filter(|l| l.leaves_out.is_none()).map(|l| l.p50_ms),
                usd: r.and_then(|r| r.usd_per_1k_queries.get(&metric.cut()).copied()),
            }
        })
        .collect();
    let (chosen_cell, rule) = match prefer {
        Prefer::Quality => (best.0, None),
        // Only one cell is left once the `post` twins are set aside (the best, or the best's
        // own `in_query` twin when the best is a `post` cell): that one.
        _ if candidates.len() == 1 && equivalent.len() > 1 => (
            candidates[0].cell,
            Some(format!(
                "prefer = {}: the other cells equivalent to the best are `post` twins of `in_query` cells (cheaper and faster only because the late filter drops context after retrieving it), never preferred: {}",
                prefer_name(prefer),
                candidates[0].cell
            )),
        ),
        _ if candidates.len() < 2 => (best.0, Some(cannot_prefer(rows, &scored, prefer, &name, margin))),
        _ => match prefer_among(&candidates, prefer, &name) {
            Some((cell, rule)) => (cell, Some(rule)),
            None => (
                best.0,
                Some(format!(
                    "prefer = {}: no equivalent cell has a {}: the best scoring cell",
                    prefer_name(prefer),
                    preference_measure(prefer)
                )),
            ),
        },
    };
    let chosen = scored.iter().find(|s| s.0 == chosen_cell).expect("the chosen cell is scored");
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
        equivalent: equivalent.iter().map(|s| s.0.to_string()).collect(),
        undecided,
        margin,
        optimism_percentile,
        rule,
        grades_by: None,
    })
}

/// Whether two rows are the same retrieval, filtered differently.
fn same_retrieval(a: &Row, b: &Row) -> bool {
    a.config.0.iter().filter(|(k, _)| k != "filter").eq(b.config.0.iter().filter(|(k, _)| k != "filter"))
}

fn prefer_name(prefer: Prefer) -> &'static str {
    match prefer {
        Prefer::Quality => "quality",
        Prefer::Latency => "latency",
        Prefer::Cost => "cost",
    }
}

/// Why a preference chose the best cell when no other cell is shown equivalent to it, and how
/// many tuning cases would let the closest undecided cell be shown equivalent (normal
/// approximation of two one-sided tests with 80% power).
fn cannot_prefer(
    rows: &[Row],
    scored: &[(&str, &str, f64, Option<f64>)],
    prefer: Prefer,
    metric: &str,
    margin: f64,
) -> String {
    let tuning = |cell: &str| rows.iter().find(|r| r.cell == cell && r.split == Split::Tuning);
    let undecided: Vec<&Row> =
        scored.iter().filter_map(|s| tuning(s.0)).filter(|r| r.vs_best == Some(VsBest::Undecided)).collect();
    // A `post` cell with an eligible `in_query` twin can never be preferred: it is not named
    // as the closest.
    let preferable = |r: &&&Row| {
        r.filter != Filter::Post
            || !scored.iter().filter_map(|s| tuning(s.0)).any(|t| t.filter == Filter::InQuery && same_retrieval(r, t))
    };
    let worse = scored.iter().filter_map(|s| tuning(s.0)).filter(|r| r.vs_best == Some(VsBest::Worse)).count();
    let mut text = format!(
        "prefer = {} could not apply: no other eligible cell is shown equivalent to the best on tuning ({metric} within ±{margin}: {} undecided, {worse} worse), so the best scoring cell is selected",
        prefer_name(prefer),
        undecided.len()
    );
    let best = scored.iter().map(|s| s.2).fold(f64::NEG_INFINITY, f64::max);
    let closest = undecided
        .iter()
        .filter(preferable)
        .filter_map(|r| {
            let ci = r.diff_vs_best?;
            let mean = r.metrics.get(metric)?;
            Some((r, best - mean.value?, ci, mean.n))
        })
        .min_by(|a, b| a.1.abs().total_cmp(&b.1.abs()));
    if let Some((row, diff, ci, n)) = closest {
        // The interval's half-width is about 1.96·sd/√n.
        let sd = (ci.hi - ci.lo) / 2.0 / stats::normal_quantile(0.975) * (n as f64).sqrt();
        let room = margin - diff.abs();
        let needed = if room > 0.0 { stats::cases_needed(sd, room, 0.05, 0.8) } else { None };
        text.push_str(&match needed {
            Some(cases) => format!(
                "; the closest, {} (difference {diff:+.3}), would need about {cases} tuning cases to be shown equivalent (it has {n})",
                row.cell
            ),
            None => format!(
                "; the closest, {} (difference {diff:+.3}), differs by more than the margin: more cases would not make it equivalent",
                row.cell
            ),
        });
    }
    text
}

/// Two median latencies are the same unless they differ by more than this share of the
/// faster one…
pub const LATENCY_NOISE_RELATIVE: f64 = 0.10;
/// …and by more than this many milliseconds. Timer resolution, cache state and scheduling
/// move a p50 by this much between identical reruns (BM25 p50s of 0.013–0.016 ms, measured).
pub const LATENCY_NOISE_MS: f64 = 0.05;

/// A cell equivalent to the best, as `prefer` sees it.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub cell: &'a str,
    /// Position in the grid.
    pub order: usize,
    /// Tuning score on the decision metric.
    pub score: f64,
    pub p50_ms: Option<f64>,
    pub usd: Option<f64>,
}

fn preference_measure(prefer: Prefer) -> &'static str {
    match prefer {
        Prefer::Quality => "score",
        Prefer::Latency => "measured latency",
        Prefer::Cost => "cost",
    }
}

/// The fastest (or cheapest) candidate, where latencies within the timing noise of the fastest
/// are equal; equal ones are ordered by cost, then by the decision metric, then by grid
/// position, so identical reruns choose the same cell. Returns the cell and the rule, in words.
pub fn prefer_among<'a>(candidates: &[Candidate<'a>], prefer: Prefer, metric: &str) -> Option<(&'a str, String)> {
    let cost = |c: &Candidate<'_>| c.usd.unwrap_or(0.0);
    let by_cost_score_order = |a: &&Candidate<'_>, b: &&Candidate<'_>| {
        cost(a).total_cmp(&cost(b)).then(b.score.total_cmp(&a.score)).then(a.order.cmp(&b.order))
    };
    type Measure = fn(&Candidate<'_>) -> Option<f64>;
    let (measure, tolerance): (Measure, fn(f64) -> f64) = match prefer {
        Prefer::Quality => return None,
        Prefer::Latency => (|c| c.p50_ms, |fastest| (LATENCY_NOISE_RELATIVE * fastest).max(LATENCY_NOISE_MS)),
        Prefer::Cost => (|c| c.usd, |cheapest| 1e-12 * cheapest.abs().max(1.0)),
    };
    let measured: Vec<(&Candidate<'_>, f64)> = candidates.iter().filter_map(|c| Some((c, measure(c)?))).collect();
    let best = measured.iter().map(|m| m.1).min_by(f64::total_cmp)?;
    let mut equal: Vec<&Candidate<'_>> =
        measured.iter().filter(|m| m.1 <= best + tolerance(best)).map(|m| m.0).collect();
    equal.sort_by(by_cost_score_order);
    let chosen = equal[0];
    let (n, of) = (equal.len(), candidates.len());
    let rule = if prefer == Prefer::Latency {
        format!(
            "prefer = latency: {n} of {of} equivalent cells have a p50 within the timing noise of the fastest ({best:.3} ms + max({:.0}%, {LATENCY_NOISE_MS} ms)); among them the cheapest, then the best tuning {metric}, then the first in the grid: {} (p50 {:.3} ms)",
            100.0 * LATENCY_NOISE_RELATIVE,
            chosen.cell,
            chosen.p50_ms.unwrap_or_default()
        )
    } else {
        format!(
            "prefer = cost: {n} of {of} equivalent cells cost the least (${best:.4} per 1k queries); among them the best tuning {metric}, then the first in the grid: {}",
            chosen.cell
        )
    };
    Some((chosen.cell, rule))
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

    fn candidate(cell: &'static str, order: usize, score: f64, p50_ms: f64) -> Candidate<'static> {
        Candidate { cell, order, score, p50_ms: Some(p50_ms), usd: None }
    }

    #[test]
    fn latencies_within_the_noise_are_equal_and_ties_break_by_cost_score_and_order() {
        // BM25 p50s microseconds apart: all within 0.05 ms, so the best score decides.
        let close = [candidate("c1", 0, 0.80, 0.016), candidate("c2", 1, 0.82, 0.013), candidate("c3", 2, 0.82, 0.014)];
        assert_eq!(prefer_among(&close, Prefer::Latency, "ndcg@10").unwrap().0, "c2", "c2 and c3 tie; c2 is first");
        let mut shuffled = close;
        shuffled[1].p50_ms = Some(0.015);
        shuffled[2].p50_ms = Some(0.012);
        assert_eq!(
            prefer_among(&shuffled, Prefer::Latency, "ndcg@10").unwrap().0,
            "c2",
            "a rerun's jitter changes nothing"
        );
        // A real difference (well over 10% and 0.05 ms) picks the faster cell whatever its score.
        let apart = [candidate("c1", 0, 0.90, 30.0), candidate("c2", 1, 0.80, 0.2)];
        let (cell, rule) = prefer_among(&apart, Prefer::Latency, "ndcg@10").unwrap();
        assert_eq!(cell, "c2");
        assert!(rule.contains("1 of 2 equivalent cells"), "{rule}");
        // 10% relative: 10.0 vs 10.9 ms are equal, 10.0 vs 11.5 are not.
        let within = [candidate("c1", 0, 0.9, 10.9), candidate("c2", 1, 0.8, 10.0)];
        assert_eq!(prefer_among(&within, Prefer::Latency, "ndcg@10").unwrap().0, "c1");
        let beyond = [candidate("c1", 0, 0.9, 11.5), candidate("c2", 1, 0.8, 10.0)];
        assert_eq!(prefer_among(&beyond, Prefer::Latency, "ndcg@10").unwrap().0, "c2");
        // Equal latency, different cost: the cheaper one.
        let mut priced = within;
        priced[0].usd = Some(2.0);
        priced[1].usd = Some(1.0);
        assert_eq!(prefer_among(&priced, Prefer::Latency, "ndcg@10").unwrap().0, "c2");
    }

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
        let m = MetricAt::at_k(Metric::Ndcg, 10);
        let s = select(&rows, m, Prefer::Quality, vec![], 0.02).unwrap();
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
        let m = MetricAt::at_k(Metric::Ndcg, 10);
        let s = select(&rows, m, Prefer::Quality, excluded(&rows, &[], &[]), 0.02).unwrap();
        assert_eq!(s.cell, "c2");
        assert_eq!(s.excluded, vec![("c1".to_string(), "leaked chunks: 3 on tuning".to_string())]);
        // Without a filtered cell, leaks are only measured: every cell is eligible.
        rows[1].filter = Filter::None;
        assert_eq!(select(&rows, m, Prefer::Quality, excluded(&rows, &[], &[]), 0.02).unwrap().cell, "c1");
    }

    #[test]
    fn a_post_best_gives_way_to_its_equivalent_in_query_twin_under_a_preference() {
        let cell = |id: &str, filter: Filter, v: f64, standing: VsBest| {
            let mut r = row(id, Split::Tuning, v);
            r.filter = filter;
            r.config = crate::results::Ordered(vec![
                ("chunker".into(), "markdown".into()),
                ("filter".into(), filter.to_string()),
            ]);
            r.vs_best = Some(standing);
            r.usd_per_1k_queries =
                crate::results::Ordered(vec![("@10".into(), if filter == Filter::Post { 1.0 } else { 2.0 })]);
            r
        };
        let rows =
            vec![cell("c01", Filter::InQuery, 0.80, VsBest::Equivalent), cell("c02", Filter::Post, 0.81, VsBest::Best)];
        let m = MetricAt::at_k(Metric::Ndcg, 10);
        let s = select(&rows, m, Prefer::Cost, vec![], 0.02).unwrap();
        assert_eq!((s.best.as_str(), s.cell.as_str()), ("c02", "c01"), "{:?}", s.rule);
        assert!(s.rule.unwrap().contains("never preferred: c01"));
        // By quality the best stays the best.
        assert_eq!(select(&rows, m, Prefer::Quality, vec![], 0.02).unwrap().cell, "c02");
    }
}
