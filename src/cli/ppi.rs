//! `ragsweep ppi`: each cell's decision metric by prediction-powered inference — a chat model's
//! suggested grades (`judge --suggest`) on every pooled unit, corrected by the cases people
//! judged through (`judge --order sample` draws them at random), with intervals that carry the
//! model's errors; beside the people-only and model-filled means.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The run directory (results/NAME/latest, or a unique prefix of its run id).
    pub run: PathBuf,
    /// The chat model whose suggestions are used (default: the only one in suggestions.jsonl).
    #[arg(long)]
    pub model: Option<String>,
    /// tuning or reserved (default: tuning, where selection decides).
    #[arg(long, value_parser = parse_split)]
    pub split: Option<SplitChoice>,
    /// 1 − the intervals' confidence.
    #[arg(long, default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, model, split, alpha, dirs } = args;
    let run = output::resolve_run(&run)?;
    let options = dirs.options_of_run(&run, false);
    let (exp, prepared) = runner::load_run(&run, &options)?;
    let path = ragsweep::judge::suggest::path_beside(&exp.judgments);
    let mut suggestions = ragsweep::judge::suggest::read(&path)?;
    let models: std::collections::BTreeSet<String> = suggestions.values().map(|s| s.who.clone()).collect();
    let who = match (&model, models.len()) {
        (Some(m), _) => format!("model:{m}"),
        (None, 1) => models.first().expect("one model").clone(),
        (None, 0) => anyhow::bail!(
            "no suggested grades in {}: ragsweep judge {} --suggest MODEL asks a chat model for them",
            path.display(),
            run.display()
        ),
        (None, _) => {
            anyhow::bail!("suggestions of {} models in {}: name one with --model", models.len(), path.display())
        }
    };
    suggestions.retain(|_, s| s.who == who);
    anyhow::ensure!(!suggestions.is_empty(), "no suggestions of {who} in {}", path.display());
    let split = split.and_then(|s| s.0).unwrap_or(ragsweep::input::golden::Split::Tuning);
    let recorded = runner::rescore::Recorded::open(&run, &exp, &prepared, &options)?;
    let estimates =
        ragsweep::judge::estimate::estimate(&exp, &prepared, &recorded, &suggestions, &[split], alpha, &[])?;
    let metric = exp.decision_metric().to_string();
    let Some(estimates) = estimates.first() else {
        anyhow::bail!("no answerable case on {} in {}", split.as_str(), run.display());
    };
    print!("{}", safe(&output::suggested::ppi_table(estimates, &metric, &who)));
    let judged = ragsweep::input::judgments::effective(ragsweep::input::judgments::read(&exp.judgments)?);
    let agreement = ragsweep::judge::suggest::agreement(&judged, &suggestions);
    print!("{}", safe(&output::suggested::agreement(&agreement, &who)));
    println!(
        "The intervals hold when the cases judged through are a random draw of those with something to judge: `ragsweep judge {} --order sample` judges them so.",
        run.display()
    );
    Ok(ExitCode::SUCCESS)
}
