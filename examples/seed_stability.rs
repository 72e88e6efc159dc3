//! How often a cell's label against the best (`equivalent`, `undecided`, `worse`) changes with
//! the resampling seed, at several bootstrap sizes B, on the per-case values of finished runs.
//! `scripts/bench-seed-stability.sh` runs it; SPEC §7's B is the cheapest size it finds stable.
//!
//! usage: seed_stability METRIC MARGIN SEEDS B[,B…] RUN_DIR…

use std::collections::BTreeMap;
use std::time::Instant;

use ragsweep::evaluate::ties::{against_best, CellValues, Resampling};
use ragsweep::input::golden::Split;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [metric, margin, seeds, sizes, runs @ ..] = &args[..] else {
        eprintln!("usage: seed_stability METRIC MARGIN SEEDS B[,B…] RUN_DIR…");
        std::process::exit(2);
    };
    let margin: f64 = margin.parse().expect("MARGIN is a number");
    let seeds: u64 = seeds.parse().expect("SEEDS is a count");
    let sizes: Vec<usize> = sizes.split(',').map(|b| b.parse().expect("B is a count")).collect();
    println!("| run | split | cells compared | B | labels that change with the seed (margin {margin}) | widest seed range of an interval end | median seed range | ms per comparison |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for run in runs {
        let cells = read_cells(run, metric);
        for split in [Split::Tuning, Split::Reserved] {
            let Some(best) = best_of(&cells, split) else { continue };
            let others: Vec<&CellValues> = cells.iter().filter(|c| c.cell != best.cell).collect();
            for &b in &sizes {
                let started = Instant::now();
                let mut seen: BTreeMap<String, Vec<(String, f64, f64)>> = BTreeMap::new();
                for seed in 1..=seeds {
                    let resampling = Resampling { bootstrap: b, sign_flips: 10_000, seed };
                    for s in against_best(best, &others, split, margin, resampling) {
                        seen.entry(s.cell).or_default().push((format!("{:?}", s.verdict), s.ci.lo, s.ci.hi));
                    }
                }
                let ms = started.elapsed().as_secs_f64() * 1e3 / (seeds as f64 * others.len().max(1) as f64);
                let unstable = seen.values().filter(|got| got.iter().any(|g| g.0 != got[0].0)).count();
                // How far an interval end moves between seeds: a label can change only when the
                // margin lies within that range of an end.
                let range = |end: &dyn Fn(&(String, f64, f64)) -> f64, got: &[(String, f64, f64)]| {
                    let (lo, hi) =
                        got.iter().map(end).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(x), h.max(x)));
                    hi - lo
                };
                let mut ranges: Vec<f64> =
                    seen.values().map(|got| range(&|g| g.1, got).max(range(&|g| g.2, got))).collect();
                ranges.sort_by(f64::total_cmp);
                let widest = ranges.last().copied().unwrap_or(0.0);
                let median = ranges.get(ranges.len() / 2).copied().unwrap_or(0.0);
                println!(
                    "| {} | {split:?} | {} | {b} | {unstable} | {widest:.4} | {median:.4} | {ms:.1} |",
                    run.trim_end_matches('/').rsplit('/').nth(1).unwrap_or(run),
                    seen.len(),
                );
            }
        }
    }
}

/// Each cell's value of `metric` per case, in the run's case order, from `per_query.jsonl`.
fn read_cells(run: &str, metric: &str) -> Vec<CellValues> {
    let text = std::fs::read_to_string(format!("{run}/per_query.jsonl")).expect("per_query.jsonl");
    let mut cells: Vec<CellValues> = Vec::new();
    for line in text.lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let cell = row["cell"].as_str().expect("cell").to_string();
        let split = if row["split"] == "reserved" { Split::Reserved } else { Split::Tuning };
        let value = row["metrics"][metric].as_f64();
        match cells.iter_mut().find(|c| c.cell == cell) {
            Some(c) => c.values.push((split, value)),
            None => cells.push(CellValues { cell, values: vec![(split, value)] }),
        }
    }
    cells
}

/// The cell with the highest mean on `split` (defined values only).
fn best_of(cells: &[CellValues], split: Split) -> Option<&CellValues> {
    let mean = |c: &CellValues| {
        let v: Vec<f64> = c.values.iter().filter(|(s, _)| *s == split).filter_map(|(_, v)| *v).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    cells.iter().filter_map(|c| Some((c, mean(c)?))).max_by(|a, b| a.1.total_cmp(&b.1)).map(|(c, _)| c)
}
