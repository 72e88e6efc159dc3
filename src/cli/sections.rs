//! `ragsweep sections`: List every document and section id a label may name, with its size and
//! first words

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// A corpus (a folder of documents, a JSONL file, a BEIR folder) or an experiment (.toml).
    pub path: PathBuf,
    /// Only documents and sections whose id, text or description holds this word or phrase
    /// as whole words (any case; a pattern may start with `-`, e.g. `--grep "--gc"`).
    #[arg(long, allow_hyphen_values = true)]
    pub grep: Option<String>,
    /// With --grep: match anywhere inside words too (`prazo` finds `prazos`).
    #[arg(long, requires = "grep")]
    pub substring: bool,
    /// JSON Lines (id, doc, tokens, first_words, label_hash), ready to paste into golden cases.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { path, grep, substring, json } = args;
    let (corpus_path, format, rules, folder, index_meta) = if path.extension().is_some_and(|e| e == "toml") {
        let exp = Experiment::load(&path)?;
        (exp.corpus_path, exp.corpus_format, exp.access_key, exp.corpus_folder, exp.index_meta)
    } else {
        (path.clone(), None, Default::default(), Default::default(), None)
    };
    let mut corpus = ragsweep::input::corpus::Corpus::load_with(&corpus_path, format, &rules, &folder)?;
    if let Some(keys) = index_meta {
        corpus.index_meta = keys;
    }
    let counter = ragsweep::stages::cost::Counter::load(
        ragsweep::stages::cost::DEFAULT_COST_TOKENIZER,
        &std::path::PathBuf::new(),
    )?;
    let grep = grep.map(|pattern| ragsweep::init::Grep { pattern, whole_words: !substring });
    let entries = ragsweep::init::sections(&corpus, &counter, grep.as_ref())?;
    for e in &entries {
        if json {
            println!("{}", serde_json::to_string(e)?);
        } else {
            println!("{:<60} {:>6} tokens  {}", safe(&e.id), e.tokens, safe(&e.first_words));
        }
    }
    if !json {
        eprintln!("{} ids ({}); tokens in {}", entries.len(), corpus.report.summary(), counter.name());
    }
    Ok(ExitCode::SUCCESS)
}
