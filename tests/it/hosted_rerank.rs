//! Hosted rerankers (`kind = "http-rerank"`), through the binary, against a loopback server
//! this test starts that speaks each API's shape (Cohere, Jina, Voyage, text-embeddings-
//! inference) and checks its path, body and key: `models add --rerank-api` probes each, and a
//! BM25 cell reranked by each gets the order the endpoint's scores give (here: BM25's reversed,
//! answered out of order, so the client must follow `index`). A wrong shape is refused.

use std::net::TcpListener;
use std::path::Path;

use serde_json::Value;

const KEY: &str = "rr-Sekr3t-77";

/// The mock: scores each passage by its position (the last sent ranks first), answering in
/// the shape the path names.
fn mock() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(1000) {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let request = crate::common::MockRequest::read(&stream);
                let (target, auth) = (request.target.clone(), request.header("authorization").to_string());
                let request = request.json();
                let api = target.trim_start_matches('/').split('/').next().unwrap_or("").to_string();
                let (status, answer) = answer(&api, &target, &auth, &request);
                crate::common::mock_answer(&mut stream, status, "", &answer);
            });
        }
    });
    url
}

fn answer(api: &str, target: &str, auth: &str, request: &Value) -> (u16, String) {
    if auth != format!("Bearer {KEY}") {
        return (401, "{\"error\": \"bad key\"}".into());
    }
    let expected_path = if api == "tei" { "/tei/rerank" } else { &format!("/{api}/v1/rerank") as &str };
    if target != expected_path {
        return (404, format!("{{\"error\": \"no {target}\"}}"));
    }
    let (documents, count_key) = match api {
        "tei" => (&request["texts"], None),
        "voyage" => (&request["documents"], Some("top_k")),
        _ => (&request["documents"], Some("top_n")),
    };
    let n = documents.as_array().map_or(0, Vec::len);
    if n == 0 || count_key.is_some_and(|k| request[k] != n) || request["query"].as_str().is_none() {
        return (400, format!("{{\"error\": \"not a {api} request: {request}\"}}"));
    }
    // Best first, as the APIs answer: the last passage sent scores highest.
    let items: Vec<(usize, f64)> = (0..n).rev().map(|i| (i, 0.1 + i as f64)).collect();
    let answer = match api {
        "cohere" => {
            serde_json::json!({"id": "x", "results": items.iter().map(|(i, s)| serde_json::json!({"index": i, "relevance_score": s})).collect::<Vec<_>>(), "meta": {"billed_units": {"search_units": 1}}})
        }
        "jina" => {
            serde_json::json!({"model": request["model"], "results": items.iter().map(|(i, s)| serde_json::json!({"index": i, "relevance_score": s, "document": {"text": "…"}})).collect::<Vec<_>>(), "usage": {"total_tokens": 42}})
        }
        "voyage" => {
            serde_json::json!({"object": "list", "data": items.iter().map(|(i, s)| serde_json::json!({"index": i, "relevance_score": s})).collect::<Vec<_>>(), "usage": {"total_tokens": 42}})
        }
        _ => serde_json::json!(items
            .iter()
            .map(|(i, s)| serde_json::json!({"index": i, "score": s}))
            .collect::<Vec<_>>()),
    };
    (200, answer.to_string())
}

fn ragsweep(root: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("ragsweep").unwrap();
    cmd.current_dir(root).env("RR_KEY", KEY).env("RAGSWEEP_MODELS", root.join("models"));
    cmd.env("RAGSWEEP_CACHE", root.join("cache"));
    cmd
}

#[test]
fn each_hosted_rerank_shape_reorders_bm25_by_the_endpoint_scores() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    for (i, extra) in ["vacation", "expenses", "laptops", "parking", "badges", "travel"].iter().enumerate() {
        let words = "policy ".repeat(i + 1);
        std::fs::write(root.join("docs").join(format!("p{i}.md")), format!("# P{i}\nThe {words}on {extra}.\n"))
            .unwrap();
    }
    std::fs::write(root.join("golden.jsonl"), "{\"id\": \"q1\", \"question\": \"policy\", \"relevant\": [\"p0\"]}\n")
        .unwrap();
    let url = mock();
    let apis = ["cohere", "jina", "voyage", "tei"];
    for api in apis {
        let at = if api == "tei" { format!("{url}/tei") } else { format!("{url}/{api}/v1") };
        // Priced as each bills: Cohere per search unit, Jina and Voyage per token.
        let price = if api == "cohere" { "--usd-per-1k-searches" } else { "--usd-per-1m-tokens" };
        let added = ragsweep(root)
            .args(["models", "add", "--name", &format!("rr-{api}"), "--rerank-api", api, "--url", &at])
            .args(["--model", "mock-rerank", "--api-key-env", "RR_KEY", price, "2"])
            .assert()
            .success();
        let said = String::from_utf8_lossy(&added.get_output().stdout).into_owned();
        assert!(said.contains(&format!("a hosted reranker ({api} API) that scored a probe pair")), "{said}");
    }
    // A Cohere answer read as TEI's is refused when the model is added, and nothing is added.
    let wrong = ragsweep(root)
        .args(["models", "add", "--name", "rr-wrong", "--rerank-api", "tei", "--url", &format!("{url}/cohere/v1")])
        .args(["--model", "m", "--api-key-env", "RR_KEY"])
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&wrong.get_output().stderr).into_owned();
    assert!(err.contains("could not score a probe pair") && !err.contains(KEY), "{err}");
    assert!(!root.join("models/rr-wrong").exists());

    let mut exp = String::from(
        "name = \"hosted\"\nunit = \"doc\"\nk = [6]\nreserved_fraction = 0.0\n[corpus]\npath = \"docs\"\n\
         [golden]\npath = \"golden.jsonl\"\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    for api in apis {
        exp.push_str(&format!("[[retrievers]]\nkind = \"bm25\"\nrerank = \"rr-{api}\"\nrerank_candidates = 6\n"));
    }
    std::fs::write(root.join("exp.toml"), exp).unwrap();
    ragsweep(root)
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicates::str::contains("reranker rr-tei:"));
    ragsweep(root).args(["run", "exp.toml", "-q", "--out", "out"]).assert().success();
    let lines: Vec<Value> = std::fs::read_to_string(root.join("out/hosted/latest/per_query.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let top = |cell: &str| -> Vec<String> {
        let line = lines.iter().find(|l| l["cell"] == cell).unwrap();
        line["top"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_string()).collect()
    };
    // What each answer said it used, per question, at the model's price.
    let matrix: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("out/hosted/latest/matrix.json")).unwrap()).unwrap();
    let cost = |cell: &str| -> Value {
        matrix["rows"].as_array().unwrap().iter().find(|r| r["cell"] == cell).unwrap()["cost"].clone()
    };
    assert_eq!(cost("c02")["rerank_searches"], 1.0, "{}", cost("c02"));
    assert_eq!(cost("c02")["usd_per_query"], 0.002);
    for cell in ["c03", "c04"] {
        assert_eq!(cost(cell)["rerank_tokens"], 42.0, "{}", cost(cell));
        assert_eq!(cost(cell)["usd_per_query"], 42.0 * 2.0 / 1e6);
    }
    assert_eq!(cost("c05")["usd_per_query"], 0.0, "TEI reports nothing: {}", cost("c05"));
    assert!(cost("c01").get("rerank_tokens").is_none());
    let bm25 = top("c01");
    assert_eq!(bm25.len(), 6, "{bm25:?}");
    let reversed: Vec<String> = bm25.iter().rev().cloned().collect();
    for cell in ["c02", "c03", "c04", "c05"] {
        assert_eq!(top(cell), reversed, "{cell} follows the endpoint's scores");
    }
    let matrix: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("out/hosted/latest/matrix.json")).unwrap()).unwrap();
    let row = matrix["rows"].as_array().unwrap().iter().find(|r| r["cell"] == "c05").unwrap();
    assert_eq!(row["config"]["rerank"], "rr-tei");
    assert!(row["latency"]["stages_ms"]["rerank(rr-tei)"].as_f64().unwrap() > 0.0, "{row}");
    for file in crate::common::walk(root) {
        assert!(!String::from_utf8_lossy(&std::fs::read(&file).unwrap()).contains(KEY), "{}", file.display());
    }
}
