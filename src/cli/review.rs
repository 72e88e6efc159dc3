//! `ragsweep review`: a person keeps, edits or drops the drafted questions, one key each; kept
//! ones are appended to the golden set, each answer saved before the next draft.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The experiment whose golden set kept drafts join (a JSONL file).
    pub experiment: PathBuf,
    /// The drafts file (default drafts.jsonl beside the golden set).
    #[arg(long)]
    pub drafts: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let exp = Experiment::load(&args.experiment)?;
    let path = super::draft::drafts_path(&exp, args.drafts);
    anyhow::ensure!(path.is_file(), "no drafts in {}: `ragsweep draft` writes them", path.display());
    let (mut stdout, mut stdin) = (std::io::stdout().lock(), std::io::stdin().lock());
    let done = ragsweep::drafts::review(&path, &exp.golden.path, &mut stdin, &mut stdout)?;
    println!(
        "\nkept {}, edited {}, dropped {}; {} drafts still pending in {}",
        done.kept,
        done.edited,
        done.dropped,
        done.pending,
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}
