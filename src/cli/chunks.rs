//! `ragsweep chunks`: every chunk an experiment's chunkers make, as JSON Lines, so a team can
//! compare them with the chunks its own pipeline ships (offsets in bytes and in characters).

use std::io::Write;

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The experiment file (TOML).
    pub experiment: PathBuf,
    /// Only the chunker with this label (as the matrix names it, e.g. `langchain_recursive(400,0)`).
    #[arg(long)]
    pub chunker: Option<String>,
    /// Write the documents as the chunkers read them (`doc`, `text`) instead of their chunks.
    #[arg(long, conflicts_with = "chunker")]
    pub documents: bool,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { experiment, chunker, documents, dirs } = args;
    let exp = Experiment::load(&experiment)?;
    let prepared = runner::prepare(&exp, &dirs.models())?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if documents {
        for doc in &prepared.corpus.docs {
            writeln!(out, "{}", serde_json::json!({"doc": doc.id, "text": doc.text}))?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let sets = runner::chunk_sets(&prepared, &dirs.options(false), &mut Vec::new())?;
    let labels: Vec<String> = sets.iter().map(|s| s.spec.to_string()).collect();
    if let Some(wanted) = &chunker {
        anyhow::ensure!(
            labels.contains(wanted),
            "no chunker {wanted:?} in {} (its chunkers: {})",
            experiment.display(),
            labels.join(", ")
        );
    }
    let corpus = &prepared.corpus;
    let mut written = 0usize;
    for (set, label) in sets.iter().zip(&labels).filter(|(_, l)| chunker.as_ref().is_none_or(|w| w == *l)) {
        // Chunks are kept by id; listed here in each document's order.
        let spec = serde_json::to_value(&set.spec)?;
        let mut order: Vec<usize> = (0..set.chunks.len()).collect();
        order.sort_by_key(|&i| (set.chunks[i].doc, set.chunks[i].start, set.chunks[i].end));
        // The character offsets of the document being listed (chunks come document by document).
        let mut chars: (u32, Vec<usize>) = (u32::MAX, Vec::new());
        for i in order {
            let c = &set.chunks[i];
            let doc = &corpus.docs[c.doc as usize];
            if chars.0 != c.doc {
                chars = (c.doc, ragsweep::input::text::char_offsets(&doc.text));
            }
            let (start, end) = (c.start as usize, c.end as usize);
            let char_of = |b: usize| chars.1.partition_point(|&o| o < b);
            let line = serde_json::json!({
                "chunker": label,
                "spec": spec,
                "id": c.id,
                "doc": doc.id,
                "start": start,
                "end": end,
                "char_start": char_of(start),
                "char_end": char_of(end),
                "text": &doc.text[start..end],
            });
            writeln!(out, "{line}")?;
            written += 1;
        }
    }
    out.flush()?;
    eprintln!("{written} chunks of {} documents", corpus.docs.len());
    Ok(ExitCode::SUCCESS)
}
