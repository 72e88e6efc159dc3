//! Fusion of any number of rankings into one (hybrid retrieval).
//!
//! Fusion only reads component rankings, so a sweep over `alpha` or the RRF `k` reuses
//! the same searches. A chunk missing from one list contributes nothing from that list.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::retrieve::hits::{top_hits, Hit};
use crate::retrieve::source::{NodeRole, ScoreNode, Side};

/// A fusion method with its settings (each is its file in `catalog::fusion`); its `Display` is
/// the name explanations and labels give it.
pub trait Fuse: fmt::Display + fmt::Debug + Send + Sync {
    /// What each hit of one list (sorted best first) on `side` adds to its fused score, when
    /// `lists_on_side` lists share that side.
    fn contributions(&self, hits: &[Hit], side: Side, lists_on_side: usize) -> Vec<f32>;
}

/// A cell's fusion, shared by the cell's retrievers.
pub type Fusion = Arc<dyn Fuse>;

/// The mean and the population standard deviation of a list's scores.
pub fn mean_std(hits: &[Hit]) -> (f32, f32) {
    let n = hits.len() as f32;
    let mean = hits.iter().map(|h| h.score).sum::<f32>() / n;
    let var = hits.iter().map(|h| (h.score - mean).powi(2)).sum::<f32>() / n;
    (mean, var.sqrt())
}

/// Each list's contributions (see [`Fuse::contributions`]), in the order of `lists`.
pub fn all_contributions(lists: &[(&[Hit], Side)], fusion: &dyn Fuse) -> Vec<Vec<f32>> {
    let on = |side: Side| lists.iter().filter(|l| l.1 == side).count();
    lists.iter().map(|&(hits, side)| fusion.contributions(hits, side, on(side))).collect()
}

/// Fuses rankings (each sorted best first, with its side) and keeps the best `depth`.
pub fn fuse(lists: &[(&[Hit], Side)], fusion: &dyn Fuse, depth: usize) -> Vec<Hit> {
    let mut fused: HashMap<u32, f32> = HashMap::with_capacity(lists.iter().map(|l| l.0.len()).sum());
    for (&(hits, _), parts) in lists.iter().zip(all_contributions(lists, fusion)) {
        for (h, s) in hits.iter().zip(parts) {
            *fused.entry(h.chunk).or_insert(0.0) += s;
        }
    }
    top_hits(fused.into_iter().map(|(chunk, score)| Hit { chunk, score }).collect(), depth)
}

/// The fusion's node for `chunk` over its sources' nodes (one per list, in list order): each
/// source's node gains what it adds to the fused score, and the fusion's value is their sum.
pub fn explain(
    lists: &[(&[Hit], Side)],
    fusion: &dyn Fuse,
    chunk: u32,
    mut sources: Vec<ScoreNode>,
    rank: Option<u32>,
) -> ScoreNode {
    let mut fused = 0.0;
    for ((node, &(hits, _)), parts) in sources.iter_mut().zip(lists).zip(all_contributions(lists, fusion)) {
        let part = hits.iter().position(|h| h.chunk == chunk).map_or(0.0, |p| parts[p]);
        fused += part;
        let leaf = ScoreNode::leaf("part of the fused score", Some(part));
        node.children.push(ScoreNode { role: NodeRole::FusedPart, ..leaf });
    }
    ScoreNode { name: fusion.to_string(), value: Some(fused), rank, children: sources, role: NodeRole::Fusion }
}
