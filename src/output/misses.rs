//! The misses files of a run: `misses.csv` (every miss with its cause and evidence),
//! `miss_causes.csv` (counts per cell, split and k) and the slices of every cell by the
//! causes of the best cell's misses.

use std::collections::HashMap;

use crate::evaluate::aggregate;
use crate::evaluate::causes::{slice_name, Cause};
use crate::input::golden::Split;
use crate::results::{CaseLine, Row, SliceRow};

/// Slice rows of one cell (`lines`: its per-case lines): per split, the means over the cases
/// the best cell missed for each cause (`best`: case → its first cause there).
pub fn cause_slices(lines: &[CaseLine], best: &HashMap<String, Cause>) -> Vec<SliceRow> {
    let Some(first) = lines.first() else { return Vec::new() };
    let names: Vec<String> = first.metrics.keys().map(String::from).collect();
    let mut out = Vec::new();
    for split in [Split::Tuning, Split::Reserved] {
        for cause in Cause::ALL {
            let members: Vec<&CaseLine> =
                lines.iter().filter(|l| l.split == split && best.get(&l.case) == Some(&cause)).collect();
            if members.is_empty() {
                continue;
            }
            let values: Vec<Vec<Option<f64>>> =
                (0..names.len()).map(|i| members.iter().map(|l| *l.metrics.at(i)).collect()).collect();
            out.push(SliceRow {
                cell: first.cell.clone(),
                split,
                slice: slice_name(cause),
                cases: members.len(),
                metrics: aggregate::means(&names, &values),
            });
        }
    }
    out
}

/// `misses.csv`, written a per-case line at a time: one row per miss (cell × split × case
/// × k, then × budget) with its cause, the rank that decided it and its evidence.
pub struct MissesCsv(csv::Writer<Vec<u8>>);

impl Default for MissesCsv {
    fn default() -> Self {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record([
            "cell",
            "split",
            "case",
            "k",
            "cause",
            "rank",
            "evidence",
            "pipeline_cause",
            "unjudged_above",
            "budget",
        ])
        .expect("memory");
        MissesCsv(w)
    }
}

impl MissesCsv {
    pub fn add(&mut self, line: &CaseLine) {
        let at_k = line.misses.iter().map(|m| (m, None));
        let at_budget = line.budget_misses.iter().map(|m| (&m.miss, Some(m.budget)));
        for (m, budget) in at_k.chain(at_budget) {
            let rank = m.rank.map(|r| r.to_string()).unwrap_or_default();
            let pipeline = m.pipeline.unwrap_or(m.cause);
            // A budget's row names its budget; its k is the ranking it packed from.
            let (k, budget) = match budget {
                None => (m.k.to_string(), String::new()),
                Some(b) => (String::new(), b.to_string()),
            };
            let unjudged = m.unjudged.to_string();
            let record = [
                &line.cell,
                line.split.as_str(),
                &line.case,
                &k,
                m.cause.as_str(),
                &rank,
                &m.explained(),
                pipeline.as_str(),
                &unjudged,
                &budget,
            ];
            self.0.write_record(record).expect("memory");
        }
    }

    pub fn finish(self) -> Vec<u8> {
        self.0.into_inner().expect("memory")
    }
}

/// `miss_causes.csv`: per cell, split and cut-off, the misses by first cause.
pub fn causes_csv(rows: &[Row]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<&str> = vec!["cell", "label", "split", "k", "misses"];
    header.extend(Cause::ALL.iter().map(|c| c.as_str()));
    w.write_record(&header).expect("memory");
    for row in rows {
        for (at, counts) in &row.misses.0 {
            let mut rec = vec![
                row.cell.clone(),
                row.label.clone(),
                row.split.as_str().to_string(),
                at.trim_start_matches('@').to_string(),
                counts.values().sum::<usize>().to_string(),
            ];
            rec.extend(counts.values().map(usize::to_string));
            w.write_record(&rec).expect("memory");
        }
    }
    w.into_inner().expect("memory")
}
