//! `ragsweep embed EXP --shard I/N`: the I-th share of a grid's embedding work, done ahead of
//! the cells into the shared vector cache, so a Slurm array or a Kubernetes Indexed Job embeds a
//! corpus N ways before any cell runs. Texts are split by their cache key, so shards never
//! share a text: each is embedded once over all shards, and the run after them embeds nothing.

use super::*;
use crate::stages::embed::{embed_all, text_key, EmbedStats, VectorCache};

/// What one shard embedded for one model and role.
pub struct ShardWork {
    pub model: String,
    pub role: Role,
    pub stats: EmbedStats,
}

/// Whether a text with cache key `key` falls in shard `i` (1-based) of `n`.
fn in_shard(key: &[u8; 16], i: usize, n: usize) -> bool {
    let head = u64::from_le_bytes(key[..8].try_into().expect("8 bytes"));
    (head % n as u64) as usize == i - 1
}

/// Embeds shard `i` of `n` of the grid's distinct texts, per model: the questions and every
/// passage of every chunk set the model embeds, each into the model's vector cache.
pub fn embed_shard(prepared: &Prepared, opts: &RunOptions, i: usize, n: usize) -> Result<Vec<ShardWork>> {
    if i == 0 || n == 0 || i > n {
        return Err(Error::Shards(format!("shard {i} of {n}: the shard must be between 1 and {n}")));
    }
    let sets = chunk_sets(prepared, opts, &mut Vec::new())?;
    let mut questions: Vec<String> = prepared.cases.iter().map(|c| c.question.clone()).collect();
    questions.sort_unstable();
    questions.dedup();
    let threads = rayon::current_num_threads();
    let mut out = Vec::new();
    // Brought vectors are read where they are, never embedded.
    for (m, info) in prepared.models.iter().enumerate().filter(|(_, info)| info.kind != ModelKind::Vectors) {
        let passages = model_passages(prepared, &sets, m);
        let mut cache = VectorCache::open(&opts.cache_dir, info)?;
        let embedder = LazyEmbedder::new(&opts.models_dir, info, threads);
        let load = || -> Result<&dyn Embedding> { Ok(embedder.get()? as &dyn Embedding) };
        let counter = Counter::for_model(info)?;
        for (role, texts) in [(Role::Query, questions.clone()), (Role::Passage, passages)] {
            let mine: Vec<String> = texts.into_iter().filter(|t| in_shard(&text_key(role, t), i, n)).collect();
            let counts = build::token_counts(&counter, info, role, &mine);
            let pb = bar(opts.progress, mine.len(), "embed");
            pb.set_message(format!("{} {}", info.id, if role == Role::Query { "questions" } else { "passages" }));
            let (_, stats) = embed_all(&mine, role, &mut cache, &counts, &load, &|done, of| {
                pb.set_length(of as u64);
                pb.set_position(done as u64);
            })?;
            pb.finish_and_clear();
            out.push(ShardWork { model: info.id.clone(), role, stats });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_falls_in_exactly_one_shard() {
        for t in ["a", "b", "férias", "", "x y z"] {
            let key = text_key(Role::Passage, t);
            assert_eq!((1..=4).filter(|&i| in_shard(&key, i, 4)).count(), 1);
        }
    }
}
