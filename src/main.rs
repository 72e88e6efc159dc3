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
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Time the embedder alone (no cache): passages per second on a JSONL corpus.
    BenchEmbed {
        /// A JSONL or BEIR corpus whose `title text` are embedded as passages.
        corpus: PathBuf,
        #[arg(long)]
        model: String,
        #[arg(long, default_value_t = 32)]
        batch: usize,
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// Embed only the first N documents.
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Parse and check an experiment, its corpus, golden set and models, without running it.
    Check {
        experiment: PathBuf,
        #[command(flatten)]
        dirs: Dirs,
    },
}

#[derive(clap::Args)]
struct Dirs {
    /// Installed embedding models (scripts/install-models.sh).
    #[arg(long, env = "RAGSWEEP_MODELS", default_value = "models")]
    models: PathBuf,
    /// The content-addressed cache shared by all runs (embeddings).
    #[arg(long, env = "RAGSWEEP_CACHE", default_value = "cache")]
    cache: PathBuf,
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
        Command::Run { experiment, out, jobs, quiet, all_columns, dirs } => {
            if let Some(n) = jobs {
                rayon::ThreadPoolBuilder::new().num_threads(n).build_global().context("setting up worker threads")?;
            }
            let exp = Experiment::load(&experiment)?;
            let progress = !quiet && std::io::stderr().is_terminal();
            if progress {
                eprintln!("loading corpus and golden set for {:?} ({} cells)", exp.name, exp.cells.len());
            }
            let prepared = runner::prepare(&exp, &dirs.models)?;
            let options = RunOptions { progress, models_dir: dirs.models, cache_dir: dirs.cache };
            let run = runner::run(&exp, &prepared, &options)?;
            for stage in &run.stages {
                if let Some(e) = &stage.embedding {
                    eprintln!(
                        "embed {}: {} texts, {} reused, {} embedded in {:.1}s",
                        stage.key, e.texts, e.reused, e.embedded, e.seconds
                    );
                }
            }
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
        Command::BenchEmbed { corpus, model, batch, threads, limit, dirs } => {
            let corpus = ragsweep::corpus::Corpus::load(&corpus, None)?;
            let info = ragsweep::embed::find_model(&dirs.models, &model)?;
            let embedder = ragsweep::embed::Embedder::load(&dirs.models, &info, threads)?;
            let mut texts: Vec<String> = corpus
                .docs
                .iter()
                .take(limit.unwrap_or(usize::MAX))
                .map(|d| match &d.title {
                    Some(t) => format!("{t} {}", d.text),
                    None => d.text.clone(),
                })
                .collect();
            texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.embed_batch(&refs[..batch.min(refs.len())], ragsweep::embed::Role::Passage)?;
            let started = std::time::Instant::now();
            for chunk in refs.chunks(batch) {
                embedder.embed_batch(chunk, ragsweep::embed::Role::Passage)?;
            }
            let secs = started.elapsed().as_secs_f64();
            println!(
                "ragsweep  model={model} texts={} batch={batch} threads={threads} seconds={secs:.2} passages_per_s={:.1}",
                texts.len(),
                texts.len() as f64 / secs
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { experiment, dirs } => {
            let exp = Experiment::load(&experiment)?;
            let prepared = runner::prepare(&exp, &dirs.models)?;
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
