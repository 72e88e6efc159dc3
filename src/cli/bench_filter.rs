//! `ragsweep bench-filter`: Latency of filtered vector search (graph, exact scan, per-query choice)
//! at 1% to 90% allowed, on the chunks of an experiment's first chunker and first dense model.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The experiment whose first chunker and dense model are timed.
    pub experiment: PathBuf,
    /// Queries timed per fraction and strategy.
    #[arg(long, default_value_t = 300)]
    pub queries: usize,
    /// Also measure a serving engine on the same vectors and access rule: `pg` (PostgreSQL +
    /// pgvector, a private server started and stopped here), `milvus` or `chroma` (their private
    /// servers, collections kept in the cache by the vectors' content; Chroma's search list is a
    /// collection's setting, so it holds two: at `--engine-ef-search`, and as long as the corpus).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(ragsweep::engine::servers::engine_names()))]
    pub engine: Option<String>,
    /// HNSW candidate list of the engine's search (pgvector's default: 40; Milvus takes at least
    /// the 10 asked).
    #[arg(long, default_value_t = 40)]
    pub engine_ef_search: usize,
    #[command(flatten)]
    pub dirs: Dirs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { experiment, queries, engine, engine_ef_search, dirs } = args;
    let engine = engine
        .map(|name| ragsweep::engine::servers::engine_named(&name).ok_or_else(|| anyhow::anyhow!("no engine {name}")))
        .transpose()?
        .map(|kind| ragsweep::bench::BenchEngine { kind, engines: dirs.engines(), ef_search: engine_ef_search });
    ragsweep::bench::filter(&experiment, queries, engine, &dirs.models(), &dirs.cache(), &mut |l| println!("{l}"))?;
    Ok(ExitCode::SUCCESS)
}
