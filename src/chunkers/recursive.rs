//! `recursive`: paragraph → line → sentence → word → char splits, merged up to `size` chars
//! with about `overlap` chars repeated.

use std::ops::Range;

use super::ChunkerKind;
use crate::error::Result;
use crate::grid::{Bad, Combo};

pub(super) fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerKind> {
    let (size, overlap) = super::sized(combo, "size", true, bad)?;
    Ok(ChunkerKind::Recursive { size, overlap })
}

#[derive(Clone, Copy)]
enum Separator {
    Str(&'static str),
    Sentence,
}

const SEPARATORS: &[Separator] =
    &[Separator::Str("\n\n"), Separator::Str("\n"), Separator::Sentence, Separator::Str(" ")];

/// Splits `range` at the coarsest separator that occurs in it; pieces that fit are merged
/// with their siblings, pieces that do not are split again at the next separator.
fn recursive_at(text: &str, range: Range<usize>, size: usize, overlap: usize, level: usize) -> Vec<Range<usize>> {
    if text[range.clone()].chars().count() <= size {
        return vec![range];
    }
    let Some(sep) = SEPARATORS.get(level) else {
        return super::fixed::spans(text, range, size, overlap.min(size / 2));
    };
    let mut cuts: Vec<usize> = match sep {
        Separator::Str(s) => text[range.clone()].match_indices(s).map(|(i, m)| range.start + i + m.len()).collect(),
        Separator::Sentence => super::sentence::sentences(&text[range.clone()])
            .into_iter()
            .skip(1)
            .map(|r| range.start + r.start)
            .collect(),
    };
    cuts.retain(|&c| c > range.start && c < range.end);
    cuts.push(range.end);
    let mut out = Vec::new();
    let mut fitting: Vec<Range<usize>> = Vec::new();
    let mut start = range.start;
    for cut in cuts {
        let piece = start..cut;
        start = cut;
        if text[piece.clone()].chars().count() <= size {
            fitting.push(piece);
        } else {
            out.extend(merge(text, &fitting, size, overlap));
            fitting.clear();
            out.extend(recursive_at(text, piece, size, overlap, level + 1));
        }
    }
    out.extend(merge(text, &fitting, size, overlap));
    out
}

/// Greedily joins contiguous pieces into spans of at most `size` chars, each next span
/// starting early enough to repeat up to `overlap` chars of the previous one.
fn merge(text: &str, parts: &[Range<usize>], size: usize, overlap: usize) -> Vec<Range<usize>> {
    let chars = |r: Range<usize>| text[r].chars().count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < parts.len() {
        let mut j = i + 1;
        while j < parts.len() && chars(parts[i].start..parts[j].end) <= size {
            j += 1;
        }
        out.push(parts[i].start..parts[j - 1].end);
        if j == parts.len() {
            break;
        }
        let mut k = j;
        while k > i + 1
            && chars(parts[k - 1].start..parts[j - 1].end) <= overlap
            && chars(parts[k - 1].start..parts[j].end) <= size
        {
            k -= 1;
        }
        i = k;
    }
    out
}

pub(super) fn spans(text: &str, range: Range<usize>, size: usize, overlap: usize) -> Vec<Range<usize>> {
    recursive_at(text, range, size, overlap, 0)
}
