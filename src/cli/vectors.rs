//! `ragsweep vectors`: Write the passage and query vectors of an experiment's first dense cell as
//! NumPy files (passages.npy, queries.npy), embedding what the cache lacks.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The experiment whose first dense cell's vectors are written.
    pub experiment: PathBuf,
    /// The folder to write.
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { experiment, out, dirs } = args;
    let v = ragsweep::bench::dense_vectors(&experiment, usize::MAX, &dirs.models(), &dirs.cache())?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    ragsweep::npy::write_f32(&out.join("passages.npy"), &v.passages, v.dim)?;
    ragsweep::npy::write_f32(&out.join("queries.npy"), &v.queries, v.dim)?;
    println!(
        "{}: passages.npy ({} × {}), queries.npy ({} × {})",
        out.display(),
        v.passages.len() / v.dim,
        v.dim,
        v.queries.len() / v.dim,
        v.dim
    );
    Ok(ExitCode::SUCCESS)
}
