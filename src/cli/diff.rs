//! `ragsweep diff`: Compare two cells case by case: fixed and broke lists, intervals, p-value.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// `RUN_DIR:CELL`, or `CELL` with --run (a cell id such as c03, or its label).
    pub a: String,
    /// The same form as A.
    pub b: String,
    /// The run directory of cells given without one.
    #[arg(long)]
    pub run: Option<PathBuf>,
    #[arg(long, help = metric_help("The metric compared (default: the experiment's `select`)"))]
    pub metric: Option<String>,
    /// tuning, reserved or all (default: reserved when the run has reserved cases).
    #[arg(long, value_parser = parse_split)]
    pub split: Option<SplitChoice>,
    /// Also say why two lexical cells' lists differ (ragsweep's BM25 and an engine's, two
    /// analyzers): for each case whose list at the metric's k differs, the first difference in
    /// pipeline order (parameters, the question's words, a word's matches, document frequency,
    /// length). Both cells of one run, unfiltered; their indexes and engines are opened again.
    #[arg(long)]
    pub causes: bool,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { a, b, run, metric, split, causes, dirs } = args;
    let (dir_a, cell_a) = side_of(&a, run.as_ref())?;
    let (dir_b, cell_b) = side_of(&b, run.as_ref())?;
    let (dir_a, dir_b) = (output::resolve_run(&dir_a)?, output::resolve_run(&dir_b)?);
    let run_a = RunData::load(&dir_a)?;
    let run_b = if dir_b == dir_a { None } else { Some(RunData::load(&dir_b)?) };
    let run_b = run_b.as_ref().unwrap_or(&run_a);
    warn_if_golden_differs(&run_a, run_b);
    let sa = Side { run: &run_a, cell: run_a.cell(&cell_a)? };
    let sb = Side { run: run_b, cell: run_b.cell(&cell_b)? };
    let metric = metric.unwrap_or_else(|| run_b.decision_metric.clone());
    let split = split.map_or_else(|| run_b.default_split(), |s| s.0);
    print!("{}", safe(&compare::compare(&sa, &sb, &metric, split)?.render(&sa, &sb)));
    if causes {
        if dir_a != dir_b {
            anyhow::bail!("--causes compares two cells of one run: {a} and {b} are in two");
        }
        let k = metric.rsplit_once('@').and_then(|(_, k)| k.parse::<usize>().ok()).with_context(|| {
            format!("--causes compares lists at a cut-off k: {metric} has none (give --metric such as ndcg@10)")
        })?;
        let options = dirs.options_of_run(&dir_a, std::io::stderr().is_terminal());
        let found = runner::lexical_causes(&dir_a, &sa.cell.id, &sb.cell.id, k, split, &options)?;
        print!("\n{}", safe(&runner::lexical_causes::render(&found, &sa.cell.id, &sb.cell.id)));
    }
    Ok(ExitCode::SUCCESS)
}

/// `RUN_DIR:CELL`, or a bare cell of `--run`.
fn side_of(spec: &str, run: Option<&PathBuf>) -> anyhow::Result<(PathBuf, String)> {
    match spec.rsplit_once(':') {
        Some((dir, cell)) if !cell.contains('/') && !dir.is_empty() => Ok((PathBuf::from(dir), cell.to_string())),
        _ => {
            let run = run.with_context(|| format!("{spec:?} names no run directory: use RUN_DIR:CELL or --run"))?;
            Ok((run.clone(), spec.to_string()))
        }
    }
}

fn warn_if_golden_differs(a: &RunData, b: &RunData) {
    if !a.same_golden(b) {
        eprintln!(
            "warning: the two runs used different golden sets ({}); only cases with the same id are compared",
            a.golden_difference(b)
        );
    }
}
