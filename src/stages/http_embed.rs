//! Embeddings from an endpoint that speaks the OpenAI embeddings API (`POST …/embeddings`
//! with `{"model", "input": [...]}`; [`crate::stages::endpoint`]). A model folder whose
//! `model.toml` says `kind = "http"` names the endpoint; its vectors are cached by content like
//! a local model's, under a key that names the endpoint's model and settings (never the API
//! key), so a second run sends nothing.
//!
//! Requests go out `concurrency` at a time, `batch_size` texts each; 429 and 5xx answers and
//! dropped connections are retried with exponential backoff, honouring `Retry-After`, at most
//! `max_retries` times; any other failure stops the run with what the endpoint said.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::stages::endpoint::{said, Endpoint, Failure, HttpSpec};

/// Tokens an http model is taken to read when its `model.toml` names no `max_length`.
pub const DEFAULT_MAX_LENGTH: usize = 8192;

/// A client of one endpoint.
pub struct HttpEmbedder {
    endpoint: Endpoint,
    dim: usize,
    /// Tokens the endpoint reported using (`usage.prompt_tokens`), summed over requests.
    reported_tokens: AtomicU64,
    /// Whether every answer so far reported its tokens.
    every_answer_reported: AtomicBool,
}

#[derive(serde::Deserialize)]
struct Answer {
    data: Vec<Item>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(serde::Deserialize)]
struct Item {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

#[derive(serde::Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl HttpEmbedder {
    /// A client expecting `dim`-dimensional vectors (0: any, for a probe).
    pub fn new(spec: &HttpSpec, id: &str, dim: usize) -> Result<HttpEmbedder> {
        Ok(HttpEmbedder {
            endpoint: Endpoint::new(spec, id)?,
            dim,
            reported_tokens: AtomicU64::new(0),
            every_answer_reported: AtomicBool::new(true),
        })
    }

    /// Tokens the endpoint reported for everything embedded so far, when every answer
    /// reported them.
    pub fn reported_tokens(&self) -> Option<u64> {
        self.every_answer_reported.load(Ordering::Relaxed).then(|| self.reported_tokens.load(Ordering::Relaxed))
    }

    /// Texts a call should bring at most: one request's worth for each concurrent request.
    pub fn texts_per_call(&self) -> usize {
        self.endpoint.spec.batch_size * self.endpoint.spec.concurrency
    }

    /// Vectors for `texts` (already prefixed), in order: `batch_size` texts a request,
    /// `concurrency` requests at a time.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        match self.embed_partial(texts) {
            (vectors, None) => Ok(vectors.into_iter().map(|v| v.expect("every text answered")).collect()),
            (_, Some(e)) => Err(e),
        }
    }

    /// [`HttpEmbedder::embed`], keeping what was answered when a request fails: each text's
    /// vector if its request succeeded, and the error.
    pub fn embed_partial(&self, texts: &[String]) -> (Vec<Option<Vec<f32>>>, Option<Error>) {
        let batches: Vec<&[String]> = texts.chunks(self.endpoint.spec.batch_size).collect();
        let results: Mutex<Vec<Option<Vec<Vec<f32>>>>> = Mutex::new(vec![None; batches.len()]);
        let next = AtomicUsize::new(0);
        let failed: Mutex<Option<Error>> = Mutex::new(None);
        let workers = self.endpoint.spec.concurrency.min(batches.len()).max(1);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= batches.len() || failed.lock().expect("lock").is_some() {
                        return;
                    }
                    match self.request(batches[i]) {
                        Ok(vectors) => results.lock().expect("lock")[i] = Some(vectors),
                        Err(e) => {
                            failed.lock().expect("lock").get_or_insert(e);
                            return;
                        }
                    }
                });
            }
        });
        let answered = results
            .into_inner()
            .expect("lock")
            .into_iter()
            .zip(&batches)
            .flat_map(|(vectors, batch)| match vectors {
                Some(v) => v.into_iter().map(Some).collect::<Vec<_>>(),
                None => vec![None; batch.len()],
            })
            .collect();
        (answered, failed.into_inner().expect("lock"))
    }

    /// Requests sent again after a retryable failure, so far.
    pub fn retries(&self) -> u64 {
        self.endpoint.retries()
    }

    fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut body = serde_json::json!({ "model": self.endpoint.spec.model, "input": texts });
        if let Some(d) = self.endpoint.spec.dimensions {
            body["dimensions"] = d.into();
        }
        self.endpoint.post(&body, |text| self.read(texts, text))
    }

    /// The vectors of a 200 answer to `texts`, in order.
    fn read(&self, texts: &[String], text: &str) -> std::result::Result<Vec<Vec<f32>>, Failure> {
        let answer: Answer = serde_json::from_str(text).map_err(|e| {
            Failure::Stop(format!("the answer is not an OpenAI embeddings response ({e}): {}", said(text)))
        })?;
        if answer.data.len() != texts.len() {
            return Err(Failure::Stop(format!("sent {} texts, got {} vectors back", texts.len(), answer.data.len())));
        }
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (i, item) in answer.data.into_iter().enumerate() {
            let at = item.index.unwrap_or(i);
            if at >= texts.len() || vectors[at].is_some() {
                return Err(Failure::Stop(format!("the answer's vector indexes are not 0..{}", texts.len())));
            }
            if self.dim != 0 && item.embedding.len() != self.dim {
                return Err(Failure::Stop(format!(
                    "got {}-dimensional vectors; the model.toml says dim = {}",
                    item.embedding.len(),
                    self.dim
                )));
            }
            vectors[at] = Some(item.embedding);
        }
        match answer.usage.and_then(|u| u.prompt_tokens.or(u.total_tokens)) {
            Some(n) => {
                self.reported_tokens.fetch_add(n, Ordering::Relaxed);
            }
            None => self.every_answer_reported.store(false, Ordering::Relaxed),
        }
        Ok(vectors.into_iter().map(|v| v.expect("every index filled")).collect())
    }
}
