//! `ragsweep plan`: How many questions the golden set needs, from the spread of this run's per-case
//! scores

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The run directory (results/NAME/latest, or a unique prefix of its run id).
    pub run: PathBuf,
    /// The metric planned for (default: the experiment's `select`).
    #[arg(long)]
    pub metric: Option<String>,
    /// The difference between two cells to detect (80% power, two-sided α = 0.05).
    #[arg(long, default_value_t = 0.05)]
    pub delta: f64,
    /// tuning, reserved or all (default: tuning, where selection decides; all without tuning
    /// cases).
    #[arg(long, value_parser = parse_split)]
    pub split: Option<SplitChoice>,
    /// The planned cell (default: the run's selected cell, or its only cell).
    #[arg(long)]
    pub cell: Option<String>,
    /// Cells to compare it with (default: every other cell).
    #[arg(long, num_args = 1..)]
    pub vs: Vec<String>,
    /// Accepted as every command that reads a run accepts them; plan reads only the run's files.
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, metric, delta, split, cell, vs, dirs: _ } = args;
    let data = RunData::load(&output::resolve_run(&run)?)?;
    let metric = metric.unwrap_or_else(|| data.decision_metric.clone());
    let cell = data.cell_or_default(cell.as_deref())?.id.clone();
    // Selection decides on tuning, so the cases it would need are counted there.
    let split = split.map_or_else(|| data.tuning_split(), |s| s.0);
    let vs: Vec<&str> = vs.iter().map(String::as_str).collect();
    let mut plan = compare::power::plan(&data, &cell, &vs, &metric, split, delta)?;
    plan.model_drafts_waiting = ragsweep::drafts::pending_beside(&data.golden_path);
    print!("{}", safe(&plan.render()));
    Ok(ExitCode::SUCCESS)
}
