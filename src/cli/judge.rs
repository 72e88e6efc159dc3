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
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, cells, k, budget, cases, export, import, who, dirs } = args;
    let run = output::resolve_run(&run)?;
    let options = dirs.options_of_run(&run, false);
    let (exp, prepared) = runner::load_run(&run, &options)?;
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
    println!("\n{} judged, {} skipped, {} left in the pool.", report.answered, report.skipped, report.left);
    print_end(&run, &cells, &report.relevant)?;
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
