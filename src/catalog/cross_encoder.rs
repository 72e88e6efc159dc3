//! A cross-encoder reranker: `rerank = "NAME"` where NAME's `model.toml` says `kind =
//! "cross-encoder"` ([`crate::stages::cross_encoder`]) or `kind = "http-rerank"` (a hosted
//! reranker, [`crate::stages::http_rerank`]). It reorders the first
//! `rerank_candidates` chunks of a list by the model's score of the question read with each
//! chunk's text; nothing is embedded or indexed ahead (its "index" is the chunk texts and the
//! loaded model), so its cost is all at query time, in the reranker's latency stage.

use std::sync::{Arc, Mutex};

use super::{BuiltIndex, Config, IndexIdentity, IndexInput, SourceKind};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::retrieve::hits::{top_hits, Hit};
use crate::retrieve::source::{Query, RankingSource, Restriction, ScoreNode, Side, SourceScore, Usage, Used};
use crate::stages::cross_encoder::CrossEncoder;
use crate::stages::embed::{ModelInfo, ModelKind};
use crate::stages::http_rerank::HttpReranker;

#[derive(Debug)]
pub struct CrossRerank {
    pub info: ModelInfo,
}

/// What scores a pair: a loaded ONNX cross-encoder or a hosted reranker's client.
enum PairScorer {
    Onnx(Box<CrossEncoder>),
    Http(Box<HttpReranker>),
}

impl PairScorer {
    fn load(info: &ModelInfo) -> Result<PairScorer> {
        Ok(match &info.kind {
            ModelKind::HttpRerank { spec, api } => PairScorer::Http(Box::new(HttpReranker::new(spec, *api, &info.id)?)),
            _ => {
                let models = info.dir.parent().unwrap_or(&info.dir);
                PairScorer::Onnx(Box::new(CrossEncoder::load(models, info, rayon::current_num_threads())?))
            }
        })
    }

    /// The scores, and what a hosted reranker's answer said it used.
    fn score(&self, query: &str, passages: &[&str]) -> Result<(Vec<f32>, Used)> {
        match self {
            PairScorer::Onnx(encoder) => Ok((encoder.score(query, passages)?, Used::default())),
            PairScorer::Http(reranker) => reranker.score(query, passages),
        }
    }
}

/// The chunk texts a cross-encoder reads, and the loaded model.
pub struct CrossIndex {
    scorer: PairScorer,
    id: String,
    texts: Vec<String>,
    bytes: u64,
    /// What a hosted reranker's answers said reranking used (explanations not counted).
    used: Mutex<Used>,
    prices: (f64, f64),
}

impl SourceKind for CrossRerank {
    fn label(&self) -> String {
        format!("rerank({})", self.info.id)
    }

    fn config(&self, out: &mut Config) {
        out.push(("rerank", self.info.id.clone()));
    }

    fn index_identity(&self) -> IndexIdentity {
        IndexIdentity::of::<CrossIndex>(self.info.key())
    }

    fn index_name(&self) -> String {
        format!("cross-encoder({})", self.info.id)
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let scorer = PairScorer::load(&self.info)?;
        let texts: Vec<String> = (0..input.chunks).map(|i| (input.text)(i)).collect();
        let bytes = texts.iter().map(|t| t.len() as u64).sum();
        let prices = (self.info.usd_per_1m_tokens.unwrap_or(0.0), self.info.usd_per_1k_searches.unwrap_or(0.0));
        let index = CrossIndex { scorer, id: self.info.id.clone(), texts, bytes, used: Mutex::default(), prices };
        Ok(BuiltIndex { index: Box::new(index), bytes, record: None })
    }

    fn source<'a>(&self, index: &'a BuiltIndex, _: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        Arc::new(CrossSource { index: index.get::<CrossIndex>() })
    }
}

/// Scores chunks by the cross-encoder.
pub struct CrossSource<'a> {
    index: &'a CrossIndex,
}

impl CrossSource<'_> {
    fn scores(&self, query: &Query<'_>, chunks: &[u32]) -> Result<(Vec<f32>, Used)> {
        let texts: Vec<&str> = chunks.iter().map(|&c| self.index.texts[c as usize].as_str()).collect();
        self.index.scorer.score(query.text, &texts)
    }
}

impl RankingSource for CrossSource<'_> {
    /// Every chunk the user may see, scored: exact, and as slow as the model over the corpus.
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        let chunks: Vec<u32> = match restrict {
            Some(r) => r.allowed.iter().collect(),
            None => (0..self.index.texts.len() as u32).collect(),
        };
        let scores = self.rescore(query, &chunks)?;
        Ok(top_hits(chunks.into_iter().zip(scores).map(|(chunk, score)| Hit { chunk, score }).collect(), depth))
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        let score = self.scores(query, &[chunk])?.0[0];
        let name = format!("{}'s score of the question read with the chunk's text", self.index.id);
        Ok(SourceScore { score: Some(score), parts: vec![ScoreNode::leaf(name, Some(score))], bm25: None })
    }

    fn rescore(&self, query: &Query<'_>, chunks: &[u32]) -> Result<Vec<f32>> {
        let (scores, used) = self.scores(query, chunks)?;
        self.index.used.lock().expect("usage counter").add(used);
        Ok(scores)
    }

    fn usage(&self) -> Option<Usage> {
        let PairScorer::Http(_) = self.index.scorer else { return None };
        let (usd_per_1m_tokens, usd_per_1k_searches) = self.index.prices;
        Some(Usage { used: *self.index.used.lock().expect("usage counter"), usd_per_1m_tokens, usd_per_1k_searches })
    }

    fn size_bytes(&self) -> u64 {
        self.index.bytes
    }

    fn side(&self) -> Side {
        Side::Dense
    }
}
