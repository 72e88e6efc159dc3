//! `fixed`: windows of `size` chars, each starting `size - overlap` chars after the last.

use std::ops::Range;

use super::ChunkerKind;
use crate::error::Result;
use crate::grid::{Bad, Combo};

pub(super) fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerKind> {
    let (size, overlap) = super::sized(combo, "size", true, bad)?;
    Ok(ChunkerKind::Fixed { size, overlap })
}

/// Byte offsets of every char boundary in `range`, plus its end.
fn char_offsets(text: &str, range: Range<usize>) -> Vec<usize> {
    crate::input::text::char_offsets(&text[range.clone()]).into_iter().map(|b| range.start + b).collect()
}

pub(super) fn spans(text: &str, range: Range<usize>, size: usize, overlap: usize) -> Vec<Range<usize>> {
    let offsets = char_offsets(text, range);
    let n = offsets.len() - 1;
    let step = size.saturating_sub(overlap).max(1);
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let j = (i + size).min(n);
        out.push(offsets[i]..offsets[j]);
        if j == n {
            break;
        }
        i += step;
    }
    out
}
