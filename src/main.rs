//! The `ragsweep` command: a thin layer over the library that turns its errors into
//! messages and exit codes.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use ragsweep::experiment::Experiment;
use ragsweep::report::{self, Exporter, Markdown};
use ragsweep::runner::{self, RunOptions};

#[derive(Parser)]
#[command(
    name = "ragsweep",
    version,
    about = "Measure retrieval for RAG: sweep chunkers, retrievers and k against a golden set"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment's whole grid and write results/<name>/<run-id>/.
    Run {
        /// The experiment file (TOML).
        experiment: PathBuf,
        /// Where run directories go.
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Worker threads (default: all cores).
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
        /// No progress bars.
        #[arg(long, short = 'q')]
        quiet: bool,
        /// Print every metric column, not only nDCG, recall and MRR.
        #[arg(long)]
        all_columns: bool,
    },
    /// Parse and check an experiment, its corpus and golden set, without running it.
    Check { experiment: PathBuf },
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { experiment, out, jobs, quiet, all_columns } => {
            if let Some(n) = jobs {
                rayon::ThreadPoolBuilder::new().num_threads(n).build_global().context("setting up worker threads")?;
            }
            let exp = Experiment::load(&experiment)?;
            let progress = !quiet && std::io::stderr().is_terminal();
            if progress {
                eprintln!("loading corpus and golden set for {:?} ({} cells)", exp.name, exp.cells.len());
            }
            let prepared = runner::prepare(&exp)?;
            let run = runner::run(&exp, &prepared, &RunOptions { progress })?;
            let run_id = report::run_id(&exp, std::time::SystemTime::now());
            let dir = report::write_run(&runner::run_dir(&out, &exp, &run_id), &exp, &run, &run_id)?;
            let mut stdout = std::io::stdout().lock();
            Markdown { compact: !all_columns }.write(&exp, &run, &mut stdout)?;
            eprintln!(
                "\n{} cells × {} cases in {:.1}s; results in {}",
                exp.cells.len(),
                prepared.cases.len(),
                run.wall_seconds,
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { experiment } => {
            let exp = Experiment::load(&experiment)?;
            let prepared = runner::prepare(&exp)?;
            println!(
                "{}: {} cells, {} documents, {} cases ({} unanswerable)",
                experiment.display(),
                exp.cells.len(),
                prepared.corpus.docs.len(),
                prepared.cases.len(),
                prepared.cases.iter().filter(|c| !c.answerable).count()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
