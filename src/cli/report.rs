//! `ragsweep report`: Write report.html and summary.md into a run directory (for runs written
//! before them)

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The run directory (results/NAME/latest, or a unique prefix of its run id).
    pub run: PathBuf,
    /// Another run to compare with: its fixed and broke lists and paired test go in the page.
    #[arg(long)]
    pub vs: Option<PathBuf>,
    /// With --vs: compare runs on different golden sets (the page says so); refused otherwise.
    #[arg(long, requires = "vs")]
    pub allow_different_golden: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, vs, allow_different_golden } = args;
    let run = output::resolve_run(&run)?;
    let vs = vs.map(|v| output::resolve_run(&v)).transpose()?;
    let vs = vs.as_deref().map(|run| ragsweep::report::Vs { run, allow_different_golden });
    ragsweep::report::write(&run, vs)?;
    println!("{}", run.join("report.html").display());
    Ok(ExitCode::SUCCESS)
}
