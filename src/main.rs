//! The `ragsweep` command: a thin layer over the library that turns its errors into
//! messages and exit codes.

/// mimalloc hands freed memory back to the system: with the default allocator, a graph built
/// on the worker threads and dropped stayed resident while the run reopened it from the cache.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    Run(cli::run::Args),
    /// Combine the run directories of `run --shard i/n` into the run an unsharded run writes.
    Merge(cli::merge::Args),
    /// Embed share I of N of an experiment's distinct texts into the shared cache, ahead of its
    /// cells (each text in exactly one share; the run after all shares embeds nothing).
    Embed(cli::embed::Args),
    /// Time the embedder alone (no cache): passages per second on a JSONL corpus.
    BenchEmbed(cli::bench_embed::Args),
    /// Latency of filtered vector search (graph, exact scan, per-query choice) at 1% to 90%
    /// allowed, on the chunks of an experiment's first chunker and first dense model.
    BenchFilter(cli::bench_filter::Args),
    /// Write a synthetic corpus and golden set (BEIR layout) for scaling benchmarks: Zipfian
    /// pseudo-words, SciFact-like lengths, one relevant document per question.
    Synth(cli::synth::Args),
    /// Write the passage and query vectors of an experiment's first dense cell as NumPy files
    /// (passages.npy, queries.npy), embedding what the cache lacks.
    Vectors(cli::vectors::Args),
    /// Exact scan and HNSW on given vectors (.npy): build time, queries/s one query at a time on
    /// one thread, and HNSW recall@k against the scan, at --ef-search and over a sweep of beams
    /// (10 to 512: `sweep` holds [ef, queries/s, recall]). Prints one JSON line.
    BenchAnn(cli::bench_ann::Args),
    /// Parse and check an experiment, its corpus, golden set and models, without running it.
    Validate(cli::validate::Args),
    /// Compare two cells case by case: fixed and broke lists, intervals, p-value.
    Diff(cli::diff::Args),
    /// The cases one cell missed and another found, with their exact terms and how each
    /// analyzer and model tokenizes them.
    Misses(cli::misses::Args),
    /// Write report.html and summary.md into a run directory (for runs written before them)
    Report(cli::report::Args),
    /// List every document and section id a label may name, with its size and first words
    Sections(cli::sections::Args),
    /// Every chunk of an experiment's chunkers as JSON Lines (document, byte and character
    /// offsets, text), to compare with the chunks a pipeline ships
    Chunks(cli::chunks::Args),
    /// Start an experiment for your own documents: experiment.toml and golden.jsonl stubs
    Init(cli::init::Args),
    /// Draft questions with your chat model, each with a quote of its section that code checks;
    /// written apart from the golden set, for `review`
    Draft(cli::draft::Args),
    /// Keep, edit or drop drafted questions, one key each; kept ones join the golden set
    Review(cli::review::Args),
    /// Each cell's decision metric by prediction-powered inference: a chat model's suggested
    /// grades corrected by the cases people judged through, with intervals that carry its errors
    Ppi(cli::ppi::Args),
    /// Install or list the bundled models and ONNX Runtime, or add your own (an ONNX export, an
    /// embeddings endpoint, vectors made elsewhere, a cross-encoder or hosted reranker, a chat model)
    #[command(subcommand)]
    Models(cli::models::Action),
    #[command(subcommand, about = cli::engines::about())]
    Engines(cli::engines::Action),
    /// Print shell completions (bash, zsh, fish, elvish, powershell)
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff)
    Man,
    /// Judge what the cells returned that no label names (SPEC §9): one unit at a time in the
    /// terminal, each answer saved to judgments.jsonl beside the golden set before the next
    Judge(cli::judge::Args),
    /// Score a finished run again with the current judgments, without retrieving (its ranked
    /// lists are in per_query.jsonl); writes a new run beside it and names the cells whose rank moved
    Rescore(cli::rescore::Args),
    /// Write contexts.jsonl: what a cell sends a generator at cut-off k, per case
    Contexts(cli::contexts::Args),
    /// Why a cell ranked what it ranked for one case: BM25 term contributions, cosines and
    /// exact-scan ranks, each hybrid side's share, and the case's miss causes
    Explain(cli::explain::Args),
    /// Score generated answers (answers.jsonl) against the contexts sent
    Answers(cli::answers::Args),
    /// How many questions the golden set needs, from the spread of this run's per-case scores
    Plan(cli::plan::Args),
    /// CI gate: exit 1 when a cell fell more than --margin below the baseline (significantly),
    /// or an answer requirement is not met, listing what broke
    Check(cli::check::Args),
}

fn main() -> ExitCode {
    // `ragsweep sections DIR | head`: a reader that closed the pipe ends the output quietly, as
    // `ls | head` does, after the stack unwound (a server we started is stopped by its drop).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !is_closed_pipe(info.payload()) {
            default_hook(info);
        }
    }));
    match std::panic::catch_unwind(real_main) {
        Ok(Ok(code)) => code,
        Ok(Err(e))
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            eprintln!("error: {}", cli::safe(&ragsweep::secret::scrub(&format!("{e:#}"))));
            ExitCode::from(2)
        }
        Err(payload) if is_closed_pipe(payload.as_ref()) => ExitCode::SUCCESS,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// Whether a panic is the print macros' failure to write to a closed stdout.
fn is_closed_pipe(payload: &(dyn std::any::Any + Send)) -> bool {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    message.starts_with("failed printing to std") && message.contains("Broken pipe")
}

fn real_main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => cli::run::run(args),
        Command::BenchEmbed(args) => cli::bench_embed::run(args),
        Command::Merge(args) => cli::merge::run(args),
        Command::Embed(args) => cli::embed::run(args),
        Command::BenchFilter(args) => cli::bench_filter::run(args),
        Command::Diff(args) => cli::diff::run(args),
        Command::Misses(args) => cli::misses::run(args),
        Command::Check(args) => cli::check::run(args),
        Command::Report(args) => cli::report::run(args),
        Command::Vectors(args) => cli::vectors::run(args),
        Command::BenchAnn(args) => cli::bench_ann::run(args),
        Command::Synth(args) => cli::synth::run(args),
        Command::Sections(args) => cli::sections::run(args),
        Command::Chunks(args) => cli::chunks::run(args),
        Command::Init(args) => cli::init::run(args),
        Command::Draft(args) => cli::draft::run(args),
        Command::Review(args) => cli::review::run(args),
        Command::Ppi(args) => cli::ppi::run(args),
        Command::Models(action) => cli::models::run(action),
        Command::Engines(action) => cli::engines::run(action),
        Command::Completions { shell } => cli::completions(shell),
        Command::Man => {
            cli::man::page(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Judge(args) => cli::judge::run(args),
        Command::Rescore(args) => cli::rescore::run(args),
        Command::Contexts(args) => cli::contexts::run(args),
        Command::Explain(args) => cli::explain::run(args),
        Command::Answers(args) => cli::answers::run(args),
        Command::Plan(args) => cli::plan::run(args),
        Command::Validate(args) => cli::validate::run(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every subcommand and every argument says what it is, in its own words.
    #[test]
    fn every_command_and_argument_has_its_own_help() {
        fn walk(cmd: &clap::Command, path: &str, problems: &mut Vec<String>) {
            let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
            if path.contains(' ') && about.trim().is_empty() {
                problems.push(format!("`{path}` has no help"));
            }
            let mut seen: Vec<(String, String)> = Vec::new();
            for arg in cmd.get_arguments().filter(|a| !["help", "version"].contains(&a.get_id().as_str())) {
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                let name = arg.get_id().to_string();
                if help.trim().is_empty() {
                    problems.push(format!("`{path}` argument `{name}` has no help"));
                } else if let Some((other, _)) = seen.iter().find(|(_, h)| *h == help) {
                    problems.push(format!("`{path}` arguments `{other}` and `{name}` share the help {help:?}"));
                }
                seen.push((name, help));
            }
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                walk(sub, &format!("{path} {}", sub.get_name()), problems);
            }
        }
        let mut problems = Vec::new();
        walk(&Cli::command(), "ragsweep", &mut problems);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    /// The man page is one page: every command has its subsection, no other page is referred to.
    #[test]
    fn the_man_page_is_one_page_with_every_command() {
        let mut page = Vec::new();
        cli::man::page(&mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(!page.contains("(1)"), "refers to another page:\n{page}");
        for sub in Cli::command().get_subcommands().filter(|s| s.get_name() != "help" && !s.has_subcommands()) {
            assert!(page.contains(&format!(".SS \"ragsweep {}\"", sub.get_name())), "{} missing", sub.get_name());
        }
        assert!(page.contains(".SS \"ragsweep models install\""), "nested commands are listed");
    }
}
