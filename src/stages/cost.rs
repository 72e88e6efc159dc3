//! Cost accounting (SPEC §8): tokens are counted with a named tokenizer and priced with the
//! experiment's declared prices. Context is counted by default with a BPE tokenizer that LLM
//! prices are quoted in (`o200k_base`, `cl100k_base`, shipped inside the `tiktoken-rs` crate:
//! nothing is downloaded), or with an installed embedding model's tokenizer, or in words.

use std::path::Path;

use tokenizers::{Tokenizer, TruncationParams};

use crate::error::{Error, Result};
use crate::stages::embed::ModelInfo;
pub use crate::vocab::Prices;

impl Prices {
    /// Whether any price is declared (without one every cost is 0).
    pub fn any(&self) -> bool {
        self.embedding_usd_per_1m_tokens > 0.0 || self.llm_usd_per_1m_input_tokens > 0.0
    }
}

/// Counts tokens: Unicode words, a BPE of an LLM family, or the tokenizer of an installed model.
pub enum Counter {
    Words,
    Bpe { name: String, bpe: &'static tiktoken_rs::CoreBPE },
    Model { id: String, tokenizer: Box<Tokenizer> },
}

pub use crate::vocab::DEFAULT_COST_TOKENIZER;

impl Counter {
    /// The context tokenizer named in `[cost] tokenizer`: `o200k_base`, `cl100k_base`, an LLM
    /// model id that maps to one of them (`gpt-4o`), `words`, or an installed embedding
    /// model's id (counting without its truncation: a context is not cut at the model's length).
    pub fn load(name: &str, models: &Path) -> Result<Counter> {
        match name {
            "words" => return Ok(Counter::Words),
            "o200k_base" => return Ok(Counter::Bpe { name: name.into(), bpe: tiktoken_rs::o200k_base_singleton() }),
            "cl100k_base" => return Ok(Counter::Bpe { name: name.into(), bpe: tiktoken_rs::cl100k_base_singleton() }),
            _ => {}
        }
        if let Some(kind) = tiktoken_rs::tokenizer::get_tokenizer(name) {
            let bpe = tiktoken_rs::bpe_for_tokenizer(kind)
                .map_err(|e| Error::Tokenizer(format!("tokenizer for {name}: {e}")))?;
            return Ok(Counter::Bpe { name: format!("{name} ({kind:?})"), bpe });
        }
        let info = crate::stages::embed::find_model(models, name).map_err(|e| {
            Error::Tokenizer(format!(
                "[cost] tokenizer = {name:?} is neither o200k_base, cl100k_base, an LLM model id, words, nor an installed model: {e}"
            ))
        })?;
        Counter::for_model(&info)?.untruncated()
    }

    /// The model's own tokenizer, truncating where the model truncates.
    /// (Unicode words for a random model, which has no tokenizer.)
    pub fn for_model(info: &ModelInfo) -> Result<Counter> {
        match &info.kind {
            crate::stages::embed::ModelKind::Random | crate::stages::embed::ModelKind::Vectors => {
                return Ok(Counter::Words)
            }
            crate::stages::embed::ModelKind::Http(spec) => return Counter::load(&spec.tokenizer, Path::new("")),
            crate::stages::embed::ModelKind::HttpRerank { .. } => {
                return Counter::load(crate::stages::endpoint::DEFAULT_TOKENIZER, Path::new(""))
            }
            crate::stages::embed::ModelKind::Onnx { .. } | crate::stages::embed::ModelKind::CrossEncoder { .. } => {}
        }
        Ok(Counter::Model { id: info.id.clone(), tokenizer: Box::new(model_tokenizer(info)?) })
    }

    /// The same tokenizer without truncation (counts what a text is, not what a model reads).
    pub fn untruncated(mut self) -> Result<Counter> {
        if let Counter::Model { tokenizer, id } = &mut self {
            tokenizer.with_truncation(None).map_err(|e| Error::Tokenizer(format!("{id}: {e}")))?;
        }
        Ok(self)
    }

    pub fn name(&self) -> String {
        match self {
            Counter::Words => "words (Unicode word segments)".into(),
            Counter::Bpe { name, .. } => format!("{name} (tiktoken BPE)"),
            Counter::Model { id, .. } => format!("{id} tokenizer"),
        }
    }

    /// The byte span of each token of `text`, in order, without special tokens. Spans tile
    /// the text where the tokenizer covers every byte (BPE); words and model tokenizers skip
    /// what they do not turn into tokens.
    pub fn token_spans(&self, text: &str) -> Result<Vec<(usize, usize)>> {
        match self {
            Counter::Words => Ok(unicode_segmentation::UnicodeSegmentation::unicode_word_indices(text)
                .map(|(at, w)| (at, at + w.len()))
                .collect()),
            Counter::Bpe { bpe, .. } => {
                let mut at = 0;
                Ok(bpe
                    ._decode_native_and_split(bpe.encode_ordinary(text))
                    .map(|bytes| {
                        let span = (at, at + bytes.len());
                        at += bytes.len();
                        span
                    })
                    .collect())
            }
            Counter::Model { tokenizer, .. } => Ok(tokenizer
                .encode(text, false)
                .map_err(|e| Error::Tokenizer(format!("tokenizing {text:?}: {e}")))?
                .get_offsets()
                .to_vec()),
        }
    }

    /// The tokens `text` becomes, without special tokens (word segments for `Words`).
    pub fn tokens(&self, text: &str) -> Result<Vec<String>> {
        match self {
            Counter::Words => {
                Ok(unicode_segmentation::UnicodeSegmentation::unicode_words(text).map(String::from).collect())
            }
            Counter::Bpe { bpe, .. } => Ok(bpe
                ._decode_native_and_split(bpe.encode_ordinary(text))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .collect()),
            Counter::Model { tokenizer, .. } => Ok(tokenizer
                .encode(text, false)
                .map_err(|e| Error::Tokenizer(format!("tokenizing {text:?}: {e}")))?
                .get_tokens()
                .to_vec()),
        }
    }

    /// Tokens of each text (special tokens included for model tokenizers).
    pub fn count(&self, texts: &[String]) -> Result<Vec<u32>> {
        match self {
            Counter::Words => Ok(texts
                .iter()
                .map(|t| unicode_segmentation::UnicodeSegmentation::unicode_words(t.as_str()).count() as u32)
                .collect()),
            Counter::Bpe { bpe, .. } => {
                use rayon::prelude::*;
                Ok(texts.par_iter().map(|t| bpe.encode_ordinary(t).len() as u32).collect())
            }
            Counter::Model { id, tokenizer } => {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let encodings = tokenizer
                    .encode_batch(refs, true)
                    .map_err(|e| Error::Tokenizer(format!("counting tokens with {id}: {e}")))?;
                Ok(encodings.iter().map(|e| e.len() as u32).collect())
            }
        }
    }
}

/// US dollars for `tokens` at `usd_per_1m` per million.
pub fn usd(tokens: f64, usd_per_1m: f64) -> f64 {
    tokens * usd_per_1m / 1e6
}

/// A model folder's `tokenizer.json`, unpadded and truncating where the model truncates
/// (longest first for a pair).
pub fn model_tokenizer(info: &ModelInfo) -> Result<Tokenizer> {
    let path = info.dir.join("tokenizer.json");
    let mut tokenizer = Tokenizer::from_file(&path)
        .map_err(|e| Error::Tokenizer(format!("{}: cannot read tokenizer: {e}", path.display())))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams { max_length: info.max_length, ..Default::default() }))
        .map_err(|e| Error::Tokenizer(format!("{}: {e}", path.display())))?;
    Ok(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bpe_spans_tile_the_text_and_count_what_count_counts() {
        let c = Counter::load("o200k_base", Path::new("/nonexistent")).unwrap();
        let text = "O prazo de férias é de 30 dias (art. 130, §1º).";
        let spans = c.token_spans(text).unwrap();
        assert_eq!(spans.len() as u32, c.count(&[text.to_string()]).unwrap()[0]);
        assert_eq!(spans.first().unwrap().0, 0);
        assert_eq!(spans.last().unwrap().1, text.len());
        assert!(spans.windows(2).all(|w| w[0].1 == w[1].0), "{spans:?}");
        assert!(Counter::load("gpt-4o", Path::new("/nonexistent")).unwrap().name().contains("O200k"));
        assert!(Counter::load("no-such-tokenizer", Path::new("/nonexistent")).is_err());
    }

    #[test]
    fn words_and_prices() {
        let c = Counter::Words;
        assert_eq!(c.count(&["O prazo é de 30 dias.".to_string(), String::new()]).unwrap(), [6, 0]);
        assert!((usd(2_000_000.0, 0.02) - 0.04).abs() < 1e-12);
    }
}
