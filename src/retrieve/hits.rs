//! Scored chunks and the bitset of chunks a user may see: what every index search returns
//! and takes.

/// A scored chunk, by ordinal in its chunk set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub chunk: u32,
    pub score: f32,
}

/// The chunks a user may see, as a bitset over chunk ordinals.
#[derive(Debug, Clone)]
pub struct Allowed {
    bits: Vec<u64>,
    count: usize,
}

impl Allowed {
    pub fn from_fn(len: usize, mut visible: impl FnMut(usize) -> bool) -> Self {
        let mut bits = vec![0u64; len.div_ceil(64)];
        let mut count = 0;
        for i in 0..len {
            if visible(i) {
                bits[i / 64] |= 1 << (i % 64);
                count += 1;
            }
        }
        Allowed { bits, count }
    }

    #[inline]
    pub fn contains(&self, ord: u32) -> bool {
        let i = ord as usize;
        self.bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// The allowed ordinals, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.bits.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                if word == 0 {
                    return None;
                }
                let bit = word.trailing_zeros();
                word &= word - 1;
                Some(w as u32 * 64 + bit)
            })
        })
    }
}

/// The best `depth` hits, by score descending, then chunk ordinal ascending (= chunk id
/// ascending, as chunk sets are sorted by id).
pub fn top_hits(mut hits: Vec<Hit>, depth: usize) -> Vec<Hit> {
    let order = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk));
    if hits.len() > depth {
        if depth == 0 {
            return Vec::new();
        }
        hits.select_nth_unstable_by(depth - 1, order);
        hits.truncate(depth);
    }
    hits.sort_unstable_by(order);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_break_by_ordinal() {
        let h = |chunk, score| Hit { chunk, score };
        let top = top_hits(vec![h(3, 1.0), h(1, 2.0), h(2, 1.0), h(0, 1.0)], 3);
        assert_eq!(top, vec![h(1, 2.0), h(0, 1.0), h(2, 1.0)]);
    }

    #[test]
    fn allowed_bitset() {
        let a = Allowed::from_fn(130, |i| i % 2 == 0);
        assert_eq!(a.count(), 65);
        assert!(a.contains(128) && !a.contains(129) && !a.contains(500));
        let ords: Vec<u32> = a.iter().collect();
        assert_eq!(ords.len(), 65);
        assert_eq!(ords[..3], [0, 2, 4]);
        assert_eq!(*ords.last().unwrap(), 128);
    }
}
