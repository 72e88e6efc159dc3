//! `chroma_fixed_token`: Chroma's `FixedTokenChunker` (its chunking evaluation's fixed-size
//! baseline), boundary for boundary: the document encoded once with a tiktoken BPE, windows of
//! `size` tokens, each starting `size - overlap` tokens after the last, nothing stripped.
//!
//! A window's text is its tokens' bytes. Where a window boundary falls inside a character (a
//! character several tokens encode), Python decodes the cut bytes as U+FFFD; here the span takes
//! that character whole, at both ends, since a span holds whole characters.

use std::ops::Range;

use super::langchain::Length;
use super::ChunkerKind;
use crate::error::Result;
use crate::grid::{choice, int, only, Bad, Combo};

pub(super) fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerKind> {
    only(combo, &["size", "overlap", "encoding", "title", "headings"], bad)?;
    let size = int(combo, "size", None, bad)?;
    let overlap = int(combo, "overlap", Some(0), bad)?;
    if size == 0 {
        return Err(bad(combo.span_of("size"), "`size` must be at least 1".into()));
    }
    if overlap >= size {
        return Err(bad(combo.span_of("overlap"), "`overlap` must be smaller than `size`".into()));
    }
    let encoding = choice(combo, "encoding", Length::Cl100kBase, &Length::CHOICES[1..], bad)?;
    Ok(ChunkerKind::ChromaFixedToken { size, overlap, encoding })
}

pub(super) fn spans(text: &str, size: usize, overlap: usize, encoding: Length) -> Vec<Range<usize>> {
    let bpe = encoding.bpe().expect("a fixed-token chunker counts tokens");
    let tokens = bpe.encode_ordinary(text);
    // Byte offset of each token's start, then the text's end.
    let mut at = vec![0usize];
    for bytes in bpe._decode_native_and_split(tokens) {
        at.push(at.last().unwrap() + bytes.len());
    }
    let n = at.len() - 1;
    let floor = |mut b: usize| {
        while !text.is_char_boundary(b) {
            b -= 1;
        }
        b
    };
    let ceil = |mut b: usize| {
        while !text.is_char_boundary(b) {
            b += 1;
        }
        b
    };
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + size).min(n);
        out.push(floor(at[start])..ceil(at[end]));
        if end == n {
            break;
        }
        start += size - overlap;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_of_tokens_tile_the_text_without_overlap() {
        let text = "The quick brown fox jumps over the lazy dog. A second sentence follows it.";
        let spans = spans(text, 5, 0, Length::Cl100kBase);
        assert_eq!(spans.first().unwrap().start, 0);
        assert_eq!(spans.last().unwrap().end, text.len());
        assert!(spans.windows(2).all(|w| w[0].end == w[1].start), "{spans:?}");
        assert_eq!(&text[spans[0].clone()], "The quick brown fox jumps");
    }

    #[test]
    fn a_window_cut_inside_a_character_takes_it_whole() {
        // A rare CJK character is more than one cl100k token.
        let text = "𠜎𠜱𠝹𠱓";
        for s in spans(text, 1, 0, Length::Cl100kBase) {
            assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
        }
    }
}
