//! `llamaindex_sentence`: LlamaIndex's `SentenceSplitter` (llama-index-core 0.14), boundary for
//! boundary, so the chunks measured are the ones a team that splits with it ships.
//!
//! The splitter's own rules, kept as it has them: a text of more than `size` tokens is split by
//! the first of these that cuts it in two or more — the paragraph separator (kept at the start
//! of the piece after it), NLTK's untrained Punkt sentences (`punkt`), the clause regex
//! `[^,.;。？！]+[,.;。？！]?`, the word separator (kept like the paragraph one), characters — and
//! each piece still over `size` is split again. Pieces are merged up to `size` tokens: a chunk
//! closes when the next piece would pass it, and the next chunk starts with the last chunk's
//! trailing pieces that fit in `overlap` (dropped from its front when the piece after them would
//! not fit). The library also marks which pieces are whole sentences, but the branch of `_merge`
//! that reads the mark cannot be reached. Chunks are stripped as Python's `str.strip` strips;
//! empty ones dropped. Tokens are a tiktoken BPE's with special tokens allowed
//! (`get_tokenizer()`: cl100k_base).

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::langchain::{stripped, Length};
use super::{punkt, ChunkerKind};
use crate::error::Result;
use crate::grid::{choice, only, Bad, Combo};

const DEFAULT_SEPARATOR: &str = " ";
const DEFAULT_PARAGRAPH_SEPARATOR: &str = "\n\n\n";

/// `CHUNKING_REGEX`, the secondary split into clauses.
static CLAUSES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("[^,.;。？！]+[,.;。？！]?|[,.;。？！]").expect("valid regex"));

/// The splitter's settings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SentenceSplitter {
    pub size: usize,
    pub overlap: usize,
    pub separator: String,
    pub paragraph_separator: String,
    pub encoding: Length,
}

pub(super) fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerKind> {
    only(combo, &["size", "overlap", "separator", "paragraph_separator", "encoding", "title", "headings"], bad)?;
    // A character is at most 4 tokens (its UTF-8 bytes), so from 4 on no piece is ever over
    // `size` (the library stops with "Single token exceeded chunk size" there).
    let (size, overlap) = super::library_size_and_overlap(combo, 4, " tokens", "LlamaIndex", bad)?;
    let text = |key: &str, default: &str| -> Result<String> {
        match combo.get(key) {
            None => Ok(default.to_string()),
            Some((toml::Value::String(s), _)) if !s.is_empty() => Ok(s.clone()),
            Some((v, span)) => Err(bad(span, format!("`{key}` must be a non-empty string, found {v}"))),
        }
    };
    let separator = text("separator", DEFAULT_SEPARATOR)?;
    let paragraph_separator = text("paragraph_separator", DEFAULT_PARAGRAPH_SEPARATOR)?;
    let encoding = choice(combo, "encoding", Length::Cl100kBase, &Length::CHOICES[1..], bad)?;
    Ok(ChunkerKind::LlamaindexSentence(SentenceSplitter { size, overlap, separator, paragraph_separator, encoding }))
}

/// A piece of the text with its token count.
struct Split {
    range: Range<usize>,
    tokens: usize,
}

impl SentenceSplitter {
    /// What a label says beside the name and sizes: settings other than the library's defaults.
    pub(super) fn detail(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.encoding != Length::Cl100kBase {
            out.push(self.encoding.name().to_string());
        }
        if self.separator != DEFAULT_SEPARATOR {
            out.push(format!("separator {:?}", self.separator));
        }
        if self.paragraph_separator != DEFAULT_PARAGRAPH_SEPARATOR {
            out.push(format!("paragraphs {:?}", self.paragraph_separator));
        }
        out
    }

    /// The chunks of `text`, in order, as byte spans.
    pub(super) fn spans(&self, text: &str) -> Vec<Range<usize>> {
        let mut splits = Vec::new();
        self.split(text, 0..text.len(), &mut splits);
        self.merge(text, &splits)
    }

    fn tokens(&self, text: &str) -> usize {
        self.encoding.bpe().expect("a sentence splitter counts tokens").encode_with_special_tokens(text).len()
    }

    /// `_split`: `range` whole when it fits, else its pieces, each split again while over `size`
    /// (but for the one piece that nothing splits further).
    fn split(&self, text: &str, range: Range<usize>, out: &mut Vec<Split>) {
        let tokens = self.tokens(&text[range.clone()]);
        if tokens <= self.size {
            out.push(Split { range, tokens });
            return;
        }
        let pieces = self.pieces(text, range);
        let indivisible = pieces.len() == 1;
        for piece in pieces {
            let tokens = self.tokens(&text[piece.clone()]);
            if tokens <= self.size || indivisible {
                out.push(Split { range: piece, tokens });
            } else {
                self.split(text, piece, out);
            }
        }
    }

    /// `_get_splits_by_fns`: the pieces of the first way that cuts `range` in two or more.
    fn pieces(&self, text: &str, range: Range<usize>) -> Vec<Range<usize>> {
        let at = range.start;
        let piece = &text[range.clone()];
        let paragraphs = keep_separator(piece, &self.paragraph_separator);
        if paragraphs.len() > 1 {
            return shift(paragraphs, at);
        }
        let starts = punkt::sentence_starts(piece);
        let ends = starts.iter().skip(1).copied().chain([piece.len()]);
        let sentences: Vec<Range<usize>> = starts.iter().zip(ends).map(|(&s, e)| s..e).collect();
        if sentences.len() > 1 {
            return shift(sentences, at);
        }
        let clauses: Vec<Range<usize>> = CLAUSES.find_iter(piece).map(|m| m.range()).collect();
        if clauses.len() > 1 {
            return shift(clauses, at);
        }
        let words = keep_separator(piece, &self.separator);
        if words.len() > 1 {
            return shift(words, at);
        }
        let chars = piece.char_indices().map(|(i, c)| i..i + c.len_utf8()).collect();
        shift(chars, at)
    }

    /// `_merge`, then `_postprocess_chunks` (stripped, empty ones dropped).
    fn merge(&self, text: &str, splits: &[Split]) -> Vec<Range<usize>> {
        let mut chunks = Vec::new();
        let mut current: VecDeque<usize> = VecDeque::new();
        let mut length = 0;
        let mut new_chunk = true;
        let mut i = 0;
        while i < splits.len() {
            let split = &splits[i];
            if length + split.tokens > self.size && !new_chunk {
                chunks.push(span(splits, &current));
                // The next chunk starts with the last one's trailing pieces that fit in `overlap`.
                let last = std::mem::take(&mut current);
                length = 0;
                new_chunk = true;
                for &j in last.iter().rev() {
                    if length + splits[j].tokens > self.overlap {
                        break;
                    }
                    length += splits[j].tokens;
                    current.push_front(j);
                }
                continue;
            }
            if new_chunk {
                while length + split.tokens > self.size {
                    let Some(j) = current.pop_front() else { break };
                    length -= splits[j].tokens;
                }
            }
            length += split.tokens;
            current.push_back(i);
            new_chunk = false;
            i += 1;
        }
        if !new_chunk {
            chunks.push(span(splits, &current));
        }
        chunks.into_iter().filter_map(|r| stripped(text, r)).collect()
    }
}

/// The text the splits `current` hold (they are contiguous).
fn span(splits: &[Split], current: &VecDeque<usize>) -> Range<usize> {
    match (current.front(), current.back()) {
        (Some(&first), Some(&last)) => splits[first].range.start..splits[last].range.end,
        _ => 0..0,
    }
}

/// `split_text_keep_separator`: `text` cut before each separator, empty pieces dropped.
fn keep_separator(text: &str, separator: &str) -> Vec<Range<usize>> {
    let mut cuts: Vec<usize> = vec![0];
    cuts.extend(text.match_indices(separator).map(|(i, _)| i));
    cuts.push(text.len());
    cuts.windows(2).map(|w| w[0]..w[1]).filter(|r| !r.is_empty()).collect()
}

fn shift(ranges: Vec<Range<usize>>, by: usize) -> Vec<Range<usize>> {
    ranges.into_iter().map(|r| r.start + by..r.end + by).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(size: usize, overlap: usize, text: &str) -> Vec<String> {
        let s = SentenceSplitter {
            size,
            overlap,
            separator: DEFAULT_SEPARATOR.into(),
            paragraph_separator: DEFAULT_PARAGRAPH_SEPARATOR.into(),
            encoding: Length::Cl100kBase,
        };
        s.spans(text).into_iter().map(|r| text[r].to_string()).collect()
    }

    // The outputs are llama-index-core 0.14.25's `SentenceSplitter(chunk_size, chunk_overlap)`.
    #[test]
    fn splits_as_llamaindex_splits() {
        let t = "He said \"Stop.\" Then he left. Mr. Smith arrived at 3 p.m. today... Really? Yes! \
                 (It was late.) J. R. R. Tolkien wrote 3. books.\n\n\n\nNew para. Another one.";
        assert_eq!(
            chunks(20, 5, t),
            [
                "He said \"Stop.\" Then he left. Mr.",
                "Mr. Smith arrived at 3 p.m. today... Really? Yes!",
                "Yes! (It was late.)",
                "(It was late.) J. R. R. Tolkien wrote 3. books.",
                "New para. Another one."
            ]
        );
    }

    #[test]
    fn special_token_text_counts_as_its_token() {
        let s = SentenceSplitter {
            size: 4,
            overlap: 0,
            separator: DEFAULT_SEPARATOR.into(),
            paragraph_separator: DEFAULT_PARAGRAPH_SEPARATOR.into(),
            encoding: Length::Cl100kBase,
        };
        assert_eq!(s.tokens("<|endoftext|>"), 1);
        assert_eq!(chunks(4, 0, "<|endoftext|> a b c d"), ["<|endoftext|> a b c", "d"]);
    }
}
