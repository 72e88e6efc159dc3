//! OpenSearch as a serving engine, through the binary, on the team's-cluster path
//! (`[engines.opensearch] url`): no registry reachable here ships an OpenSearch node, so the
//! cluster is the Lucene stand-in of scripts/lucene-node (Lucene 8.7 from Debian, which
//! scripts/install-test-tools.sh installs and .ci/run calls; the test fails when it is missing,
//! it is never skipped). The grid's chunks go into an index of the cell's analyzer and BM25
//! settings, the groups filter is a `terms` filter inside the `bool` query, and the lists are
//! what the same query sent to the node directly lists.

use crate::common;

use std::io::BufRead;
use std::path::Path;

use serde_json::{json, Value};

/// The Lucene stand-in of an OpenSearch node, asking for an API key, until it is dropped.
struct Node {
    child: std::process::Child,
    url: String,
    log: std::path::PathBuf,
    key: String,
}

impl Node {
    fn start(root: &Path) -> Node {
        let log = root.join("node.log");
        let key = "k3y-0f-the-team".to_string();
        let mut child = std::process::Command::new(common::repo().join("scripts/lucene-node/run.sh"))
            .arg("0")
            .arg(&log)
            .args(["--api-key", &key])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let Some(port) = line.strip_prefix("listening ") else {
            let mut why = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut why).unwrap();
            panic!("the Lucene node did not start (run scripts/install-test-tools.sh): {line}{why}");
        };
        Node { child, url: format!("http://127.0.0.1:{}", port.trim()), log, key }
    }

    fn post(&self, path: &str, body: &Value) -> Value {
        self.send("POST", path, &body.to_string(), "application/json")
    }

    fn send(&self, method: &str, path: &str, body: &str, kind: &str) -> Value {
        let url = format!("{}{path}", self.url);
        let request = if method == "PUT" { ureq::put(&url) } else { ureq::post(&url) };
        let answer = request
            .header("Authorization", &format!("ApiKey {}", self.key))
            .header("Content-Type", kind)
            .send(body.as_bytes())
            .unwrap();
        serde_json::from_str(&answer.into_body().read_to_string().unwrap()).unwrap()
    }

    fn get(&self, path: &str) -> Value {
        let answer =
            ureq::get(&format!("{}{path}", self.url)).header("Authorization", &format!("ApiKey {}", self.key)).call();
        serde_json::from_str(&answer.unwrap().into_body().read_to_string().unwrap()).unwrap()
    }

    /// Every request line the node logged: `METHOD PATH BODY`.
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log).unwrap_or_default().lines().map(str::to_string).collect()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A team's corpus (Portuguese pages, a third restricted to one of ten groups) through ragsweep's
/// BM25 and OpenSearch's `portuguese` analyzer at k1 0.9, b 0.4, unfiltered, filtered in the query
/// and after it. The filtered cells leak nothing; each case's list is what the node lists for the
/// same `bool` query sent directly, the groups filter inside it; a second run builds nothing; an
/// unset or wrong key stops the run without the key in any message.
#[test]
fn a_users_opensearch_serves_bm25_filtered_in_the_query_and_lists_what_the_node_lists() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let node = Node::start(root);
    let pages = common::team_corpus(root, 120, 30);
    let exp = common::team_experiment(
        root,
        "os",
        &format!(
            "[engines.opensearch]\nurl = \"{}\"\napi_key_env = \"RAGSWEEP_TEST_OS_KEY\"\n[[chunkers]]\nkind = \"none\"\n\
             [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\nk1 = 0.9\nb = 0.4\n\
             [[retrievers]]\nkind = \"bm25\"\nengine = \"opensearch\"\nanalyzer = \"portuguese\"\nk1 = 0.9\nb = 0.4\n",
            node.url
        ),
    );
    std::fs::write(&exp, std::fs::read_to_string(&exp).unwrap().replace("\"in_query\"]", "\"in_query\", \"post\"]"))
        .unwrap();
    let key = [("RAGSWEEP_TEST_OS_KEY", node.key.as_str())];
    let out = common::on_users_servers(root, "run", &exp, &key);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = root.join("results/os/latest");
    let manifest = read(&run.join("manifest.json"));
    let labels: Vec<&str> =
        manifest["cells"].as_array().unwrap().iter().map(|c| c["label"].as_str().unwrap()).collect();
    assert_eq!(labels[3], "none opensearch bm25(portuguese,k1=0.9,b=0.4)", "{labels:?}");
    let matrix = common::matrix(&run);
    let row = |id: &str| common::cell_row(&matrix, id);
    // c01–c03 ragsweep's BM25, c04–c06 OpenSearch's; none, in_query, post.
    assert!(row("c04")["leaks"].as_u64().unwrap() > 0, "unfiltered, restricted pages come back");
    for cell in ["c05", "c06"] {
        assert_eq!(row(cell)["leaks"], 0, "{cell}: {}", row(cell));
    }

    // Each in-query case's list is the node's own answer to the same query.
    let golden: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(root.join("golden.json")).unwrap()).unwrap();
    let page_of = |text: &str| pages.iter().find(|(_, body, _)| body.trim() == text.trim()).unwrap().0.clone();
    let index = manifest["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "index" && s["key"].as_str().unwrap().starts_with("opensearch"))
        .expect("the OpenSearch index stage");
    assert_eq!(index["reused"], false, "{index}");
    let requests = node.requests();
    let index_name = requests
        .iter()
        .find_map(|r| r.strip_prefix("PUT /ragsweep-bm25-").map(|rest| rest.split(' ').next().unwrap().to_string()))
        .map(|suffix| format!("ragsweep-bm25-{suffix}"))
        .expect("the index was created");
    let lists: Vec<Value> = common::jsonl(&run.join("per_query.jsonl"));
    let mut compared = 0;
    for case in lists.iter().filter(|l| l["cell"] == "c05") {
        let asked = golden.iter().find(|g| g["id"] == case["case"]).unwrap();
        let mut groups: Vec<Value> = asked["groups"].as_array().unwrap().clone();
        groups.push(json!("ragsweep:public"));
        let body = json!({"size": 10, "_source": true, "query": {"bool": {
            "must": [{"match": {"text": {"query": asked["question"]}}}],
            "filter": [{"terms": {"acl": groups}}],
        }}});
        let answer = node.post(&format!("/{index_name}/_search"), &body);
        let direct: Vec<String> = answer["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| page_of(h["_source"]["text"].as_str().unwrap()))
            .collect();
        assert_eq!(case["top"], json!(direct), "case {}", case["case"]);
        compared += 1;
    }
    assert_eq!(compared, 30);
    let filtered = requests.iter().filter(|r| r.contains("\"filter\":[{\"terms\":{\"acl\":")).count();
    assert!(filtered > 0 && requests.iter().all(|r| !r.contains("\"post_filter\"")), "the filter is in the bool query");

    // A second run builds nothing: the index is found complete and searched.
    let before = node.requests().len();
    let again = common::on_users_servers(root, "run", &exp, &key);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let writes: Vec<String> = node.requests()[before..]
        .iter()
        .filter(|r| r.starts_with("PUT") || r.contains("/_bulk") || r.starts_with("DELETE"))
        .cloned()
        .collect();
    assert!(writes.is_empty(), "{writes:?}");

    // No key, or a wrong one: the run stops, and the key is in no message.
    let unset = common::on_users_servers(root, "run", &exp, &[]);
    let said = String::from_utf8_lossy(&unset.stderr);
    assert!(!unset.status.success() && said.contains("RAGSWEEP_TEST_OS_KEY, which is not set"), "{said}");
    let wrong = common::on_users_servers(root, "run", &exp, &[("RAGSWEEP_TEST_OS_KEY", "n0t-the-key")]);
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert!(!wrong.status.success() && said.contains("401"), "{said}");
    assert!(!said.contains("n0t-the-key") && !said.contains(&node.key), "{said}");
}

/// OpenSearch's keys are read by its kind and refused at their line: a dense cell, an analyzer
/// OpenSearch does not have, a custom one without its tokenizer, `b` out of range, a served
/// index's own settings, its missing fields or a template without the question, two secrets,
/// credentials in the URL; and a run without `[engines.opensearch]` says to declare the cluster.
#[test]
fn opensearch_cells_are_refused_at_their_line() {
    let docs = [("a.md", "# A\nTexto.\n")];
    let golden = r#"[{"id": "q1", "question": "texto", "relevant": ["a"]}]"#;
    let head = "name = \"s\"\nunit = \"doc\"\nk = [1]\n";
    let server = "[engines.opensearch]\nurl = \"http://127.0.0.1:9\"\n";
    let cells = "[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nengine = \"opensearch\"\n";
    for (section, rest, located, says) in [
        (server, "kind = \"dense\"\nmodel = \"m\"\n", true, "engine = \"opensearch\" serves BM25 here"),
        (server, "kind = \"bm25\"\nanalyzer = \"englsh\"\n", true, "is not one of OpenSearch's built-in analyzers"),
        (server, "kind = \"bm25\"\nanalyzer = { filter = [\"lowercase\"] }\n", true, "names its `tokenizer`"),
        (server, "kind = \"bm25\"\nb = 2.0\n", true, "`b` must be between 0 and 1"),
        (server, "kind = \"bm25\"\nlists = 4\n", true, "unknown parameter `lists`"),
        (
            server,
            "kind = \"bm25\"\nindex = \"docs\"\nid_field = \"d\"\ntext_field = \"t\"\nk1 = 1.0\n",
            true,
            "is the served index's own",
        ),
        (server, "kind = \"bm25\"\nindex = \"docs\"\ntext_field = \"t\"\n", true, "needs `id_field`"),
        (
            server,
            "kind = \"bm25\"\nindex = \"docs\"\nid_field = \"d\"\ntext_field = \"t\"\nquery = '{\"match_all\": {}}'\n",
            true,
            "holding {{query}} where the question goes",
        ),
        (
            "[engines.opensearch]\nurl = \"http://127.0.0.1:9\"\napi_key_env = \"A\"\nbasic_auth_env = \"B\"\n",
            "kind = \"bm25\"\n",
            true,
            "takes one secret: `api_key_env` is given already",
        ),
        (
            "[engines.opensearch]\nurl = \"https://u:s3cr3t@db:9200\"\n",
            "kind = \"bm25\"\n",
            true,
            "the URL holds credentials",
        ),
        ("", "kind = \"bm25\"\n", false, "declare your cluster with [engines.opensearch] url"),
    ] {
        let f = common::Fixture::new(&docs, golden, &format!("{head}{section}{cells}{rest}"));
        let out = f.cmd().args(["validate", "exp.toml"]).output().unwrap();
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{section}{rest}: {all}");
        assert!(all.contains(says), "{section}{rest}: {all}");
        if located {
            assert!(all.contains("exp.toml:"), "{section}{rest}: {all}");
        }
        assert!(!all.contains("s3cr3t"), "{all}");
    }
}

/// A team's own index, made by the test over the node's REST API with its own mapping (the page
/// id as a keyword, the text under a custom Portuguese analyzer with accents folded, the groups
/// with `everyone` on public pages) and searched read only with the team's `bool` template: each
/// case's list is what the node lists for that query sent directly, the filtered cell leaks
/// nothing, and the index is unchanged (its `_stats` before and after; no request of the run
/// writes).
#[test]
fn a_served_opensearch_index_is_measured_as_it_is_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let node = Node::start(root);
    let pages = common::team_corpus(root, 120, 30);
    let mapping = json!({
        "settings": {"index": {"analysis": {
            "filter": {"pt_stem": {"type": "stemmer", "language": "light_portuguese"}},
            "analyzer": {"pt_folded": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase", "asciifolding", "pt_stem"]}},
        }}},
        "mappings": {"properties": {
            "page": {"type": "keyword"},
            "body": {"type": "text", "analyzer": "pt_folded"},
            "groups": {"type": "keyword"},
        }},
    });
    node.send("PUT", "/team-docs", &mapping.to_string(), "application/json");
    let mut bulk = String::new();
    for (i, (id, body, groups)) in pages.iter().enumerate() {
        let groups = if groups.is_empty() { vec!["everyone".to_string()] } else { groups.clone() };
        bulk.push_str(&format!(
            "{}\n{}\n",
            json!({"index": {"_id": format!("row-{i}")}}),
            json!({"page": id, "body": body, "groups": groups})
        ));
    }
    node.send("POST", "/team-docs/_bulk", &bulk, "application/x-ndjson");
    node.post("/team-docs/_refresh", &json!({}));
    let stats_before = node.get("/team-docs/_stats");
    let written_before = node.requests().len();

    let template = r#"{"bool": {"should": [{"match": {"body": "{{query}}"}}, {"match": {"body": {"query": "{{query}}", "operator": "and", "boost": 2}}}]}}"#;
    let exp = common::team_experiment(
        root,
        "served",
        &format!(
            "[engines.opensearch]\nurl = \"{}\"\napi_key_env = \"RAGSWEEP_TEST_OS_KEY\"\n\
             [[retrievers]]\nkind = \"bm25\"\nengine = \"opensearch\"\nindex = \"team-docs\"\nid_field = \"page\"\n\
             text_field = \"body\"\nacl_field = \"groups\"\npublic_group = \"everyone\"\nquery = '{template}'\n",
            node.url
        ),
    );
    let out = common::on_users_servers(root, "run", &exp, &[("RAGSWEEP_TEST_OS_KEY", node.key.as_str())]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = root.join("results/served/latest");
    let matrix = common::matrix(&run);
    let row = |id: &str| common::cell_row(&matrix, id);
    assert!(row("c01")["leaks"].as_u64().unwrap() > 0, "unfiltered, restricted pages come back");
    assert_eq!(row("c02")["leaks"], 0, "{}", row("c02"));

    let golden: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(root.join("golden.json")).unwrap()).unwrap();
    let lists = common::jsonl(&run.join("per_query.jsonl"));
    let mut compared = 0;
    for case in lists.iter().filter(|l| l["cell"] == "c02") {
        let asked = golden.iter().find(|g| g["id"] == case["case"]).unwrap();
        let question = asked["question"].as_str().unwrap();
        let filled: Value = serde_json::from_str(&template.replace("{{query}}", question)).unwrap();
        let mut groups: Vec<Value> = asked["groups"].as_array().unwrap().clone();
        groups.push(json!("everyone"));
        let body = json!({"size": 10, "_source": ["page"], "query": {"bool": {"must": [filled], "filter": [{"terms": {"groups": groups}}]}}});
        let answer = node.post("/team-docs/_search", &body);
        let direct: Vec<&str> =
            answer["hits"]["hits"].as_array().unwrap().iter().map(|h| h["_source"]["page"].as_str().unwrap()).collect();
        assert_eq!(case["top"], json!(direct), "case {}", case["case"]);
        compared += 1;
    }
    assert_eq!(compared, 30);

    let runs = node.requests()[written_before..].to_vec();
    assert_eq!(node.get("/team-docs/_stats"), stats_before, "the index is unchanged");
    let writes: Vec<&String> = runs
        .iter()
        .filter(|r| {
            let (method, path) = r.split_once(' ').unwrap();
            let path = path.split(' ').next().unwrap();
            let reads = path.ends_with("/_search")
                || path.contains("/_search?scroll")
                || path.starts_with("/_search/scroll")
                || path.ends_with("/_count")
                || path == "/";
            !(reads && matches!(method, "GET" | "POST" | "DELETE") && (method != "DELETE" || path == "/_search/scroll"))
        })
        .collect();
    assert!(writes.is_empty(), "the run only read: {writes:?}");
    let scrolls: Vec<&String> = runs.iter().filter(|r| r.contains("scroll")).collect();
    assert!(scrolls.iter().any(|r| r.starts_with("DELETE /_search/scroll")), "the scroll is released: {scrolls:?}");
}

/// `diff --causes` between ragsweep's BM25 and OpenSearch's over the same chunks: "generation"
/// is `generat` to ragsweep's `en` (Snowball) and `gener` to Lucene's `english` (Porter), which
/// also makes "general" `gener`: OpenSearch alone lists the page about a general assembly, and
/// the case's first difference is that word's match. The other question's lists are equal.
#[test]
fn diff_names_why_two_lexical_lists_differ() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path());
    let docs = [
        ("a.md", "# Division\nCells divide by mitosis in each generation.\n"),
        ("b.md", "# Growth\nTissues grow when cells divide.\n"),
        ("c.md", "# Assembly\nThe general assembly met.\n"),
        ("d.md", "# Other\nNothing about it.\n"),
    ];
    let golden = r#"[{"id": "q1", "question": "generation", "relevant": ["a"]},
                    {"id": "q2", "question": "mitosis", "relevant": ["a"]}]"#;
    let experiment = format!(
        "name = \"why\"\nunit = \"doc\"\nk = [3]\n[engines.opensearch]\nurl = \"{}\"\napi_key_env = \"RAGSWEEP_TEST_OS_KEY\"\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"en\"\n\
         [[retrievers]]\nkind = \"bm25\"\nengine = \"opensearch\"\nanalyzer = \"english\"\nk1 = 0.9\nb = 0.4\n",
        node.url
    );
    let f = common::Fixture::new(&docs, golden, &experiment);
    f.run_cmd().env("RAGSWEEP_TEST_OS_KEY", &node.key).assert().success();
    let run = common::runs_in(&f.path().join("out/why"))[0].clone();
    let out = f
        .cmd()
        .args(["diff", "c01", "c02", "--metric", "hit@3", "--split", "all", "--causes", "--cache"])
        .arg(f.path().join("cache"))
        .arg("--run")
        .arg(&run)
        .env("RAGSWEEP_TEST_OS_KEY", &node.key)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("differ at 3: 1 of 2 cases equal, 1 differ"), "{said}");
    assert!(said.contains("      1  analyzer: a word matches a moved chunk on one side only"), "{said}");
    assert!(said.contains("q1           WordMatches: \"generation\" matches c on B only"), "{said}");
}
