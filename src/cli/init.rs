//! `ragsweep init`: Start an experiment for your own documents: experiment.toml and golden.jsonl
//! stubs

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// Your documents: a folder (Markdown, text, reStructuredText, HTML, DOCX, PDF), a JSONL file, or a BEIR folder.
    pub corpus: PathBuf,
    /// Where to write experiment.toml and golden.jsonl.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// Stub cases to write, spread across folders and sections (a tenth unanswerable).
    #[arg(long, default_value_t = ragsweep::init::STUBS as u64, value_parser = clap::value_parser!(u64).range(2..=10000))]
    pub stubs: u64,
    /// Installed embedding models, from which init picks the grid's (default ./models when
    /// it exists, else ~/.local/share/ragsweep/models).
    #[arg(long, env = "RAGSWEEP_MODELS")]
    pub models: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { corpus, out, stubs, models } = args;
    let models = models.unwrap_or_else(ragsweep::install::default_dir);
    let done = ragsweep::init::init(&corpus, &out, stubs as usize, &models)?;
    print!("{}", ragsweep::init::guide(&done));
    Ok(ExitCode::SUCCESS)
}
