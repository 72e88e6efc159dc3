//! Context budgets (SPEC §3): a ranked chunk list packed into a token budget the way a prompt
//! builder packs it, and the token-level overlap of the packed context with the relevant text.
//! Chunkers are compared at equal context this way, not only at equal k.

use crate::error::Result;
use crate::evaluate::label::Piece;
use crate::retrieve::Hit;
use crate::stages::chunk::ChunkSet;

/// A packed context: its pieces in rank order with their tokens, and whether the ranked list
/// ran out before the budget was filled.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    pub pieces: Vec<(Piece, u32)>,
    pub short: bool,
}

impl Packed {
    pub fn tokens(&self) -> u32 {
        self.pieces.iter().map(|p| p.1).sum()
    }
}

/// Packs `hits` into `budget` tokens: whole chunks while the total stays within the budget,
/// then the next chunk cut at the token boundary that reaches it, and stop. `cut(chunk, n)`
/// gives the bytes of the chunk's first `n` tokens.
pub fn pack(
    hits: &[Hit],
    chunks: &ChunkSet,
    chunk_tokens: &[u32],
    budget: usize,
    cut: &dyn Fn(u32, usize) -> Result<usize>,
) -> Result<Packed> {
    let mut pieces = Vec::new();
    let mut total = 0usize;
    for h in hits {
        let c = &chunks.chunks[h.chunk as usize];
        let tokens = chunk_tokens[h.chunk as usize] as usize;
        let whole = Piece { chunk: h.chunk, start: c.start as usize, end: c.end as usize, score: h.score };
        if total + tokens <= budget {
            pieces.push((whole, tokens as u32));
            total += tokens;
            if total == budget {
                return Ok(Packed { pieces, short: false });
            }
            continue;
        }
        let room = budget - total;
        let kept = cut(h.chunk, room)?.min(whole.end - whole.start);
        if kept > 0 {
            pieces.push((Piece { end: whole.start + kept, ..whole }, room as u32));
        }
        return Ok(Packed { pieces, short: false });
    }
    Ok(Packed { pieces, short: true })
}

/// How many of R's items the ideal context of budget `budget` holds (SPEC §3, `ndcg@Bt`): the
/// items, `(grade, tokens)`, in decreasing grade (shorter first among equal grades) packed by
/// the same rule as a ranked list — whole items while they fit, then the next one cut — and at
/// least one.
pub fn ideal_count(items: &[(u32, usize)], budget: usize) -> usize {
    let mut sorted: Vec<(u32, usize)> = items.to_vec();
    sorted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut total = 0usize;
    let mut n = 0;
    for &(_, tokens) in &sorted {
        if total + tokens <= budget {
            total += tokens;
            n += 1;
            if total == budget {
                break;
            }
        } else {
            n += usize::from(budget > total);
            break;
        }
    }
    n.max(1).min(sorted.len().max(1))
}

/// Byte ranges `(doc, start, end)` merged per document: sorted, overlaps and neighbours joined.
fn merged(ranges: &[(u32, usize, usize)]) -> Vec<(u32, usize, usize)> {
    let mut v: Vec<(u32, usize, usize)> = ranges.iter().copied().filter(|r| r.2 > r.1).collect();
    v.sort_unstable();
    let mut out: Vec<(u32, usize, usize)> = Vec::with_capacity(v.len());
    for r in v {
        match out.last_mut() {
            Some(last) if last.0 == r.0 && r.1 <= last.2 => last.2 = last.2.max(r.2),
            _ => out.push(r),
        }
    }
    out
}

/// Token counts of the relevant text T, the context C and their intersection, counted by
/// `tokens_in(doc, start, end)` over merged ranges (shared bytes count once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlap {
    pub relevant: usize,
    pub context: usize,
    pub shared: usize,
}

impl Overlap {
    pub fn of(
        relevant: &[(u32, usize, usize)],
        context: &[(u32, usize, usize)],
        tokens_in: &dyn Fn(u32, usize, usize) -> usize,
    ) -> Overlap {
        let (t, c) = (merged(relevant), merged(context));
        let count = |v: &[(u32, usize, usize)]| v.iter().map(|&(d, s, e)| tokens_in(d, s, e)).sum();
        let mut shared = 0;
        let (mut i, mut j) = (0, 0);
        while i < t.len() && j < c.len() {
            let (a, b) = (t[i], c[j]);
            if (a.0, a.2) <= (b.0, b.1) {
                i += 1;
            } else if (b.0, b.2) <= (a.0, a.1) {
                j += 1;
            } else {
                shared += tokens_in(a.0, a.1.max(b.1), a.2.min(b.2));
                if (a.0, a.2) < (b.0, b.2) {
                    i += 1;
                } else {
                    j += 1;
                }
            }
        }
        Overlap { relevant: count(&t), context: count(&c), shared }
    }

    /// As [`Overlap::of`], with the context counted chunk by chunk (text two chunks share
    /// counts twice), as Chroma's chunking evaluation counts the retrieved chunks' characters.
    pub fn of_chunks(
        relevant: &[(u32, usize, usize)],
        chunks: &[(u32, usize, usize)],
        count: &dyn Fn(u32, usize, usize) -> usize,
    ) -> Overlap {
        let context = chunks.iter().map(|&(d, s, e)| count(d, s, e)).sum();
        Overlap { context, ..Overlap::of(relevant, chunks, count) }
    }

    /// |T ∩ C| / |T|; undefined without relevant text.
    pub fn recall(&self) -> Option<f64> {
        (self.relevant > 0).then(|| self.shared as f64 / self.relevant as f64)
    }

    /// |T ∩ C| / |C|; undefined without relevant text or for an empty context (SPEC §3: an
    /// undefined value is null, not 0).
    pub fn precision(&self) -> Option<f64> {
        (self.relevant > 0 && self.context > 0).then(|| self.shared as f64 / self.context as f64)
    }

    /// |T ∩ C| / |T ∪ C|.
    pub fn iou(&self) -> Option<f64> {
        (self.relevant > 0).then(|| self.shared as f64 / (self.relevant + self.context - self.shared) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_counts_shared_bytes_once_across_documents() {
        // One token per byte.
        let bytes = |_: u32, s: usize, e: usize| e - s;
        let t = [(0, 10, 20), (1, 0, 5)];
        let c = [(0, 15, 30), (0, 18, 25), (2, 0, 4)];
        let o = Overlap::of(&t, &c, &bytes);
        assert_eq!(o, Overlap { relevant: 15, context: 19, shared: 5 });
        assert_eq!(o.recall(), Some(5.0 / 15.0));
        assert_eq!(o.precision(), Some(5.0 / 19.0));
        assert_eq!(o.iou(), Some(5.0 / 29.0));
        assert_eq!(Overlap::of(&[], &c, &bytes).recall(), None);
    }

    #[test]
    fn chunk_by_chunk_the_shared_text_of_overlapping_chunks_counts_twice_in_the_context() {
        let bytes = |_: u32, s: usize, e: usize| e - s;
        let t = [(0, 10, 20)];
        let c = [(0, 15, 30), (0, 18, 25), (2, 0, 4)];
        let o = Overlap::of_chunks(&t, &c, &bytes);
        // 15 + 7 + 4 characters sent; the shared text still once.
        assert_eq!(o, Overlap { relevant: 10, context: 26, shared: 5 });
        assert_eq!(o.iou(), Some(5.0 / 31.0));
    }
}
