//! `ragsweep rescore`: Score a finished run again with the current judgments, without retrieving
//! (its ranked lists are in per_query.jsonl); writes a new run beside it and names the cells whose
//! rank moved

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The run directory (results/NAME/latest, or a unique prefix of its run id).
    pub run: PathBuf,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, dirs } = args;
    let run = output::resolve_run(&run)?;
    let options = dirs.options_of_run(&run, std::io::stderr().is_terminal());
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
    ragsweep::judge::estimate::decide(&writer.per_query()?, &mut rescored.result, &exp, &prepared, &options)?;
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
