//! `ragsweep bench-embed`: Time the embedder alone (no cache): passages per second on a JSONL
//! corpus.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// A JSONL or BEIR corpus whose `title text` are embedded as passages.
    pub corpus: PathBuf,
    /// The installed model to time (e.g. e5-small-int8).
    #[arg(long)]
    pub model: String,
    /// Texts per batch (longest first by characters), unless --token-budget is given.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// Batch by tokens as runs do: each batch's size × longest text within this budget.
    #[arg(long)]
    pub token_budget: Option<usize>,
    /// ONNX Runtime intra-op threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Embed only the first N documents.
    #[arg(long)]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { corpus, model, batch, token_budget, threads, limit, dirs } = args;
    use ragsweep::stages::embed::{token_batches, Role, MAX_BATCH};
    let corpus = ragsweep::input::corpus::Corpus::load(&corpus, None, &Default::default())?;
    let info = ragsweep::stages::embed::find_model(&dirs.models(), &model)?;
    let embedder = ragsweep::stages::embed::Embedder::load(&dirs.models(), &info, threads)?;
    let mut texts: Vec<String> = corpus
        .docs
        .iter()
        .take(limit.unwrap_or(usize::MAX))
        .map(|d| match &d.title {
            Some(t) => format!("{t} {}", d.text),
            None => d.text.clone(),
        })
        .collect();
    let counter = ragsweep::stages::cost::Counter::for_model(&info)?;
    let all: Vec<usize> = (0..texts.len()).collect();
    let counts = ragsweep::build::token_counts(&counter, &info, Role::Passage, &texts)(&all)?;
    let mut counted: Vec<(u32, String)> = counts.into_iter().zip(std::mem::take(&mut texts)).collect();
    match token_budget {
        Some(_) => counted.sort_by_key(|(n, _)| std::cmp::Reverse(*n)),
        None => counted.sort_by_key(|(_, t)| std::cmp::Reverse(t.len())),
    }
    let lengths: Vec<u32> = counted.iter().map(|(n, _)| *n).collect();
    let sizes = match token_budget {
        Some(budget) => token_batches(&lengths, budget, MAX_BATCH),
        None => lengths.chunks(batch.max(1)).map(<[u32]>::len).collect(),
    };
    let refs: Vec<&str> = counted.iter().map(|(_, t)| t.as_str()).collect();
    embedder.embed_batch(&refs[..sizes[0]], Role::Passage)?;
    let (mut start, mut padded) = (0, 0u64);
    let started = std::time::Instant::now();
    for size in &sizes {
        embedder.embed_batch(&refs[start..start + size], Role::Passage)?;
        padded += *size as u64 * u64::from(lengths[start]);
        start += size;
    }
    let secs = started.elapsed().as_secs_f64();
    let tokens: u64 = lengths.iter().map(|&n| u64::from(n)).sum();
    println!(
        "ragsweep  model={model} texts={} batches={} {} threads={threads} seconds={secs:.2} passages_per_s={:.1} padding_efficiency={:.3}",
        refs.len(),
        sizes.len(),
        token_budget.map_or(format!("batch={batch}"), |b| format!("token_budget={b}")),
        refs.len() as f64 / secs,
        tokens as f64 / padded as f64
    );
    Ok(ExitCode::SUCCESS)
}
