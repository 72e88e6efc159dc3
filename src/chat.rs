//! A team's chat model: an endpoint that speaks the OpenAI chat completions API (OpenAI, Azure
//! OpenAI, vLLM, Ollama, LM Studio, gateways), declared like an http embedding model in a
//! model folder whose `model.toml` says `kind = "chat"`. It drafts questions ([`crate::drafts`]);
//! it never replaces a person: what it writes stays apart until someone keeps it.
//!
//! Answers are cached by content: the endpoint's identity (never its key), the settings that
//! change an answer (temperature, max_tokens) and the messages. A second call with the same
//! prompt sends nothing, so an interrupted job resumes where it stopped and costs nothing twice.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::Deserialize;
use toml::Spanned;

use crate::error::{Error, Location, Result};
use crate::stages::endpoint::{said, Api, Endpoint, Failure, HttpKeys, HttpSpec};

/// The largest cached answer read back.
const MAX_CACHED_BYTES: u64 = 4 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatToml {
    id: String,
    kind: String,
    description: Option<String>,
    url: Option<Spanned<String>>,
    model: Option<Spanned<String>>,
    api_key_env: Option<Spanned<String>>,
    auth: Option<Spanned<String>>,
    auth_header: Option<Spanned<String>>,
    concurrency: Option<Spanned<usize>>,
    max_retries: Option<Spanned<u32>>,
    timeout_s: Option<Spanned<f64>>,
    temperature: Option<Spanned<f64>>,
    max_tokens: Option<Spanned<usize>>,
}

/// A chat model as its `model.toml` declares it.
#[derive(Debug, Clone)]
pub struct ChatSpec {
    pub id: String,
    pub description: Option<String>,
    pub http: HttpSpec,
    /// Sampling temperature sent with every request (default 0: the same prompt, the same answer
    /// where the server allows it).
    pub temperature: f64,
    /// The longest answer asked for, in tokens.
    pub max_tokens: usize,
}

impl ChatSpec {
    /// The chat model `id` of the models folder `models`.
    pub fn find(models: &Path, id: &str) -> Result<ChatSpec> {
        ChatSpec::find_in(&models.join(id), id)
    }

    /// The chat model `id` whose `model.toml` is in `dir`.
    fn find_in(dir: &Path, id: &str) -> Result<ChatSpec> {
        let path = dir.join("model.toml");
        if !path.is_file() {
            return Err(Error::Chat(format!(
                "no chat model {id:?} in {} (add one: ragsweep models add --name {id} --chat --url URL --model MODEL)",
                dir.parent().unwrap_or(dir).display()
            )));
        }
        let text = crate::input::text::read(&path)?;
        let raw: ChatToml = toml::from_str(&text).map_err(|e| {
            let at = e.span().map_or_else(|| Location::file(&path), |s| Location::at_offset(&path, &text, s.start));
            Error::input(at, e.message().to_string())
        })?;
        let at = |span: std::ops::Range<usize>| Location::at_offset(&path, &text, span.start);
        if raw.kind != "chat" {
            return Err(Error::input(
                Location::file(&path),
                format!("model {id} is not a chat model (kind = {:?}): it cannot draft or grade", raw.kind),
            ));
        }
        if raw.id != id {
            return Err(Error::input(
                Location::file(&path),
                format!("`id = {:?}` in the folder {id:?}: a model is named by its folder", raw.id),
            ));
        }
        let keys = HttpKeys {
            url: raw.url.as_ref(),
            model: raw.model.as_ref(),
            api_key_env: raw.api_key_env.as_ref(),
            auth: raw.auth.as_ref(),
            auth_header: raw.auth_header.as_ref(),
            dimensions: None,
            batch_size: None,
            concurrency: raw.concurrency.as_ref(),
            max_retries: raw.max_retries.as_ref(),
            timeout_s: raw.timeout_s.as_ref(),
            tokenizer: None,
        };
        let http = HttpSpec::read(&keys, Api::ChatCompletions, &at)?;
        let temperature = match raw.temperature {
            None => 0.0,
            Some(t) if t.get_ref().is_finite() && (0.0..=2.0).contains(t.get_ref()) => *t.get_ref(),
            Some(t) => return Err(Error::input(at(t.span()), "`temperature` must be within 0..=2")),
        };
        let max_tokens = match raw.max_tokens {
            None => 2048,
            Some(m) if (16..=65_536).contains(m.get_ref()) => *m.get_ref(),
            Some(m) => return Err(Error::input(at(m.span()), "`max_tokens` must be within 16..=65536")),
        };
        Ok(ChatSpec { id: raw.id, description: raw.description, http, temperature, max_tokens })
    }

    /// The `model.toml` of chat model `id` with `args` (what `models add --chat` writes).
    fn toml(id: &str, args: &ChatModelArgs<'_>) -> String {
        let mut t = toml::Table::new();
        t.insert("id".into(), id.into());
        t.insert("kind".into(), "chat".into());
        t.insert("url".into(), args.url.into());
        t.insert("model".into(), args.model.into());
        if let Some(var) = args.api_key_env {
            t.insert("api_key_env".into(), var.into());
        }
        if let Some((auth, header)) = args.auth {
            t.insert("auth".into(), auth.into());
            if let Some(h) = header {
                t.insert("auth_header".into(), h.into());
            }
        }
        if let Some(d) = args.description {
            t.insert("description".into(), d.into());
        }
        toml::to_string(&t).expect("a table of strings")
    }

    /// What names this model's answers in the cache: the endpoint and every setting that
    /// changes an answer.
    fn identity(&self) -> String {
        format!("chat;{};temperature={};max_tokens={}", self.http.identity(), self.temperature, self.max_tokens)
    }
}

/// The settings `models add --chat` takes.
pub struct ChatModelArgs<'a> {
    pub url: &'a str,
    pub model: &'a str,
    pub api_key_env: Option<&'a str>,
    pub auth: Option<(&'a str, Option<&'a str>)>,
    pub description: Option<&'a str>,
}

/// Adds chat model `name` to `models`: its `model.toml` is written once the endpoint answered a
/// probe (one short request, nothing cached). Returns the probe's answer.
pub fn add(models: &Path, name: &str, args: &ChatModelArgs<'_>, force: bool) -> Result<(ChatSpec, String)> {
    crate::own_models::check_name(name)?;
    let target = models.join(name);
    if target.exists() && !force {
        return Err(Error::Chat(format!("{} exists: `--force` replaces it", target.display())));
    }
    let staging = models.join(format!(".{name}.adding-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    let toml = ChatSpec::toml(name, args);
    let written = std::fs::write(staging.join("model.toml"), &toml).map_err(|e| Error::io(&staging, e));
    let probed = written.and_then(|()| {
        let spec = ChatSpec::find_in(&staging, name)?;
        let endpoint = Endpoint::new(&spec.http, name)?;
        let body = serde_json::json!({
            "model": spec.http.model,
            "messages": [{"role": "user", "content": "Reply with the word OK."}],
            "max_tokens": 16,
        });
        let answer = endpoint.post(&body, |text| completion(text).map(|(content, _)| content))?;
        Ok((spec, answer))
    });
    let (spec, answer) = match probed {
        Ok(done) => done,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(|e| Error::io(&target, e))?;
    }
    std::fs::rename(&staging, &target).map_err(|e| Error::io(&target, e))?;
    Ok((spec, answer))
}

/// One message of a conversation.
pub struct Message<'a> {
    pub role: &'a str,
    pub content: &'a str,
}

/// A chat model to call, with what it cost so far.
pub struct ChatModel {
    pub spec: ChatSpec,
    endpoint: Endpoint,
    cache: PathBuf,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
    sent: AtomicU64,
    reused: AtomicU64,
}

/// What the model was asked and answered, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChatUsage {
    /// Requests sent (answers not found in the cache).
    pub sent: u64,
    /// Answers read from the cache.
    pub reused: u64,
    /// Tokens the endpoint reported reading and writing, over the requests sent.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Requests sent again after a retryable failure.
    pub retries: u64,
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// The message and usage of a chat completion's text. A body cut short in transit is sent for
/// again; a complete one without a message is the server's answer.
fn completion(text: &str) -> std::result::Result<(String, Option<Usage>), Failure> {
    let completion: Completion = serde_json::from_str(text).map_err(|e| Failure::Retry {
        why: format!("the answer is not a chat completion ({e}): {}", said(text)),
        after: None,
    })?;
    let content = completion
        .choices
        .into_iter()
        .next()
        .and_then(|c| c.message.content)
        .ok_or_else(|| Failure::Stop(format!("the answer holds no message: {}", said(text))))?;
    Ok((content, completion.usage))
}

/// The outermost `{…}` of a model's answer (inside a code fence or prose), if any.
pub fn json_object(answer: &str) -> Option<&str> {
    answer.find('{').zip(answer.rfind('}')).filter(|(a, b)| a < b).map(|(a, b)| &answer[a..=b])
}

impl ChatModel {
    /// A client of `spec`, its answers cached under `cache/chat`.
    pub fn open(spec: ChatSpec, cache: &Path) -> Result<ChatModel> {
        let endpoint = Endpoint::new(&spec.http, &spec.id)?;
        let cache = cache.join("chat");
        std::fs::create_dir_all(&cache).map_err(|e| Error::io(&cache, e))?;
        Ok(ChatModel {
            spec,
            endpoint,
            cache,
            prompt_tokens: AtomicU64::new(0),
            completion_tokens: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            reused: AtomicU64::new(0),
        })
    }

    /// Requests that may be in flight at once.
    pub fn concurrency(&self) -> usize {
        self.spec.http.concurrency
    }

    pub fn usage(&self) -> ChatUsage {
        ChatUsage {
            sent: self.sent.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            completion_tokens: self.completion_tokens.load(Ordering::Relaxed),
            retries: self.endpoint.retries(),
        }
    }

    /// The model's answer to `messages`: from the cache when this prompt was answered before.
    pub fn complete(&self, messages: &[Message<'_>]) -> Result<String> {
        let messages: serde_json::Value =
            messages.iter().map(|m| serde_json::json!({"role": m.role, "content": m.content})).collect();
        let key = blake3::Hasher::new()
            .update(self.spec.identity().as_bytes())
            .update(&[0])
            .update(messages.to_string().as_bytes())
            .finalize();
        let file = self.cache.join(format!("{}.json", &key.to_hex()[..32]));
        if let Some(content) = self.cached(&file) {
            self.reused.fetch_add(1, Ordering::Relaxed);
            return Ok(content);
        }
        let body = serde_json::json!({
            "model": self.spec.http.model,
            "messages": messages,
            "temperature": self.spec.temperature,
            "max_tokens": self.spec.max_tokens,
        });
        let content = self.endpoint.post(&body, |text| {
            let (content, usage) = completion(text)?;
            if let Some(u) = usage {
                self.prompt_tokens.fetch_add(u.prompt_tokens, Ordering::Relaxed);
                self.completion_tokens.fetch_add(u.completion_tokens, Ordering::Relaxed);
            }
            Ok(content)
        })?;
        self.sent.fetch_add(1, Ordering::Relaxed);
        let record = serde_json::json!({"content": content});
        crate::atomic::write_atomic(&file, record.to_string().as_bytes())?;
        Ok(content)
    }

    /// The answer to each prompt (one user message each), in order, `concurrency` requests at a
    /// time, with a progress bar named `what`; the first failure stops the rest (what was
    /// answered is cached, so running again sends only what is left).
    pub fn complete_all(&self, prompts: &[String], what: &str) -> Result<Vec<String>> {
        let answers: Mutex<Vec<Option<String>>> = Mutex::new(vec![None; prompts.len()]);
        let failed: Mutex<Option<Error>> = Mutex::new(None);
        let next = AtomicUsize::new(0);
        let bar = indicatif::ProgressBar::new(prompts.len() as u64).with_prefix(what.to_string());
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        std::thread::scope(|scope| {
            for _ in 0..self.concurrency().min(prompts.len()).max(1) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= prompts.len() || failed.lock().expect("lock").is_some() {
                        return;
                    }
                    match self.complete(&[Message { role: "user", content: &prompts[i] }]) {
                        Ok(answer) => answers.lock().expect("lock")[i] = Some(answer),
                        Err(e) => {
                            failed.lock().expect("lock").get_or_insert(e);
                            return;
                        }
                    }
                    bar.inc(1);
                });
            }
        });
        bar.finish_and_clear();
        if let Some(e) = failed.into_inner().expect("lock") {
            return Err(Error::Chat(format!(
                "{e} (the answers so far are cached: running again sends only the rest; nothing was written)"
            )));
        }
        Ok(answers.into_inner().expect("lock").into_iter().map(|a| a.expect("every prompt answered")).collect())
    }

    /// A cached answer; a damaged entry is asked again (and replaced), never read as an answer.
    fn cached(&self, file: &Path) -> Option<String> {
        let bytes = crate::input::text::read_bytes(file, MAX_CACHED_BYTES).ok()?;
        let record: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        record.get("content")?.as_str().map(str::to_string)
    }
}
