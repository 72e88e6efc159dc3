//! `ragsweep embed`: embed a share of an experiment's texts into the shared cache ahead of its
//! cells (one task of a scheduler's array per share).

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The experiment whose texts are embedded.
    pub experiment: PathBuf,
    /// Embed share I of N of the distinct texts (each text falls in exactly one share);
    /// `from-env`: the share a Kubernetes Indexed Job or a Slurm job array gives this task.
    #[arg(long, value_name = "I/N|from-env", value_parser = run::parse_shard, default_value = "1/1")]
    pub shard: run::Shard,
    /// No progress bars or lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { experiment, shard, quiet, dirs } = args;
    let exp = Experiment::load(&experiment)?;
    let (i, n) = match shard {
        run::Shard::Given(i, n) => (i, n),
        run::Shard::FromEnv => ragsweep::experiment::shard::from_env(|v| std::env::var(v).ok())?,
    };
    let prepared = runner::prepare(&exp, &dirs.models())?;
    let options = dirs.options(!quiet);
    for work in ragsweep::runner::embed_shard::embed_shard(&prepared, &options, i, n)? {
        let what = if work.role == ragsweep::stages::embed::Role::Query { "questions" } else { "passages" };
        let s = &work.stats;
        println!(
            "embed {} {what} (share {i} of {n}): {} texts, {} reused, {} embedded in {:.1}s",
            work.model, s.texts, s.reused, s.embedded, s.seconds
        );
    }
    Ok(ExitCode::SUCCESS)
}
