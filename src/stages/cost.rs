//! Cost accounting (SPEC §8): tokens are counted with a named tokenizer and priced with the
//! experiment's declared prices.

use std::path::Path;

use serde::Serialize;
use tokenizers::{Tokenizer, TruncationParams};

use crate::error::{Error, Result};
use crate::stages::embed::ModelInfo;

/// Prices declared in an experiment's `[cost]` table, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Prices {
    /// What a hosted embedding API would charge for the tokens embedded.
    pub embedding_usd_per_1m_tokens: f64,
    /// What a model charges for the context sent to it.
    pub llm_usd_per_1m_input_tokens: f64,
}

/// Counts tokens: Unicode words, or the tokenizer of an installed model.
pub enum Counter {
    Words,
    Model { id: String, tokenizer: Box<Tokenizer> },
}

impl Counter {
    /// `"words"`, or the id of an installed model whose tokenizer counts.
    pub fn load(name: &str, models: &Path) -> Result<Counter> {
        if name == "words" {
            return Ok(Counter::Words);
        }
        let info = crate::stages::embed::find_model(models, name)?;
        Counter::for_model(&info)
    }

    /// The model's own tokenizer, truncating where the model truncates.
    /// (Unicode words for a random model, which has no tokenizer.)
    pub fn for_model(info: &ModelInfo) -> Result<Counter> {
        if info.kind == crate::stages::embed::ModelKind::Random {
            return Ok(Counter::Words);
        }
        let path = info.dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&path)
            .map_err(|e| Error::Other(format!("{}: cannot read tokenizer: {e}", path.display())))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: info.max_length, ..Default::default() }))
            .map_err(|e| Error::Other(format!("{}: {e}", path.display())))?;
        Ok(Counter::Model { id: info.id.clone(), tokenizer: Box::new(tokenizer) })
    }

    pub fn name(&self) -> String {
        match self {
            Counter::Words => "words (Unicode word segments)".into(),
            Counter::Model { id, .. } => format!("{id} tokenizer"),
        }
    }

    /// The tokens `text` becomes, without special tokens (word segments for `Words`).
    pub fn tokens(&self, text: &str) -> Result<Vec<String>> {
        match self {
            Counter::Words => {
                Ok(unicode_segmentation::UnicodeSegmentation::unicode_words(text).map(String::from).collect())
            }
            Counter::Model { tokenizer, .. } => Ok(tokenizer
                .encode(text, false)
                .map_err(|e| Error::Other(format!("tokenizing {text:?}: {e}")))?
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
            Counter::Model { id, tokenizer } => {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let encodings = tokenizer
                    .encode_batch(refs, true)
                    .map_err(|e| Error::Other(format!("counting tokens with {id}: {e}")))?;
                Ok(encodings.iter().map(|e| e.len() as u32).collect())
            }
        }
    }
}

/// US dollars for `tokens` at `usd_per_1m` per million.
pub fn usd(tokens: f64, usd_per_1m: f64) -> f64 {
    tokens * usd_per_1m / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_prices() {
        let c = Counter::Words;
        assert_eq!(c.count(&["O prazo é de 30 dias.".to_string(), String::new()]).unwrap(), [6, 0]);
        assert!((usd(2_000_000.0, 0.02) - 0.04).abs() < 1e-12);
    }
}
