//! `langchain_recursive`: LangChain's `RecursiveCharacterTextSplitter`, boundary for boundary, so
//! the chunks measured are the ones a team that splits with it ships.
//!
//! The splitter's own rules, kept as it has them: the first separator that occurs in the text
//! splits it (kept at the start of the piece after it, or the end of the piece before it);
//! pieces shorter than `size` are merged (`_merge_splits`: the piece that would pass `size`
//! closes a chunk, then pieces are dropped from its front while more than `overlap` remain or
//! the next would not fit); a piece of `size` or more is split with the remaining separators, or
//! kept whole when none remain. Merged chunks are stripped of white space as Python's
//! `str.strip` sees it; a piece kept whole is not. Lengths are characters (Python's `len`) or
//! tokens of a tiktoken BPE (`from_tiktoken_encoder`), each piece counted on its own.
//! Separators are literal strings (`is_separator_regex=False`, LangChain's default).

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::ChunkerKind;
use crate::error::Result;
use crate::grid::{choice, only, Bad, Combo};

/// LangChain's default separators.
const DEFAULT_SEPARATORS: [&str; 4] = ["\n\n", "\n", " ", ""];

/// Where a separator stays: at the start of the piece after it (LangChain's `True`) or the
/// end of the piece before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeepSeparator {
    Start,
    End,
}

/// What `size` and `overlap` count: characters, or tokens of a tiktoken BPE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Length {
    Chars,
    Cl100kBase,
    O200kBase,
}

impl Length {
    /// Each by the names it is written with: tiktoken's encoding names, and without `_base`.
    pub(super) const CHOICES: [(&'static str, Length); 5] = [
        ("chars", Length::Chars),
        ("cl100k_base", Length::Cl100kBase),
        ("o200k_base", Length::O200kBase),
        ("cl100k", Length::Cl100kBase),
        ("o200k", Length::O200kBase),
    ];

    pub(super) fn name(self) -> &'static str {
        Length::CHOICES.iter().find(|(_, l)| *l == self).map(|(n, _)| *n).expect("every length has a name")
    }

    /// The BPE it counts with, when it counts tokens.
    pub(super) fn bpe(self) -> Option<&'static tiktoken_rs::CoreBPE> {
        match self {
            Length::Chars => None,
            Length::Cl100kBase => Some(tiktoken_rs::cl100k_base_singleton()),
            Length::O200kBase => Some(tiktoken_rs::o200k_base_singleton()),
        }
    }

    fn of(self, text: &str) -> usize {
        match self.bpe() {
            None => text.chars().count(),
            // As `enc.encode(text)` counts ordinary text; special-token text is counted as text
            // (LangChain's default refuses it with an error).
            Some(bpe) => bpe.encode_ordinary(text).len(),
        }
    }
}

/// The splitter's settings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Recursive {
    pub size: usize,
    pub overlap: usize,
    pub separators: Vec<String>,
    pub keep_separator: KeepSeparator,
    pub length: Length,
}

pub(super) fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerKind> {
    only(combo, &["size", "overlap", "separators", "keep_separator", "length", "title", "headings"], bad)?;
    let (size, overlap) = super::library_size_and_overlap(combo, 1, "", "LangChain", bad)?;
    let separators = match combo.get("separators") {
        None => DEFAULT_SEPARATORS.iter().map(|s| s.to_string()).collect(),
        Some((toml::Value::Array(items), span)) => {
            let list: Option<Vec<String>> = items.iter().map(|v| v.as_str().map(str::to_string)).collect();
            match list {
                Some(list) if !list.is_empty() => list,
                _ => return Err(bad(span, "`separators` must be a non-empty list of strings".into())),
            }
        }
        Some((v, span)) => {
            return Err(bad(span, format!("`separators` must be a list of strings, found {}", v.type_str())))
        }
    };
    let keep_separator = choice(
        combo,
        "keep_separator",
        KeepSeparator::Start,
        &[("start", KeepSeparator::Start), ("end", KeepSeparator::End)],
        bad,
    )?;
    let length = choice(combo, "length", Length::Chars, &Length::CHOICES, bad)?;
    Ok(ChunkerKind::LangchainRecursive(Recursive { size, overlap, separators, keep_separator, length }))
}

impl Recursive {
    /// Whether the separators are LangChain's defaults (a label leaves them out).
    pub(super) fn default_separators(&self) -> bool {
        self.separators.iter().map(String::as_str).eq(DEFAULT_SEPARATORS)
    }

    /// The chunks of `text`, in order, as byte spans.
    pub(super) fn spans(&self, text: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        self.split(text, 0..text.len(), &self.separators, &mut out);
        out
    }

    /// `_split_text`: `range` split at the first separator that occurs in it.
    fn split(&self, text: &str, range: Range<usize>, separators: &[String], out: &mut Vec<Range<usize>>) {
        let piece = &text[range.clone()];
        let mut separator = separators.last().map_or("", String::as_str);
        let mut rest: &[String] = &[];
        for (i, s) in separators.iter().enumerate() {
            if s.is_empty() {
                separator = "";
                break;
            }
            if piece.contains(s.as_str()) {
                separator = s;
                rest = &separators[i + 1..];
                break;
            }
        }
        // The pieces under `size`, each with its length (counted once: a BPE count is not free).
        let mut good: Vec<(Range<usize>, usize)> = Vec::new();
        for s in self.pieces(text, range, separator) {
            let length = self.length.of(&text[s.clone()]);
            if length < self.size {
                good.push((s, length));
                continue;
            }
            out.extend(self.merge(text, &std::mem::take(&mut good)));
            if rest.is_empty() {
                out.push(s);
            } else {
                self.split(text, s, rest, out);
            }
        }
        out.extend(self.merge(text, &good));
    }

    /// `_split_text_with_regex` with a kept literal separator: the pieces of `range`, each
    /// holding the separator before it (`start`) or after it (`end`); empty pieces dropped.
    /// The empty separator splits into characters.
    fn pieces(&self, text: &str, range: Range<usize>, separator: &str) -> Vec<Range<usize>> {
        let at = range.start;
        let piece = &text[range.clone()];
        if separator.is_empty() {
            return piece.char_indices().map(|(i, c)| at + i..at + i + c.len_utf8()).collect();
        }
        let mut cuts: Vec<usize> = vec![range.start];
        for (i, m) in piece.match_indices(separator) {
            cuts.push(match self.keep_separator {
                KeepSeparator::Start => at + i,
                KeepSeparator::End => at + i + m.len(),
            });
        }
        cuts.push(range.end);
        cuts.windows(2).map(|w| w[0]..w[1]).filter(|r| !r.is_empty()).collect()
    }

    /// `_merge_splits` over contiguous pieces with their lengths (the separator is kept, so it
    /// joins nothing): each chunk spans its pieces, stripped.
    fn merge(&self, text: &str, pieces: &[(Range<usize>, usize)]) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let (mut first, mut total) = (0usize, 0usize);
        for (i, &(_, len)) in pieces.iter().enumerate() {
            // A chunk closes when the piece would pass `size` (nothing to close at the start).
            if total + len > self.size && first < i {
                out.extend(stripped(text, pieces[first].0.start..pieces[i - 1].0.end));
                while total > self.overlap || (total + len > self.size && total > 0) {
                    total -= pieces[first].1;
                    first += 1;
                }
            }
            total += len;
        }
        if let (Some(head), Some(last)) = (pieces.get(first), pieces.last()) {
            out.extend(stripped(text, head.0.start..last.0.end));
        }
        out
    }
}

/// Python's `str.isspace`: Rust's white space and the four information separators.
pub(super) fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `range` stripped as Python's `str.strip()` strips; `None` when nothing is left.
pub(super) fn stripped(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let s = &text[range.clone()];
    let start = range.start + (s.len() - s.trim_start_matches(py_space).len());
    let end = range.start + s.trim_end_matches(py_space).len();
    (start < end).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(r: &Recursive, text: &str) -> Vec<String> {
        r.spans(text).into_iter().map(|s| text[s].to_string()).collect()
    }

    fn chars(size: usize, overlap: usize) -> Recursive {
        Recursive {
            size,
            overlap,
            separators: DEFAULT_SEPARATORS.iter().map(|s| s.to_string()).collect(),
            keep_separator: KeepSeparator::Start,
            length: Length::Chars,
        }
    }

    // The outputs below are LangChain's (langchain-text-splitters 1.1.3) for the same calls.
    #[test]
    fn splits_as_langchain_splits() {
        let text = "Hi.\n\nI'm Harrison.\n\nHow? Are? You?\nOkay then f f f f.\nThis is a weird text to write, but gotta test the splittingggg some how.\n\nBye!\n\n-H.";
        assert_eq!(
            chunks(&chars(10, 1), text),
            [
                "Hi.",
                "I'm",
                "Harrison.",
                "How? Are?",
                "You?",
                "Okay then",
                "f f f f.",
                "This is a",
                "weird",
                "text to",
                "write,",
                "but gotta",
                "test the",
                "splitting",
                "gggg",
                "some how.",
                "Bye!",
                "-H."
            ]
        );
    }

    #[test]
    fn overlap_repeats_whole_pieces() {
        assert_eq!(chunks(&chars(7, 3), "a b c d e f g h"), ["a b c d", "d e f", "f g h"]);
    }

    #[test]
    fn a_piece_kept_whole_is_not_stripped() {
        let r = Recursive { separators: vec!["\n".into()], ..chars(5, 0) };
        assert_eq!(chunks(&r, "ab\n  long piece \ncd"), ["ab", "\n  long piece ", "cd"]);
    }

    #[test]
    fn python_strips_information_separators() {
        assert_eq!(chunks(&chars(50, 0), "\u{1f}abc\u{1c}"), ["abc"]);
    }
}
