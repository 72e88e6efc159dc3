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
    /// The folders the shards ran with (for `[golden] suggestions`, which scores the merged lists
    /// again; default: the first shard's).
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { experiment, shards, out, dirs } = args;
    let exp = Experiment::load(&experiment)?;
    let run_id = format!("{}-merged", output::run_id(&exp, std::time::SystemTime::now()));
    let mut writer = create_writer(&out, &exp, &run_id)?;
    let mut run = ragsweep::compare::merge::merge(&exp, &shards, &mut writer)?;
    run.manifest.run_id = run_id;
    if exp.suggestions.is_some() {
        let options = dirs.options_of_run(&shards[0], false);
        let prepared = runner::prepare(&exp, &options.models_dir)?;
        ragsweep::judge::estimate::decide(&writer.per_query()?, &mut run, &exp, &prepared, &options)?;
    }
    let dir = writer.finish(&mut run, |staging| ragsweep::report::write(staging, None))?;
    print_summary(&run, &dir, false)?;
    eprintln!("merged {} shards ({} cells); results in {}", shards.len(), exp.cells.len(), dir.display());
    Ok(ExitCode::SUCCESS)
}
