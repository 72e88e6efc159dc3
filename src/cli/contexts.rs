//! `ragsweep contexts`: Write contexts.jsonl: what a cell sends a generator at cut-off k, per case

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The run directory (or results/NAME/latest); contexts.jsonl is written into it.
    pub run: PathBuf,
    /// The cell whose contexts are written.
    #[arg(long)]
    pub cell: String,
    /// The cut-off: one of the experiment's k.
    #[arg(long, required_unless_present = "budget", conflicts_with = "budget")]
    pub k: Option<usize>,
    /// A context budget in tokens, one of the experiment's: the packed pieces (the last one
    /// cut at the budget), as budget metrics score them.
    #[arg(long)]
    pub budget: Option<usize>,
    /// tuning or reserved (default: every case).
    #[arg(long, value_parser = parse_split)]
    pub split: Option<SplitChoice>,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, cell, k, budget, split, dirs } = args;
    let progress = std::io::stderr().is_terminal();
    let run = output::resolve_run(&run)?;
    let options = dirs.options_of_run(&run, progress);
    let split = split.and_then(|s| s.0);
    let cut = budget.map_or_else(|| runner::Cut::K(k.unwrap_or_default()), runner::Cut::Budget);
    let (path, n) = runner::write_contexts(&run, &cell, cut, split, &options)?;
    let what = match cut {
        runner::Cut::K(k) => format!("the top {k}"),
        runner::Cut::Budget(b) => format!("the context packed into {b} tokens"),
    };
    eprintln!("{}: {what} of cell {cell} in {}", ragsweep::words::count(n, "case"), path.display());
    Ok(ExitCode::SUCCESS)
}
