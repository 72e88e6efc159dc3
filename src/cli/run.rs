//! `ragsweep run`: Run an experiment's whole grid and write results/<name>/<run-id>/.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The experiment file (TOML).
    pub experiment: PathBuf,
    /// Where run directories go.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// No progress: no bars on a terminal, no progress lines in a log.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Print the whole matrix (every metric column) instead of the 100-column summary.
    #[arg(long)]
    pub all_columns: bool,
    /// Run only shard I of N of the grid's cells (every N-th cell); `merge` combines shards.
    /// `from-env`: the shard a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, JOB_COMPLETIONS)
    /// or a Slurm job array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) gives this task.
    #[arg(long, value_name = "I/N|from-env", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { experiment, out, jobs, quiet, all_columns, shard, dirs } = args;
    if let Some(n) = jobs {
        rayon::ThreadPoolBuilder::new().num_threads(n).build_global().context("setting up worker threads")?;
    }
    let mut exp = Experiment::load(&experiment)?;
    let shard = match shard {
        Some(Shard::Given(i, n)) => Some((i, n)),
        Some(Shard::FromEnv) => Some(ragsweep::experiment::shard::from_env(|v| std::env::var(v).ok())?),
        None => None,
    };
    if let Some((i, n)) = shard {
        exp.keep_shard(i, n);
    }
    // Bars on a terminal, a line every ~30 s otherwise (a CI log), nothing with --quiet.
    let progress = !quiet;
    if progress && std::io::stderr().is_terminal() {
        eprintln!("loading corpus and golden set for {:?} ({} cells)", exp.name, exp.cells.len());
    }
    let prepared = runner::prepare(&exp, &dirs.models())?;
    let options =
        RunOptions { progress, models_dir: dirs.models(), cache_dir: dirs.cache(), engines_dir: dirs.engines() };
    let mut run_id = output::run_id(&exp, std::time::SystemTime::now());
    if let Some((i, n)) = exp.shard {
        run_id = format!("{run_id}-shard{i}of{n}");
    }
    let mut writer = create_writer(&out, &exp, &run_id)?;
    let columns = exp.columns();
    let cuts = exp.cut_keys();
    let outcome = runner::run(&exp, &prepared, &options, &mut |results| writer.add_cell(&columns, &cuts, results))?;
    print_stage_work(&outcome.stages);
    let mut run = output::result(&exp, &prepared, outcome, &run_id);
    dirs.record(&mut run.manifest);
    let dir = writer.finish(&mut run, |staging| ragsweep::report::write(staging, None))?;
    print_summary(&run, &dir, all_columns)?;
    eprintln!("\n{}", safe(&prepared.access_summary(&exp)));
    if !prepared.corpus.report.read.is_empty() {
        eprintln!("corpus: {}", safe(&prepared.corpus.report.summary()));
    }
    print_health(&prepared.health(), true);
    eprintln!(
        "\n{} × {} in {:.1}s; results in {}",
        ragsweep::words::count(exp.cells.len(), "cell"),
        ragsweep::words::count(prepared.cases.len(), "case"),
        run.manifest.wall_seconds,
        dir.display()
    );
    if !run.manifest.failed_cells.is_empty() {
        let cells: Vec<&str> = run.manifest.failed_cells.iter().map(|(c, _)| c.as_str()).collect();
        eprintln!("error: the run is incomplete: {} failed (exit status 3)", safe(&cells.join(", ")));
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}
