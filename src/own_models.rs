//! `ragsweep models add`: a model of the user's own beside the bundled ones — an ONNX
//! sentence-embedding export (`model.onnx` + `tokenizer.json`) copied into the models folder,
//! or an OpenAI-compatible endpoint (`kind = "http"`, a folder holding only its `model.toml`).
//! The model is loaded and asked for one vector before it is added, so its dimension is
//! measured, not trusted; the folder gets the same install record as `models install`, so
//! damage is found the same way, while its `model.toml` stays editable (another setting is
//! another cache key, not damage).

use std::fs;
use std::path::Path;

use crate::error::{Error, Result};
use crate::stages::embed::{Embedder, ModelInfo, ModelKind, Role};
use crate::stages::http_embed::HttpEmbedder;

/// What a user's model is and how to run it (the keys of its `model.toml`).
#[derive(Debug, Clone, Default)]
pub struct OwnModel {
    pub description: Option<String>,
    /// `mean`, `cls` or `last` (ONNX models).
    pub pooling: Option<String>,
    pub max_length: Option<usize>,
    /// `None`: the export's own (a sentence-transformers prompt), else none.
    pub query_prefix: Option<String>,
    pub passage_prefix: Option<String>,
    /// The ONNX output to pool.
    pub output: Option<String>,
    /// The ONNX file inside the folder (default `model.onnx`).
    pub onnx: Option<String>,
    pub usd_per_1m_tokens: Option<f64>,
    /// A hosted reranker's price per thousand search units.
    pub usd_per_1k_searches: Option<f64>,
    pub http: Option<HttpModel>,
    /// A pair-scoring export (a reranker), not an embedder.
    pub cross_encoder: bool,
    /// Vectors made elsewhere ([`crate::stages::brought`]), not a model to run.
    pub vectors: bool,
}

/// The keys of an http model's `model.toml`.
#[derive(Debug, Clone, Default)]
pub struct HttpModel {
    pub url: String,
    pub model: String,
    pub api_key_env: Option<String>,
    pub auth: Option<String>,
    pub auth_header: Option<String>,
    pub dimensions: Option<usize>,
    pub batch_size: Option<usize>,
    pub concurrency: Option<usize>,
    /// A hosted reranker's API (`cohere`, `jina`, `voyage`, `tei`): the endpoint reranks.
    pub rerank_api: Option<String>,
}

/// Files an ONNX embedder's tokenizer reads besides `tokenizer.json`; written when the export
/// has none (`{}`, and for `tokenizer_config.json` the padding token and maximum length).
const AUX_FILES: [&str; 3] = ["config.json", "special_tokens_map.json", "tokenizer_config.json"];

/// Adds `name` to `models` (from the folder `source` for an ONNX model; nothing to copy for an
/// http one), after embedding a probe text with it; replaces an added model of that name only
/// with `force`. Returns the model as `run` will read it, and a line per setting read from
/// the export saying where it came from.
pub fn add(
    models: &Path,
    name: &str,
    source: Option<&Path>,
    model: &OwnModel,
    force: bool,
) -> Result<(ModelInfo, Vec<String>)> {
    check_name(name)?;
    let target = models.join(name);
    if target.exists() && !force {
        return Err(Error::ModelRefused(format!(
            "{} exists: `--force` replaces it (its cached vectors stay, under its old key)",
            target.display()
        )));
    }
    fs::create_dir_all(models).map_err(|e| Error::io(models, e))?;
    let staging = models.join(format!(".{name}.adding-{}", std::process::id()));
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    }
    fs::create_dir(&staging).map_err(|e| Error::io(&staging, e))?;
    let said = match stage(models, &staging, name, source, model) {
        Ok(said) => said,
        Err(e) => {
            let _ = fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    if target.exists() {
        fs::remove_dir_all(&target).map_err(|e| Error::io(&target, e))?;
    }
    fs::rename(&staging, &target).map_err(|e| Error::io(&target, e))?;
    Ok((crate::stages::embed::find_model(models, name)?, said))
}

/// What `add` stages; returns what it read from where (an ONNX export's settings).
fn stage(models: &Path, staging: &Path, name: &str, source: Option<&Path>, model: &OwnModel) -> Result<Vec<String>> {
    match (&model.http, source) {
        (Some(_), Some(dir)) => {
            return Err(Error::ModelRefused(format!(
                "an http model has no files: leave out the folder ({})",
                dir.display()
            )))
        }
        (None, None) => {
            return Err(Error::ModelRefused("give the model's folder (model.onnx and tokenizer.json)".into()))
        }
        (None, Some(dir)) if model.vectors => return stage_vectors(dir, staging, name, model).map(|()| Vec::new()),
        (None, Some(dir)) if model.cross_encoder => {
            let left_out = copy_onnx_export(dir, staging, model)?;
            probe_and_record(models, staging, name, model)?;
            return Ok(left_out_said(&left_out).into_iter().collect());
        }
        (None, Some(dir)) => {
            let (read, mut said) = export_settings(dir, model)?;
            let left_out = copy_onnx_export(dir, staging, &read)?;
            probe_and_record(models, staging, name, &read)?;
            said.extend(left_out_said(&left_out));
            return Ok(said);
        }
        (Some(_), None) => {}
    }
    probe_and_record(models, staging, name, model)?;
    Ok(Vec::new())
}

/// The line `add` says of the export's files it left out, if any.
fn left_out_said(left_out: &[String]) -> Option<String> {
    (!left_out.is_empty()).then(|| {
        format!(
            "not copied: {} (ragsweep reads the graph, its external data and the tokenizer's files)",
            left_out.join(", ")
        )
    })
}

/// Writes the model.toml with a placeholder dimension, loads the model, asks it for one vector
/// (a cross-encoder: one score), and writes the model.toml and install record for good.
fn probe_and_record(models: &Path, staging: &Path, name: &str, model: &OwnModel) -> Result<()> {
    // Written with a placeholder dimension, loaded, asked for one vector, written again.
    let toml = model_toml(name, model, 1, &staging.join("tokenizer_config.json"))?;
    crate::atomic::write_atomic(&staging.join("model.toml"), toml.as_bytes())?;
    let probe = crate::stages::embed::read_model(staging.to_path_buf())?;
    if probe.is_cross_encoder() && model.http.is_some() {
        crate::stages::cross_encoder::CrossEncoder::check(models, &probe)
            .map_err(|e| Error::ModelRefused(format!("the reranker could not score a probe pair: {e}")))?;
        return Ok(());
    }
    if model.cross_encoder {
        crate::stages::cross_encoder::CrossEncoder::check(models, &probe)
            .map_err(|e| Error::ModelRefused(format!("the cross-encoder could not score a probe pair: {e}")))?;
        crate::installed::write_record(staging)?;
        return Ok(());
    }
    let dim = probe_dim(models, &probe)?;
    let toml = model_toml(name, model, dim, &staging.join("tokenizer_config.json"))?;
    crate::atomic::write_atomic(&staging.join("model.toml"), toml.as_bytes())?;
    if model.http.is_none() {
        crate::installed::write_record(staging)?;
    }
    Ok(())
}

/// Copies a side's files of vectors made elsewhere, reads them (their dimension, ids and values
/// checked), and writes the model.toml and install record.
fn stage_vectors(dir: &Path, staging: &Path, name: &str, model: &OwnModel) -> Result<()> {
    use crate::stages::brought::{check, files};
    let sides = [Role::Query, Role::Passage];
    for role in sides {
        for file in files(dir, role)? {
            if !regular_inside(dir, &file) {
                return Err(Error::ModelRefused(format!(
                    "{}: not a regular file inside {} (a FIFO, socket or device, or a link out of the folder: never followed)",
                    file.display(),
                    dir.display()
                )));
            }
        }
    }
    // Read where the user wrote them, so that an error names their file and line.
    let dim = check(dir, Role::Query, 0)?;
    check(dir, Role::Passage, dim)?;
    for role in sides {
        for file in files(dir, role)? {
            let to = staging.join(file.file_name().expect("a file name"));
            fs::copy(&file, &to).map_err(|e| Error::io(&file, e))?;
        }
    }
    // The copies are what is recorded: read again, in case a file changed while it was copied.
    check(staging, Role::Query, dim)?;
    check(staging, Role::Passage, dim)?;
    let toml = model_toml(name, model, dim, Path::new(""))?;
    crate::atomic::write_atomic(&staging.join("model.toml"), toml.as_bytes())?;
    crate::installed::write_record(staging)
}

/// The dimension of the vectors the model gives for a probe text.
fn probe_dim(models: &Path, info: &ModelInfo) -> Result<usize> {
    const PROBE: &str = "ragsweep probe: how many days of vacation?";
    let fail = |e: Error| Error::ModelRefused(format!("the model could not embed a probe text: {e}"));
    let vector = match &info.kind {
        // Any dimension is taken: finding it is the point.
        ModelKind::Http(spec) => HttpEmbedder::new(spec, &info.id, 0)
            .and_then(|client| client.embed(&[info.prefixed(Role::Query, PROBE)]))
            .map_err(fail)?
            .remove(0),
        _ => {
            Embedder::load(models, info, 1).and_then(|e| e.embed_batch(&[PROBE], Role::Query)).map_err(fail)?.remove(0)
        }
    };
    if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) || vector.iter().all(|&x| x == 0.0) {
        return Err(Error::ModelRefused("the model gave an empty, zero or non-finite vector for a probe text".into()));
    }
    if !crate::stages::embed::DIM_RANGE.contains(&vector.len()) {
        return Err(Error::ModelRefused(format!(
            "the model gave a {}-dimensional vector for a probe text: {}",
            vector.len(),
            crate::stages::embed::dim_range_said()
        )));
    }
    Ok(vector.len())
}

/// A name that is a folder name, no bundled model's, and not hidden.
pub(crate) fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'));
    if !ok {
        return Err(Error::ModelRefused(format!(
            "model name {name:?}: lower-case letters, digits, '-', '_' and '.', starting with a letter or digit, at most 64"
        )));
    }
    if crate::install::MODELS.iter().any(|(id, _)| *id == name) || name == "onnxruntime" {
        return Err(Error::ModelRefused(format!("{name:?} is a bundled model's name: choose another")));
    }
    Ok(())
}

/// Whether `path` is a regular file whose real location is inside the folder `dir`: a link out
/// of an export (to `/proc/self/environ`, `/etc/passwd`, a device) is never copied.
fn regular_inside(dir: &Path, path: &Path) -> bool {
    let (Ok(dir), Ok(real)) = (fs::canonicalize(dir), fs::canonicalize(path)) else { return false };
    real.starts_with(&dir) && fs::symlink_metadata(&real).is_ok_and(|m| m.file_type().is_file())
}

/// The files of an ONNX export a model runs on: the graph, the files its tensors keep their
/// data in, the tokenizer and its settings. Anything else (a framework's weights, notes, a
/// README) is never read, and a copy would be checked, whole, at every run.
fn runtime_files(dir: &Path, onnx: &str) -> Result<std::collections::BTreeSet<String>> {
    let mut files: std::collections::BTreeSet<String> =
        [onnx, "tokenizer.json"].into_iter().chain(AUX_FILES).map(String::from).collect();
    files.extend(external_data(&dir.join(onnx))?);
    Ok(files)
}

/// The files an ONNX graph's tensors keep their data in: each `external_data` entry keyed
/// `location` (a StringStringEntryProto: `0a 08 "location" 12 LEN NAME`). A location that is
/// not a plain file name beside the graph is refused: nothing outside the export is read.
fn external_data(graph: &Path) -> Result<Vec<String>> {
    const KEY: &[u8] = b"\x0a\x08location\x12";
    let (file, _) = crate::input::text::open_regular(graph)?;
    // SAFETY: the file is only read, and a graph changed while `add` reads it fails its probe.
    let bytes = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(graph, e))?;
    let mut names = Vec::new();
    for at in memchr::memmem::find_iter(&bytes, KEY) {
        let rest = &bytes[at + KEY.len()..];
        let (len, width) = match rest {
            [n, ..] if n & 0x80 == 0 => (usize::from(*n), 1),
            [lo, hi, ..] if hi & 0x80 == 0 => (usize::from(lo & 0x7f) | usize::from(*hi) << 7, 2),
            _ => continue,
        };
        let Some(name) = rest.get(width..width + len).and_then(|n| std::str::from_utf8(n).ok()) else { continue };
        if name.is_empty() || name.contains(['/', '\\']) || name == ".." || name == "." {
            return Err(Error::ModelRefused(format!(
                "{}: a tensor keeps its data at {name:?}, not a file beside the graph; save the external data beside it",
                graph.display()
            )));
        }
        names.push(name.to_string());
    }
    Ok(names)
}

/// Copies the export's files a model runs on ([`runtime_files`]) and writes the tokenizer
/// files it lacks; returns the regular files left out.
fn copy_onnx_export(dir: &Path, staging: &Path, model: &OwnModel) -> Result<Vec<String>> {
    let onnx = model.onnx.as_deref().unwrap_or("model.onnx");
    for needed in [onnx, "tokenizer.json"] {
        if !dir.join(needed).is_file() {
            return Err(Error::ModelRefused(format!(
                "{} has no {needed}: an ONNX sentence-embedding export holds the graph and its tokenizer.json",
                dir.display()
            )));
        }
        if !regular_inside(dir, &dir.join(needed)) {
            return Err(Error::ModelRefused(format!(
                "{}: a link to a file outside the export; copy the file itself into {}",
                dir.join(needed).display(),
                dir.display()
            )));
        }
    }
    let needed = runtime_files(dir, onnx)?;
    let mut left_out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !regular_inside(dir, &entry.path())
            || name.starts_with('.')
            || name == "installed.json"
            || name == "model.toml"
        {
            continue;
        }
        if !needed.contains(&name) {
            left_out.push(name);
            continue;
        }
        fs::copy(entry.path(), staging.join(&name)).map_err(|e| Error::io(&entry.path(), e))?;
    }
    for aux in AUX_FILES {
        let path = staging.join(aux);
        if path.exists() {
            continue;
        }
        let text = if aux == "tokenizer_config.json" {
            let pad = pad_token(&staging.join("tokenizer.json"))?;
            let max = model.max_length.unwrap_or(512);
            serde_json::json!({ "model_max_length": max, "pad_token": pad }).to_string()
        } else {
            "{}".to_string()
        };
        crate::atomic::write_atomic(&path, text.as_bytes())?;
    }
    left_out.sort();
    Ok(left_out)
}

/// The settings an ONNX export is run with, read as sentence-transformers runs it when it is in
/// that layout (`sentence_bert_config.json`'s `max_seq_length`, the `Pooling` module's mode,
/// `config_sentence_transformers.json`'s prompts), a flag given overriding each; with one line
/// per setting saying where it came from.
fn export_settings(dir: &Path, given: &OwnModel) -> Result<(OwnModel, Vec<String>)> {
    let json = |name: &str| -> Option<serde_json::Value> {
        let path = dir.join(name);
        let small = fs::metadata(&path).is_ok_and(|m| m.len() <= 1 << 20);
        let bytes = (small && regular_inside(dir, &path)).then(|| fs::read(&path).ok()).flatten()?;
        serde_json::from_slice(&bytes).ok()
    };
    let modules = json("modules.json");
    let module = |kind: &str| {
        modules.as_ref()?.as_array()?.iter().find(|m| m["type"].as_str().is_some_and(|t| t.ends_with(kind))).cloned()
    };
    let layout = modules.is_some() || json("sentence_bert_config.json").is_some();
    let mut read = given.clone();
    let mut said = Vec::new();
    let mut say = |key: &str, value: &str, from: &str| said.push(format!("{key} {value} ({from})"));

    let pooling_config = module("Pooling")
        .and_then(|m| m["path"].as_str().map(str::to_string))
        .or_else(|| dir.join("1_Pooling").is_dir().then(|| "1_Pooling".to_string()))
        .and_then(|p| json(&format!("{p}/config.json")).map(|c| (p, c)));
    match (&given.pooling, pooling_config) {
        (Some(p), _) => say("pooling", p, "--pooling"),
        (None, Some((path, c))) => {
            let on = |key: &str| c[key].as_bool() == Some(true);
            let mode = if on("pooling_mode_cls_token") {
                "cls"
            } else if on("pooling_mode_lasttoken") {
                "last"
            } else if on("pooling_mode_mean_tokens") {
                "mean"
            } else {
                return Err(Error::ModelRefused(format!(
                    "{}: the pooling mode is none ragsweep runs (mean, cls, last); give --pooling to choose one",
                    dir.join(&path).join("config.json").display()
                )));
            };
            read.pooling = Some(mode.into());
            say("pooling", mode, &format!("{path}/config.json"));
        }
        (None, None) => say("pooling", "mean", "the default: the export holds no pooling config"),
    }

    let max_seq = json("sentence_bert_config.json").and_then(|c| c["max_seq_length"].as_u64());
    let tokenizer_max = json("tokenizer_config.json")
        .and_then(|c| c["model_max_length"].as_f64())
        .filter(|m| (1.0..=8192.0).contains(m))
        .map(|m| m as u64);
    let (max, from) = match (given.max_length, max_seq, tokenizer_max) {
        (Some(m), _, _) => (m as u64, "--max-length"),
        (None, Some(m), _) => (m, "sentence_bert_config.json max_seq_length"),
        (None, None, Some(m)) => (m, "tokenizer_config.json model_max_length"),
        (None, None, None) => (512, "the default: the export says no maximum"),
    };
    read.max_length = Some(max as usize);
    say("max_length", &max.to_string(), from);

    let prompts = json("config_sentence_transformers.json").map(|c| c["prompts"].clone());
    let prompt = |names: &[&'static str]| -> Option<(String, &'static str)> {
        names.iter().find_map(|&n| prompts.as_ref().and_then(|p| p[n].as_str()).map(|v| (v.to_string(), n)))
    };
    for (key, flag, names, value) in [
        ("query_prefix", "--query-prefix", &["query"][..], &mut read.query_prefix),
        ("passage_prefix", "--passage-prefix", &["passage", "document", "doc"][..], &mut read.passage_prefix),
    ] {
        match (value.clone(), prompt(names)) {
            (Some(p), _) => say(key, &format!("{p:?}"), flag),
            (None, Some((p, name))) => {
                say(key, &format!("{p:?}"), &format!("config_sentence_transformers.json prompts.{name}"));
                *value = Some(p);
            }
            (None, None) => {}
        }
    }
    if layout && module("Normalize").is_none() {
        said.push(
            "normalize: modules.json has no Normalize module; ragsweep ranks by cosine, as if it had \
             (a team that ranks these vectors by dot product ranks differently)"
                .into(),
        );
    }
    if !layout {
        said.push("not a sentence-transformers export (no modules.json or sentence_bert_config.json): settings from the tokenizer files, else the defaults".into());
    }
    Ok((read, said))
}

/// The padding token `tokenizer.json` declares, or the usual one it holds.
fn pad_token(tokenizer: &Path) -> Result<String> {
    let text = fs::read_to_string(tokenizer).map_err(|e| Error::io(tokenizer, e))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::ModelRefused(format!("{}: not a tokenizer.json ({e})", tokenizer.display())))?;
    if let Some(pad) = json["padding"]["pad_token"].as_str() {
        return Ok(pad.to_string());
    }
    let added: Vec<&str> =
        json["added_tokens"].as_array().into_iter().flatten().filter_map(|t| t["content"].as_str()).collect();
    ["[PAD]", "<pad>", "<|pad|>", "<|endoftext|>", "</s>"]
        .into_iter()
        .find(|p| added.contains(p))
        .map(str::to_string)
        .ok_or_else(|| {
            Error::ModelRefused(format!(
                "{} names no padding token: add a tokenizer_config.json with \"pad_token\" to the folder",
                tokenizer.display()
            ))
        })
}

/// The `model.toml` of a user's model; an ONNX model's `max_length` defaults to its
/// tokenizer's `model_max_length` (at most 8,192), else 512.
fn model_toml(name: &str, model: &OwnModel, dim: usize, tokenizer_config: &Path) -> Result<String> {
    let mut t = toml::Table::new();
    t.insert("id".into(), name.into());
    let description = model.description.clone().unwrap_or_else(|| match &model.http {
        Some(h) => format!("{} at {} (models add)", h.model, crate::stages::endpoint::redacted(&h.url)),
        None if model.cross_encoder => "a cross-encoder of your own (models add)".into(),
        None if model.vectors => "vectors made elsewhere (models add)".into(),
        None => "an ONNX export of your own (models add)".into(),
    });
    t.insert("description".into(), description.into());
    match &model.http {
        Some(h) => {
            t.insert("kind".into(), if h.rerank_api.is_some() { "http-rerank" } else { "http" }.into());
            if let Some(api) = &h.rerank_api {
                t.insert("api".into(), api.clone().into());
            }
            t.insert("url".into(), h.url.clone().into());
            t.insert("model".into(), h.model.clone().into());
            for (key, value) in [("api_key_env", &h.api_key_env), ("auth", &h.auth), ("auth_header", &h.auth_header)] {
                if let Some(v) = value {
                    t.insert(key.into(), v.clone().into());
                }
            }
            for (key, value) in
                [("dimensions", h.dimensions), ("batch_size", h.batch_size), ("concurrency", h.concurrency)]
            {
                if let Some(v) = value {
                    t.insert(key.into(), (v as i64).into());
                }
            }
            if let Some(m) = model.max_length {
                t.insert("max_length".into(), (m as i64).into());
            }
        }
        None if model.vectors => {
            t.insert("kind".into(), "vectors".into());
        }
        None => {
            if model.cross_encoder {
                t.insert("kind".into(), "cross-encoder".into());
            } else {
                t.insert("pooling".into(), model.pooling.clone().unwrap_or_else(|| "mean".into()).into());
            }
            let from_tokenizer = fs::read_to_string(tokenizer_config)
                .ok()
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|j| j["model_max_length"].as_f64())
                .filter(|m| (1.0..=8192.0).contains(m))
                .map(|m| m as usize);
            t.insert("max_length".into(), (model.max_length.or(from_tokenizer).unwrap_or(512) as i64).into());
            if let Some(onnx) = &model.onnx {
                t.insert("onnx".into(), onnx.clone().into());
            }
            if let Some(output) = &model.output {
                t.insert("output".into(), output.clone().into());
            }
        }
    }
    let reranks = model.cross_encoder || model.http.as_ref().is_some_and(|h| h.rerank_api.is_some());
    if !reranks {
        t.insert("dim".into(), (dim as i64).into());
    }
    for (key, prefix) in [("query_prefix", &model.query_prefix), ("passage_prefix", &model.passage_prefix)] {
        if let Some(p) = prefix.as_ref().filter(|p| !p.is_empty()) {
            t.insert(key.into(), p.clone().into());
        }
    }
    if let Some(p) = model.usd_per_1m_tokens {
        t.insert("usd_per_1m_tokens".into(), p.into());
    }
    if let Some(p) = model.usd_per_1k_searches {
        t.insert("usd_per_1k_searches".into(), p.into());
    }
    toml::to_string(&t).map_err(|e| Error::ModelRefused(format!("writing model.toml: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> Vec<u8> {
        let mut b = b"\x0a\x08location\x12".to_vec();
        b.push(name.len() as u8);
        b.extend_from_slice(name.as_bytes());
        b
    }

    #[test]
    fn external_data_names_its_files_and_refuses_paths_outside_the_export() {
        let dir = tempfile::tempdir().unwrap();
        let graph = dir.path().join("model.onnx");
        let bytes =
            [b"\x08\x07graph".to_vec(), entry("model.onnx_data"), b"\x00\x01".to_vec(), entry("w.bin")].concat();
        std::fs::write(&graph, bytes).unwrap();
        assert_eq!(external_data(&graph).unwrap(), ["model.onnx_data", "w.bin"]);
        let files = runtime_files(dir.path(), "model.onnx").unwrap();
        assert!(files.contains("w.bin") && files.contains("tokenizer.json") && !files.contains("README.md"));
        for outside in ["../secret", "/etc/passwd", ".."] {
            std::fs::write(&graph, entry(outside)).unwrap();
            let e = external_data(&graph).unwrap_err().to_string();
            assert!(e.contains("not a file beside the graph"), "{outside}: {e}");
        }
        std::fs::write(&graph, b"no external data").unwrap();
        assert!(external_data(&graph).unwrap().is_empty());
    }
}
