//! `ragsweep draft`: questions drafted by the team's chat model for sections spread over the
//! corpus, each with a quote of its section that code found there; written to a drafts file
//! beside the golden set, apart from it, for `ragsweep review`.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The experiment whose corpus and golden set the drafts are for.
    pub experiment: PathBuf,
    /// The chat model (`ragsweep models add --name NAME --chat --url URL --model MODEL`).
    #[arg(long = "with", value_name = "MODEL")]
    pub with: String,
    /// Sections to draft for, spread over the corpus's folders as `init` spreads its stubs.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub sections: u64,
    /// Questions asked of the model per section.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=20))]
    pub per_section: u64,
    /// Your own prompt: a text file where {title}, {heading}, {text} and {n} are replaced; the
    /// answer must hold {"questions": [{"question", "quote"}]}.
    #[arg(long)]
    pub prompt: Option<PathBuf>,
    /// Also send sections of restricted documents (their text leaves for the endpoint).
    #[arg(long)]
    pub include_restricted: bool,
    /// The drafts file (default drafts.jsonl beside the golden set); drafts already there stay.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub dirs: Dirs,
}

/// The drafts file of an experiment: `out`, else drafts.jsonl beside its golden set.
pub(crate) fn drafts_path(exp: &Experiment, out: Option<PathBuf>) -> PathBuf {
    out.unwrap_or_else(|| ragsweep::drafts::default_path(&exp.golden.path))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { experiment, with, sections, per_section, prompt, include_restricted, out, dirs } = args;
    let exp = Experiment::load(&experiment)?;
    let path = drafts_path(&exp, out);
    ragsweep::atomic::refuse_overwriting(
        &path,
        &[("golden set", &exp.golden.path), ("corpus", &exp.corpus_path), ("experiment", &experiment)],
    )?;
    let prompt = match &prompt {
        Some(file) => ragsweep::input::text::read(file)?,
        None => ragsweep::drafts::DEFAULT_PROMPT.to_string(),
    };
    let spec = ragsweep::chat::ChatSpec::find(&dirs.models(), &with)?;
    let chat = ragsweep::chat::ChatModel::open(spec, &dirs.cache())?;
    let mut corpus = ragsweep::input::corpus::Corpus::load_with(
        &exp.corpus_path,
        exp.corpus_format,
        &exp.access_key,
        &exp.corpus_folder,
    )?;
    exp.missing_acl.apply(&mut corpus);
    let asked = ragsweep::drafts::golden_questions(&exp.golden, &corpus)?;
    let existing = ragsweep::drafts::read(&path)?;
    let options = ragsweep::drafts::DraftOptions {
        sections: sections as usize,
        per_section: per_section as usize,
        prompt: &prompt,
        include_restricted,
        models_dir: &dirs.models(),
    };
    let (drafts, report) = ragsweep::drafts::draft(&corpus, &chat, existing, &asked, &options)?;
    ragsweep::drafts::write(&path, &drafts)?;
    print!("{}", safe(&report.summary(&with)));
    let pending = drafts.iter().filter(|d| d.status == "pending").count();
    println!("{pending} drafts in {} wait for review: ragsweep review {}", path.display(), experiment.display());
    Ok(ExitCode::SUCCESS)
}
