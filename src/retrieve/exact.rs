//! The exact scan: every (allowed) vector scored by a dot product whose order of operations
//! is fixed, so the oracle's numbers are the same on every CPU and in every index that reads
//! them (the HNSW graph rescoring its candidates).

use std::sync::Arc;

use crate::retrieve::hits::{top_hits, Allowed, Hit};

/// Exact search: a scan of every (allowed) vector.
#[derive(Clone)]
pub struct ExactIndex {
    dim: usize,
    vectors: Arc<Vec<f32>>,
}

/// Independent partial sums of [`dot`]: element `i` goes to sum `i % LANES`. Four 8-wide
/// registers' worth, so that additions overlap instead of waiting on one another.
const LANES: usize = 32;

/// The dot product of two vectors of one length, in one fixed order of operations on every
/// CPU: element `i`'s product (rounded) added to partial sum `i % 32`, the partial sums added
/// in order, then the products of the elements past the last multiple of 32. AVX, when the
/// CPU has it (checked once, at run time: a binary is built for any x86-64), does exactly
/// these operations eight at a time, so a score never depends on the machine.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX.
        return unsafe { dot_avx(a, b) };
    }
    dot_portable(a, b)
}

/// The partial sums added in order, then the products past the last full block.
#[inline(always)]
fn finish(acc: &[f32; LANES], a: &[f32], b: &[f32], body: usize) -> f32 {
    let tail = a[body..].iter().zip(&b[body..]).fold(0.0f32, |s, (x, y)| s + x * y);
    acc.iter().fold(0.0f32, |s, v| s + v) + tail
}

fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let body = n / LANES * LANES;
    let mut acc = [0f32; LANES];
    for (x, y) in a[..body].chunks_exact(LANES).zip(b[..body].chunks_exact(LANES)) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    finish(&acc, &a[..n], &b[..n], body)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn dot_avx(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::{_mm256_add_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps, _mm256_storeu_ps};
    let n = a.len().min(b.len());
    let body = n / LANES * LANES;
    let mut sums = [_mm256_setzero_ps(); LANES / 8];
    let mut i = 0;
    while i < body {
        for (j, sum) in sums.iter_mut().enumerate() {
            // SAFETY: i + 8j + 8 <= body <= n, the length of both slices.
            let (x, y) =
                unsafe { (_mm256_loadu_ps(a.as_ptr().add(i + 8 * j)), _mm256_loadu_ps(b.as_ptr().add(i + 8 * j))) };
            *sum = _mm256_add_ps(*sum, _mm256_mul_ps(x, y));
        }
        i += LANES;
    }
    let mut acc = [0f32; LANES];
    for (j, sum) in sums.iter().enumerate() {
        // SAFETY: acc holds LANES = 8 × sums.len() floats.
        unsafe { _mm256_storeu_ps(acc.as_mut_ptr().add(8 * j), *sum) };
    }
    finish(&acc, &a[..n], &b[..n], body)
}

impl ExactIndex {
    /// `vectors` is `n × dim`, one row per chunk ordinal.
    pub fn new(dim: usize, vectors: impl Into<Arc<Vec<f32>>>) -> Self {
        let vectors = vectors.into();
        assert_eq!(vectors.len() % dim, 0);
        ExactIndex { dim, vectors }
    }

    pub fn len(&self) -> usize {
        self.vectors.len() / self.dim
    }

    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    pub fn size_bytes(&self) -> u64 {
        (self.vectors.len() * 4) as u64
    }

    pub fn vector(&self, ord: usize) -> &[f32] {
        &self.vectors[ord * self.dim..(ord + 1) * self.dim]
    }

    /// Every vector, `len × dim`, by chunk ordinal.
    pub fn vectors(&self) -> &[f32] {
        &self.vectors
    }

    /// Scores every vector, or with `allowed` only the allowed ones.
    pub fn search(&self, query: &[f32], depth: usize, allowed: Option<&Allowed>) -> Vec<Hit> {
        let hits = match allowed {
            None => self
                .vectors
                .chunks_exact(self.dim)
                .enumerate()
                .map(|(i, v)| Hit { chunk: i as u32, score: dot(query, v) })
                .collect(),
            Some(a) => a.iter().map(|i| Hit { chunk: i, score: dot(query, self.vector(i as usize)) }).collect(),
        };
        top_hits(hits, depth)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// `n` unit vectors of `dim` dimensions from a fixed pseudo-random sequence.
    pub(crate) fn random_unit_vectors(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        let mut out = Vec::with_capacity(n * dim);
        for _ in 0..n {
            let v: Vec<f32> = (0..dim)
                .map(|_| {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5
                })
                .collect();
            out.extend(unit(&v));
        }
        out
    }

    #[test]
    fn exact_ranks_by_cosine_and_respects_allowed() {
        let idx = ExactIndex::new(2, [unit(&[1.0, 0.0]), unit(&[1.0, 1.0]), unit(&[0.0, 1.0])].concat());
        let q = unit(&[1.0, 0.2]);
        let hits = idx.search(&q, 3, None);
        assert_eq!(hits.iter().map(|h| h.chunk).collect::<Vec<_>>(), [0, 1, 2]);
        let allowed = Allowed::from_fn(3, |i| i == 2);
        assert_eq!(idx.search(&q, 3, Some(&allowed)).iter().map(|h| h.chunk).collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn dot_is_the_same_number_with_and_without_avx() {
        for len in [0, 1, 7, 31, 32, 33, 64, 100, 384, 385, 768, 1000] {
            let (a, b) = (random_unit_vectors(1, len, 3), random_unit_vectors(1, len, 4));
            let portable = dot_portable(&a, &b);
            assert_eq!(dot(&a, &b).to_bits(), portable.to_bits(), "length {len}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx") {
                assert_eq!(unsafe { dot_avx(&a, &b) }.to_bits(), portable.to_bits(), "length {len}");
            }
        }
    }

    #[test]
    fn dot_matches_naive_sum() {
        let a: Vec<f32> = (0..21).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..21).map(|i| 1.0 - i as f32 * 0.1).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-4);
    }
}
