//! `ragsweep judge`: Judge what the cells returned that no label names (SPEC §9): one unit at a
//! time in the terminal, each answer saved to judgments.jsonl beside the golden set before the next

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The run directory (results/NAME/latest, or a unique prefix of its run id).
    pub run: PathBuf,
    /// Pool these cells only (repeatable or comma-separated; default: every cell).
    #[arg(long, value_delimiter = ',')]
    pub cells: Vec<String>,
    /// Pool each cell's top k (one of the experiment's k; default 10, else its largest).
    #[arg(long, conflicts_with = "budget")]
    pub k: Option<usize>,
    /// Pool each cell's context packed into this budget (one of the experiment's).
    #[arg(long)]
    pub budget: Option<usize>,
    /// Pool these cases only (repeatable or comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub cases: Vec<String>,
    /// Write the pool as JSONL (fill `grade`: 0 not relevant, 1 relevant, 2 highly relevant; and
    /// `note`) instead of judging here.
    #[arg(long, conflicts_with = "import")]
    pub export: Option<PathBuf>,
    /// Add the judgments of a judged pool (JSONL of case, id, grade; grade null = unjudged).
    #[arg(long)]
    pub import: Option<PathBuf>,
    /// Who judges (recorded with each judgment; default $USER).
    #[arg(long)]
    pub who: Option<String>,
    /// `decision`: the units whose grade can change which cell is picked first, stopping when
    /// the decision is settled or judging cannot decide it; `returned`: most-returned first, the
    /// whole pool; `sample`: cases in a seeded random order, each case's pool whole before the
    /// next (the random sample `ragsweep ppi` corrects a chat model's grades with).
    #[arg(long, value_enum, default_value_t = Order::Decision)]
    pub order: Order,
    /// Judge (or export) at most this many units, the most valuable first.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Answer from a judged pool file (an export with `grade` filled) in the order this session
    /// would ask, stopping where it would stop; units it does not grade are skipped.
    #[arg(long, conflicts_with_all = ["import", "export"])]
    pub replay: Option<PathBuf>,
    /// Judge on after the decision is settled (or cannot be decided by judging).
    #[arg(long)]
    pub whole_pool: bool,
    /// Write one JSON line per answer: the unit, its grade, the decision after it and what the
    /// units left can still do to it.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// The seed of `--order sample`'s random order of cases.
    #[arg(long, default_value_t = ragsweep::evaluate::stats::SEED)]
    pub seed: u64,
    /// Ask this chat model (`models add --chat`) to suggest a grade for every unit of the pool
    /// first: stored apart in suggestions.jsonl, shown beside each unit (`y` takes it), never a
    /// judgment until a person gives it; people's agreement with it is reported.
    #[arg(long, value_name = "MODEL", conflicts_with_all = ["import", "export", "replay"])]
    pub suggest: Option<String>,
    /// Your own grading prompt for --suggest: {question} and {passage} are replaced; the answer
    /// holds {"score": 0-3, "reason"} (UMBRELA's scale).
    #[arg(long, requires = "suggest")]
    pub suggest_prompt: Option<PathBuf>,
    #[command(flatten)]
    pub dirs: Dirs,
}

/// The order a pool is judged in.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Order {
    Decision,
    Returned,
    Sample,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args {
        run,
        cells,
        k,
        budget,
        cases,
        export,
        import,
        who,
        order,
        limit,
        replay,
        whole_pool,
        trace,
        seed,
        suggest,
        suggest_prompt,
        dirs,
    } = args;
    let run = output::resolve_run(&run)?;
    let options = dirs.options_of_run(&run, false);
    let (exp, prepared) = runner::load_run(&run, &options)?;
    let inputs: Vec<(&str, &std::path::Path)> =
        exp.inputs().into_iter().chain(replay.as_deref().map(|r| ("replay file", r))).collect();
    for output in export.iter().chain(&trace) {
        ragsweep::atomic::refuse_overwriting(output, &inputs)?;
    }
    let who = who.or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "unknown".into());
    if let Some(file) = import {
        let added = ragsweep::judge::import(
            &file,
            &prepared.cases,
            &prepared.corpus,
            prepared.judgments.as_ref(),
            &exp.judgments,
            &who,
        )?;
        eprintln!("{} added to {}", ragsweep::words::count(added.len(), "judgment"), exp.judgments.display());
        let mut relevant: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for j in added.iter().filter(|j| j.grade > 0) {
            relevant.entry(j.case.clone()).or_default().push(j.id.clone());
        }
        print_end(&run, &cells, &relevant)?;
        return Ok(ExitCode::SUCCESS);
    }
    let decision_cut = exp.decision_metric();
    let cut = match (k, budget) {
        (_, Some(b)) => runner::Cut::Budget(b),
        (Some(k), None) => runner::Cut::K(k),
        (None, None) => decision_cut.at(),
    };
    let opts = ragsweep::judge::PoolOptions { cells: &cells, cut, cases: &cases };
    let ragsweep::judge::Pooled { unjudged: mut pool, judged } =
        ragsweep::judge::pool(&run, &exp, &prepared.cases, &opts)?;
    let suggestions_path = ragsweep::judge::suggest::path_beside(&exp.judgments);
    let suggestions = match &suggest {
        Some(model) => {
            let prompt = match &suggest_prompt {
                Some(file) => ragsweep::input::text::read(file)?,
                None => ragsweep::judge::suggest::DEFAULT_PROMPT.to_string(),
            };
            let spec = ragsweep::chat::ChatSpec::find(&options.models_dir, model)?;
            let chat = ragsweep::chat::ChatModel::open(spec, &options.cache_dir)?;
            let (found, done) =
                ragsweep::judge::suggest::suggest(&pool, &prepared.corpus, &chat, &suggestions_path, &prompt)?;
            eprintln!(
                "{model} suggested grades for {} ({} had one; {} answers unreadable; {} requests, {} from the cache, {} + {} tokens), kept apart in {}",
                ragsweep::words::count(done.new, "unit"),
                done.already,
                done.unreadable,
                done.usage.sent,
                done.usage.reused,
                done.usage.prompt_tokens,
                done.usage.completion_tokens,
                suggestions_path.display()
            );
            found
        }
        None => ragsweep::judge::suggest::read(&suggestions_path)?,
    };
    if order == Order::Sample {
        pool = ragsweep::judge::by_random_case(pool, seed);
    }
    let mut decider = if order == Order::Decision || trace.is_some() {
        let recorded = runner::rescore::Recorded::open(&run, &exp, &prepared, &options)?;
        let mut decider = ragsweep::judge::decision::Decider::new(&exp, &prepared, recorded)?;
        decider.suggest(&suggestions);
        decider.seed(&judged);
        Some(decider)
    } else {
        None
    };
    // A pool of some cells or cases holds only what can help them: the stop rule would call the
    // decision settled on units that were never asked about it, so it does not speak there.
    let restricted = !cells.is_empty() || !cases.is_empty();
    let decision_order = order == Order::Decision && !restricted;
    if restricted {
        eprintln!(
            "a pool restricted by {}: judged in its own order, and it cannot settle the decision (judging the whole pool can: ragsweep judge {})",
            [(!cells.is_empty()).then_some("--cells"), (!cases.is_empty()).then_some("--cases")]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" and "),
            run.display()
        );
    }
    if let Some(d) = decider.as_ref().filter(|_| decision_order) {
        eprintln!("decision on tuning ({}): {}", decision_cut, d.now().describe());
    }
    if let Some(file) = export {
        if let Some(d) = decider.as_ref().filter(|_| decision_order) {
            let (verdict, contenders) = d.verdict(&pool)?;
            if let Some(message) = verdict.message(d.now(), pool.len(), &run) {
                eprintln!("{message}");
            }
            let values = d.values(&pool, &contenders);
            pool = ragsweep::judge::decision::by_value(pool, &values);
        }
        pool.truncate(limit.unwrap_or(usize::MAX));
        let per_case = pool.iter().map(|p| &p.case).collect::<std::collections::BTreeSet<_>>().len();
        ragsweep::atomic::write_atomic(&file, &ragsweep::judge::export(&pool, &prepared.corpus))?;
        eprintln!(
            "{} of {} written to {}: fill `grade` ({}) and run `ragsweep judge {} --import {}`",
            ragsweep::words::count(pool.len(), "unit"),
            ragsweep::words::count(per_case, "case"),
            file.display(),
            ragsweep::judge::GRADE_SCALE,
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
        "{} in the pool; answers are saved to {} as you go",
        ragsweep::words::count(pool.len(), "unit"),
        exp.judgments.display()
    );
    let mut trace_file = trace
        .as_ref()
        .map(|t| std::fs::File::create(t).with_context(|| format!("cannot write {}", t.display())))
        .transpose()?
        .map(std::io::BufWriter::new);
    let session_opts = |decider, trace| ragsweep::judge::SessionOptions {
        path: &exp.judgments,
        who: &who,
        decider,
        decision_order,
        whole_pool,
        trace,
        run: &run,
        limit,
    };
    let (mut stdout, mut stdin) = (std::io::stdout().lock(), std::io::stdin().lock());
    let trace_out = trace_file.as_mut().map(|t| t as &mut dyn std::io::Write);
    let report = match replay {
        Some(file) => {
            let mut answers = ragsweep::judge::Replayed::read(&file, &prepared.cases, &prepared.corpus, &mut stdout)?;
            ragsweep::judge::session(pool, &mut answers, session_opts(decider.as_mut(), trace_out))?
        }
        None => {
            let terminal = std::io::stdout().is_terminal();
            let mut answers = ragsweep::judge::Person {
                corpus: &prepared.corpus,
                input: &mut stdin,
                out: &mut stdout,
                terminal,
                suggestions: &suggestions,
            };
            ragsweep::judge::session(pool, &mut answers, session_opts(decider.as_mut(), trace_out))?
        }
    };
    if let Some(mut t) = trace_file {
        std::io::Write::flush(&mut t)?;
    }
    println!("\n{} judged, {} skipped, {} left in the pool.", report.answered, report.skipped, report.left);
    print_end(&run, &cells, &report.relevant)?;
    let judged = ragsweep::input::judgments::effective(ragsweep::input::judgments::read(&exp.judgments)?);
    let models: std::collections::BTreeSet<&str> = suggestions.values().map(|s| s.who.as_str()).collect();
    for model in models {
        let of_model: std::collections::HashMap<_, _> =
            suggestions.iter().filter(|(_, s)| s.who == model).map(|(k, s)| (k.clone(), s.clone())).collect();
        print!(
            "{}",
            safe(&output::suggested::agreement(&ragsweep::judge::suggest::agreement(&judged, &of_model), model))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// How judging ends, in a session or an import: the units newly judged relevant per case, and
/// how many of the run's misses they turn into hits.
fn print_end(
    run: &std::path::Path,
    cells: &[String],
    relevant: &std::collections::BTreeMap<String, Vec<String>>,
) -> anyhow::Result<()> {
    let (fixed, misses) = ragsweep::judge::misses_fixed(run, cells, relevant)?;
    for (case, ids) in relevant {
        println!("  {case}: newly relevant {}", ids.join(", "));
    }
    println!(
        "{fixed} of this run's {} become hits when it is rescored: ragsweep rescore {}",
        ragsweep::words::count(misses, "miss"),
        run.display()
    );
    Ok(())
}
