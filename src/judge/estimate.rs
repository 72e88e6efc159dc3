//! Means that lean on a chat model's suggested grades without hiding its errors: each cell's
//! decision metric by prediction-powered inference ([`crate::evaluate::ppi`]). A run's case
//! falls in one of three groups by its pool (the units the cells returned within the decision's
//! cut that no label named when the run was made): nothing pooled (its value is known), judged
//! through by people since (every pooled unit graded: the sample that corrects the model), or
//! not (valued from the model's grades, corrected by the judged cases).
//! Beside each cell's estimate: the people-only mean (unjudged units counted not relevant, as a
//! run counts them) and the model-only mean (the model's grade on every pooled unit), and every
//! cell's difference to the best estimate, by PPI on the per-case differences.

use std::collections::{BTreeSet, HashMap};

use crate::error::Result;
use crate::experiment::Experiment;
use crate::input::golden::{Label, Split};
use crate::runner::rescore::Recorded;
use crate::runner::Prepared;

use super::suggest::Suggestions;
use super::Pooled;

/// A cell's value of the decision metric by case.
type CaseValues = HashMap<String, f64>;

/// Cases judged through below which a normal interval is not to be trusted.
const FEW_JUDGED: usize = 10;

/// The three groups of a split's cases.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Groups {
    pub nothing_pooled: BTreeSet<String>,
    pub judged_through: BTreeSet<String>,
    pub model_graded: BTreeSet<String>,
}

/// One cell's estimates on a split.
#[derive(Debug, Clone, PartialEq)]
pub struct CellEstimate {
    pub cell: String,
    pub people_only: f64,
    pub model_only: f64,
    pub ppi: Option<crate::evaluate::ppi::Estimate>,
    /// The difference to the best cell's PPI estimate, by PPI on per-case differences.
    pub vs_best: Option<crate::evaluate::ppi::Estimate>,
}

/// The estimates of every cell on `split`.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimates {
    pub metric: String,
    pub split: Split,
    pub groups: Groups,
    pub best: Option<String>,
    pub cells: Vec<CellEstimate>,
    /// Pooled units the model graded.
    pub model_units: usize,
}

/// Estimates for `split` from the run's recorded lists, the people's labels of `prepared` and
/// the model's `suggestions` (one model's).
pub fn estimate(
    exp: &Experiment,
    prepared: &Prepared,
    recorded: &Recorded,
    pooled: &Pooled,
    suggestions: &Suggestions,
    split: Split,
    alpha: f64,
) -> Result<Estimates> {
    let mut groups = Groups::default();
    let open: BTreeSet<&str> = pooled.unjudged.iter().map(|p| p.case.as_str()).collect();
    let judged: BTreeSet<&str> = pooled.judged.iter().map(|(p, _)| p.case.as_str()).collect();
    for case in prepared.cases.iter().filter(|c| c.split.unwrap_or(Split::Tuning) == split && c.answerable) {
        let id = case.id.clone();
        if open.contains(case.id.as_str()) {
            groups.model_graded.insert(id);
        } else if judged.contains(case.id.as_str()) {
            groups.judged_through.insert(id);
        } else {
            groups.nothing_pooled.insert(id);
        }
    }
    // The model's grades on every pooled unit (in place of people's, where they judged one): the
    // values the correction compares with people's on the cases judged through.
    let mut by_model = prepared.cases.clone();
    let at: HashMap<String, usize> = by_model.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
    let mut model_units = 0;
    let pooled_units = pooled.unjudged.iter().chain(pooled.judged.iter().map(|(p, _)| p));
    for item in pooled_units {
        let Some(s) = suggestions.get(&(item.case.clone(), item.id.clone())) else { continue };
        if let Some(&i) = at.get(&item.case) {
            let case = &mut by_model[i];
            case.relevant.retain(|l| l.id != item.id);
            case.relevant.push(Label { id: item.id.clone(), grade: s.grade, own: true });
            model_units += 1;
        }
    }
    let people = recorded.decision_values(exp, prepared, &prepared.cases)?;
    let model = recorded.decision_values(exp, prepared, &by_model)?;
    let values = |all: &[(String, Split, Option<f64>)]| -> HashMap<String, f64> {
        all.iter().filter(|v| v.1 == split).filter_map(|(case, _, v)| Some((case.clone(), (*v)?))).collect()
    };
    // Per cell: its per-case values under people's labels, and under the model's grades.
    let per_cell: Vec<(String, CaseValues, CaseValues)> =
        people.iter().zip(&model).map(|((cell, p), (_, m))| (cell.clone(), values(p), values(m))).collect();
    // PPI over per-case values: people's for the known and judged, the model's for the judged
    // and the rest.
    let ppi = |p: &HashMap<String, f64>, m: &HashMap<String, f64>, bounds: (f64, f64)| {
        let known: Vec<f64> = groups.nothing_pooled.iter().filter_map(|c| p.get(c).copied()).collect();
        let labelled: Vec<(f64, f64)> =
            groups.judged_through.iter().filter_map(|c| Some((*p.get(c)?, *m.get(c)?))).collect();
        let model_only: Vec<f64> = groups.model_graded.iter().filter_map(|c| m.get(c).copied()).collect();
        crate::evaluate::ppi::mean_of(&known, &labelled, &model_only, bounds, alpha)
    };
    let mean = |v: &HashMap<String, f64>| if v.is_empty() { 0.0 } else { v.values().sum::<f64>() / v.len() as f64 };
    let mut cells: Vec<CellEstimate> = per_cell
        .iter()
        .map(|(cell, p, m)| CellEstimate {
            cell: cell.clone(),
            people_only: mean(p),
            model_only: mean(m),
            ppi: ppi(p, m, (0.0, 1.0)),
            vs_best: None,
        })
        .collect();
    let best = cells
        .iter()
        .filter_map(|c| Some((c.cell.clone(), c.ppi?.mean)))
        .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|(c, _)| c);
    if let Some(best) = &best {
        let (_, bp, bm) = per_cell.iter().find(|(c, _, _)| c == best).expect("the best is a cell");
        let minus = |v: &HashMap<String, f64>, best: &HashMap<String, f64>| -> HashMap<String, f64> {
            v.iter().filter_map(|(c, x)| Some((c.clone(), x - best.get(c)?))).collect()
        };
        for (estimate, (_, p, m)) in cells.iter_mut().zip(&per_cell) {
            estimate.vs_best = ppi(&minus(p, bp), &minus(m, bm), (-1.0, 1.0));
        }
    }
    Ok(Estimates { metric: exp.decision_metric().to_string(), split, groups, best, cells, model_units })
}

impl Estimates {
    /// A table for a person.
    pub fn render(&self, model: &str) -> String {
        let g = &self.groups;
        let split = if self.split == Split::Tuning { "tuning" } else { "reserved" };
        let mut out = format!(
            "{} on {split}: {} cases — {} with nothing to judge, {} judged through by people, {} not (of {} pooled units {model} graded)\n",
            self.metric,
            g.nothing_pooled.len() + g.judged_through.len() + g.model_graded.len(),
            g.nothing_pooled.len(),
            g.judged_through.len(),
            g.model_graded.len(),
            self.model_units,
        );
        let best = self.best.as_deref().unwrap_or("-");
        out.push_str(&format!(
            "| cell | people only | model only | PPI mean [95% CI] | λ | vs {best} (PPI) [95% CI] |\n|---|---:|---:|---|---:|---|\n"
        ));
        let interval = |e: &Option<crate::evaluate::ppi::Estimate>, signed: bool| match e {
            Some(e) if signed => format!("{:+.4} [{:+.4}, {:+.4}]", e.mean, e.lo, e.hi),
            Some(e) => format!("{:.4} [{:.4}, {:.4}]", e.mean, e.lo, e.hi),
            None => "— (fewer than 2 cases judged through)".into(),
        };
        for c in &self.cells {
            out.push_str(&format!(
                "| {} | {:.4} | {:.4} | {} | {} | {} |\n",
                c.cell,
                c.people_only,
                c.model_only,
                interval(&c.ppi, false),
                c.ppi.map_or("—".into(), |e| format!("{:.2}", e.lambda)),
                if Some(&c.cell) == self.best.as_ref() { "best".into() } else { interval(&c.vs_best, true) },
            ));
        }
        let judged = g.judged_through.len();
        if judged < FEW_JUDGED && !g.model_graded.is_empty() {
            out.push_str(&format!(
                "note: {judged} cases judged through: intervals from so few stay wide (they assume the others may differ as much as values can); judge at least {FEW_JUDGED} at random\n"
            ));
        }
        out
    }
}
