//! The chunker catalog: every kind of chunker, one file each.
//!
//! A kind's file reads its parameters from a `[[chunkers]]` combination (each error located at
//! its key) and splits a document into spans; this file is the registry of their names and the
//! one place that asks which kind a chunker is (its columns, its label, whether it reads the
//! document's headings). Chunk sets (`stages::chunk`) hold spans, never kinds;
//! `tests/it/layout.rs` fails when a chunker kind is matched, or told apart by name, elsewhere.

pub(crate) mod brought;
mod chroma;
mod fixed;
mod langchain;
mod llamaindex;
mod markdown;
mod punkt;
mod recursive;
mod sentence;
pub(crate) mod served;

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::grid::{boolean, int, only, Bad, Combo};

/// A chunker kind with its parameters, as the manifest and the chunk-set cache key serialise it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ChunkerKind {
    /// The whole document.
    None,
    /// Windows of `size` chars, each starting `size - overlap` chars after the last.
    Fixed { size: usize, overlap: usize },
    /// Whole sentences up to `max_chars`; consecutive chunks share `overlap` sentences.
    Sentence { max_chars: usize, overlap: usize },
    /// Paragraph → line → sentence → word → char splits, merged up to `size` chars with
    /// about `overlap` chars repeated.
    Recursive { size: usize, overlap: usize },
    /// One chunk per heading block; blocks longer than `max_chars` (when set) are split
    /// recursively.
    Markdown { max_chars: Option<usize> },
    /// LangChain's `RecursiveCharacterTextSplitter`, boundary for boundary.
    #[serde(rename = "langchain_recursive")]
    LangchainRecursive(langchain::Recursive),
    /// Chroma's `FixedTokenChunker`: windows of `size` BPE tokens, `overlap` repeated.
    #[serde(rename = "chroma_fixed_token")]
    ChromaFixedToken { size: usize, overlap: usize, encoding: langchain::Length },
    /// LlamaIndex's `SentenceSplitter`: paragraphs, then Punkt sentences, merged up to `size`
    /// BPE tokens, boundary for boundary.
    #[serde(rename = "llamaindex_sentence")]
    LlamaindexSentence(llamaindex::SentenceSplitter),
    /// Chunks a team's pipeline made, read from a JSON Lines file and placed in their
    /// documents (`brought`).
    Brought(brought::Brought),
    /// The rows of an index the team serves, each found in its document (a served
    /// retriever's chunks: never declared in `[[chunkers]]`).
    Served(served::ServedRows),
}

/// A chunker: its kind and what its chunks' indexed text is prefixed with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChunkerSpec {
    #[serde(flatten)]
    pub kind: ChunkerKind,
    /// Prefix the document title to the indexed text.
    #[serde(default)]
    pub title: bool,
    /// Prefix the Markdown heading path to the indexed text.
    #[serde(default)]
    pub headings: bool,
}

type Parse = fn(&Combo<'_>, Bad<'_>) -> Result<ChunkerKind>;

/// Each kind by the name an experiment gives it, with its parser.
const KINDS: [(&str, Parse); 9] = [
    ("none", none),
    ("fixed", fixed::parse),
    ("sentence", sentence::parse),
    ("recursive", recursive::parse),
    ("markdown", markdown::parse),
    ("langchain_recursive", langchain::parse),
    ("chroma_fixed_token", chroma::parse),
    ("llamaindex_sentence", llamaindex::parse),
    ("brought", brought::parse),
];

/// Every chunker kind's name, in the registry's order.
pub fn kind_names() -> impl Iterator<Item = &'static str> {
    KINDS.iter().map(|(name, _)| *name)
}

/// Keys whose value is itself a list: a list of strings is one value, a list of lists an axis.
pub const LIST_KEYS: [&str; 1] = ["separators"];

/// The chunker a `[[chunkers]]` combination declares.
pub fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerSpec> {
    let Some((_, parse)) = KINDS.iter().find(|(name, _)| *name == combo.kind.0) else {
        let names: Vec<&str> = kind_names().collect();
        return Err(bad(
            combo.kind.1.clone(),
            format!("unknown chunker kind {:?} (expected {})", combo.kind.0, names.join(", ")),
        ));
    };
    let kind = parse(combo, bad)?;
    Ok(ChunkerSpec { kind, title: boolean(combo, "title", bad)?, headings: boolean(combo, "headings", bad)? })
}

/// `none`: the whole document.
fn none(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerKind> {
    only(combo, &["title", "headings"], bad)?;
    Ok(ChunkerKind::None)
}

/// A library splitter's `size` (at least `min_size`, said with `unit`) and `overlap` (no larger
/// than `size`, as `library` refuses).
fn library_size_and_overlap(
    combo: &Combo<'_>,
    min_size: usize,
    unit: &str,
    library: &str,
    bad: Bad<'_>,
) -> Result<(usize, usize)> {
    let size = int(combo, "size", None, bad)?;
    let overlap = int(combo, "overlap", Some(0), bad)?;
    if size < min_size {
        return Err(bad(combo.span_of("size"), format!("`size` must be at least {min_size}{unit}")));
    }
    if overlap > size {
        return Err(bad(
            combo.span_of("overlap"),
            format!("`overlap` must not be larger than `size` ({library} refuses it)"),
        ));
    }
    Ok((size, overlap))
}

/// A size and an overlap, for the kinds that take them (`size_key` names the size); an overlap in
/// chars must be smaller than the size.
fn sized(combo: &Combo<'_>, size_key: &str, overlap_in_chars: bool, bad: Bad<'_>) -> Result<(usize, usize)> {
    only(combo, &[size_key, "overlap", "title", "headings"], bad)?;
    let size = int(combo, size_key, None, bad)?;
    let overlap = int(combo, "overlap", Some(0), bad)?;
    if size == 0 {
        return Err(bad(combo.get(size_key).unwrap().1, format!("`{size_key}` must be at least 1")));
    }
    if overlap_in_chars && overlap >= size {
        return Err(bad(combo.get("overlap").unwrap().1, format!("`overlap` must be smaller than `{size_key}`")));
    }
    Ok((size, overlap))
}

impl ChunkerSpec {
    /// The chunker of a served index: its rows as they are, nothing prefixed.
    pub fn served(rows: served::ServedRows) -> ChunkerSpec {
        ChunkerSpec { kind: ChunkerKind::Served(rows), title: false, headings: false }
    }
}

impl ChunkerKind {
    /// Its name, size and overlap, for the matrix's configuration columns.
    pub fn columns(&self) -> (&'static str, Option<usize>, Option<usize>) {
        match *self {
            ChunkerKind::None => ("none", None, None),
            ChunkerKind::Fixed { size, overlap } => ("fixed", Some(size), Some(overlap)),
            ChunkerKind::Sentence { max_chars, overlap } => ("sentence", Some(max_chars), Some(overlap)),
            ChunkerKind::Recursive { size, overlap } => ("recursive", Some(size), Some(overlap)),
            ChunkerKind::Markdown { max_chars } => ("markdown", max_chars, None),
            ChunkerKind::LangchainRecursive(ref r) => ("langchain_recursive", Some(r.size), Some(r.overlap)),
            ChunkerKind::ChromaFixedToken { size, overlap, .. } => ("chroma_fixed_token", Some(size), Some(overlap)),
            ChunkerKind::LlamaindexSentence(ref s) => ("llamaindex_sentence", Some(s.size), Some(s.overlap)),
            ChunkerKind::Brought(_) => ("brought", None, None),
            ChunkerKind::Served(_) => ("served", None, None),
        }
    }

    /// What else tells it apart from a kind of the same name and sizes: a token count's BPE,
    /// separators that are not the library's defaults.
    fn detail(&self) -> Vec<String> {
        match self {
            ChunkerKind::LangchainRecursive(r) => {
                let mut out = Vec::new();
                if r.length != langchain::Length::Chars {
                    out.push(r.length.name().to_string());
                }
                if !r.default_separators() {
                    out.push(format!("separators {:?}", r.separators));
                }
                if r.keep_separator == langchain::KeepSeparator::End {
                    out.push("separator at end".into());
                }
                out
            }
            ChunkerKind::ChromaFixedToken { encoding, .. } => vec![encoding.name().to_string()],
            ChunkerKind::LlamaindexSentence(s) => s.detail(),
            ChunkerKind::Brought(b) => {
                vec![b.path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())]
            }
            _ => Vec::new(),
        }
    }

    /// Whether its spans are the library's exactly (white space included) rather than trimmed.
    fn exact(&self) -> bool {
        matches!(
            self,
            ChunkerKind::LangchainRecursive(_)
                | ChunkerKind::ChromaFixedToken { .. }
                | ChunkerKind::LlamaindexSentence(_)
        )
    }

    /// Whether a chunk is a whole document (nothing split).
    pub fn keeps_whole_documents(&self) -> bool {
        *self == ChunkerKind::None
    }

    /// The served rows it reads, when its chunks are those of a served index.
    pub fn served(&self) -> Option<&served::ServedRows> {
        match self {
            ChunkerKind::Served(rows) => Some(rows),
            _ => None,
        }
    }

    /// The file of chunks it reads, when its chunks are a team's own.
    pub fn brought(&self) -> Option<&brought::Brought> {
        match self {
            ChunkerKind::Brought(b) => Some(b),
            _ => None,
        }
    }

    /// Whether it splits at the document's headings (whatever the format's headings are).
    pub fn splits_at_headings(&self) -> bool {
        matches!(self, ChunkerKind::Markdown { .. })
    }

    /// The spans of `text` it makes, given the document's `headings` (start, level, label),
    /// trimmed of white space (a library's splitter: as the library leaves them), empty ones
    /// dropped.
    pub fn spans(&self, text: &str, headings: &[(usize, u8, &str)]) -> Vec<Range<usize>> {
        let whole = 0..text.len();
        let out = match *self {
            ChunkerKind::None => vec![whole],
            ChunkerKind::Fixed { size, overlap } => fixed::spans(text, whole, size, overlap),
            ChunkerKind::Sentence { max_chars, overlap } => sentence::spans(text, max_chars, overlap),
            ChunkerKind::Recursive { size, overlap } => recursive::spans(text, whole, size, overlap),
            ChunkerKind::Markdown { max_chars } => markdown::spans(text, headings, max_chars),
            ChunkerKind::LangchainRecursive(ref r) => r.spans(text),
            ChunkerKind::ChromaFixedToken { size, overlap, encoding } => chroma::spans(text, size, overlap, encoding),
            ChunkerKind::LlamaindexSentence(ref s) => s.spans(text),
            ChunkerKind::Served(_) => unreachable!("a served index's chunks are its rows, read from its engine"),
            ChunkerKind::Brought(_) => {
                unreachable!("brought chunks are placed from their file (ChunkSet::from_brought)")
            }
        };
        if self.exact() {
            return out.into_iter().filter(|r| !r.is_empty()).collect();
        }
        out.into_iter().map(|r| trim_span(text, r)).filter(|r| !r.is_empty()).collect()
    }
}

impl fmt::Display for ChunkerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `fixed(400,50)`, `markdown(2000)`, `none`: the name, then its size and overlap if any.
        let (name, size, overlap) = self.kind.columns();
        write!(f, "{name}")?;
        if let Some(rows) = self.kind.served() {
            write!(f, "({} {})", rows.engine, rows.source)?;
        }
        if let Some(size) = size {
            write!(f, "({size}")?;
            if let Some(overlap) = overlap {
                write!(f, ",{overlap}")?;
            }
            write!(f, ")")?;
        }
        let detail = self.kind.detail();
        if !detail.is_empty() {
            write!(f, "[{}]", detail.join("; "))?;
        }
        if self.title {
            write!(f, "+title")?;
        }
        if self.headings {
            write!(f, "+headings")?;
        }
        Ok(())
    }
}

/// Shrinks a span so it starts and ends on non-white-space.
fn trim_span(text: &str, r: Range<usize>) -> Range<usize> {
    let s = &text[r.clone()];
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    if lead == s.len() {
        return r.start..r.start;
    }
    r.start + lead..r.end - trail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::corpus::markdown_headings;

    fn texts(kind: ChunkerKind, text: &str) -> Vec<String> {
        kind.spans(text, &markdown_headings(text)).into_iter().map(|r| text[r].to_string()).collect()
    }

    #[test]
    fn a_spec_is_named_by_its_kind_sizes_and_prefixes() {
        let spec = |kind: ChunkerKind, title: bool| ChunkerSpec { kind, title, headings: false }.to_string();
        assert_eq!(spec(ChunkerKind::None, false), "none");
        assert_eq!(spec(ChunkerKind::Fixed { size: 400, overlap: 50 }, true), "fixed(400,50)+title");
        assert_eq!(spec(ChunkerKind::Sentence { max_chars: 600, overlap: 1 }, false), "sentence(600,1)");
        assert_eq!(spec(ChunkerKind::Recursive { size: 800, overlap: 100 }, false), "recursive(800,100)");
        assert_eq!(spec(ChunkerKind::Markdown { max_chars: None }, false), "markdown");
        assert_eq!(spec(ChunkerKind::Markdown { max_chars: Some(2000) }, false), "markdown(2000)");
    }

    #[test]
    fn abbreviations_do_not_end_sentences() {
        let t = "Conforme o Art. 5 da lei, o Dr. Silva decidiu. Veja p. ex. o anexo! Fim? Sim.";
        let s: Vec<_> = sentence::sentences(t).into_iter().map(|r| &t[r]).collect();
        assert_eq!(s, ["Conforme o Art. 5 da lei, o Dr. Silva decidiu.", "Veja p. ex. o anexo!", "Fim?", "Sim."]);
    }

    #[test]
    fn decimals_and_initials_stay_inside_sentences() {
        let t = "J. Smith measured 3.5 mg. Then it rose.";
        let s: Vec<_> = sentence::sentences(t).into_iter().map(|r| &t[r]).collect();
        assert_eq!(s, ["J. Smith measured 3.5 mg.", "Then it rose."]);
    }

    #[test]
    fn fixed_windows_count_chars_not_bytes() {
        assert_eq!(texts(ChunkerKind::Fixed { size: 4, overlap: 1 }, "açãoxyz"), ["ação", "oxyz"]);
    }

    #[test]
    fn sentence_chunks_overlap_in_whole_sentences() {
        let t = "Um dois. Três quatro. Cinco seis. Sete.";
        let c = texts(ChunkerKind::Sentence { max_chars: 24, overlap: 1 }, t);
        assert_eq!(c, ["Um dois. Três quatro.", "Três quatro. Cinco seis.", "Cinco seis. Sete."]);
        // When the repeated sentence leaves no room for a new one, it is not repeated.
        let c = texts(ChunkerKind::Sentence { max_chars: 22, overlap: 1 }, t);
        assert_eq!(c, ["Um dois. Três quatro.", "Cinco seis. Sete."]);
    }

    #[test]
    fn recursive_prefers_paragraphs_and_respects_size() {
        let t = "Primeiro parágrafo curto.\n\nSegundo parágrafo, um pouco maior que o primeiro.\n\nTerceiro.";
        let c = texts(ChunkerKind::Recursive { size: 40, overlap: 0 }, t);
        assert_eq!(c[0], "Primeiro parágrafo curto.");
        assert!(c.iter().all(|s| s.chars().count() <= 40), "{c:?}");
        let joined: String = c.join(" ");
        assert!(joined.contains("Terceiro."));
    }

    #[test]
    fn markdown_splits_on_every_heading() {
        let t = "intro\n# A\na\n## A.1\nb\n# B\nc";
        assert_eq!(texts(ChunkerKind::Markdown { max_chars: None }, t), ["intro", "# A\na", "## A.1\nb", "# B\nc"]);
    }
}
