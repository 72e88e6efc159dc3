//! `ragsweep explain`: Why a cell ranked what it ranked for one case: BM25 term contributions,
//! cosines and exact-scan ranks, each hybrid side's share, and the case's miss causes

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The run directory (results/NAME/latest, or a unique prefix of its run id).
    pub run: PathBuf,
    /// The cell to explain.
    #[arg(long)]
    pub cell: String,
    /// A case id (repeatable: one explanation per case).
    #[arg(long, required = true)]
    pub case: Vec<String>,
    /// Also explain this document or unit (ranked or not).
    #[arg(long)]
    pub doc: Option<String>,
    /// Explain at a context budget (one of the experiment's): ranks in the packed context the
    /// budget metrics judged.
    #[arg(long)]
    pub budget: Option<usize>,
    /// Print JSON Lines (one explanation per case) instead of tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, cell, case, doc, budget, json, dirs } = args;
    let progress = std::io::stderr().is_terminal();
    let run = output::resolve_run(&run)?;
    let options = dirs.options_of_run(&run, progress);
    for (i, e) in runner::explain_cases(&run, &cell, &case, doc.as_deref(), budget, &options)?.iter().enumerate() {
        if json {
            println!("{}", serde_json::to_string(e)?);
        } else {
            print!("{}{}", if i > 0 { "\n" } else { "" }, safe(&runner::render_explanation(e)));
        }
    }
    Ok(ExitCode::SUCCESS)
}
