//! `ragsweep bench-ann`: Exact scan and HNSW on given vectors (.npy): build time, queries/s one
//! query at a time on one thread, and HNSW recall@k against the scan, at --ef-search and over a
//! sweep of beams (10 to 512: `sweep` holds [ef, queries/s, recall]). Prints one JSON line.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The indexed vectors (.npy, unit length, float32).
    pub passages: PathBuf,
    /// The query vectors (.npy, same dimension).
    pub queries: PathBuf,
    /// HNSW links per node.
    #[arg(long, default_value_t = 16)]
    pub m: usize,
    /// HNSW candidate list while building.
    #[arg(long, default_value_t = 200)]
    pub ef_construction: usize,
    /// HNSW candidate list while searching.
    #[arg(long, default_value_t = 128)]
    pub ef_search: usize,
    /// Neighbours asked per query (recall is measured at this k).
    #[arg(long, default_value_t = 10)]
    pub k: usize,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { passages, queries, m, ef_construction, ef_search, k } = args;
    ragsweep::bench::ann(&passages, &queries, m, ef_construction, ef_search, k, &mut |l| println!("{l}"))?;
    Ok(ExitCode::SUCCESS)
}
