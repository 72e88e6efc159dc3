//! Models the team brings, through the binary: an OpenAI-compatible embeddings endpoint (a mock
//! server this test starts on loopback, which answers with the random model's vectors, so its
//! cells must equal a local random model's), and an ONNX export added with `models add` (a copy
//! of the bundled MiniLM, whose cells must equal the bundled model's).

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::{matrix, Fixture};
use predicates::prelude::*;
use serde_json::Value;

const DIM: usize = 24;
use crate::common::{THREE_PAGES as DOCS, THREE_PAGES_GOLDEN as GOLDEN};

/// What the mock does with the next requests.
#[derive(Default)]
struct Script {
    /// Answers to give before any vector, in order: (status, Retry-After, body).
    faults: Vec<(u16, Option<&'static str>, &'static str)>,
    /// Seconds to wait before answering.
    delay_s: f64,
    /// After this many good answers, every answer is a 500.
    fail_after: Option<usize>,
    /// Texts holding this get an all-zero vector.
    zero_for: Option<&'static str>,
    /// Azure OpenAI's form: the key in an `api-key` header, posted to this path and query.
    azure: Option<&'static str>,
    /// The request (counted from 1 since the mock started) answered 429 with `Retry-After: 2`.
    throttle_at: Option<usize>,
}

/// A loopback OpenAI embeddings endpoint: each input's vector is the random model's for that
/// text. Counts requests and texts, and checks the API key.
struct Mock {
    url: String,
    texts: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    script: Arc<Mutex<Script>>,
}

impl Mock {
    fn start(key: &'static str) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let texts = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let good = Arc::new(AtomicUsize::new(0));
        let script: Arc<Mutex<Script>> = Arc::default();
        let (t, r, s) = (texts.clone(), requests.clone(), script.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().take(10_000) {
                let Ok(mut stream) = stream else { continue };
                let (t, r, s, good) = (t.clone(), r.clone(), s.clone(), good.clone());
                std::thread::spawn(move || {
                    let request = common::MockRequest::read(&stream);
                    let (target, auth, api_key) =
                        (&request.target, request.header("authorization"), request.header("api-key"));
                    let n = r.fetch_add(1, Ordering::SeqCst) + 1;
                    let (status, retry_after, answer) = {
                        let mut script = s.lock().unwrap();
                        if script.delay_s > 0.0 {
                            std::thread::sleep(std::time::Duration::from_secs_f64(script.delay_s));
                        }
                        if script.throttle_at == Some(n) {
                            (429, Some("2"), "{\"error\": \"slow down\"}".to_string())
                        } else if !script.faults.is_empty() {
                            let (status, after, body) = script.faults.remove(0);
                            (status, after, body.to_string())
                        } else if script.fail_after.is_some_and(|n| good.load(Ordering::SeqCst) >= n) {
                            (500, None, "{\"error\": \"down\"}".to_string())
                        } else if script.azure.is_some_and(|path| target != path || api_key != key || !auth.is_empty())
                        {
                            (404, None, format!("{{\"error\": \"not {target} with an api-key\"}}"))
                        } else if script.azure.is_none() && auth != format!("Bearer {key}") {
                            (401, None, "{\"error\": \"bad key\"}".to_string())
                        } else {
                            let request: Value = request.json();
                            let inputs: Vec<String> = request["input"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .map(|v| v.as_str().unwrap().to_string())
                                .collect();
                            t.fetch_add(inputs.len(), Ordering::SeqCst);
                            good.fetch_add(1, Ordering::SeqCst);
                            // Answered in reverse order: the client must follow `index`.
                            let data: Vec<Value> = inputs
                                .iter()
                                .enumerate()
                                .rev()
                                .map(|(i, text)| {
                                    let mut v = ragsweep::stages::embed::random_unit_vector(text, DIM);
                                    if script.zero_for.is_some_and(|z| text.contains(z)) {
                                        v = vec![0.0; DIM];
                                    }
                                    serde_json::json!({"object": "embedding", "index": i, "embedding": v})
                                })
                                .collect();
                            let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
                            let answer = serde_json::json!({"object": "list", "data": data,
                                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}});
                            (200, None, answer.to_string())
                        }
                    };
                    let extra = retry_after.map_or(String::new(), |after| format!("Retry-After: {after}\r\n"));
                    common::mock_answer(&mut stream, status, &extra, &answer);
                });
            }
        });
        Mock { url, texts, requests, script }
    }
}

const EXPERIMENT: &str =
    "name = \"own\"\nunit = \"doc\"\nk = [1, 3]\nmetrics = [\"hit\", \"ndcg\"]\nreserved_fraction = 0.0\n\
    latency_cases = 3\n[cost]\nembedding_usd_per_1m_tokens = 0.0\n[[chunkers]]\nkind = \"markdown\"\n\
    [[retrievers]]\nkind = \"dense\"\nmodel = [\"local\", \"remote\"]\n";

/// A fixture with a models folder holding `local`, the random model the mock serves.
fn fixture() -> (Fixture, PathBuf) {
    let f = Fixture::new(DOCS, GOLDEN, EXPERIMENT);
    let models = f.path().join("models");
    common::random_model(&models, "local", DIM, "query: ");
    (f, models)
}

fn run(f: &Fixture, models: &Path) -> std::process::Output {
    let mut cmd = f.cmd();
    cmd.env("MOCK_KEY", "Sekr3t-key")
        .args(["run", "-q", "--models"])
        .arg(models)
        .arg("--cache")
        .arg(f.path().join("cache"))
        .arg("--out")
        .arg(f.path().join("out"))
        .arg("exp.toml");
    cmd.output().unwrap()
}

fn add_remote(f: &Fixture, models: &Path, mock: &Mock, extra: &[&str]) -> assert_cmd::assert::Assert {
    f.cmd()
        .env("MOCK_KEY", "Sekr3t-key")
        .args(["models", "add", "--name", "remote", "--url", &mock.url, "--model", "mock-embed"])
        .args(["--api-key-env", "MOCK_KEY", "--query-prefix", "query: ", "--batch-size", "2", "--concurrency", "3"])
        .args(["--usd-per-1m-tokens", "0.13", "--models"])
        .arg(models)
        .args(extra)
        .assert()
}

/// Every non-timing metric of the cell whose model is `model`.
fn metrics(m: &Value, model: &str) -> Vec<(String, Value)> {
    let row = common::row(m, "model", model);
    let mut out: Vec<(String, Value)> = row["metrics"]
        .as_object()
        .unwrap_or_else(|| panic!("{row}"))
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn an_http_model_scores_like_the_model_it_serves_is_cached_and_never_writes_its_key() {
    let mock = Mock::start("Sekr3t-key");
    let (f, models) = fixture();
    add_remote(&f, &models, &mock, &[]).success().stdout(predicate::str::contains("added remote: 24-dimensional"));
    let toml = std::fs::read_to_string(models.join("remote/model.toml")).unwrap();
    assert!(toml.contains("kind = \"http\"") && toml.contains("api_key_env = \"MOCK_KEY\""), "{toml}");
    f.cmd()
        .args(["models", "list", "--check", "--models"])
        .arg(&models)
        .assert()
        .success()
        .stdout(predicate::str::contains("remote").and(predicate::str::contains("yours (models add)")));

    let out = run(&f, &models);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run_dir = common::runs_in(&f.path().join("out/own"))[0].clone();
    let m = matrix(&run_dir);
    assert_eq!(metrics(&m, "local"), metrics(&m, "remote"), "the endpoint's vectors are the local model's");
    let remote = common::row(&m, "model", "remote");
    assert!(remote["cost"]["usd_index"].as_f64().unwrap() > 0.0, "priced by its own usd_per_1m_tokens: {remote}");
    assert_eq!(common::row(&m, "model", "local")["cost"]["usd_index"], 0.0);
    let sent = mock.texts.load(Ordering::SeqCst);
    assert!(sent > 0);
    // Every output, cache entry and model file: the key is in none of them.
    for file in ["out", "cache", "models"].iter().flat_map(|d| common::walk(&f.path().join(d))) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains("Sekr3t-key"), "{} holds the API key", file.display());
    }

    // The second run embeds passages from the cache: only the timed pass's questions go out.
    let requests = mock.requests.load(Ordering::SeqCst);
    let texts = mock.texts.load(Ordering::SeqCst);
    let out = run(&f, &models);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The timed pass embeds each of its 3 questions live, after as many warm-up calls.
    let timed = 2 * 3;
    let again = mock.texts.load(Ordering::SeqCst) - texts;
    assert!(again <= timed, "passages came from the cache: {again} texts sent again, {sent} the first time");
    assert!(mock.requests.load(Ordering::SeqCst) > requests, "the timed pass asks the endpoint per question");
}

/// An endpoint's all-zero vector is refused as a brought one is, before it is cached: the run
/// stops naming the text and writes nothing, and once the endpoint answers properly the next
/// run embeds that text and scores like the model it serves.
#[test]
fn an_endpoints_zero_vector_is_refused_and_never_cached() {
    let mock = Mock::start("Sekr3t-key");
    let (f, models) = fixture();
    add_remote(&f, &models, &mock, &[]).success();
    mock.script.lock().unwrap().zero_for = Some("Caminhões");
    let out = run(&f, &models);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("zero vector") && stderr.contains("Caminhões"), "{stderr}");
    assert!(common::runs_in(&f.path().join("out/own")).is_empty(), "nothing written");
    mock.script.lock().unwrap().zero_for = None;
    let out = run(&f, &models);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = common::runs_in(&f.path().join("out/own"));
    assert_eq!(runs.len(), 1, "the first run wrote nothing");
    let m = matrix(&runs[0]);
    assert_eq!(metrics(&m, "local"), metrics(&m, "remote"), "no zero vector was kept");
}

/// An endpoint that retries inside the timed pass (a 429 with `Retry-After: 2` on the first
/// timed call, after the warm-up): the call is made again and counted in the row, and its
/// two-second backoff is in no percentile; the summary says so.
#[test]
fn a_call_the_endpoint_retried_inside_the_timed_pass_is_made_again_and_counted() {
    let mock = Mock::start("Sekr3t-key");
    let (f, models) = fixture();
    add_remote(&f, &models, &mock, &[]).success();
    assert!(run(&f, &models).status.success());
    std::fs::remove_dir_all(f.path().join("out")).unwrap();
    // The second run embeds nothing but the remote cell's timed pass: 3 warm-up calls, then 3.
    mock.script.lock().unwrap().throttle_at = Some(mock.requests.load(Ordering::SeqCst) + 4);
    let out = run(&f, &models);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let last = common::runs_in(&f.path().join("out/own")).pop().unwrap();
    let m = matrix(&last);
    let latency = &common::row(&m, "model", "remote")["latency"];
    assert_eq!((latency["retried"].as_u64(), latency["n"].as_u64()), (Some(1), Some(3)), "{latency}");
    assert!(latency["p99_ms"].as_f64().unwrap() < 2000.0, "the backoff is in no percentile: {latency}");
    let summary = std::fs::read_to_string(last.join("summary.md")).unwrap();
    assert!(summary.contains("an endpoint retried inside timed calls of"), "{summary}");
}

/// An http model's cost is what the endpoint billed (its answers' `usage`, here a word count),
/// not ragsweep's own count, and a run from the cache prices the set the same.
#[test]
fn an_http_models_cost_is_the_endpoints_usage_in_every_run() {
    let mock = Mock::start("Sekr3t-key");
    let (f, models) = fixture();
    add_remote(&f, &models, &mock, &[]).success();
    let tokens = |f: &Fixture| {
        let last = common::runs_in(&f.path().join("out/own")).pop().unwrap();
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(last.join("manifest.json")).unwrap()).unwrap();
        let embed = manifest["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == "embed" && s["key"].as_str().unwrap().starts_with("remote passages"))
            .cloned()
            .unwrap();
        let row = common::row(&matrix(&last), "model", "remote")["cost"]["tokens_embedded"].as_u64().unwrap();
        std::fs::remove_dir_all(f.path().join("out")).unwrap();
        (row, embed)
    };
    assert!(run(&f, &models).status.success());
    let (first, embed) = tokens(&f);
    assert_eq!(Some(first), embed["embedding"]["usage_tokens"].as_u64(), "billed: {embed}");
    assert!(embed["note"].is_null(), "{embed}");
    assert!(run(&f, &models).status.success());
    let (again, embed) = tokens(&f);
    assert_eq!(again, first, "from the cache, the same bill: {embed}");
    assert!(embed["embedding"]["embedded"] == 0 && embed["note"].is_null(), "{embed}");
}

/// Azure OpenAI: the deployment URL's `api-version` query is kept on every request (and in
/// the cache identity), the key goes in an `api-key` header; the mock answers nothing else.
#[test]
fn an_azure_deployment_url_keeps_its_query_and_sends_the_key_as_api_key() {
    let mock = Mock::start("Sekr3t-key");
    mock.script.lock().unwrap().azure = Some("/openai/deployments/emb/embeddings?api-version=2024-02-01");
    let (f, models) = fixture();
    let base = mock.url.trim_end_matches("/v1");
    let url = format!("{base}/openai/deployments/emb?api-version=2024-02-01");
    f.cmd()
        .env("MOCK_KEY", "Sekr3t-key")
        .args(["models", "add", "--name", "remote", "--url", &url, "--model", "emb", "--api-key-env", "MOCK_KEY"])
        .args(["--auth", "api-key", "--query-prefix", "query: ", "--models"])
        .arg(&models)
        .assert()
        .success();
    let toml = std::fs::read_to_string(models.join("remote/model.toml")).unwrap();
    assert!(toml.contains("auth = \"api-key\"") && toml.contains("api-version=2024-02-01"), "{toml}");
    let out = run(&f, &models);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let m = matrix(&common::runs_in(&f.path().join("out/own"))[0]);
    assert_eq!(metrics(&m, "local"), metrics(&m, "remote"));
    let manifest =
        std::fs::read_to_string(common::runs_in(&f.path().join("out/own"))[0].join("manifest.json")).unwrap();
    assert!(!manifest.contains("Sekr3t-key"));
    // A Bearer-only client would have been refused: the same model with `auth = "bearer"`.
    std::fs::write(models.join("remote/model.toml"), toml.replace("auth = \"api-key\"", "auth = \"bearer\"")).unwrap();
    std::fs::remove_dir_all(f.path().join("cache")).unwrap();
    let out = run(&f, &models);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("404"));
}

/// A bundled model re-exported in sentence-transformers layout (`modules.json` with Pooling and
/// Normalize, `1_Pooling/config.json`, `sentence_bert_config.json`'s `max_seq_length`,
/// `config_sentence_transformers.json`'s prompts) is added with no flags and scores exactly like
/// the bundled model: MiniLM at 256 tokens (its tokenizer says 512), e5 with its query and
/// passage prompts. `models add` says which setting came from which file.
#[test]
fn a_sentence_transformers_export_is_read_as_sentence_transformers_runs_it() {
    let bundled = common::repo().join("models");
    let experiment =
        EXPERIMENT.replace("[\"local\", \"remote\"]", "[\"minilm-l6\", \"st-minilm\", \"e5-small\", \"st-e5\"]");
    let f = Fixture::new(DOCS, GOLDEN, &experiment);
    let models = f.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for item in ["minilm-l6", "e5-small", "onnxruntime"] {
        std::os::unix::fs::symlink(bundled.join(item), models.join(item)).unwrap();
    }
    let export = |model: &str, max_seq: usize, prompts: Option<(&str, &str)>| {
        let dir = f.path().join(format!("st-{model}"));
        std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
        for file in ["model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]
        {
            std::fs::copy(bundled.join(model).join(file), dir.join(file)).unwrap();
        }
        let modules = serde_json::json!([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
        ]);
        std::fs::write(dir.join("modules.json"), modules.to_string()).unwrap();
        std::fs::write(
            dir.join("1_Pooling/config.json"),
            r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false, "pooling_mode_lasttoken": false}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("sentence_bert_config.json"),
            format!("{{\"max_seq_length\": {max_seq}, \"do_lower_case\": false}}"),
        )
        .unwrap();
        if let Some((query, passage)) = prompts {
            let config =
                serde_json::json!({"prompts": {"query": query, "passage": passage}, "default_prompt_name": null});
            std::fs::write(dir.join("config_sentence_transformers.json"), config.to_string()).unwrap();
        }
        dir
    };
    let minilm = export("minilm-l6", 256, None);
    let e5 = export("e5-small", 512, Some(("query: ", "passage: ")));
    for (dir, name) in [(&minilm, "st-minilm"), (&e5, "st-e5")] {
        let out =
            f.cmd().args(["models", "add"]).arg(dir).args(["--name", name, "--models"]).arg(&models).assert().success();
        let said = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert!(said.contains("pooling mean (1_Pooling/config.json)"), "{said}");
        assert!(said.contains("(sentence_bert_config.json max_seq_length)"), "{said}");
        if name == "st-e5" {
            assert!(
                said.contains("query_prefix \"query: \" (config_sentence_transformers.json prompts.query)"),
                "{said}"
            );
        }
    }
    assert!(std::fs::read_to_string(models.join("st-minilm/model.toml")).unwrap().contains("max_length = 256"));
    let e5_toml = std::fs::read_to_string(models.join("st-e5/model.toml")).unwrap();
    assert!(e5_toml.contains("query_prefix = \"query: \"") && e5_toml.contains("passage_prefix = \"passage: \""));
    let out = run(&f, &models);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let m = matrix(&common::runs_in(&f.path().join("out/own"))[0]);
    assert_eq!(metrics(&m, "minilm-l6"), metrics(&m, "st-minilm"));
    assert_eq!(metrics(&m, "e5-small"), metrics(&m, "st-e5"));
}

/// The passages the markdown chunker makes of the fixture's folder (one per section).
fn passages(f: &Fixture) -> usize {
    common::walk(&f.path().join("docs"))
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap().lines().filter(|l| l.starts_with('#')).count())
        .sum()
}

#[test]
fn an_endpoint_that_fails_is_retried_and_what_it_embedded_is_kept() {
    let mock = Mock::start("Sekr3t-key");
    let (f, models) = fixture();
    add_remote(&f, &models, &mock, &[]).success();
    // One 429 with Retry-After, one 500: both retried, the run succeeds.
    mock.script.lock().unwrap().faults =
        vec![(429, Some("0"), "{\"error\": \"slow down\"}"), (500, None, "{\"error\": \"oops\"}")];
    let out = run(&f, &models);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(mock.script.lock().unwrap().faults.is_empty(), "both faults were answered and retried");

    // An endpoint that goes down mid-run: the run fails saying how far it got, and keeps it.
    let (f, models) = fixture();
    add_remote(&f, &models, &mock, &[]).success();
    let docs = f.path().join("docs");
    for i in 0..12 {
        std::fs::write(docs.join(format!("extra{i}.md")), format!("# Extra {i}\nTexto extra número {i}.\n")).unwrap();
    }
    let toml = models.join("remote/model.toml");
    let settings = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("{settings}max_retries = 1\n")).unwrap();
    let before = mock.texts.load(Ordering::SeqCst);
    mock.script.lock().unwrap().fail_after = Some(mock.requests.load(Ordering::SeqCst) + 2);
    let out = run(&f, &models);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("HTTP 500") && stderr.contains("still after 1 retries"), "{stderr}");
    assert!(stderr.contains("they are cached, so a rerun continues from there"), "{stderr}");
    assert!(!stderr.contains("Sekr3t-key"));
    let embedded_first = mock.texts.load(Ordering::SeqCst) - before;
    assert!(embedded_first > 0);
    mock.script.lock().unwrap().fail_after = None;
    let before = mock.texts.load(Ordering::SeqCst);
    let out = run(&f, &models);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let second = mock.texts.load(Ordering::SeqCst) - before;
    // Every text is embedded once over both runs, but for the timed pass's live questions.
    let timed = 2 * 3;
    let questions = 3;
    assert_eq!(
        embedded_first + second - timed,
        passages(&f) + questions,
        "{embedded_first} + {second}: nothing embedded twice"
    );

    // A body that is not an embeddings answer, a wrong key and a slow answer stop with why.
    for (fault, says) in [
        ((200, None, "<html>gateway</html>"), "not an OpenAI embeddings response"),
        ((401, None, "{\"error\": \"bad key\"}"), "HTTP 401"),
        // A gateway that quotes the header it refused: the key is shown as *** wherever it is.
        ((401, None, "{\"error\": \"refused Authorization: Bearer Sekr3t-key\"}"), "Bearer ***"),
    ] {
        let (f, models) = fixture();
        add_remote(&f, &models, &mock, &[]).success();
        mock.script.lock().unwrap().faults = vec![fault];
        let out = run(&f, &models);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says) && stderr.contains("model remote at http://127.0.0.1"), "{stderr}");
        assert!(common::walk(&f.path().join("out")).iter().all(|p| !p.ends_with("matrix.json")), "nothing written");
        assert!(!stderr.contains("Sekr3t"), "the key is never shown: {stderr}");
    }
    let (f, models) = fixture();
    add_remote(&f, &models, &mock, &[]).success();
    let toml = models.join("remote/model.toml");
    let settings = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("{settings}timeout_s = 0.5\nmax_retries = 0\n")).unwrap();
    mock.script.lock().unwrap().delay_s = 2.0;
    let out = run(&f, &models);
    mock.script.lock().unwrap().delay_s = 0.0;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no answer within"), "{stderr}");
}

#[test]
fn an_http_model_toml_is_checked_at_its_line() {
    let (f, models) = fixture();
    for (toml, says) in [
        ("id = \"remote\"\nkind = \"http\"\ndim = 24\nmodel = \"m\"\n", "needs `url`"),
        ("id = \"remote\"\nkind = \"http\"\ndim = 24\nurl = \"http://u:pw@h/v1\"\nmodel = \"m\"\n", "model.toml:4:"),
        (
            "id = \"remote\"\nkind = \"http\"\ndim = 24\nurl = \"http://h/v1\"\nmodel = \"m\"\nconcurrency = 0\n",
            "model.toml:6:",
        ),
        ("id = \"remote\"\ndim = 24\npooling = \"mean\"\nmax_length = 8\nurl = \"http://h/v1\"\n", "model.toml:5:"),
        ("id = \"remote\"\nkind = \"random\"\ndim = 24\nnormalize = false\n", "always L2-normalised"),
    ] {
        std::fs::create_dir_all(models.join("remote")).unwrap();
        std::fs::write(models.join("remote/model.toml"), toml).unwrap();
        let out = run(&f, &models);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{toml}: {stderr}");
        assert!(stderr.contains(says), "{toml}: {stderr}");
    }
}

/// `models add` of an ONNX export (a copy of the bundled MiniLM): its cells equal the bundled
/// model's; editing its settings makes another key, not damage; a changed file is damage.
#[test]
fn an_added_onnx_export_scores_like_the_bundled_model_and_keeps_its_record() {
    let bundled = common::repo().join("models");
    let export = tempfile::tempdir().unwrap();
    for file in ["model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"] {
        std::fs::copy(bundled.join("minilm-l6").join(file), export.path().join(file)).unwrap();
    }
    let experiment = EXPERIMENT.replace("[\"local\", \"remote\"]", "[\"minilm-l6\", \"mine\"]");
    let f = Fixture::new(DOCS, GOLDEN, &experiment);
    // A models folder of its own, holding the bundled model and ONNX Runtime by link.
    let models = f.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for item in ["minilm-l6", "onnxruntime"] {
        std::os::unix::fs::symlink(bundled.join(item), models.join(item)).unwrap();
    }
    let add = |name: &str, extra: &[&str]| {
        f.cmd()
            .args(["models", "add"])
            .arg(export.path())
            .args(["--name", name, "--max-length", "256", "--models"])
            .arg(&models)
            .args(extra)
            .assert()
    };
    // What the model does not run on (a framework's weights, notes, a README) is never read:
    // not copied, so never checked at every run, and said.
    let extras = ["README.md", "model.safetensors", "notes.bin", "pytorch_model.bin"];
    for extra in extras {
        std::fs::write(export.path().join(extra), b"not the graph").unwrap();
    }
    add("mine", &[])
        .success()
        .stdout(predicate::str::contains("added mine: 384-dimensional vectors, 256 tokens"))
        .stdout(predicate::str::contains(format!("not copied: {}", extras.join(", "))));
    for extra in extras {
        assert!(!models.join("mine").join(extra).exists(), "{extra} was copied");
    }
    let record = std::fs::read_to_string(models.join("mine/installed.json")).unwrap();
    let recorded: Vec<String> = serde_json::from_str::<serde_json::Value>(&record).unwrap()["files"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        recorded,
        ["config.json", "model.onnx", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"],
        "{record}"
    );
    add("mine", &[]).failure().stderr(predicate::str::contains("exists: `--force` replaces it"));
    add("minilm-l6", &[]).failure().stderr(predicate::str::contains("a bundled model's name"));
    add("Bad/Name", &[]).failure().stderr(predicate::str::contains("lower-case letters"));
    std::fs::remove_file(export.path().join("tokenizer_config.json")).unwrap();
    std::fs::remove_file(export.path().join("special_tokens_map.json")).unwrap();
    add("mine-pad", &[]).success();
    // Links out of the export (the process environment, a system file) are never copied; a
    // needed file that links out is refused.
    std::os::unix::fs::symlink("/proc/self/environ", export.path().join("notes.txt")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", export.path().join("vocab.txt")).unwrap();
    f.cmd()
        .env("PLANTED_MARKER", "m4rk3r-environ")
        .args(["models", "add"])
        .arg(export.path())
        .args(["--name", "linked", "--max-length", "256", "--models"])
        .arg(&models)
        .assert()
        .success();
    for file in ["notes.txt", "vocab.txt"] {
        assert!(!models.join("linked").join(file).exists(), "{file} was copied");
    }
    let record = std::fs::read_to_string(models.join("linked/installed.json")).unwrap();
    assert!(!record.contains("notes.txt") && !record.contains("vocab.txt"), "{record}");
    for path in common::walk(&models.join("linked")) {
        let bytes = std::fs::read(&path).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("m4rk3r-environ"), "{}", path.display());
    }
    std::fs::remove_file(export.path().join("notes.txt")).unwrap();
    std::fs::remove_file(export.path().join("vocab.txt")).unwrap();
    std::fs::rename(export.path().join("tokenizer.json"), f.path().join("tokenizer.json")).unwrap();
    std::os::unix::fs::symlink(f.path().join("tokenizer.json"), export.path().join("tokenizer.json")).unwrap();
    add("outside", &[]).failure().stderr(predicate::str::contains("a link to a file outside the export"));
    std::fs::remove_file(export.path().join("tokenizer.json")).unwrap();
    add("other", &[]).failure().stderr(predicate::str::contains("has no tokenizer.json"));

    let out = run(&f, &models);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let m = matrix(&common::runs_in(&f.path().join("out/own"))[0]);
    assert_eq!(metrics(&m, "minilm-l6"), metrics(&m, "mine"), "a copy of the bundled model scores the same");

    // A setting edited in model.toml: another key, and the model is still ok.
    let list = || f.cmd().args(["models", "list", "--check", "--models"]).arg(&models).assert();
    let key = |m: &Value| {
        m["models"].as_array().unwrap().iter().find(|e| e["id"] == "mine").unwrap()["key"].as_str().unwrap().to_string()
    };
    let manifest = |run: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap()
    };
    let first_key = key(&manifest(&common::runs_in(&f.path().join("out/own"))[0]));
    let toml = models.join("mine/model.toml");
    std::fs::write(&toml, std::fs::read_to_string(&toml).unwrap().replace("max_length = 256", "max_length = 128"))
        .unwrap();
    list().success().stdout(predicate::str::is_match(r"mine +[0-9.]+ MB  ok").unwrap());
    let out = run(&f, &models);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = common::runs_in(&f.path().join("out/own"));
    let second_key = key(&manifest(runs.last().unwrap()));
    assert_ne!(first_key, second_key, "another setting, another cache key");
    // A changed graph is damage.
    let onnx = models.join("mine/model.onnx");
    let mut bytes = std::fs::read(&onnx).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&onnx, bytes).unwrap();
    list().code(1).stdout(predicate::str::contains("mine").and(predicate::str::contains("DAMAGED")));
}

/// ONNX Runtime failing on a batch (any status; here a graph that takes one text at a time)
/// stops `validate` and the run at once with the runtime's message and the texts it was
/// embedding, and the run writes nothing.
#[test]
fn an_onnx_runtime_error_stops_the_run_with_its_texts_and_writes_nothing() {
    let experiment = EXPERIMENT.replace("[\"local\", \"remote\"]", "\"one-at-a-time\"");
    let f = Fixture::new(DOCS, GOLDEN, &experiment);
    let (bundled, models) = (common::repo().join("models"), f.path().join("models"));
    let model = models.join("one-at-a-time");
    std::fs::create_dir_all(&model).unwrap();
    std::os::unix::fs::symlink(bundled.join("onnxruntime"), models.join("onnxruntime")).unwrap();
    for file in ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"] {
        std::fs::copy(bundled.join("minilm-l6").join(file), model.join(file)).unwrap();
    }
    std::fs::write(
        model.join("model.toml"),
        "id = \"one-at-a-time\"\npooling = \"mean\"\nmax_length = 256\ndim = 384\n",
    )
    .unwrap();
    // The first output squeezed on its batch axis and put back: the same vectors for one text,
    // a runtime error ("Non-zero status code returned while running Squeeze node") for two.
    let python = common::repo().join("models/.venv/bin/python");
    let script = "import sys, onnx\nfrom onnx import helper\nm = onnx.load(sys.argv[1])\ng = m.graph\n\
        out = g.output[0].name\nfor n in g.node:\n    n.output[:] = [o + '_raw' if o == out else o for o in n.output]\n\
        g.initializer.append(helper.make_tensor('batch_axis', onnx.TensorProto.INT64, [1], [0]))\n\
        g.node.append(helper.make_node('Squeeze', [out + '_raw', 'batch_axis'], [out + '_one']))\n\
        g.node.append(helper.make_node('Unsqueeze', [out + '_one', 'batch_axis'], [out]))\nonnx.save(m, sys.argv[2])\n";
    let made = std::process::Command::new(&python)
        .args(["-c", script])
        .arg(bundled.join("minilm-l6/model.onnx"))
        .arg(model.join("model.onnx"))
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let says = |stderr: &str| {
        assert!(stderr.contains("Squeeze") && stderr.contains("embedding with one-at-a-time"), "{stderr}");
        assert!(stderr.contains("a batch of") && stderr.contains("the first"), "the texts it was embedding: {stderr}");
    };
    let validated = f.cmd().args(["validate", "exp.toml", "--models"]).arg(&models).output().unwrap();
    assert_eq!(validated.status.code(), Some(2));
    says(&String::from_utf8_lossy(&validated.stderr));

    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
        .current_dir(f.path())
        .args(["run", "-q", "--models"])
        .arg(&models)
        .arg("--cache")
        .arg(f.path().join("cache"))
        .arg("--out")
        .arg(f.path().join("out"))
        .arg("exp.toml")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(started.elapsed().as_secs() < 120, "the run still waits two minutes after the runtime failed");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    says(&stderr);
    assert_eq!(stderr.matches("Non-zero status code").count(), 1, "said once, without the runtime's own log: {stderr}");
    assert!(common::runs_in(&f.path().join("out/own")).is_empty(), "a failed run writes no run");
}

/// Every secret a run is given, planted at once — an endpoint's API key, a database password in
/// the environment, and the process environment behind a link in the corpus and in a model
/// export — is in no file of the outputs, the cache or the models folder once `models add`,
/// `validate`, `run`, `report`, `contexts`, `judge --export` and `vectors` have run.
#[test]
fn no_output_cache_or_models_file_holds_a_planted_secret() {
    const KEY: &str = "Sekr3t-key";
    let (password, marker) = ("Pa55w0rd-planted-db", "m4rk3r-environ-planted");
    let mock = Mock::start(KEY);
    let bundled = common::repo().join("models");
    let export = tempfile::tempdir().unwrap();
    for file in ["model.onnx", "tokenizer.json"] {
        std::fs::copy(bundled.join("minilm-l6").join(file), export.path().join(file)).unwrap();
    }
    std::os::unix::fs::symlink("/proc/self/environ", export.path().join("notes.txt")).unwrap();
    let (f, models) = fixture();
    std::fs::write(
        f.path().join("exp.toml"),
        std::fs::read_to_string(f.path().join("exp.toml"))
            .unwrap()
            .replace("[\"local\", \"remote\"]", "[\"local\", \"remote\", \"mine\"]"),
    )
    .unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", f.path().join("docs/environ.md")).unwrap();
    std::os::unix::fs::symlink(bundled.join("onnxruntime"), models.join("onnxruntime")).unwrap();
    let planted = |cmd: &mut assert_cmd::Command| {
        cmd.env("MOCK_KEY", KEY).env("PGPASSWORD", password).env("PLANTED_MARKER", marker);
    };
    let ragsweep = |args: &[&str]| {
        let mut cmd = f.cmd();
        planted(&mut cmd);
        cmd.args(args);
        if args[0] != "report" {
            cmd.arg("--models").arg(&models);
        }
        cmd.assert().success()
    };
    add_remote(&f, &models, &mock, &[]).success();
    let mut add = f.cmd();
    planted(&mut add);
    add.args(["models", "add"]).arg(export.path()).args(["--name", "mine", "--max-length", "256", "--models"]);
    add.arg(&models).assert().success();
    let cache = f.path().join("cache");
    let cache = cache.to_str().unwrap();
    ragsweep(&["validate", "exp.toml", "--cache", cache]);
    ragsweep(&["run", "-q", "exp.toml", "--cache", cache, "--out", "out"]);
    let run = common::runs_in(&f.path().join("out/own"))[0].to_str().unwrap().to_string();
    ragsweep(&["report", &run]);
    ragsweep(&["contexts", &run, "--cell", "c02", "--k", "3", "--cache", cache]);
    ragsweep(&["judge", &run, "--export", "pool.jsonl"]);
    ragsweep(&["vectors", "exp.toml", "--model", "remote", "--out", "vectors", "--cache", cache]);

    // Every file these wrote (links are the test's own plants, not outputs).
    let mut files = Vec::new();
    let mut folders = vec![f.path().to_path_buf()];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let (path, kind) = {
                let e = entry.unwrap();
                (e.path(), e.file_type().unwrap())
            };
            if kind.is_dir() {
                folders.push(path);
            } else if kind.is_file() {
                files.push(path);
            }
        }
    }
    for dir in ["out", "cache", "vectors", "models/mine", "models/remote"] {
        assert!(files.iter().any(|p| p.starts_with(f.path().join(dir))), "{dir} holds files");
    }
    assert!(files.iter().any(|p| p.ends_with("pool.jsonl")));
    for file in &files {
        let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        for secret in [KEY, password, marker] {
            assert!(!text.contains(secret), "{} holds {secret}", file.display());
        }
    }
}
