//! `markdown`: one chunk per heading block, whatever the format's headings are; blocks longer
//! than `max_chars` (when set) are split recursively.

use std::ops::Range;

use super::ChunkerKind;
use crate::error::Result;
use crate::grid::{int, only, Bad, Combo};

pub(super) fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerKind> {
    only(combo, &["max_chars", "title", "headings"], bad)?;
    let max_chars = combo.get("max_chars").map(|_| int(combo, "max_chars", None, bad)).transpose()?;
    if max_chars == Some(0) {
        return Err(bad(combo.get("max_chars").unwrap().1, "`max_chars` must be at least 1".into()));
    }
    Ok(ChunkerKind::Markdown { max_chars })
}

pub(super) fn spans(text: &str, headings: &[(usize, u8, &str)], max_chars: Option<usize>) -> Vec<Range<usize>> {
    let mut starts: Vec<usize> = headings.iter().map(|h| h.0).collect();
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    let mut out = Vec::new();
    for (i, &s) in starts.iter().enumerate() {
        let e = starts.get(i + 1).copied().unwrap_or(text.len());
        match max_chars {
            Some(m) if text[s..e].chars().count() > m => out.extend(super::recursive::spans(text, s..e, m, 0)),
            _ => out.push(s..e),
        }
    }
    out
}
