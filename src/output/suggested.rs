//! How a chat model's suggested grades are shown to people: its agreement with their grades
//! (weighted κ and the confusion matrix), and each cell's decision metric by PPI beside the
//! people-only and model-only means — in `ragsweep ppi`, at the end of a judging session, and
//! in `summary.md` (`summary::markdown`) when the experiment leans on the model (`[golden]
//! suggestions`).

use crate::input::golden::Split;
use crate::results::{Agreement, Estimate, PpiSplit, SuggestedGrades};

/// A few lines: κ, and the confusion matrix.
pub fn agreement(a: &Agreement, model: &str) -> String {
    if a.units == 0 {
        return format!("agreement with {model}: no unit graded by both a person and the model yet\n");
    }
    let kappa = a.kappa.map_or("undefined (one grade only)".into(), |k| format!("{k:.2}"));
    let mut out = format!(
        "agreement with {model} on {}: weighted κ {kappa}\n  person ↓ model →   0    1    2\n",
        crate::words::count(a.units, "unit")
    );
    for (g, row) in a.confusion.iter().enumerate() {
        out.push_str(&format!("  {g:>16} {:>4} {:>4} {:>4}\n", row[0], row[1], row[2]));
    }
    out
}

/// A split's estimates as a table, with what its cases hold above it and a note below when
/// too few cases were judged through.
pub fn ppi_table(s: &PpiSplit, metric: &str, model: &str) -> String {
    format!("{}\n{}{}", caption(s, metric, model), table(s), note(s).map(|n| n + "\n").unwrap_or_default())
}

pub fn caption(s: &PpiSplit, metric: &str, model: &str) -> String {
    let split = if s.split == Split::Tuning { "tuning" } else { "reserved" };
    format!(
        "{metric} on {split}: {} cases — {} with nothing to judge, {} judged through by people, {} not (of {} pooled units {model} graded)",
        s.nothing_pooled + s.judged_through + s.model_graded,
        s.nothing_pooled,
        s.judged_through,
        s.model_graded,
        s.model_units,
    )
}

pub fn table(s: &PpiSplit) -> String {
    let best = s.best.as_deref().unwrap_or("-");
    let mut out = format!(
        "| cell | people only | model only | PPI mean [95% CI] | λ | vs {best} (PPI) [95% CI] | standing |\n|---|---:|---:|---|---:|---|---|\n"
    );
    let interval = |e: &Option<Estimate>, signed: bool| match e {
        Some(e) if signed => format!("{:+.4} [{:+.4}, {:+.4}]", e.mean, e.lo, e.hi),
        Some(e) => format!("{:.4} [{:.4}, {:.4}]", e.mean, e.lo, e.hi),
        None => "— (fewer than 2 cases judged through)".into(),
    };
    for c in &s.cells {
        let is_best = Some(&c.cell) == s.best.as_ref();
        out.push_str(&format!(
            "| {} | {:.4} | {:.4} | {} | {} | {} | {} |\n",
            c.cell,
            c.people_only,
            c.model_only,
            interval(&c.ppi, false),
            c.ppi.map_or("—".into(), |e| format!("{:.2}", e.lambda)),
            if is_best { "best".into() } else { interval(&c.vs_best, true) },
            c.standing.map_or("—", |v| v.as_str()),
        ));
    }
    out
}

pub fn note(s: &PpiSplit) -> Option<String> {
    let few = crate::evaluate::ppi::FEW_JUDGED;
    (s.judged_through < few && s.model_graded > 0).then(|| format!(
        "note: {} cases judged through: intervals from so few stay wide (they assume the others may differ as much as values can); judge at least {few} at random",
        s.judged_through
    ))
}

/// The terminal's lines of a run that leans on a chat model's grades: what decided, and the
/// tuning table.
pub fn terminal(g: &SuggestedGrades) -> String {
    let mut out = match &g.not_used {
        Some(why) => format!("{}: the selection is on people's labels alone: {why}\n", g.model),
        None => format!("{}: the selection is on the PPI means (people's grades correcting the model's)\n", g.model),
    };
    for s in g.splits.iter().filter(|s| s.split == Split::Tuning) {
        out.push_str(&ppi_table(s, &g.metric, &g.model));
    }
    out.push_str(&agreement(&g.agreement, &g.model));
    out
}
