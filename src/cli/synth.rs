//! `ragsweep synth`: Write a synthetic corpus and golden set (BEIR layout) for scaling benchmarks:
//! Zipfian pseudo-words, SciFact-like lengths, one relevant document per question.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The folder to write (corpus.jsonl, queries.jsonl, qrels/, SOURCE.txt).
    pub out: PathBuf,
    /// Documents to write.
    #[arg(long, default_value_t = 10_000)]
    pub documents: usize,
    /// Questions, half train (tuning) and half test (reserved).
    #[arg(long, default_value_t = 500)]
    pub questions: usize,
    /// Distinct words the Zipfian vocabulary draws from.
    #[arg(long, default_value_t = 1_000_000)]
    pub vocabulary: usize,
    /// The seed every document and question is drawn from (same seed, same bytes).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { out, documents, questions, vocabulary, seed } = args;
    let params = ragsweep::synth::SynthParams { documents, questions, vocabulary, seed, ..Default::default() };
    let pb = if std::io::stderr().is_terminal() {
        indicatif::ProgressBar::new(documents as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let started = std::time::Instant::now();
    let done = ragsweep::synth::write(&out, &params, &|n| pb.set_position(n as u64))?;
    pb.finish_and_clear();
    println!(
        "{}: {} documents ({} words, {:.1} MB), {} questions, in {:.1} s",
        out.display(),
        params.documents,
        done.words,
        done.bytes as f64 / 1e6,
        params.questions,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
