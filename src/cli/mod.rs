//! The commands of the `ragsweep` binary, one module each (`ragsweep <command>` is
//! `cli::<command>::run`), and what several of them share: the folders they read, how a
//! split or a margin is written, and how results are printed.

pub mod answers;
pub mod bench_ann;
pub mod bench_embed;
pub mod bench_filter;
pub mod check;
pub mod chunks;
pub mod contexts;
pub mod diff;
pub mod draft;
pub mod embed;
pub mod engines;
pub mod explain;
pub mod init;
pub mod judge;
pub mod man;
pub mod merge;
pub mod misses;
pub mod models;
pub mod plan;
pub mod ppi;
pub mod report;
pub mod rescore;
pub mod review;
pub mod run;
pub mod sections;
pub mod synth;
pub mod validate;
pub mod vectors;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

use ragsweep::compare::{self, RunData, Side};
use ragsweep::experiment::Experiment;
use ragsweep::input::golden::Split;
use ragsweep::output;
use ragsweep::output::matrix::{Exporter, Markdown};
use ragsweep::runner::{self, RunOptions};

/// `ragsweep completions SHELL`: the shell's completion script on standard output.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    clap_complete::generate(shell, &mut crate::Cli::command(), "ragsweep", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

#[derive(Clone, Copy)]
pub(crate) struct SplitChoice(Option<Split>);

pub(crate) fn parse_margin(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(m) if m.is_finite() && m >= 0.0 => Ok(m),
        _ => Err(format!("{s:?} is not a finite number ≥ 0")),
    }
}

pub(crate) fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(a) if a > 0.0 && a <= 1.0 => Ok(a),
        _ => Err(format!("{s:?} is not in (0, 1]")),
    }
}

pub(crate) fn parse_split(s: &str) -> Result<SplitChoice, String> {
    match s {
        "tuning" => Ok(SplitChoice(Some(Split::Tuning))),
        "reserved" => Ok(SplitChoice(Some(Split::Reserved))),
        "all" => Ok(SplitChoice(None)),
        _ => Err("expected tuning, reserved or all".into()),
    }
}

#[derive(clap::Args)]
pub(crate) struct Dirs {
    /// Installed embedding models (`ragsweep models install`; default ./models when it
    /// exists, else ~/.local/share/ragsweep/models).
    #[arg(long, env = "RAGSWEEP_MODELS")]
    models: Option<PathBuf>,
    /// The content-addressed cache shared by all runs (vectors, chunk sets, BM25 indexes,
    /// HNSW graphs; default ./cache).
    #[arg(long, env = "RAGSWEEP_CACHE")]
    cache: Option<PathBuf>,
    #[arg(long, env = "RAGSWEEP_ENGINES", help = engines_help())]
    engines: Option<PathBuf>,
}

/// The help of a `--metric`, naming every metric and column of the registries.
fn metric_help(what: &str) -> String {
    format!(
        "{what}: a column, at a cut-off where it has one, e.g. ndcg@10, recall@1024t, leaks (columns: {})",
        ragsweep::evaluate::columns::names().join(", ")
    )
}

/// The help of an experiment file's argument, naming what the file can declare.
fn experiment_help() -> String {
    let kinds = ragsweep::experiment::kinds().into_iter().map(|(what, names)| format!("{what}: {names}"));
    format!("The experiment file (TOML). It can name: {}", kinds.collect::<Vec<_>>().join("; "))
}

/// The help of `--engines`, naming every engine of the registry.
fn engines_help() -> String {
    format!(
        "Installed serving engines, for cells with engine = {} (scripts/install-engines.sh; default ./engines when it exists, else ~/.local/share/ragsweep/engines)",
        engine_list()
    )
}

/// The registry's engines as `"pg", "milvus" or "chroma"`.
fn engine_list() -> String {
    let names: Vec<String> = ragsweep::engine::servers::engine_names().iter().map(|n| format!("\"{n}\"")).collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl Dirs {
    pub(crate) fn engines(&self) -> PathBuf {
        self.engines.clone().unwrap_or_else(ragsweep::engine::default_dir)
    }

    pub(crate) fn models(&self) -> PathBuf {
        self.models.clone().unwrap_or_else(ragsweep::install::default_dir)
    }

    pub(crate) fn cache(&self) -> PathBuf {
        self.cache.clone().unwrap_or_else(|| PathBuf::from("cache"))
    }

    /// The folders for a command on the run `dir`: those given (flag or environment), else
    /// those the run recorded, else the defaults.
    pub(crate) fn of_run(&self, dir: &std::path::Path) -> (PathBuf, PathBuf) {
        let manifest: Option<ragsweep::results::Manifest> =
            ragsweep::input::text::json(&dir.join("manifest.json"), "run manifest").ok();
        let recorded = |f: fn(&ragsweep::results::Manifest) -> Option<PathBuf>| {
            manifest.as_ref().and_then(f).filter(|p| p.is_dir())
        };
        let models =
            self.models.clone().or_else(|| recorded(|m| m.models_dir.clone())).unwrap_or_else(|| self.models());
        let cache = self.cache.clone().or_else(|| recorded(|m| m.cache_dir.clone())).unwrap_or_else(|| self.cache());
        (models, cache)
    }

    /// The options of a command that runs an experiment with the folders given or defaulted.
    pub(crate) fn options(&self, progress: bool) -> RunOptions {
        RunOptions { progress, models_dir: self.models(), cache_dir: self.cache(), engines_dir: self.engines() }
    }

    /// The options of a command on the run `dir`, with the folders it ran with ([`Dirs::of_run`]).
    pub(crate) fn options_of_run(&self, dir: &std::path::Path, progress: bool) -> RunOptions {
        let (models_dir, cache_dir) = self.of_run(dir);
        RunOptions { progress, models_dir, cache_dir, engines_dir: self.engines() }
    }

    /// Both folders made absolute, as a run records them.
    pub(crate) fn record(&self, manifest: &mut ragsweep::results::Manifest) {
        manifest.models_dir = std::path::absolute(self.models()).ok();
        manifest.cache_dir = std::path::absolute(self.cache()).ok();
    }
}

/// Text from the data (ids, questions, headings) made safe for a terminal: control characters
/// other than line ends and tabs are shown as `\u{..}` instead of being sent raw.
pub(crate) fn safe(text: &str) -> String {
    ragsweep::output::terminal_safe(text)
}

pub(crate) fn print_health(health: &ragsweep::input::health::Health, to_stderr: bool) {
    let lines = health.lines.iter().cloned().chain(health.warnings.iter().map(|w| format!("warning: {w}")));
    for line in lines.map(|l| safe(&l)) {
        if to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

pub(crate) fn create_writer(
    out: &std::path::Path,
    exp: &Experiment,
    run_id: &str,
) -> anyhow::Result<output::RunWriter> {
    let writer = output::RunWriter::create(&output::run_dir(out, exp, run_id))?;
    for stale in writer.removed_stale() {
        eprintln!("removed {}: left by a run killed more than a day ago", stale.display());
    }
    Ok(writer)
}

/// The run's summary on standard output (100 columns), or with `all_columns` the whole
/// matrix as Markdown and the selection.
pub(crate) fn print_summary(
    run: &ragsweep::results::RunResult,
    dir: &std::path::Path,
    all_columns: bool,
) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if all_columns {
        Markdown { compact: false }.write(run, &mut stdout)?;
        if let Some(s) = &run.selection {
            writeln!(stdout, "\n{}", output::matrix::selection_summary(s))?;
        }
    } else {
        write!(stdout, "{}", safe(&output::summary::terminal(&output::matrix::matrix(run), &run.manifest, dir)))?;
    }
    Ok(())
}
