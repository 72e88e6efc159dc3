//! Means that lean on a chat model's suggested grades without hiding its errors: each cell's
//! decision metric by prediction-powered inference ([`crate::evaluate::ppi`]). A case's pool is
//! the units the cells returned within the decision's cut that the golden set does not label,
//! wherever people judged them from; a case falls in one of three groups by it: nothing pooled
//! (its value is known), judged through by people (every pooled unit graded: the sample that
//! corrects the model), or not (valued from the model's grades, corrected by the judged cases).
//! Beside each cell's estimate: the people-only mean (unjudged units counted not relevant, as a
//! run counts them) and the model-only mean (the model's grade on every pooled unit), and every
//! cell's difference to the best estimate, by PPI on the per-case differences.
//!
//! [`decide`] is what `[golden] suggestions` asks of a run, its rescore and a merge: the
//! estimates written beside the rows, and the selection made on them.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use crate::error::Result;
use crate::experiment::Experiment;
use crate::input::golden::{GoldenCase, Label, Split};
use crate::results::{CaseLine, Estimate, PpiCell, PpiSplit, RunResult, SuggestedGrades};
use crate::runner::rescore::{Recorded, Scope};
use crate::runner::{Prepared, RunOptions};
use crate::vocab::VsBest;

use super::suggest::Suggestions;
use super::{PoolOptions, Pooled};

/// A cell's value of the decision metric by case.
type CaseValues = HashMap<String, f64>;

/// The cases of `prepared` with the golden set's labels only: judged labels (`own`) left out.
fn golden_only(cases: &[GoldenCase]) -> Vec<GoldenCase> {
    let mut out = cases.to_vec();
    for case in &mut out {
        case.relevant.retain(|l| !l.own);
    }
    out
}

/// The pool of the recorded lists against the golden set's labels, its units sorted into those
/// people judged since (with their grade) and those left.
fn pooled(exp: &Experiment, prepared: &Prepared, recorded: &Recorded) -> Result<Pooled> {
    let (columns, cuts) = (exp.columns(), exp.cut_keys());
    let opts = PoolOptions { cells: &[], cut: exp.decision_metric().at(), cases: &[] };
    let golden = golden_only(&prepared.cases);
    super::pool_of(exp, &prepared.cases, &opts, &mut |add| {
        recorded
            .score(exp, prepared, &golden, Scope::Estimate, &mut |results| {
                results.iter().for_each(|r| add(CaseLine::of(&columns, &cuts, r)));
                Ok(())
            })
            .map(|_| ())
    })
}

/// Where a cell stands against the best by the PPI interval of its difference to it.
fn standing(difference: &Estimate, margin: f64) -> VsBest {
    if difference.lo >= -margin && difference.hi <= margin {
        VsBest::Equivalent
    } else if difference.hi < 0.0 {
        VsBest::Worse
    } else {
        VsBest::Undecided
    }
}

/// Estimates on each of `splits` from the recorded lists, the people's labels of `prepared` and
/// the model's `suggestions` (one model's); the best is chosen among cells not in `excluded`.
pub fn estimate(
    exp: &Experiment,
    prepared: &Prepared,
    recorded: &Recorded,
    suggestions: &Suggestions,
    splits: &[Split],
    alpha: f64,
    excluded: &[String],
) -> Result<Vec<PpiSplit>> {
    let pooled = pooled(exp, prepared, recorded)?;
    let open: BTreeSet<&str> = pooled.unjudged.iter().map(|p| p.case.as_str()).collect();
    let judged: BTreeSet<&str> = pooled.judged.iter().map(|(p, _)| p.case.as_str()).collect();
    // The model's grades on every pooled unit (in place of people's, where they judged one): the
    // values the correction compares with people's on the cases judged through.
    let mut by_model = prepared.cases.clone();
    let at: HashMap<String, usize> = by_model.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
    let mut model_units: HashMap<Split, usize> = HashMap::new();
    let pooled_units = pooled.unjudged.iter().chain(pooled.judged.iter().map(|(p, _)| p));
    for item in pooled_units {
        let Some(s) = suggestions.get(&(item.case.clone(), item.id.clone())) else { continue };
        if let Some(&i) = at.get(&item.case) {
            let case = &mut by_model[i];
            case.relevant.retain(|l| l.id != item.id);
            case.relevant.push(Label { id: item.id.clone(), grade: s.grade, own: true });
            *model_units.entry(case.split.unwrap_or(Split::Tuning)).or_default() += 1;
        }
    }
    let people = recorded.decision_values(exp, prepared, &prepared.cases)?;
    let model = recorded.decision_values(exp, prepared, &by_model)?;
    let mut out = Vec::new();
    for &split in splits {
        let (mut nothing_pooled, mut judged_through, mut model_graded) = (Vec::new(), Vec::new(), Vec::new());
        for case in prepared.cases.iter().filter(|c| c.split.unwrap_or(Split::Tuning) == split && c.answerable) {
            let id = case.id.as_str();
            if open.contains(id) {
                model_graded.push(id);
            } else if judged.contains(id) {
                judged_through.push(id);
            } else {
                nothing_pooled.push(id);
            }
        }
        let values = |all: &[(String, Split, Option<f64>)]| -> CaseValues {
            all.iter().filter(|v| v.1 == split).filter_map(|(case, _, v)| Some((case.clone(), (*v)?))).collect()
        };
        // Per cell: its per-case values under people's labels, and under the model's grades.
        let per_cell: Vec<(String, CaseValues, CaseValues)> =
            people.iter().zip(&model).map(|((cell, p), (_, m))| (cell.clone(), values(p), values(m))).collect();
        // PPI over per-case values: people's for the known and judged, the model's for the
        // judged and the rest.
        let ppi = |p: &CaseValues, m: &CaseValues, bounds: (f64, f64)| {
            let known: Vec<f64> = nothing_pooled.iter().filter_map(|c| p.get(*c).copied()).collect();
            let labelled: Vec<(f64, f64)> =
                judged_through.iter().filter_map(|c| Some((*p.get(*c)?, *m.get(*c)?))).collect();
            let model_only: Vec<f64> = model_graded.iter().filter_map(|c| m.get(*c).copied()).collect();
            crate::evaluate::ppi::mean_of(&known, &labelled, &model_only, bounds, alpha)
        };
        let mean = |v: &CaseValues| if v.is_empty() { 0.0 } else { v.values().sum::<f64>() / v.len() as f64 };
        let mut cells: Vec<PpiCell> = per_cell
            .iter()
            .map(|(cell, p, m)| PpiCell {
                cell: cell.clone(),
                people_only: mean(p),
                model_only: mean(m),
                ppi: ppi(p, m, (0.0, 1.0)),
                vs_best: None,
                standing: None,
            })
            .collect();
        let best = cells
            .iter()
            .filter(|c| !excluded.contains(&c.cell))
            .filter_map(|c| Some((c.cell.clone(), c.ppi?.mean)))
            .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
            .map(|(c, _)| c);
        if let Some(best) = &best {
            let (_, bp, bm) = per_cell.iter().find(|(c, _, _)| c == best).expect("the best is a cell");
            let minus = |v: &CaseValues, best: &CaseValues| -> CaseValues {
                v.iter().filter_map(|(c, x)| Some((c.clone(), x - best.get(c)?))).collect()
            };
            for (estimate, (_, p, m)) in cells.iter_mut().zip(&per_cell) {
                estimate.vs_best = ppi(&minus(p, bp), &minus(m, bm), (-1.0, 1.0));
                estimate.standing = if estimate.cell == *best {
                    Some(VsBest::Best)
                } else if excluded.contains(&estimate.cell) || estimate.ppi.is_none() {
                    None
                } else {
                    estimate.vs_best.map(|d| standing(&d, exp.margin))
                };
            }
        }
        if nothing_pooled.len() + judged_through.len() + model_graded.len() == 0 {
            continue;
        }
        out.push(PpiSplit {
            split,
            nothing_pooled: nothing_pooled.len(),
            judged_through: judged_through.len(),
            model_graded: model_graded.len(),
            model_units: model_units.get(&split).copied().unwrap_or(0),
            best,
            cells,
        });
    }
    Ok(out)
}

/// What `[golden] suggestions` asks of a run whose lists are in `per_query` (its
/// `per_query.jsonl`, finished or being written): each cell's decision metric by PPI on both
/// splits, people's agreement with the model, and the selection made on the PPI estimates
/// (`Selection::grades_by`) where tuning has them. Without suggestions of the model yet, or too
/// few cases judged through, the selection stays on people's labels and `not_used` says why.
pub fn decide(
    per_query: &Path,
    run: &mut RunResult,
    exp: &Experiment,
    prepared: &Prepared,
    opts: &RunOptions,
) -> Result<()> {
    // A shard sees part of the grid: the merge decides.
    let Some(name) = exp.suggestions.as_ref().filter(|_| exp.shard.is_none()) else { return Ok(()) };
    let model = format!("model:{name}");
    let file = super::suggest::path_beside(&exp.judgments);
    let mut suggestions = if file.exists() { super::suggest::read(&file)? } else { Suggestions::new() };
    suggestions.retain(|_, s| s.who == model);
    let judged = crate::input::judgments::effective(crate::input::judgments::read(&exp.judgments)?);
    let mut grades = SuggestedGrades {
        model: model.clone(),
        metric: exp.decision_metric().to_string(),
        alpha: 0.05,
        agreement: super::suggest::agreement(&judged, &suggestions),
        splits: Vec::new(),
        not_used: None,
    };
    // Why the selection stays on people's labels, if it does.
    grades.not_used = 'estimated: {
        if suggestions.is_empty() {
            break 'estimated Some(format!(
                "no suggestions of {model} in {} yet: `ragsweep judge RUN --suggest {name}` asks for them",
                file.display()
            ));
        }
        let failed: Vec<&str> = run.manifest.failed_cells.iter().map(|(cell, _)| cell.as_str()).collect();
        if !failed.is_empty() {
            break 'estimated Some(format!(
                "the run is incomplete (failed: {}): PPI compares whole grids",
                failed.join(", ")
            ));
        }
        let recorded = Recorded::of(per_query, run.manifest.clone(), run.rows.clone(), exp, prepared, opts)?;
        if let Some(cell) = recorded.unrecorded_cell() {
            break 'estimated Some(format!(
                "cell {cell} did not record its ranked chunks (an engine cell searched at each depth): its lists cannot be judged with the model's grades"
            ));
        }
        let excluded: Vec<String> = crate::evaluate::selection::excluded(&run.rows, &run.slices, &exp.require)
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        let splits = [Split::Tuning, Split::Reserved];
        grades.splits = estimate(exp, prepared, &recorded, &suggestions, &splits, grades.alpha, &excluded)?;
        let tuning = grades.splits.iter().find(|s| s.split == Split::Tuning);
        tuning.is_none_or(|t| t.best.is_none()).then(|| format!(
            "{} cases judged through on tuning: PPI needs at least 2 (`ragsweep judge RUN --order sample` judges cases at random, whole)",
            tuning.map_or(0, |t| t.judged_through)
        ))
    };
    if grades.not_used.is_none() {
        (run.selection, run.no_selection) =
            crate::evaluate::selection::select_by_ppi(exp, &run.rows, &run.slices, &grades);
    }
    run.suggested = Some(grades);
    Ok(())
}
