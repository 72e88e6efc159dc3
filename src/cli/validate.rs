//! `ragsweep validate`: Parse and check an experiment, its corpus, golden set and models, without
//! running it.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[arg(help = experiment_help())]
    pub experiment: PathBuf,
    /// Every file the corpus summary counts or shortens (skipped, left out, excluded, includes
    /// not read…), one line each with its path and why.
    #[arg(long)]
    pub verbose: bool,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { experiment, verbose, dirs } = args;
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
    if verbose {
        for line in prepared.corpus.report.full_lines() {
            println!("  {}", safe(&line));
        }
    }
    println!("{}", safe(&prepared.access_summary(&exp)));
    print_health(&prepared.health(), false);
    let options = dirs.options(false);
    // Read once: a served index's rows come from its server on every read.
    let mut stages = Vec::new();
    let sets = runner::chunk_sets(&prepared, &options, &mut stages)?;
    for stage in &stages {
        if let Some(note) = &stage.note {
            println!("chunks {}: {}", safe(&stage.key), safe(note));
        }
    }
    // Each model is loaded once: checked here, then probed for the cold run's estimate.
    let mut loaded = Vec::with_capacity(prepared.models.len());
    let threads = rayon::current_num_threads();
    for (m, info) in prepared.models.iter().enumerate() {
        if info.kind == ragsweep::stages::embed::ModelKind::Vectors {
            loaded.push(None);
            let n = runner::check_brought(&prepared, &sets, m)?;
            println!(
                "model {}: {n} vectors made elsewhere, {} dimensions, every id matched both ways",
                info.id, info.dim
            );
            continue;
        }
        loaded.push(Some(ragsweep::stages::embed::Embedder::checked(&dirs.models(), info, threads)?));
        println!("model {}: loaded with ONNX Runtime, {} dimensions", info.id, info.dim);
    }
    for info in &prepared.cross_encoders {
        ragsweep::stages::cross_encoder::CrossEncoder::check(&dirs.models(), info)?;
        match &info.kind {
            ragsweep::stages::embed::ModelKind::HttpRerank { spec, api } => println!(
                "reranker {}: {} answered a probe pair ({} API)",
                info.id,
                ragsweep::stages::endpoint::redacted(&spec.url),
                api.name()
            ),
            _ => println!("cross-encoder {}: loaded with ONNX Runtime, scores a pair", info.id),
        }
    }
    let engines = prepared.engine_sources(&options);
    for line in
        ragsweep::engine::servers::Engines::check(&prepared.plan.engines(), &prepared.plan.engines_written(), &engines)?
    {
        println!("{line}");
    }
    for line in runner::open_served(&prepared, &options, &sets)? {
        println!("served {line}");
    }
    for e in runner::cold_run(&prepared, &sets, &loaded)? {
        let seconds = e.passages as f64 / e.per_second.max(1e-9);
        // How sure the estimate is: the rounds' spread, and whether something else was running.
        let busy = match e.load_per_core {
            Some(load) if load > 0.5 => format!(
                "; the machine looked busy (load {:.1} per core when the probe started): a quiet machine is faster",
                load
            ),
            _ => String::new(),
        };
        println!(
            "cold run: {} embeds {} passages at about {:.0}/s ({:.0}–{:.0}/s over {} of a {:.1} s probe on {} threads): about {} (between {} and {}){busy}; cached after the first run",
            e.model,
            e.passages,
            e.per_second,
            e.spread.0,
            e.spread.1,
            ragsweep::words::count(e.rounds, "round"),
            e.probe_seconds,
            rayon::current_num_threads(),
            ragsweep::words::duration(seconds),
            ragsweep::words::duration(e.passages as f64 / e.spread.1.max(1e-9)),
            ragsweep::words::duration(e.passages as f64 / e.spread.0.max(1e-9)),
        );
    }
    Ok(ExitCode::SUCCESS)
}
