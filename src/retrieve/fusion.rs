//! Fusion of any number of rankings into one (hybrid retrieval).
//!
//! Fusion only reads component rankings, so a sweep over `alpha` or the RRF `k` reuses
//! the same searches. A chunk missing from one list contributes nothing from that list.

use std::collections::HashMap;
use std::fmt;

use crate::retrieve::hits::{top_hits, Hit};
use crate::retrieve::source::{NodeRole, ScoreNode, Side};
pub use crate::vocab::{Fusion, Norm};

impl fmt::Display for Fusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fusion::Rrf { k } => write!(f, "rrf(k={k})"),
            Fusion::Convex { alpha, norm } => write!(f, "convex(alpha={alpha},{})", norm.name()),
            Fusion::Dbsf => write!(f, "dbsf"),
        }
    }
}

fn mean_std(hits: &[Hit]) -> (f32, f32) {
    let n = hits.len() as f32;
    let mean = hits.iter().map(|h| h.score).sum::<f32>() / n;
    let var = hits.iter().map(|h| (h.score - mean).powi(2)).sum::<f32>() / n;
    (mean, var.sqrt())
}

/// The list's scores mapped by `norm`.
fn normalized(hits: &[Hit], norm: Norm) -> Vec<f32> {
    if hits.is_empty() {
        return Vec::new();
    }
    match norm {
        Norm::None => hits.iter().map(|h| h.score).collect(),
        Norm::MinMax => {
            let max = hits.iter().map(|h| h.score).fold(f32::NEG_INFINITY, f32::max);
            let min = hits.iter().map(|h| h.score).fold(f32::INFINITY, f32::min);
            let range = max - min;
            hits.iter().map(|h| if range > 0.0 { (h.score - min) / range } else { 1.0 }).collect()
        }
        Norm::ZScore => {
            let (mean, std) = mean_std(hits);
            hits.iter().map(|h| if std > 0.0 { (h.score - mean) / std } else { 0.0 }).collect()
        }
    }
}

fn dbsf_scores(hits: &[Hit]) -> Vec<f32> {
    if hits.is_empty() {
        return Vec::new();
    }
    let (mean, std) = mean_std(hits);
    let lo = mean - 3.0 * std;
    hits.iter().map(|h| if std > 0.0 { (h.score - lo) / (6.0 * std) } else { 0.5 }).collect()
}

/// What each hit of one list (sorted best first) on `side` adds to its fused score, when
/// `lists_on_side` lists share that side.
pub fn contributions(hits: &[Hit], fusion: Fusion, side: Side, lists_on_side: usize) -> Vec<f32> {
    match fusion {
        Fusion::Rrf { k } => (0..hits.len()).map(|r| 1.0 / (k + r as f32 + 1.0)).collect(),
        Fusion::Convex { alpha, norm } => {
            let weight = if side == Side::Dense { alpha } else { 1.0 - alpha } / lists_on_side.max(1) as f32;
            normalized(hits, norm).iter().map(|s| weight * s).collect()
        }
        Fusion::Dbsf => dbsf_scores(hits),
    }
}

/// Each list's contributions (see [`contributions`]), in the order of `lists`.
pub fn all_contributions(lists: &[(&[Hit], Side)], fusion: Fusion) -> Vec<Vec<f32>> {
    let on = |side: Side| lists.iter().filter(|l| l.1 == side).count();
    lists.iter().map(|&(hits, side)| contributions(hits, fusion, side, on(side))).collect()
}

/// Fuses rankings (each sorted best first, with its side) and keeps the best `depth`.
pub fn fuse(lists: &[(&[Hit], Side)], fusion: Fusion, depth: usize) -> Vec<Hit> {
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
    fusion: Fusion,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(list: &[(u32, f32)]) -> Vec<Hit> {
        list.iter().map(|&(chunk, score)| Hit { chunk, score }).collect()
    }

    fn order(h: &[Hit]) -> Vec<u32> {
        h.iter().map(|h| h.chunk).collect()
    }

    /// A lexical and a dense list fused.
    fn fuse2(lex: &[Hit], den: &[Hit], fusion: Fusion, depth: usize) -> Vec<Hit> {
        fuse(&[(lex, Side::Lexical), (den, Side::Dense)], fusion, depth)
    }

    #[test]
    fn rrf_by_hand() {
        // lexical: 1, 2, 3; dense: 3, 1. k = 60.
        let lex = hits(&[(1, 9.0), (2, 5.0), (3, 1.0)]);
        let den = hits(&[(3, 0.9), (1, 0.8)]);
        let f = fuse2(&lex, &den, Fusion::Rrf { k: 60.0 }, 10);
        assert_eq!(order(&f), [1, 3, 2]);
        assert!((f[0].score - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-7);
        assert!((f[1].score - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-7);
        assert!((f[2].score - 1.0 / 62.0).abs() < 1e-7);
    }

    #[test]
    fn convex_minmax_by_hand() {
        let lex = hits(&[(1, 10.0), (2, 6.0), (3, 2.0)]); // 1.0, 0.5, 0.0
        let den = hits(&[(3, 0.9), (2, 0.5)]); // 1.0, 0.0
        let f = fuse2(&lex, &den, Fusion::Convex { alpha: 0.7, norm: Norm::MinMax }, 10);
        // 1: 0.3·1 = 0.3; 2: 0.3·0.5 + 0.7·0 = 0.15; 3: 0.3·0 + 0.7·1 = 0.7
        assert_eq!(order(&f), [3, 1, 2]);
        assert!((f[0].score - 0.7).abs() < 1e-6 && (f[1].score - 0.3).abs() < 1e-6 && (f[2].score - 0.15).abs() < 1e-6);
        // alpha 0 is the lexical ranking, alpha 1 the dense one (then lexical-only items).
        assert_eq!(order(&fuse2(&lex, &den, Fusion::Convex { alpha: 0.0, norm: Norm::MinMax }, 3)), [1, 2, 3]);
        assert_eq!(order(&fuse2(&lex, &den, Fusion::Convex { alpha: 1.0, norm: Norm::MinMax }, 2)), [3, 1]);
    }

    #[test]
    fn zscore_and_dbsf_by_hand() {
        let lex = hits(&[(1, 3.0), (2, 1.0)]); // mean 2, std 1: +1, -1
        let den = hits(&[(2, 0.8), (1, 0.4)]); // mean 0.6, std 0.2: +1, -1
        let z = fuse2(&lex, &den, Fusion::Convex { alpha: 0.5, norm: Norm::ZScore }, 10);
        assert!(z.iter().all(|h| h.score.abs() < 1e-6), "{z:?}");
        // dbsf: (s - (μ - 3σ)) / 6σ → 4/6 and 2/6 on each side.
        let d = fuse2(&lex, &den, Fusion::Dbsf, 10);
        assert!(d.iter().all(|h| (h.score - 1.0).abs() < 1e-6), "{d:?}");
    }

    #[test]
    fn empty_sides_and_depth() {
        let lex = hits(&[(4, 2.0), (5, 1.0)]);
        assert_eq!(order(&fuse2(&lex, &[], Fusion::Dbsf, 1)), [4]);
        assert_eq!(order(&fuse2(&[], &lex, Fusion::Rrf { k: 10.0 }, 5)), [4, 5]);
        assert!(fuse2(&[], &[], Fusion::Convex { alpha: 0.5, norm: Norm::None }, 5).is_empty());
    }

    #[test]
    fn n_lists_fuse_and_convex_shares_a_side_equally() {
        let a = hits(&[(1, 4.0), (2, 2.0)]);
        let b = hits(&[(2, 9.0), (3, 1.0)]);
        let c = hits(&[(3, 0.9), (1, 0.1)]);
        let lists = [(&a[..], Side::Lexical), (&b[..], Side::Lexical), (&c[..], Side::Dense)];
        // rrf k=0: 1 → 1 + 1/2; 2 → 1/2 + 1; 3 → 1/2 + 1 (ties broken by chunk id).
        assert_eq!(order(&fuse(&lists, Fusion::Rrf { k: 0.0 }, 10)), [1, 2, 3]);
        // convex alpha 0.5, minmax: each lexical list weighs 0.25, the dense list 0.5.
        let f = fuse(&lists, Fusion::Convex { alpha: 0.5, norm: Norm::MinMax }, 10);
        let score = |chunk: u32| f.iter().find(|h| h.chunk == chunk).unwrap().score;
        assert!((score(1) - 0.25).abs() < 1e-6 && (score(2) - 0.25).abs() < 1e-6 && (score(3) - 0.5).abs() < 1e-6);
        assert_eq!(fuse2(&a, &c, Fusion::Dbsf, 10).len(), 3);
    }
}
