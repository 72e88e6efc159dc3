//! `ragsweep answers`: Score generated answers (answers.jsonl) against the contexts sent

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The run directory (or results/NAME/latest); answers.jsonl and answers.csv are written into it.
    pub run: PathBuf,
    /// Your model's answers: JSON Lines with id, answer, citations, optional refused and claims.
    pub answers: PathBuf,
    /// The contexts the answers were generated from (default: RUN/contexts.jsonl).
    #[arg(long)]
    pub contexts: Option<PathBuf>,
    /// A phrase that marks a refusal when an answer has no `refused` (repeatable; replaces
    /// the Portuguese and English defaults).
    #[arg(long)]
    pub refusal: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, answers, contexts, refusal } = args;
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
