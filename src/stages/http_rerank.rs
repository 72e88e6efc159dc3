//! A hosted reranker: the team's rerank endpoint (`kind = "http-rerank"`), called with the
//! question and the candidates' texts and answering one score per candidate, in place of an
//! ONNX cross-encoder ([`crate::stages::cross_encoder`]). `api` names the request and answer
//! shapes teams meet:
//!
//! | `api` | request | answer |
//! |---|---|---|
//! | `cohere` (Cohere, and vLLM's `/v1/rerank`) | `{model, query, documents, top_n}` | `{results: [{index, relevance_score}]}` |
//! | `jina` | `{model, query, documents, top_n}` | `{results: [{index, relevance_score}], usage}` |
//! | `voyage` | `{model, query, documents, top_k}` | `{data: [{index, relevance_score}], usage}` |
//! | `tei` (text-embeddings-inference `/rerank`) | `{query, texts, raw_scores}` | `[{index, score}]` |
//!
//! The endpoint's plumbing (key from the environment, retries with backoff, redaction) is
//! [`crate::stages::endpoint`]'s. Scores are asked at query time, in the reranker's latency
//! stage, like a cross-encoder's: nothing is cached, so the timed pass measures the endpoint.

use crate::error::{Error, Result};
use crate::retrieve::source::Used;
use crate::stages::endpoint::{said, Endpoint, Failure, HttpSpec};

/// `(index, score)` pairs of an answer, and what it says it used.
type Scored = (Vec<(usize, f64)>, Used);

/// A rerank API's request and answer shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RerankApi {
    Cohere,
    Jina,
    Voyage,
    Tei,
}

impl RerankApi {
    pub const NAMES: [&'static str; 4] = ["cohere", "jina", "voyage", "tei"];

    pub fn parse(name: &str) -> Option<RerankApi> {
        Some(match name {
            "cohere" => RerankApi::Cohere,
            "jina" => RerankApi::Jina,
            "voyage" => RerankApi::Voyage,
            "tei" => RerankApi::Tei,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            RerankApi::Cohere => "cohere",
            RerankApi::Jina => "jina",
            RerankApi::Voyage => "voyage",
            RerankApi::Tei => "tei",
        }
    }

    fn body(self, model: &str, query: &str, documents: &[&str]) -> serde_json::Value {
        match self {
            RerankApi::Cohere | RerankApi::Jina => {
                serde_json::json!({"model": model, "query": query, "documents": documents, "top_n": documents.len()})
            }
            RerankApi::Voyage => {
                serde_json::json!({"model": model, "query": query, "documents": documents, "top_k": documents.len()})
            }
            RerankApi::Tei => serde_json::json!({"query": query, "texts": documents, "raw_scores": false}),
        }
    }

    /// `(index, score)` pairs of an answer, and the tokens it says it read.
    fn read(self, text: &str) -> std::result::Result<Scored, String> {
        let answer: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
        let (list, score_key) = match self {
            RerankApi::Cohere | RerankApi::Jina => (&answer["results"], "relevance_score"),
            RerankApi::Voyage => (&answer["data"], "relevance_score"),
            RerankApi::Tei => (&answer, "score"),
        };
        let items =
            list.as_array().ok_or_else(|| format!("no list of scores where the {} API puts it", self.name()))?;
        let pairs = items
            .iter()
            .map(|item| {
                let index = item["index"].as_u64().ok_or("an item without an `index`")? as usize;
                let score =
                    item[score_key].as_f64().ok_or_else(|| format!("an item without a numeric `{score_key}`"))?;
                Ok((index, score))
            })
            .collect::<std::result::Result<Vec<_>, String>>()?;
        let used = Used {
            calls: 1,
            tokens: answer["usage"]["total_tokens"].as_u64().unwrap_or(0),
            searches: answer["meta"]["billed_units"]["search_units"].as_u64().unwrap_or(0),
        };
        Ok((pairs, used))
    }
}

/// A client of one rerank endpoint.
pub struct HttpReranker {
    endpoint: Endpoint,
    api: RerankApi,
}

impl HttpReranker {
    pub fn new(spec: &HttpSpec, api: RerankApi, id: &str) -> Result<HttpReranker> {
        Ok(HttpReranker { endpoint: Endpoint::new(spec, id)?, api })
    }

    /// The score of each passage for `query`, in order (every passage must be scored once, and
    /// every score finite), and what the answer said it used.
    pub fn score(&self, query: &str, passages: &[&str]) -> Result<(Vec<f32>, Used)> {
        if passages.is_empty() {
            return Ok((Vec::new(), Used::default()));
        }
        let body = self.api.body(&self.endpoint.spec.model, query, passages);
        let (pairs, used) = self.endpoint.post(&body, |text| {
            self.api.read(text).map_err(|why| {
                Failure::Stop(format!("the answer is not a {} rerank answer: {why}: {}", self.api.name(), said(text)))
            })
        })?;
        let mut scores = vec![None; passages.len()];
        for (index, score) in pairs {
            let slot = scores.get_mut(index).ok_or_else(|| {
                self.endpoint.error(format!("sent {} passages, got a score for index {index}", passages.len()))
            })?;
            if slot.replace(score).is_some() || !score.is_finite() {
                return Err(self.endpoint.error(format!("index {index} scored twice or not finite ({score})")));
            }
        }
        let missing = scores.iter().filter(|s| s.is_none()).count();
        if missing > 0 {
            return Err(self
                .endpoint
                .error(format!("{missing} of {} passages came back without a score", passages.len())));
        }
        Ok((scores.into_iter().map(|s| s.expect("every index scored") as f32).collect(), used))
    }

    /// Scores a probe pair: what `models add` and `validate` run so that a run cannot fail on
    /// the endpoint's shape.
    pub fn check(&self) -> Result<()> {
        let (scores, _) = self.score(
            "ragsweep probe: how many days of vacation?",
            &["Employees get 30 days of vacation a year.", "The office closes at six."],
        )?;
        if scores.len() != 2 {
            return Err(Error::ModelFailed(format!("the reranker gave {scores:?} for two probe passages")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_api_reads_its_own_answer_shape() {
        let cohere =
            r#"{"results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}], "meta": {}}"#;
        assert_eq!(RerankApi::Cohere.read(cohere).unwrap().0, vec![(1, 0.9), (0, 0.1)]);
        let voyage = r#"{"data": [{"index": 0, "relevance_score": 0.5}], "usage": {"total_tokens": 12}}"#;
        assert_eq!(
            RerankApi::Voyage.read(voyage).unwrap(),
            (vec![(0, 0.5)], Used { calls: 1, tokens: 12, searches: 0 })
        );
        let billed = r#"{"results": [], "meta": {"billed_units": {"search_units": 1}}}"#;
        assert_eq!(RerankApi::Cohere.read(billed).unwrap().1, Used { calls: 1, tokens: 0, searches: 1 });
        assert_eq!(RerankApi::Tei.read(r#"[{"index": 0, "score": 2.5}]"#).unwrap().0, vec![(0, 2.5)]);
        assert!(RerankApi::Tei.read(cohere).is_err(), "a Cohere answer is not TEI's");
        assert!(RerankApi::Jina.read(r#"{"results": [{"index": 0}]}"#).is_err());
    }
}
