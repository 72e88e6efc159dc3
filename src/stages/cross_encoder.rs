//! A cross-encoder: an ONNX model that reads a question and a passage together and gives one
//! relevance score (a `BertForSequenceClassification`-style export: ms-marco-MiniLM,
//! bge-reranker). It is what teams put after BM25 or a hybrid, so `rerank = "NAME"` with a
//! model whose `model.toml` says `kind = "cross-encoder"` reorders a list by it.
//!
//! Inputs are the pair's `input_ids`, `attention_mask` and (when the graph takes them)
//! `token_type_ids`, truncated to `max_length` longest-first; the output (`output` in
//! `model.toml`, else `logits`, else the only one) is one logit per pair, or two (not
//! relevant, relevant), whose difference is the score: softmax's order, without its rounding.

use std::path::Path;
use std::sync::Mutex;

use ort::session::Session;
use tokenizers::Tokenizer;

use crate::error::{Error, Result};
use crate::stages::embed::{ModelInfo, ModelKind};

/// Pairs scored in one call.
const BATCH: usize = 32;

/// A loaded cross-encoder.
pub struct CrossEncoder {
    pub info: ModelInfo,
    tokenizer: Tokenizer,
    session: Mutex<Session>,
    output: Option<String>,
    token_types: bool,
}

impl CrossEncoder {
    pub fn load(models: &Path, info: &ModelInfo, threads: usize) -> Result<CrossEncoder> {
        let ModelKind::CrossEncoder { file, output } = &info.kind else {
            return Err(Error::ModelFailed(format!("model {} is not a cross-encoder", info.id)));
        };
        crate::stages::embed::verify_installed(info)?;
        let tokenizer = crate::stages::cost::model_tokenizer(info)?;
        let failed = |e: String| Error::ModelFailed(format!("loading cross-encoder {}: {e}", info.id));
        let environment = crate::stages::embed::ort_environment(models)?;
        // The graph is mapped, not copied: ONNX Runtime reads the file itself below.
        let (graph, _) = crate::input::text::open_regular(file)?;
        // SAFETY: the file is only read, and an installed model's files are verified just above.
        let graph = unsafe { memmap2::Mmap::map(&graph) }.map_err(|e| Error::io(file, e))?;
        crate::stages::onnx_graph::check_max_length(&graph, info.max_length, &info.dir.join("model.toml"))?;
        let session = Session::builder(&environment)
            .map_err(|e| failed(e.to_string()))?
            .with_intra_threads(threads.max(1))
            .map_err(|e| failed(e.to_string()))?
            .with_config_entry(crate::stages::embed::NO_SPINNING, "0")
            .map_err(|e| failed(e.to_string()))?
            .commit_from_file(file)
            .map_err(|e| failed(e.to_string()))?;
        let token_types = session.inputs().iter().any(|i| i.name() == "token_type_ids");
        Ok(CrossEncoder {
            info: info.clone(),
            tokenizer,
            session: Mutex::new(session),
            output: output.clone(),
            token_types,
        })
    }

    /// Loads the model and scores a probe pair: what `models add` and `validate` run so that a
    /// run cannot fail on the model (a hosted reranker answers a probe request).
    pub fn check(models: &Path, info: &ModelInfo) -> Result<()> {
        if let ModelKind::HttpRerank { spec, api } = &info.kind {
            return crate::stages::http_rerank::HttpReranker::new(spec, *api, &info.id)?.check();
        }
        let scores = CrossEncoder::load(models, info, 1)?
            .score("ragsweep probe: how many days of vacation?", &["Employees get 30 days of vacation a year."])?;
        if scores.len() != 1 || !scores[0].is_finite() {
            return Err(Error::ModelFailed(format!(
                "cross-encoder {} gave {scores:?} for one probe pair: one finite score was expected",
                info.id
            )));
        }
        Ok(())
    }

    /// The score of each passage for `query`, in order.
    pub fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        let mut scores = Vec::with_capacity(passages.len());
        let mut session = self.session.lock().expect("cross-encoder lock");
        for batch in passages.chunks(BATCH) {
            scores.extend(
                self.score_batch(&mut session, query, batch)
                    .map_err(|e| Error::ModelFailed(format!("scoring with cross-encoder {}: {e}", self.info.id)))?,
            );
        }
        Ok(scores)
    }

    fn score_batch(&self, session: &mut Session, query: &str, batch: &[&str]) -> std::result::Result<Vec<f32>, String> {
        let pairs: Vec<(&str, &str)> = batch.iter().map(|p| (query, *p)).collect();
        let encodings = self.tokenizer.encode_batch(pairs, true).map_err(|e| e.to_string())?;
        let width = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        let column = |get: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<i64> {
            encodings
                .iter()
                .flat_map(|e| {
                    let values = get(e);
                    values.iter().map(|&v| i64::from(v)).chain(std::iter::repeat_n(0, width - values.len()))
                })
                .collect()
        };
        let shape = [batch.len(), width];
        let tensor = |values: Vec<i64>| ort::value::Tensor::from_array((shape, values)).map_err(|e| e.to_string());
        let mut inputs = ort::inputs![
            "input_ids" => tensor(column(&|e| e.get_ids()))?,
            "attention_mask" => tensor(column(&|e| e.get_attention_mask()))?,
        ];
        if self.token_types {
            inputs.push(("token_type_ids".into(), tensor(column(&|e| e.get_type_ids()))?.into()));
        }
        let outputs = session.run(inputs).map_err(|e| e.to_string())?;
        let names: Vec<String> = outputs.keys().map(str::to_string).collect();
        let name = match &self.output {
            Some(name) => name.clone(),
            None if names.iter().any(|n| n == "logits") => "logits".into(),
            None if names.len() == 1 => names[0].clone(),
            None => return Err(format!("outputs {names:?}: name the score's in model.toml (`output = \"…\"`)")),
        };
        let value = outputs.get(&name).ok_or_else(|| format!("no output {name:?} (outputs: {names:?})"))?;
        let (shape, data) = value.try_extract_tensor::<f32>().map_err(|e| e.to_string())?;
        let per_pair = data.len() / batch.len().max(1);
        if data.len() != batch.len() * per_pair || !matches!(per_pair, 1 | 2) {
            return Err(format!(
                "output {name:?} has shape {shape:?}: one logit per pair, or two (not relevant, relevant), was expected"
            ));
        }
        Ok(data.chunks(per_pair).map(|l| if per_pair == 2 { l[1] - l[0] } else { l[0] }).collect())
    }
}
