//! `ragsweep check`: CI gate: exit 1 when a cell fell more than --margin below the baseline
//! (significantly), or an answer requirement is not met, listing what broke

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The run directory to gate (or results/NAME/latest, or a run id prefix).
    pub run: PathBuf,
    /// The run to compare against (not needed with only --require).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Gate the scored answers (`ragsweep answers`) of both runs: their columns join the
    /// metrics (e.g. --fail-on citation_relevant:0.05), on the cells their contexts came from.
    #[arg(long)]
    pub answers: bool,
    /// A hard requirement on the run's answers, e.g. `citation_valid=1` (at least 1) or
    /// `refusal_wrong=0` (at most 0: lower is better): fails (exit 1) when the column's mean is
    /// on the wrong side, listing those cases (repeatable). On the cell's case lines too:
    /// `leaks=0`, `restricted_hits=0`, `under_return@10=0` (no case above), `recall_vs_oracle@10=0.95`.
    #[arg(long)]
    pub require: Vec<String>,
    #[arg(long, help = metric_help("The gated metric (default: the experiment's `select`; see --fail-on for several)"))]
    pub metric: Option<String>,
    /// The largest drop of the mean that still passes.
    #[arg(long, default_value_t = 0.01, value_parser = parse_margin)]
    pub margin: f64,
    /// A drop fails only when significant at this level (paired randomisation test);
    /// 1 fails any drop beyond the margin.
    #[arg(long, default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,
    /// Several gates at once, e.g. `ndcg@10:0.01,recall@5:0.02` (replaces --metric and --margin);
    /// `leaks:0`, `restricted_hits:0` and `under_return@10:0` fail on any rise, significant or not.
    #[arg(long)]
    pub fail_on: Option<String>,
    /// Append the verdict and the comparison, as Markdown, to this file (e.g. the run's
    /// summary.md, for a pull-request comment).
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// tuning, reserved or all (default: reserved when the run has reserved cases).
    #[arg(long, value_parser = parse_split)]
    pub split: Option<SplitChoice>,
    /// The compared cell (default: the run's selected cell, or its only cell).
    #[arg(long)]
    pub cell: Option<String>,
    /// The baseline's cell (default: the one with the same configuration).
    #[arg(long)]
    pub baseline_cell: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, baseline, require, answers, metric, margin, alpha, fail_on, summary, split, cell, baseline_cell } =
        args;
    let run = output::resolve_run(&run)?;
    let baseline = baseline.map(|b| output::resolve_run(&b)).transpose()?;
    // A gate never passes on a run whose selection found no eligible cell.
    if cell.is_none() {
        let current = RunData::load(&run)?;
        if let Some(none) = &current.no_selection {
            println!("FAIL: {}", safe(&none.summary()));
            return Ok(ExitCode::from(1));
        }
    }
    let unmet = check_requirements(&run, &require, cell.as_deref())?;
    let Some(baseline) = baseline else {
        anyhow::ensure!(!require.is_empty(), "--baseline is needed (or only --require)");
        return Ok(ExitCode::from(if unmet { 1 } else { 0 }));
    };
    let mut current = RunData::load(&run)?;
    let mut base = RunData::load(&baseline)?;
    let (cell, baseline_cell) =
        if answers { (Some(current.add_answers()?), Some(base.add_answers()?)) } else { (cell, baseline_cell) };
    let named = cell.is_some();
    let cell = current.cell_or_default(cell.as_deref())?;
    let base_cell = base.counterpart(cell, baseline_cell.as_deref(), named)?;
    if base_cell.label != cell.label {
        eprintln!(
            "comparing different configurations: {} ({}) against the baseline's {} ({})",
            cell.id, cell.label, base_cell.id, base_cell.label
        );
    }
    let split = split.map_or_else(|| current.default_split(), |s| s.0);
    let (sa, sb) = (Side { run: &base, cell: base_cell }, Side { run: &current, cell });
    let gates = match fail_on {
        Some(list) => compare::gate::parse_gates(&list).map_err(|e| anyhow::anyhow!("--fail-on {e}"))?,
        None => {
            vec![compare::gate::Gate::new(&metric.unwrap_or_else(|| current.decision_metric.clone()), margin)
                .map_err(|e| anyhow::anyhow!("--metric/--margin: {e}"))?]
        }
    };
    let outcome = compare::gate::check(&sa, &sb, &gates, split, alpha)?;
    print!("{}", safe(&outcome.report));
    if let Some(path) = summary {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        write!(file, "{}", compare::gate::markdown(&outcome, &baseline))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let code = outcome.verdict.exit_code();
    Ok(ExitCode::from(if code == 0 && unmet { 1 } else { code }))
}

/// Checks `COLUMN=VALUE` requirements on the run's scored answers, printing each; true when
/// one is unmet.
fn check_requirements(run: &std::path::Path, require: &[String], cell: Option<&str>) -> anyhow::Result<bool> {
    let mut unmet = false;
    let data = if require.is_empty() { None } else { Some(RunData::load(run)?) };
    for r in require {
        let line_column = data.as_ref().and_then(|data| {
            let side = Side { run: data, cell: data.cell_or_default(cell).ok()? };
            compare::line_requirement(&side, r)
        });
        let (line, met) = match line_column {
            Some(result) => result?,
            None => ragsweep::evaluate::answers::requirement(run, r)?,
        };
        println!("{line}");
        unmet |= !met;
    }
    Ok(unmet)
}
