//! `ragsweep run`: Run an experiment's whole grid and write results/<name>/<run-id>/.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[arg(help = experiment_help())]
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

/// `run`'s exit status when the experiment asks for a selection and no cell is eligible.
pub const NO_SELECTION_EXIT: u8 = 4;

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
        exp.keep_shard(i, n)?;
    }
    // Bars on a terminal, a line every ~30 s otherwise (a CI log), nothing with --quiet.
    let progress = !quiet;
    if progress && std::io::stderr().is_terminal() {
        eprintln!("loading corpus and golden set for {:?} ({} cells)", exp.name, exp.cells.len());
    }
    let prepared = runner::prepare(&exp, &dirs.models())?;
    let options = dirs.options(progress);
    let mut run_id = output::run_id(&exp, std::time::SystemTime::now());
    if let Some((i, n)) = exp.shard {
        run_id = format!("{run_id}-shard{i}of{n}");
    }
    let mut writer = create_writer(&out, &exp, &run_id)?;
    let columns = exp.columns();
    let cuts = exp.cut_keys();
    let outcome = runner::run(&exp, &prepared, &options, &mut |results| writer.add_cell(&columns, &cuts, results))?;
    print_stage_work(&outcome.stages);
    // What was read, before the decision: the decision is the last screen.
    eprintln!("{}", safe(&prepared.access_summary(&exp)));
    if !prepared.corpus.report.read.is_empty() {
        eprintln!("corpus: {}", safe(&prepared.corpus.report.headline()));
    }
    print_health(&prepared.health(), true);
    let mut run = output::result(&exp, &prepared, outcome, &run_id);
    dirs.record(&mut run.manifest);
    ragsweep::judge::estimate::decide(&writer.per_query()?, &mut run, &exp, &prepared, &options)?;
    let dir = writer.finish(&mut run, |staging| ragsweep::report::write(staging, None))?;
    print_summary(&run, &dir, all_columns)?;
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
    if let Some(none) = &run.no_selection {
        eprintln!("error: {} (exit status 4)", safe(&none.summary()));
        return Ok(ExitCode::from(NO_SELECTION_EXIT));
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per chunk, embedding and index stage: what was built now and what was reused.
fn print_stage_work(stages: &[ragsweep::results::StageReport]) {
    for stage in stages {
        let done = if stage.reused { "reused from cache, loaded" } else { "built" };
        match (stage.stage.as_str(), &stage.embedding) {
            (_, Some(e)) => eprintln!(
                "embed {}: {} texts, {} reused, {} embedded in {:.1}s{}",
                stage.key,
                e.texts,
                e.reused,
                e.embedded,
                e.seconds,
                e.padding_efficiency().map_or(String::new(), |p| format!(
                    " ({} tokens, padding efficiency {:.1}%)",
                    e.tokens,
                    100.0 * p
                ))
            ),
            ("chunk", _) => {
                eprintln!("chunk {}: {} chunks, {done} in {:.2}s", stage.key, stage.chunks, stage.seconds);
                if let Some(note) = &stage.note {
                    eprintln!("warning: chunk {}: {}", stage.key, safe(note));
                }
            }
            ("index", _) if stage.builds_nothing => {}
            ("index", _) => eprintln!("index {}: {done} in {:.2}s", stage.key, stage.seconds),
            ("repair", _) => eprintln!("warning: broken cache entry: {}", stage.key),
            ("engine", _) => eprintln!("engine: {} in {:.1}s", stage.key, stage.seconds),
            _ => {}
        }
    }
}

/// `--shard`: given on the command line, or read from the scheduler's variables.
#[derive(Clone, Copy, Debug)]
pub enum Shard {
    Given(usize, usize),
    FromEnv,
}

pub(crate) fn parse_shard(s: &str) -> Result<Shard, String> {
    if s == "from-env" {
        return Ok(Shard::FromEnv);
    }
    let (i, n) = s.split_once('/').ok_or("expected I/N, e.g. 2/3, or from-env")?;
    let i: usize = i.parse().map_err(|_| format!("bad shard index {i:?}"))?;
    let n: usize = n.parse().map_err(|_| format!("bad shard count {n:?}"))?;
    if n == 0 || i == 0 || i > n {
        return Err(format!("shard {i}/{n}: I must be between 1 and N"));
    }
    Ok(Shard::Given(i, n))
}
