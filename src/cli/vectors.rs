//! `ragsweep vectors`: Write the passage and query vectors of an experiment's first dense cell as
//! NumPy files with their ids (passages.npy + passages.ids, queries.npy + queries.ids: the
//! folder `models add --vectors` reads), embedding what the cache lacks.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The experiment whose first dense cell's vectors are written.
    pub experiment: PathBuf,
    /// The folder to write.
    #[arg(long)]
    pub out: PathBuf,
    /// The first dense cell with this model instead (the grid's other models need not be installed).
    #[arg(long)]
    pub model: Option<String>,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { experiment, out, model, dirs } = args;
    let v = ragsweep::bench::dense_vectors(&experiment, usize::MAX, &dirs.models(), &dirs.cache(), model.as_deref())?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    ragsweep::npy::write_f32(&out.join("passages.npy"), &v.passages, v.dim)?;
    ragsweep::npy::write_f32(&out.join("queries.npy"), &v.queries, v.dim)?;
    for (file, ids) in [("passages.ids", &v.passage_ids), ("queries.ids", &v.query_ids)] {
        let text: String = ids.iter().map(|id| format!("{id}\n")).collect();
        ragsweep::atomic::write_atomic(&out.join(file), text.as_bytes())?;
    }
    println!(
        "{}: passages.npy ({} × {}) and queries.npy ({} × {}), with their ids",
        out.display(),
        v.passages.len() / v.dim,
        v.dim,
        v.queries.len() / v.dim,
        v.dim
    );
    Ok(ExitCode::SUCCESS)
}
