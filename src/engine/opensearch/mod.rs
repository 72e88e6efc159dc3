//! OpenSearch as the ranking source of lexical cells: the team's own cluster
//! (`[engines.opensearch] url`, with an API key or basic credentials from the environment). No
//! registry these machines reach ships an OpenSearch node (Maven Central is not reachable; PyPI,
//! npm and Debian ship clients), so ragsweep starts none: it measures the cluster the team runs.
//!
//! A grid cell's chunks go into an index of their own, one shard, the cell's analyzer and its
//! BM25 `k1`/`b` as the index's similarity, each chunk's groups as a `keyword` array; `in_query`
//! is a `terms` filter inside the `bool` query, beside the `match`. Indexes are content-keyed: an
//! index's name is the key of what it holds, and it is complete when its mapping's `_meta`
//! records the seconds its build took (written last, after its refresh); an index without it is
//! an unfinished build, which stops the run rather than be searched.

pub(crate) mod served;

use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};

use crate::analyze::Term;
use crate::engine::connect::Secret;
use crate::engine::registry::{EngineSources, RunningEngine, ServerSpec, ServingEngine, Started, UserServer};
use crate::engine::{asked_groups, stored_groups, ChunkAcl};
use crate::error::{Error, Result};
use crate::retrieve::bm25::{Bm25Explanation, TermScore};
use crate::retrieve::hits::Hit;
use crate::retrieve::source::{Query, RankingSource, Restriction, ScoreNode, Side, SourceScore};
use crate::vocab::{EngineKind, ServedRows};

/// OpenSearch, `engine = "opensearch"`.
pub const ENGINE: EngineKind = EngineKind::named("opensearch");

/// The most hits one search returns (OpenSearch's `index.max_result_window`).
pub const MAX_WINDOW: usize = 10_000;
/// Chunks per `_bulk` request.
const BULK: usize = 500;
/// The `_meta` key of a finished build: the seconds it took.
const BUILT: &str = "ragsweep_build_seconds";

fn fail(what: impl Into<String>) -> Error {
    Error::Engine { engine: ENGINE.name(), what: what.into(), source: None }
}

/// The team's cluster: its `http(s)://host:port` and the `Authorization` header its credentials
/// make (`ApiKey KEY`, or `Basic` of `user:password`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenSearchEndpoint {
    pub url: String,
    pub authorization: Option<Secret>,
}

/// OpenSearch as a serving engine: the team's cluster only.
pub struct Serving;

impl ServingEngine for Serving {
    fn install(&self, _engines: &Path, _force: bool, _step: &dyn Fn(&str)) -> Result<String> {
        Ok("OpenSearch: nothing installed; runs connect to your cluster ([engines.opensearch] url), since no registry reachable here ships a node".into())
    }

    fn check(&self, from: &EngineSources<'_>, writes: bool) -> Result<String> {
        let endpoint = endpoint(from)?;
        let engine = OpenSearchEngine::connect(endpoint);
        let version = engine.version()?;
        if !writes {
            return Ok(format!("engine opensearch: {} ({version}) answers; nothing is written", endpoint.url));
        }
        let probe = format!("ragsweep-probe-{}", std::process::id());
        engine.request("PUT", &format!("/{probe}"), Some(&json!({"settings": {"index": {"number_of_shards": 1}}})))?;
        engine.request("DELETE", &format!("/{probe}"), None)?;
        Ok(format!(
            "engine opensearch: {} ({version}) answers; an index was created and deleted there, as a run's first build does",
            endpoint.url
        ))
    }

    fn start(&self, from: &EngineSources<'_>, _writes: bool) -> Result<Started> {
        let endpoint = endpoint(from)?;
        let engine = OpenSearchEngine::connect(endpoint);
        let what = format!("connected to the experiment's OpenSearch at {} ({})", endpoint.url, engine.version()?);
        Ok(Started { engine: Box::new(engine), what, note: None })
    }

    fn interrupted(&self) {}

    fn secret_keys(&self) -> &'static [&'static str] {
        &["api_key_env", "basic_auth_env"]
    }

    fn serve(&self, _engines: &Path, _secret_file: Option<&Path>) -> Result<crate::engine::registry::Served> {
        Err(fail(NO_NODE))
    }

    fn server_url(&self, url: &str) -> std::result::Result<String, String> {
        address(url)
    }

    fn user_server(&self, spec: &ServerSpec) -> Result<UserServer> {
        use base64::Engine as _;
        let authorization = match (spec.secret("api_key_env")?, spec.secret("basic_auth_env")?) {
            (Some(key), _) => Some(Secret::new(format!("ApiKey {}", key.expose()))),
            (None, Some(basic)) => {
                if !basic.expose().contains(':') {
                    return Err(Error::input(
                        spec.at.clone(),
                        "the variable `basic_auth_env` names holds no `user:password`".to_string(),
                    ));
                }
                let encoded = base64::engine::general_purpose::STANDARD.encode(basic.expose());
                Some(Secret::new(format!("Basic {encoded}")))
            }
            (None, None) => None,
        };
        Ok(Box::new(OpenSearchEndpoint { url: spec.url.clone(), authorization }))
    }

    fn served_rows(&self, from: &EngineSources<'_>, rows: &ServedRows) -> Result<Vec<(String, String)>> {
        OpenSearchEngine::connect(endpoint(from)?).served_rows(rows)
    }
}

const NO_NODE: &str = "ragsweep starts no OpenSearch node (no registry reachable here ships one): declare your cluster with [engines.opensearch] url = \"http://host:9200\"";

fn endpoint<'a>(from: &'a EngineSources<'_>) -> Result<&'a OpenSearchEndpoint> {
    from.server::<OpenSearchEndpoint>().ok_or_else(|| fail(NO_NODE))
}

/// A cluster's `http://host:port` or `https://host:port` (TLS with the public roots), as written
/// in `[engines.opensearch]`: credentials, a path, a query or a fragment are refused (the
/// credentials belong in the variable `api_key_env` or `basic_auth_env` names).
pub fn address(url: &str) -> std::result::Result<String, String> {
    // Checked first: no message below repeats a URL that holds a secret.
    if url.contains('@') || url.contains(['?', '#']) {
        return Err("the URL holds credentials, a query or a fragment: give http(s)://host:port, and the credentials in the variable that `api_key_env` or `basic_auth_env` names".into());
    }
    let (scheme, rest) = url
        .split_once("://")
        .filter(|(s, _)| matches!(*s, "http" | "https"))
        .ok_or_else(|| "the URL is not an http://host:port or https://host:port address".to_string())?;
    let hostport = rest.trim_end_matches('/');
    if hostport.is_empty() || hostport.contains('/') {
        return Err("the URL is not an http(s)://host:port address (a path is not taken)".into());
    }
    Ok(format!("{scheme}://{hostport}"))
}

/// A connection to the team's cluster.
pub struct OpenSearchEngine {
    base: String,
    authorization: Option<Secret>,
    agent: ureq::Agent,
}

impl RunningEngine for OpenSearchEngine {}

/// An index built (or found) on the cluster.
#[derive(Debug, Clone)]
pub struct OpenSearchIndex {
    pub name: String,
    pub bytes: u64,
    pub build_seconds: f64,
    pub reused: bool,
}

impl OpenSearchEngine {
    pub fn connect(endpoint: &OpenSearchEndpoint) -> OpenSearchEngine {
        let agent = crate::engine::connect::http_agent();
        OpenSearchEngine { base: endpoint.url.clone(), authorization: endpoint.authorization.clone(), agent }
    }

    /// The distribution and version the cluster says it is.
    pub fn version(&self) -> Result<String> {
        let root = self.request("GET", "/", None)?;
        let version = &root["version"];
        let distribution = version["distribution"].as_str().unwrap_or("elasticsearch");
        Ok(format!("{distribution} {}", version["number"].as_str().unwrap_or("of unknown version")))
    }

    /// One request (GET, PUT, POST or DELETE) with a JSON body (NDJSON when `ndjson`; empty when
    /// `None`), its JSON answer; an answer of status 400 and above is an error with the
    /// cluster's reason.
    fn send(&self, method: &str, path: &str, body: Option<String>, ndjson: bool) -> Result<Value> {
        let url = format!("{}{path}", self.base);
        let request = match method {
            "PUT" => self.agent.put(&url),
            "POST" => self.agent.post(&url),
            "DELETE" => self.agent.delete(&url).force_send_body(),
            _ => self.agent.get(&url).force_send_body(),
        };
        let kind = if ndjson { "application/x-ndjson" } else { "application/json" };
        let mut request = request.header("Content-Type", kind);
        if let Some(auth) = &self.authorization {
            request = request.header("Authorization", auth.expose());
        }
        let response =
            request.send(body.unwrap_or_default().as_bytes()).map_err(|e| fail(format!("{method} {path}: {e}")))?;
        let status = response.status().as_u16();
        let text = response.into_body().read_to_string().map_err(|e| fail(format!("{method} {path}: {e}")))?;
        if status >= 400 {
            let reason = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["error"]["reason"].as_str().map(str::to_string))
                .unwrap_or_else(|| crate::words::clip(&text, 300));
            return Err(fail(format!("{method} {path}: {status} {reason}")));
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| fail(format!("{method} {path}: not JSON ({e})")))
    }

    pub fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        self.send(method, path, body.map(Value::to_string), false)
    }

    /// The mapping's `_meta` of index `name`, if the index exists.
    fn meta(&self, name: &str) -> Result<Option<Value>> {
        match self.request("GET", &format!("/{name}/_mapping"), None) {
            Ok(mapping) => Ok(Some(mapping[name]["mappings"]["_meta"].clone())),
            Err(Error::Engine { what, .. }) if what.contains(": 404 ") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The index `name` holding `texts` (chunk `i` as document `i`, its groups in `acl`), made
    /// with `settings` (its analysis and similarity) and `text_mapping` (the text field's
    /// mapping), built unless a finished build of it exists.
    pub fn lexical_index(
        &self,
        name: &str,
        texts: &[String],
        acl: ChunkAcl<'_>,
        settings: Value,
        text_mapping: Value,
    ) -> Result<OpenSearchIndex> {
        if let Some(meta) = self.meta(name)? {
            let Some(seconds) = meta[BUILT].as_f64() else {
                return Err(fail(format!(
                    "index {name} holds an unfinished build (another run is building it, or one stopped while it did): let that run finish, or delete the index (DELETE /{name})"
                )));
            };
            let count = self.count(name)?;
            if count != texts.len() as u64 {
                return Err(fail(format!(
                    "index {name} holds {count} documents where its build put {}: it was changed after it was built; delete it (DELETE /{name})",
                    texts.len()
                )));
            }
            let bytes = self.bytes(name)?;
            return Ok(OpenSearchIndex { bytes, name: name.to_string(), build_seconds: seconds, reused: true });
        }
        let started = Instant::now();
        let mut index_settings = settings;
        index_settings["number_of_shards"] = json!(1);
        index_settings["number_of_replicas"] = json!(0);
        let body = json!({
            "settings": {"index": index_settings},
            "mappings": {
                "dynamic": false,
                "_meta": {"ragsweep_chunks": texts.len()},
                "properties": {"text": text_mapping, "acl": {"type": "keyword"}},
            },
        });
        self.request("PUT", &format!("/{name}"), Some(&body))?;
        for (batch, chunk) in texts.chunks(BULK).enumerate() {
            let mut lines = String::new();
            for (j, text) in chunk.iter().enumerate() {
                let id = batch * BULK + j;
                lines.push_str(&json!({"index": {"_id": id.to_string()}}).to_string());
                lines.push('\n');
                lines.push_str(&json!({"text": text, "acl": stored_groups(acl(id))}).to_string());
                lines.push('\n');
            }
            let answer = self.send("POST", &format!("/{name}/_bulk"), Some(lines), true)?;
            if answer["errors"].as_bool() != Some(false) {
                return Err(fail(format!("POST /{name}/_bulk: {}", crate::words::clip(&answer.to_string(), 300))));
            }
        }
        self.request("POST", &format!("/{name}/_refresh"), None)?;
        let build_seconds = started.elapsed().as_secs_f64();
        let meta = json!({"_meta": {"ragsweep_chunks": texts.len(), BUILT: build_seconds}});
        self.request("PUT", &format!("/{name}/_mapping"), Some(&meta))?;
        Ok(OpenSearchIndex { bytes: self.bytes(name)?, name: name.to_string(), build_seconds, reused: false })
    }

    /// The bytes index `name`'s primaries store (0 when the cluster does not say).
    fn bytes(&self, name: &str) -> Result<u64> {
        let stats = self.request("GET", &format!("/{name}/_stats"), None)?;
        Ok(stats["_all"]["primaries"]["store"]["size_in_bytes"].as_u64().unwrap_or(0))
    }

    /// The hits of one `_search` of index `index` (at most `size`, with `source`, the `_source`
    /// fields asked for); an answer without hits is an error.
    pub fn hits(&self, index: &str, query: Value, size: usize, source: Value) -> Result<Vec<Value>> {
        if size == 0 {
            return Ok(Vec::new());
        }
        let body = json!({"size": size, "_source": source, "query": query});
        let mut answer = self.request("POST", &format!("/{index}/_search"), Some(&body))?;
        match answer["hits"]["hits"].take() {
            Value::Array(hits) => Ok(hits),
            _ => Err(fail(format!("{index}: an answer without hits"))),
        }
    }

    /// How many documents index `name` holds.
    pub fn count(&self, name: &str) -> Result<u64> {
        let answer = self.request("GET", &format!("/{name}/_count"), None)?;
        answer["count"].as_u64().ok_or_else(|| fail(format!("index {name}: a count without `count`")))
    }

    /// The terms index `index`'s analyzer of `field` makes of `text`, with byte spans (OpenSearch
    /// counts offsets in UTF-16 units).
    pub fn analyze(&self, index: &str, field: &str, text: &str) -> Result<Vec<Term>> {
        let answer =
            self.request("POST", &format!("/{index}/_analyze"), Some(&json!({"field": field, "text": text})))?;
        let mut byte_at = Vec::with_capacity(text.len() + 1);
        for (at, c) in text.char_indices() {
            byte_at.extend(std::iter::repeat_n(at, c.len_utf16()));
        }
        byte_at.push(text.len());
        let byte = |v: &Value| v.as_u64().and_then(|u| byte_at.get(u as usize).copied());
        let tokens = answer["tokens"].as_array().ok_or_else(|| fail(format!("{index}: _analyze without tokens")))?;
        tokens
            .iter()
            .map(|t| {
                let (Some(text), Some(from), Some(to)) =
                    (t["token"].as_str(), byte(&t["start_offset"]), byte(&t["end_offset"]))
                else {
                    return Err(fail(format!("{index}: a token without its text or offsets: {t}")));
                };
                Ok(Term { text: text.to_string(), from, to, position: t["position"].as_u64().unwrap_or(0) as usize })
            })
            .collect()
    }

    /// The cluster's explanation of document `id`'s score for `query`, as a score tree.
    pub fn explain(&self, index: &str, id: &str, query: Value) -> Result<Option<ScoreNode>> {
        let answer = self.request("POST", &format!("/{index}/_explain/{id}"), Some(&json!({"query": query})))?;
        if answer["matched"].as_bool() != Some(true) {
            return Ok(None);
        }
        Ok(Some(node(&answer["explanation"])))
    }
}

/// Lucene's BM25 explanation (OpenSearch's `_explain`) as a term table: each
/// `weight(FIELD:TERM in DOC)` node's document count `n`, frequency, idf and weight, the
/// document's length `dl` and the average `avgdl`, `k1` and `b`; `None` when the tree is not
/// BM25's. Terms the document lacks are not in the tree.
pub fn bm25_table(tree: &ScoreNode) -> Option<Bm25Explanation> {
    fn find<'t>(node: &'t ScoreNode, prefix: &str) -> Option<&'t ScoreNode> {
        if node.name.starts_with(prefix) {
            return Some(node);
        }
        node.children.iter().find_map(|c| find(c, prefix))
    }
    fn weights<'t>(node: &'t ScoreNode, out: &mut Vec<&'t ScoreNode>) {
        if node.name.starts_with("weight(") {
            out.push(node);
        } else {
            node.children.iter().for_each(|c| weights(c, out));
        }
    }
    let value = |node: &ScoreNode, prefix: &str| find(node, prefix).and_then(|n| n.value);
    let mut nodes = Vec::new();
    weights(tree, &mut nodes);
    let first = nodes.first()?;
    let mut terms = Vec::new();
    for node in &nodes {
        let term = node.name.split_once(':')?.1.split(" in ").next()?.to_string();
        terms.push(TermScore {
            term,
            query_count: 1,
            doc_freq: value(node, "n, ")? as u64,
            idf: value(node, "idf, ")?,
            tf: value(node, "freq, ")? as u32,
            contribution: node.value?,
        });
    }
    Some(Bm25Explanation {
        k1: value(first, "k1, ")?,
        b: value(first, "b, ")?,
        avg_length: value(first, "avgdl, ")?,
        length: value(first, "dl, ")? as u32,
        terms,
        score: tree.value?,
    })
}

/// An OpenSearch explanation (`value`, `description`, `details`) as a score tree.
fn node(explanation: &Value) -> ScoreNode {
    let value = explanation["value"].as_f64().map(|v| v as f32);
    let mut n = ScoreNode::leaf(explanation["description"].as_str().unwrap_or("").to_string(), value);
    n.children = explanation["details"].as_array().map(|d| d.iter().map(node).collect()).unwrap_or_default();
    n
}

/// A lexical index of a grid's chunks on the cluster, searched with the cell's query.
pub struct OpenSearchLexicalSource<'a> {
    pub engine: &'a OpenSearchEngine,
    pub index: &'a OpenSearchIndex,
}

impl OpenSearchLexicalSource<'_> {
    fn query(text: &str) -> Value {
        json!({"match": {"text": {"query": text}}})
    }
}

impl RankingSource for OpenSearchLexicalSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        let matched = Self::query(query.text);
        let body = match restrict {
            Some(r) => json!({"bool": {"must": [matched], "filter": [{"terms": {"acl": asked_groups(r)}}]}}),
            None => matched,
        };
        if depth > MAX_WINDOW {
            return Err(fail(format!("a search of {depth} hits is past OpenSearch's window of {MAX_WINDOW}")));
        }
        let hits = self.engine.hits(&self.index.name, body, depth, json!(false))?;
        hits.iter()
            .map(|h| {
                let chunk = h["_id"].as_str().and_then(|id| id.parse().ok());
                let chunk = chunk.ok_or_else(|| fail(format!("{}: a hit of id {}", self.index.name, h["_id"])))?;
                Ok(Hit { chunk, score: h["_score"].as_f64().unwrap_or(f64::NAN) as f32 })
            })
            .collect()
    }

    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        let tree = self.engine.explain(&self.index.name, &chunk.to_string(), Self::query(query.text))?;
        let score = tree.as_ref().and_then(|t| t.value);
        let bm25 = tree.as_ref().and_then(bm25_table);
        let parts = tree.map_or_else(Vec::new, |t| vec![t]);
        Ok(SourceScore { score, parts, bm25 })
    }

    fn analyze(&self, text: &str) -> Result<Option<Vec<Term>>> {
        Ok(Some(self.engine.analyze(&self.index.name, "text", text)?))
    }

    fn size_bytes(&self) -> u64 {
        self.index.bytes
    }

    fn side(&self) -> Side {
        Side::Lexical
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_http_or_https_host_and_port_without_secrets() {
        assert_eq!(address("http://localhost:9200/").unwrap(), "http://localhost:9200");
        assert_eq!(address("https://search.example:443").unwrap(), "https://search.example:443");
        assert!(address("https://u:p@h:9200").unwrap_err().contains("api_key_env"));
        assert!(!address("http://h:9200/?key=s3cret").unwrap_err().contains("s3cret"));
        assert!(address("ftp://h:9200").is_err());
        assert!(address("http://h:9200/index").unwrap_err().contains("path"));
    }
}
