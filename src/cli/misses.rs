//! `ragsweep misses`: The cases one cell missed and another found, with their exact terms and how
//! each analyzer and model tokenizes them.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The run directory (results/NAME/latest, or a unique prefix of its run id).
    pub run: PathBuf,
    /// The cell that missed.
    #[arg(long)]
    pub cell: String,
    /// The cell that found them (default: the run's selected cell).
    #[arg(long)]
    pub vs: Option<String>,
    /// The metric a case is missed on (0 in the cell, above 0 in the other).
    #[arg(long, default_value = "hit@10", conflicts_with = "budget")]
    pub metric: String,
    /// Miss at a context budget instead: `hit@Bt`, whether the packed context held a
    /// relevant item.
    #[arg(long)]
    pub budget: Option<usize>,
    /// Cases of this split: tuning, reserved or all.
    #[arg(long, default_value = "all", value_parser = parse_split)]
    pub split: SplitChoice,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, cell, vs, metric, budget, split, dirs } = args;
    let metric = budget.map_or(metric, |b| format!("hit@{b}t"));
    let run = output::resolve_run(&run)?;
    let (models, _) = dirs.of_run(&run);
    let data = RunData::load(&run)?;
    let x = Side { run: &data, cell: data.cell(&cell)? };
    let y = Side { run: &data, cell: data.cell_or_default(vs.as_deref())? };
    anyhow::ensure!(
        x.cell.id != y.cell.id,
        "{} would be compared with itself ({}): name the cell that found the cases with --vs",
        x.cell.id,
        if vs.is_some() { "--vs names it" } else { "it is the run's selected cell" }
    );
    let (tokenizers, missing) = compare::Tokenizers::of(&[x.cell, y.cell], &models);
    for id in missing {
        eprintln!("model {id} is not installed in {}: its tokens are not shown", models.display());
    }
    print!("{}", safe(&compare::misses(&x, &y, &metric, split.0, &tokenizers)?));
    Ok(ExitCode::SUCCESS)
}
