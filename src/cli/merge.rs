//! `ragsweep merge`: Combine the run directories of `run --shard i/n` into the run an unsharded run
//! writes.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The experiment file the shards ran.
    pub experiment: PathBuf,
    /// The shards' run directories.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// Where the merged run directory goes.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { experiment, shards, out } = args;
    let exp = Experiment::load(&experiment)?;
    let run_id = format!("{}-merged", output::run_id(&exp, std::time::SystemTime::now()));
    let mut writer = create_writer(&out, &exp, &run_id)?;
    let mut run = ragsweep::compare::merge::merge(&exp, &shards, &mut writer)?;
    run.manifest.run_id = run_id;
    let dir = writer.finish(&mut run, |staging| ragsweep::report::write(staging, None))?;
    print_summary(&run, &dir, false)?;
    eprintln!("merged {} shards ({} cells); results in {}", shards.len(), exp.cells.len(), dir.display());
    Ok(ExitCode::SUCCESS)
}
