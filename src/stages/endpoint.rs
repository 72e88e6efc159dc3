//! An endpoint that speaks the OpenAI API (OpenAI, Azure OpenAI, Ollama, vLLM, Text
//! Embeddings Inference, LM Studio and most gateways): where it is, how its key is sent (never
//! written, never shown), what names its answers in a cache key, and one JSON POST with retries.
//! Embedding models ([`crate::stages::http_embed`]) and chat models ([`crate::chat`]) call it.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::error::{Error, Location, Result};
use toml::Spanned;

/// The BPE an http model's tokens are counted with unless `tokenizer` names another (the one
/// OpenAI's embedding models use).
pub const DEFAULT_TOKENIZER: &str = "cl100k_base";
/// The largest answer body read from an endpoint.
const MAX_RESPONSE_BYTES: u64 = 512 << 20;
/// The longest wait a `Retry-After` may ask for.
const MAX_RETRY_AFTER_S: f64 = 120.0;

/// Which API of the endpoint is called: the path a base URL gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Embeddings,
    ChatCompletions,
    Rerank,
}

impl Api {
    fn path(self) -> &'static str {
        match self {
            Api::Embeddings => "/embeddings",
            Api::ChatCompletions => "/chat/completions",
            Api::Rerank => "/rerank",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Api::Embeddings => "http",
            Api::ChatCompletions => "chat",
            Api::Rerank => "http-rerank",
        }
    }
}

/// An endpoint and how to call it, as its `model.toml` declares.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSpec {
    /// The full URL requests are posted to (`…/v1/embeddings`, `…/v1/chat/completions`).
    pub url: String,
    /// The model name the endpoint is asked for.
    pub model: String,
    /// The environment variable holding the API key, if the endpoint needs one.
    pub api_key_env: Option<String>,
    /// The header the key goes in: `Authorization: Bearer KEY` (OpenAI, vLLM, gateways) or
    /// `NAME: KEY` (Azure OpenAI's `api-key`).
    pub auth: Auth,
    /// `dimensions` sent with each request (models that can shorten their vectors).
    pub dimensions: Option<usize>,
    pub batch_size: usize,
    pub concurrency: usize,
    pub max_retries: u32,
    pub timeout: Duration,
    /// The tokenizer that counts this model's tokens (a tiktoken BPE name).
    pub tokenizer: String,
}

/// The keys of an http model's `model.toml`, as read (with their places).
pub struct HttpKeys<'a> {
    pub url: Option<&'a Spanned<String>>,
    pub model: Option<&'a Spanned<String>>,
    pub api_key_env: Option<&'a Spanned<String>>,
    pub auth: Option<&'a Spanned<String>>,
    pub auth_header: Option<&'a Spanned<String>>,
    pub dimensions: Option<&'a Spanned<usize>>,
    pub batch_size: Option<&'a Spanned<usize>>,
    pub concurrency: Option<&'a Spanned<usize>>,
    pub max_retries: Option<&'a Spanned<u32>>,
    pub timeout_s: Option<&'a Spanned<f64>>,
    pub tokenizer: Option<&'a Spanned<String>>,
}

impl HttpKeys<'_> {
    /// The first of these keys a `model.toml` gives, with its place: refused on other kinds.
    pub fn first_given(&self) -> Option<(&'static str, Range<usize>)> {
        [
            self.url.map(|v| ("url", v.span())),
            self.model.map(|v| ("model", v.span())),
            self.api_key_env.map(|v| ("api_key_env", v.span())),
            self.auth.map(|v| ("auth", v.span())),
            self.auth_header.map(|v| ("auth_header", v.span())),
            self.dimensions.map(|v| ("dimensions", v.span())),
            self.batch_size.map(|v| ("batch_size", v.span())),
            self.concurrency.map(|v| ("concurrency", v.span())),
            self.max_retries.map(|v| ("max_retries", v.span())),
            self.timeout_s.map(|v| ("timeout_s", v.span())),
            self.tokenizer.map(|v| ("tokenizer", v.span())),
        ]
        .into_iter()
        .flatten()
        .next()
    }
}

impl HttpSpec {
    pub fn read(raw: &HttpKeys<'_>, api: Api, at: &dyn Fn(Range<usize>) -> Location) -> Result<HttpSpec> {
        let missing = |key: &str| {
            Error::input(
                at(0..0),
                format!("an {} model needs `{key}` (kind = {:?}: url, model, …)", api.kind(), api.kind()),
            )
        };
        let url = raw.url.ok_or_else(|| missing("url"))?;
        let parsed = url.get_ref().trim();
        let scheme_ok = parsed.starts_with("http://") || parsed.starts_with("https://");
        if !scheme_ok || parsed.contains(char::is_whitespace) || parsed.contains('@') {
            return Err(Error::input(
                at(url.span()),
                "`url` must be an http:// or https:// address without credentials in it (put the key in the variable `api_key_env` names)",
            ));
        }
        // The path gets the API's own (`/embeddings`); the query (Azure's `api-version`) stays on
        // every request.
        let (path, query) = parsed.split('#').next().unwrap_or("").split_once('?').unwrap_or((parsed, ""));
        let path = path.trim_end_matches('/');
        let path = if path.ends_with(api.path()) { path.to_string() } else { format!("{path}{}", api.path()) };
        let url = if query.is_empty() { path } else { format!("{path}?{query}") };
        let model = raw.model.ok_or_else(|| missing("model"))?.get_ref().clone();
        let positive = |v: Option<&Spanned<usize>>, key: &str, default: usize, max: usize| -> Result<usize> {
            match v {
                None => Ok(default),
                Some(v) if (1..=max).contains(v.get_ref()) => Ok(*v.get_ref()),
                Some(v) => Err(Error::input(at(v.span()), format!("`{key}` must be between 1 and {max}"))),
            }
        };
        let timeout = match raw.timeout_s {
            None => Duration::from_secs(60),
            Some(t) if t.get_ref().is_finite() && *t.get_ref() > 0.0 && *t.get_ref() <= 3600.0 => {
                Duration::from_secs_f64(*t.get_ref())
            }
            Some(t) => return Err(Error::input(at(t.span()), "`timeout_s` must be a number of seconds in (0, 3600]")),
        };
        let tokenizer = raw.tokenizer.map_or_else(|| DEFAULT_TOKENIZER.to_string(), |t| t.get_ref().clone());
        if !matches!(tokenizer.as_str(), "cl100k_base" | "o200k_base") {
            let span = raw.tokenizer.map_or(0..0, |t| t.span());
            return Err(Error::input(at(span), "`tokenizer` counts an http model's tokens: cl100k_base or o200k_base"));
        }
        let api_key_env = match raw.api_key_env {
            Some(v)
                if v.get_ref().is_empty() || !v.get_ref().chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                return Err(Error::input(
                    at(v.span()),
                    "`api_key_env` names an environment variable (letters, digits, _)",
                ))
            }
            v => v.map(|v| v.get_ref().clone()),
        };
        let header = match raw.auth_header {
            Some(h)
                if h.get_ref().is_empty() || !h.get_ref().chars().all(|c| c.is_ascii_alphanumeric() || c == '-') =>
            {
                return Err(Error::input(at(h.span()), "`auth_header` is a header name (letters, digits, -)"))
            }
            h => h.map(|h| h.get_ref().clone()),
        };
        let auth = match (raw.auth.map(|a| a.get_ref().as_str()), header) {
            (None | Some("bearer"), None) => Auth::Bearer,
            (Some("api-key"), header) => Auth::Header(header.unwrap_or_else(|| "api-key".into())),
            (Some("none"), None) => Auth::None,
            (_, Some(_)) => {
                let span = raw.auth_header.map_or(0..0, |h| h.span());
                return Err(Error::input(at(span), "`auth_header` names the header of `auth = \"api-key\"`"));
            }
            (Some(_), None) => {
                let span = raw.auth.map_or(0..0, |a| a.span());
                return Err(Error::input(at(span), "`auth` is \"bearer\" (the default), \"api-key\" or \"none\""));
            }
        };
        Ok(HttpSpec {
            url,
            model,
            api_key_env,
            auth,
            dimensions: raw.dimensions.map(|d| *d.get_ref()),
            batch_size: positive(raw.batch_size, "batch_size", 64, 2048)?,
            concurrency: positive(raw.concurrency, "concurrency", 4, 256)?,
            max_retries: raw.max_retries.map_or(5, |r| *r.get_ref()).min(20),
            timeout,
            tokenizer,
        })
    }

    /// What names this endpoint's answers in the cache key: the URL without credentials, with
    /// the query's parameters that hold no secret (Azure's `api-version` picks the model's
    /// behaviour), the model and the requested dimensions. How requests are sent (batching,
    /// concurrency, retries, the key and its header) does not change an answer.
    pub fn identity(&self) -> String {
        let query: Vec<&str> = self
            .url
            .split_once('?')
            .map(|(_, q)| q.split('&').filter(|p| !secret_parameter(p.split('=').next().unwrap_or(""))).collect())
            .unwrap_or_default();
        let query = if query.is_empty() { String::new() } else { format!("?{}", query.join("&")) };
        format!("url={}{query};model={};dimensions={:?}", redacted(&self.url), self.model, self.dimensions)
    }
}

/// How the API key is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer KEY`.
    Bearer,
    /// `NAME: KEY`.
    Header(String),
    /// No key, even when `api_key_env` is set.
    None,
}

/// Whether a URL query parameter's name says it carries a secret.
fn secret_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["key", "token", "secret", "password", "sig", "signature", "code", "auth", "credential"]
        .iter()
        .any(|s| name.contains(s))
}

/// `url` as it may be shown: scheme, host, port and path; never user-info, query or fragment.
pub fn redacted(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let host = authority.rsplit('@').next().unwrap_or(authority);
    if scheme.is_empty() {
        format!("{host}/{path}")
    } else {
        format!("{scheme}://{host}/{path}")
    }
}

/// At most 300 printable characters of an answer (secrets are scrubbed from every message).
pub fn said(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(300).collect()
}

/// Why one request failed, and whether it is worth sending again.
pub enum Failure {
    Retry { why: String, after: Option<f64> },
    Stop(String),
}

/// One endpoint, called with JSON bodies: the key read from its variable once, answers
/// 429/5xx, timeouts and dropped connections sent again with exponential backoff (honouring
/// `Retry-After`) at most `max_retries` times.
pub struct Endpoint {
    pub spec: HttpSpec,
    agent: ureq::Agent,
    api_key: Option<crate::secret::Secret>,
    /// The model's name in messages.
    pub id: String,
    /// Requests sent again after a retryable failure, so far.
    retries: AtomicU64,
}

impl Endpoint {
    pub fn new(spec: &HttpSpec, id: &str) -> Result<Endpoint> {
        let api_key = match &spec.api_key_env {
            None => None,
            Some(var) => Some(crate::secret::Secret::new(std::env::var(var).map_err(|_| {
                Error::ModelFailed(format!("model {id}: the environment variable {var} (its `api_key_env`) is not set"))
            })?)),
        };
        let agent: ureq::Agent =
            ureq::Agent::config_builder().timeout_global(Some(spec.timeout)).http_status_as_error(false).build().into();
        Ok(Endpoint { spec: spec.clone(), agent, api_key, id: id.to_string(), retries: AtomicU64::new(0) })
    }

    /// Requests sent again after a retryable failure, so far.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Posts `body` and reads a 200 answer's text with `read`, sending it again while the
    /// failure is worth it; the last failure is the error.
    pub fn post<T>(
        &self,
        body: &serde_json::Value,
        read: impl Fn(&str) -> std::result::Result<T, Failure>,
    ) -> Result<T> {
        let mut attempt = 0;
        loop {
            match self.post_once(body).and_then(|text| read(&text)) {
                Ok(v) => return Ok(v),
                Err(Failure::Retry { why, after }) if attempt < self.spec.max_retries => {
                    let backoff = 0.5 * 2f64.powi(attempt as i32);
                    let wait = after.unwrap_or(backoff).clamp(0.0, MAX_RETRY_AFTER_S);
                    attempt += 1;
                    self.retries.fetch_add(1, Ordering::Relaxed);
                    eprintln!("model {}: {why}; retry {attempt} of {} in {wait:.1}s", self.id, self.spec.max_retries);
                    std::thread::sleep(Duration::from_secs_f64(wait));
                }
                Err(Failure::Retry { why, .. }) => {
                    return Err(self.error(format!("{why}, still after {} retries", self.spec.max_retries)))
                }
                Err(Failure::Stop(why)) => return Err(self.error(why)),
            }
        }
    }

    pub fn error(&self, why: String) -> Error {
        Error::ModelFailed(format!("model {} at {}: {why}", self.id, redacted(&self.spec.url)))
    }

    /// One POST of `body`: the answer's text when the status is 200.
    fn post_once(&self, body: &serde_json::Value) -> std::result::Result<String, Failure> {
        let mut request = self.agent.post(&self.spec.url).header("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            request = match &self.spec.auth {
                Auth::Bearer => request.header("Authorization", &format!("Bearer {}", key.expose())),
                Auth::Header(name) => request.header(name.as_str(), key.expose()),
                Auth::None => request,
            };
        }
        let mut response = match request.send(body.to_string().as_bytes()) {
            Ok(r) => r,
            Err(ureq::Error::Timeout(_)) => {
                return Err(Failure::Retry {
                    why: format!("no answer within {:.0}s (timeout_s)", self.spec.timeout.as_secs_f64()),
                    after: None,
                })
            }
            Err(e @ (ureq::Error::Io(_) | ureq::Error::ConnectionFailed | ureq::Error::HostNotFound)) => {
                return Err(Failure::Retry { why: format!("cannot reach the endpoint ({e})"), after: None })
            }
            Err(e) => return Err(Failure::Stop(format!("request failed: {e}"))),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0);
        let text = response.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_string();
        if status == 429 || (500..600).contains(&status) {
            let text = text.unwrap_or_default();
            return Err(Failure::Retry { why: format!("HTTP {status}: {}", said(&text)), after: retry_after });
        }
        let text =
            text.map_err(|e| Failure::Retry { why: format!("the answer could not be read ({e})"), after: None })?;
        if status != 200 {
            return Err(Failure::Stop(format!("HTTP {status}: {}", said(&text))));
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_stays_on_the_url_and_only_its_public_parameters_name_the_vectors() {
        let url = Spanned::new(
            0..0,
            "https://r.openai.azure.com/openai/deployments/d/?api-version=2024-02-01&sig=S3cr3t".to_string(),
        );
        let model = Spanned::new(0..0, "d".to_string());
        let keys = HttpKeys {
            url: Some(&url),
            model: Some(&model),
            api_key_env: None,
            auth: None,
            auth_header: None,
            dimensions: None,
            batch_size: None,
            concurrency: None,
            max_retries: None,
            timeout_s: None,
            tokenizer: None,
        };
        let spec =
            HttpSpec::read(&keys, Api::Embeddings, &|_| Location::file(std::path::Path::new("model.toml"))).unwrap();
        assert_eq!(
            spec.url,
            "https://r.openai.azure.com/openai/deployments/d/embeddings?api-version=2024-02-01&sig=S3cr3t"
        );
        assert_eq!(spec.auth, Auth::Bearer);
        let identity = spec.identity();
        assert!(
            identity.contains("/d/embeddings?api-version=2024-02-01;") && !identity.contains("S3cr3t"),
            "{identity}"
        );
    }

    #[test]
    fn shown_urls_never_carry_credentials_or_parameters() {
        assert_eq!(
            redacted("https://u:Sekr3t@api.example/v1/embeddings?key=Sekr3t#x"),
            "https://api.example/v1/embeddings"
        );
        assert_eq!(redacted("http://127.0.0.1:8080/v1/embeddings"), "http://127.0.0.1:8080/v1/embeddings");
    }
}
