//! `sentence`: whole sentences up to `max_chars`; consecutive chunks share `overlap` sentences.

use std::ops::Range;

use super::ChunkerKind;
use crate::error::Result;
use crate::grid::{Bad, Combo};

pub(super) fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerKind> {
    let (max_chars, overlap) = super::sized(combo, "max_chars", false, bad)?;
    Ok(ChunkerKind::Sentence { max_chars, overlap })
}

/// Words that end with a period without ending a sentence (compared lowercased).
const ABBREVIATIONS: &[&str] = &[
    "adm", "al", "ap", "apto", "art", "arts", "av", "cap", "cf", "cia", "co", "corp", "dep", "dr", "dra", "dras",
    "drs", "e.g", "ed", "eng", "etc", "ex", "exa", "exmo", "fig", "figs", "i.e", "inc", "jr", "lt", "ltd", "ltda",
    "me", "min", "mr", "mrs", "ms", "n", "no", "nº", "obs", "op", "p", "pag", "pg", "pp", "pág", "prof", "profa",
    "publ", "r", "ref", "rev", "s.a", "sec", "sr", "sra", "srs", "sta", "sto", "st", "tel", "v", "vol", "vs",
];

/// Sentence spans of `text`: ends at `.`, `!`, `?` or `…` (plus closing quotes or brackets)
/// followed by white space, unless the word before a `.` is an abbreviation or an initial;
/// a blank line always ends a sentence.
pub(super) fn sentences(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let mut end = None;
        if matches!(c, '.' | '!' | '?' | '…') {
            let mut j = i + c.len_utf8();
            while let Some(&(k, d)) = iter.peek() {
                if matches!(d, '.' | '!' | '?' | '…' | '"' | '\'' | ')' | ']' | '»' | '”' | '’') {
                    j = k + d.len_utf8();
                    iter.next();
                } else {
                    break;
                }
            }
            let followed_by_space = j == text.len() || text[j..].starts_with(char::is_whitespace);
            if followed_by_space && !(c == '.' && is_abbreviation(&text[start..i])) {
                end = Some(j);
            }
        } else if c == '\n' && bytes.get(i + 1) == Some(&b'\n') {
            end = Some(i);
        }
        if let Some(e) = end {
            let r = super::trim_span(text, start..e);
            if !r.is_empty() {
                out.push(r);
            }
            start = e;
        }
    }
    let r = super::trim_span(text, start..text.len());
    if !r.is_empty() {
        out.push(r);
    }
    out
}

fn is_abbreviation(before: &str) -> bool {
    let word = before.rsplit(|c: char| c.is_whitespace() || c == '(' || c == '"').next().unwrap_or("");
    if word.is_empty() {
        return false;
    }
    let lower = word.to_lowercase();
    let mut chars = word.chars();
    let single_upper = matches!((chars.next(), chars.next()), (Some(c), None) if c.is_uppercase());
    single_upper || ABBREVIATIONS.contains(&lower.as_str())
}

pub(super) fn spans(text: &str, max_chars: usize, overlap: usize) -> Vec<Range<usize>> {
    let mut units: Vec<Range<usize>> = Vec::new();
    for s in sentences(text) {
        if text[s.clone()].chars().count() > max_chars {
            units.extend(super::fixed::spans(text, s, max_chars, 0));
        } else {
            units.push(s);
        }
    }
    let chars = |r: Range<usize>| text[r].chars().count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < units.len() {
        let mut j = i + 1;
        while j < units.len() && chars(units[i].start..units[j].end) <= max_chars {
            j += 1;
        }
        out.push(units[i].start..units[j - 1].end);
        if j == units.len() {
            break;
        }
        // Repeat up to `overlap` sentences, but never so many that no new one fits.
        i = j.saturating_sub(overlap).max(i + 1);
        while i < j && chars(units[i].start..units[j].end) > max_chars {
            i += 1;
        }
    }
    out
}
