//! Chroma as a serving engine, through the binary: `engine = "chroma"` cells start Chroma's
//! Rust server (the module of the pinned `chromadb` wheel that scripts/install-engines.sh
//! installs, which .ci/run calls; the test fails when it is missing, it is never skipped), load
//! the same vectors with each chunk's groups as metadata and search with the filter as Chroma's
//! own `where`. With a search list as wide as the collection it lists what the in-process exact
//! scan lists, case by case, filtered or not; a second run reuses its collections; the server
//! is gone when the run ends.

use crate::common;

use std::path::Path;

use crate::common::repo;
use serde_json::Value;

/// Each case's ranked documents of every cell in a run's `per_query.jsonl`.
fn tops(run: &Path) -> Vec<(String, String, Value)> {
    std::fs::read_to_string(run.join("per_query.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|l| (l["cell"].as_str().unwrap().to_string(), l["case"].as_str().unwrap().to_string(), l["top"].clone()))
        .collect()
}

/// `ragsweep run EXPERIMENT` with the models, cache and results of `root` and the engines the
/// repository installs; asserts it succeeded.
fn run_in(root: &Path, experiment: &Path) {
    let out = common::ragsweep()
        .arg("run")
        .arg(experiment)
        .args(["-q", "--models"])
        .arg(root.join("models"))
        .arg("--engines")
        .arg(repo().join("engines"))
        .arg("--cache")
        .arg(root.join("cache"))
        .arg("--out")
        .arg(root.join("results"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Fails (never skips) when scripts/install-engines.sh has not installed Chroma.
fn installed() {
    assert!(
        repo().join("engines/chroma/chromadb_rust_bindings").is_dir(),
        "Chroma is not installed: run scripts/install-engines.sh (.ci/run does)"
    );
}

/// Chroma servers whose command line names a path under `root`.
fn servers_under(root: &Path) -> usize {
    let root = root.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline.contains("chromadb_rust_bindings") && cmdline.contains(&root)
        })
        .count()
}

#[test]
fn chroma_searching_its_whole_graph_lists_what_the_exact_scan_lists_and_filters_in_the_query() {
    installed();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::team_corpus(root, 600, 60);
    let exp = common::team_experiment(
        root,
        "chroma",
        "[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"team-16\"\n\
         [[retrievers]]\nkind = \"dense\"\nengine = \"chroma\"\nmodel = \"team-16\"\nm = 16\nef_construction = 100\nef_search = [10, 1000]\n",
    );
    let run = || {
        run_in(root, &exp);
        assert_eq!(servers_under(root), 0, "the server is stopped when the run ends");
        let latest = root.join("results/chroma/latest");
        let read =
            |f: &str| -> Value { serde_json::from_str(&std::fs::read_to_string(latest.join(f)).unwrap()).unwrap() };
        (read("matrix.json"), read("manifest.json"), tops(&latest))
    };
    let (matrix, manifest, lists) = run();
    let labels: Vec<&str> =
        manifest["cells"].as_array().unwrap().iter().map(|c| c["label"].as_str().unwrap()).collect();
    assert_eq!(labels[5], "none dense(team-16,chroma hnsw,m=16,efc=100,ef=1000) filter=in_query", "{labels:?}");
    let row = |id: &str| common::cell_row(&matrix, id);
    // c01/c02 in process exact, c03/c04 Chroma ef 10, c05/c06 Chroma ef 1000; none, then in_query.
    assert_eq!(row("c06")["leaks"], 0, "the groups filter in Chroma's query");
    assert!(row("c05")["leaks"].as_u64().unwrap() > 0, "without the filter restricted pages come back");
    assert_eq!(row("c06")["under_return"]["@10"], 0);
    assert_eq!(row("c06")["recall_vs_oracle"]["@10"], 1.0, "{}", row("c06"));
    assert!(row("c04")["recall_vs_oracle"]["@10"].as_f64().unwrap() <= 1.0);
    let of = |cell: &str| -> Vec<(String, Value)> {
        lists.iter().filter(|(c, _, _)| c == cell).map(|(_, case, top)| (case.clone(), top.clone())).collect()
    };
    assert_eq!(of("c01").len(), 60);
    assert_eq!(of("c05"), of("c01"), "Chroma = in-process exact, case by case, without a filter");
    assert_eq!(of("c06"), of("c02"), "Chroma = in-process exact, case by case, filtered in the query");

    // A second run finds both collections in the cache's server data, and reports the seconds
    // their build took (not 0).
    let index_s = |m: &Value| {
        m["rows"].as_array().unwrap().iter().find(|r| r["cell"] == "c03").unwrap()["cost"]["index_s"].as_f64().unwrap()
    };
    let built = index_s(&matrix);
    let (again, manifest, _) = run();
    assert!(built > 0.0 && index_s(&again) == built, "{built} then {}", index_s(&again));
    let chroma: Vec<&Value> = manifest["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["stage"] == "index" && s["key"].as_str().unwrap().starts_with("chroma "))
        .collect();
    assert_eq!(chroma.len(), 2, "{chroma:?}");
    assert!(chroma.iter().all(|s| s["reused"] == true), "{chroma:?}");
}

/// `ragsweep engines install chroma` from the wheel already fetched (no network) unpacks the
/// same server module as scripts/install-engines.sh, and nothing else of the package.
#[test]
fn engines_install_unpacks_the_same_chroma_as_the_script() {
    let name = "chromadb-1.5.9-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl";
    let wheel = repo().join("engines/.wheels").join(name);
    assert!(wheel.is_file(), "scripts/install-engines.sh keeps the wheel in engines/.wheels");
    let engines = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(engines.path().join(".wheels")).unwrap();
    std::fs::copy(&wheel, engines.path().join(".wheels").join(name)).unwrap();
    assert_cmd::Command::cargo_bin("ragsweep")
        .unwrap()
        .args(["engines", "install", "chroma", "--engines"])
        .arg(engines.path())
        .assert()
        .success()
        .stdout(predicates::str::contains("Chroma 1.5.9"));
    let files = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.file_name().unwrap() != ".installed" {
                    out.push((path.strip_prefix(dir).unwrap().display().to_string(), std::fs::read(&path).unwrap()));
                }
            }
        }
        out.sort();
        out
    };
    let ours = files(&engines.path().join("chroma").canonicalize().unwrap());
    let script = files(&repo().join("engines/chroma").canonicalize().unwrap());
    let names = |files: &[(String, Vec<u8>)]| files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&ours),
        ["LICENSE", "chromadb_rust_bindings/__init__.py", "chromadb_rust_bindings/chromadb_rust_bindings.abi3.so"]
    );
    assert_eq!(names(&ours), names(&script));
    assert!(ours == script, "the module differs from the script's");
}

/// A Chroma of the user's own: `ragsweep engines serve chroma`, until it is dropped.
struct UserChroma {
    child: std::process::Child,
    url: String,
}

impl UserChroma {
    fn start() -> UserChroma {
        installed();
        let (child, url) = common::serve("chroma", &[]);
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        assert!(ureq::get(&format!("{url}/api/v2/heartbeat")).call().is_ok(), "it answers once its url is printed");
        UserChroma { child, url }
    }

    /// The names of its collections.
    fn collections(&self) -> Vec<String> {
        let path = "/api/v2/tenants/default_tenant/databases/default_database/collections";
        let text = ureq::get(&format!("{}{path}", self.url)).call().unwrap().into_body().read_to_string().unwrap();
        let listed: Value = serde_json::from_str(&text).unwrap();
        let mut names: Vec<String> =
            listed.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect();
        names.sort();
        names
    }
}

impl Drop for UserChroma {
    /// Closing its standard input stops the server.
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// `[engines.chroma] url = …`: the cells run on the user's own Chroma. Two shards started
/// together (no engines installed) build the collection they share once: one holds its build
/// lock, the other waits and reuses it; no lock or half-built collection is left; and a later
/// run's lists there equal the exact scan's, case by case.
#[test]
fn shards_on_a_users_chroma_build_each_collection_once() {
    let chroma = UserChroma::start();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::team_corpus(root, 400, 40);
    let server = format!("[engines.chroma]\nurl = \"{}\"\n[[chunkers]]\nkind = \"none\"\n", chroma.url);
    let served = "[[retrievers]]\nkind = \"dense\"\nengine = \"chroma\"\nmodel = \"team-16\"\nef_search = 1000\n";
    let shared = common::team_experiment(root, "shards", &format!("{server}{served}"));
    let validated = common::on_users_servers(root, "validate", &shared, &[]);
    let said = String::from_utf8_lossy(&validated.stdout);
    assert!(validated.status.success(), "{said}{}", String::from_utf8_lossy(&validated.stderr));
    assert!(said.contains(&format!("the experiment's server at {}", chroma.url)), "{said}");
    assert!(chroma.collections().is_empty(), "the probe collection is dropped: {:?}", chroma.collections());

    let reused = common::run_shards_at_once(root, &shared, 2, &[], "chroma");
    assert_eq!(reused.iter().filter(|r| !**r).count(), 1, "one shard builds, the other reuses: {reused:?}");
    let names = chroma.collections();
    assert!(names.len() == 1 && names[0].starts_with("v_"), "no lock or half-built collection left: {names:?}");

    let both = common::team_experiment(
        root,
        "users",
        &format!("{server}[[retrievers]]\nkind = \"dense\"\nmodel = \"team-16\"\n{served}"),
    );
    run_in(root, &both);
    let latest = root.join("results/users/latest");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("manifest.json")).unwrap()).unwrap();
    let stages = manifest["stages"].as_array().unwrap();
    let engine = stages.iter().find(|s| s["stage"] == "engine").unwrap();
    assert!(engine["key"].as_str().unwrap().contains("connected to the experiment's Chroma"), "{engine}");
    let lists = tops(&latest);
    let of = |cell: &str| -> Vec<(String, Value)> {
        lists.iter().filter(|(c, _, _)| c == cell).map(|(_, case, top)| (case.clone(), top.clone())).collect()
    };
    assert_eq!(of("c01").len(), 40);
    assert_eq!(of("c03"), of("c01"), "the user's Chroma = in-process exact, case by case");
    assert_eq!(of("c04"), of("c02"), "filtered in the query too");
    assert_eq!(chroma.collections(), names, "the collection is reused, nothing else is made");
    assert_eq!(servers_under(root), 0, "no server of ours was started");
}

/// Each `[engines.NAME]` is read by its engine: an unknown engine, the other engine's secret key,
/// credentials, a query, a fragment or a path in the URL (never repeated) and an unset variable
/// are refused at their line.
#[test]
fn server_sections_are_read_by_their_engine_and_refused_at_their_line() {
    let docs = [("a.md", "# A\nTexto.\n")];
    let golden = r#"[{"id": "q1", "question": "texto", "relevant": ["a"]}]"#;
    let head = "name = \"s\"\nunit = \"doc\"\nk = [1]\n";
    let cells = "[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n";
    for (section, line, says) in [
        (
            "[engines.qdrant]\nurl = \"http://db:6333\"\n",
            4,
            "unknown engine \"qdrant\" (known: pg, milvus, chroma, opensearch)",
        ),
        (
            "[engines.pg]\nurl = \"postgresql://u@db/rag\"\ntoken_env = \"T\"\n",
            6,
            "names the variable with its secret `password_env`, not `token_env`",
        ),
        (
            "[engines.chroma]\nurl = \"http://db:8000\"\nuser = \"u\"\n",
            6,
            "unknown key `user` (it takes `url` and `token_env`)",
        ),
        ("[engines.chroma]\ntoken_env = \"T\"\n", 4, "[engines.chroma] needs `url`"),
        ("[engines.chroma]\nurl = \"https://u:s3cr3t@db:8000\"\n", 5, "the URL holds credentials"),
        ("[engines.chroma]\nurl = \"https://db:8000\"\n", 5, "TLS is not supported"),
        // A token in the query, the fragment or the path is neither sent nor repeated.
        ("[engines.chroma]\nurl = \"http://db:8000?token=s3cr3t\"\n", 5, "has a query or a fragment"),
        ("[engines.chroma]\nurl = \"http://db:8000/#s3cr3t\"\n", 5, "has a query or a fragment"),
        ("[engines.chroma]\nurl = \"http://db:8000/s3cr3t/api\"\n", 5, "a path is not taken"),
        (
            "[engines.chroma]\nurl = \"http://127.0.0.1:9\"\ntoken_env = \"RAGSWEEP_TEST_NOT_SET\"\n",
            5,
            "`token_env` names RAGSWEEP_TEST_NOT_SET, which is not set in the environment",
        ),
    ] {
        let f = common::Fixture::new(&docs, golden, &format!("{head}{section}{cells}"));
        let out = f.cmd().args(["validate", "exp.toml"]).env_remove("RAGSWEEP_TEST_NOT_SET").output().unwrap();
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{section}: {all}");
        assert!(all.contains(&format!("exp.toml:{line}:")) && all.contains(says), "{section}: {all}");
        assert!(!all.contains("s3cr3t"), "{all}");
    }
}

/// `bench-filter --engine chroma`: the same vectors and tenant groups loaded through the grid's
/// loader, each search through a grid cell's source. The collection searched with a list as long
/// as the corpus returns the exact filtered lists at every allowed fraction; the graph at
/// `--engine-ef-search` is measured beside it; no server is left.
#[test]
fn bench_filter_measures_chroma_beside_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let table = common::bench_filter(root, "chroma");
    for allowed in ["1%", "10%", "50%", "90%"] {
        let (_, under_return, recall) = common::parity_row(&table, allowed, "chroma hnsw(m=8,efc=40,ef=300)");
        assert_eq!((under_return, recall), (0, 1.0), "the whole list at {allowed} is the oracle:\n{table}");
        common::parity_row(&table, allowed, "chroma hnsw(m=8,efc=40,ef=40)");
    }
    assert_eq!(servers_under(root), 0, "the benchmark's server is stopped");
}

/// A Chroma collection the team serves, with its own keys (each record's page in metadata
/// `page`, its text as the record's document, its groups in an array `allowed`, cosine space,
/// a search list as long as the collection), measured as it is: read by a run that has no engine
/// installed, its lists equal the in-process exact scan's of the same vectors case by case,
/// filtered by the team's own groups in Chroma's query, and the server is unchanged.
#[test]
fn a_served_chroma_collection_is_measured_as_it_is_and_the_server_is_unchanged() {
    let chroma = UserChroma::start();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let rows = common::team_rows(root, 600, 60);
    let collections = format!("{}/api/v2/tenants/default_tenant/databases/default_database/collections", chroma.url);
    let post = |url: &str, body: Value| -> Value {
        let answer = ureq::post(url).header("Content-Type", "application/json").send(body.to_string().as_bytes());
        serde_json::from_str(&answer.unwrap().into_body().read_to_string().unwrap()).unwrap_or(Value::Null)
    };
    let config = serde_json::json!({"hnsw": {"space": "cosine", "ef_search": 1000}});
    let created = post(&collections, serde_json::json!({"name": "team_pages", "configuration": config}));
    let id = created["id"].as_str().unwrap().to_string();
    for (b, batch) in rows.chunks(100).enumerate() {
        let ids: Vec<String> = (0..batch.len()).map(|i| format!("rec-{}", b * 100 + i)).collect();
        let body = serde_json::json!({
            "ids": ids,
            "embeddings": batch.iter().map(|r| r.vector.clone()).collect::<Vec<_>>(),
            "documents": batch.iter().map(|r| r.body.clone()).collect::<Vec<_>>(),
            "metadatas": batch.iter().map(|r| serde_json::json!({"page": r.doc, "allowed": r.groups})).collect::<Vec<_>>(),
        });
        post(&format!("{collections}/{id}/add"), body);
    }
    let state = || {
        let get = |url: &str| -> Value {
            serde_json::from_str(&ureq::get(url).call().unwrap().into_body().read_to_string().unwrap()).unwrap()
        };
        (chroma.collections(), get(&format!("{collections}/{id}/count")), get(&format!("{collections}/team_pages")))
    };
    let before = state();
    assert_eq!(before.1, 600);

    let served = "[[retrievers]]\nkind = \"dense\"\nengine = \"chroma\"\nmodel = \"team-16\"\ncollection = \"team_pages\"\n\
                  id_field = \"page\"\ntext_field = \"document\"\nacl_field = \"allowed\"\npublic_group = \"everyone\"\n";
    let exp = common::team_experiment(
        root,
        "served",
        &format!(
            "[engines.chroma]\nurl = \"{}\"\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"team-16\"\n{served}",
            chroma.url
        ),
    );
    let ragsweep = |command: &str| common::on_users_servers(root, command, &exp, &[]);
    let validated = ragsweep("validate");
    let said = String::from_utf8_lossy(&validated.stdout);
    assert!(validated.status.success(), "{said}{}", String::from_utf8_lossy(&validated.stderr));
    assert!(said.contains("nothing is written"), "{said}");
    assert!(
        said.contains("served chroma collection team_pages as served (read only): 600 chunks placed in their documents; index hnsw (max_neighbors=16, ef_construction=100, ef_search=1000); space cosine; 600 records"),
        "{said}"
    );
    let out = ragsweep("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(state(), before, "no collection made or dropped, the records and settings unchanged");

    let latest = root.join("results/served/latest");
    let matrix: Value = serde_json::from_str(&std::fs::read_to_string(latest.join("matrix.json")).unwrap()).unwrap();
    let rows_of = matrix["rows"].as_array().unwrap();
    let cell = |served: bool, filtered: bool| -> String {
        let row = rows_of
            .iter()
            .find(|r| {
                let label = r["label"].as_str().unwrap();
                label.contains("as served") == served && label.contains("in_query") == filtered
            })
            .unwrap();
        row["cell"].as_str().unwrap().to_string()
    };
    let row = |id: &str| rows_of.iter().find(|r| r["cell"] == id).unwrap().clone();
    let (open, filtered) = (cell(true, false), cell(true, true));
    assert_eq!(row(&filtered)["leaks"], 0, "the team's groups filter in Chroma's query");
    assert!(row(&open)["leaks"].as_u64().unwrap() > 0);
    assert_eq!(row(&filtered)["recall_vs_oracle"]["@10"], 1.0, "{}", row(&filtered));
    let lists = tops(&latest);
    let of = |cell: &str| -> Vec<(String, Value)> {
        lists.iter().filter(|(c, _, _)| c == cell).map(|(_, case, top)| (case.clone(), top.clone())).collect()
    };
    assert_eq!(of(&cell(false, false)).len(), 60);
    assert_eq!(of(&open), of(&cell(false, false)), "served = in-process exact, case by case");
    assert_eq!(of(&filtered), of(&cell(false, true)), "filtered in the query too");
}

/// A served Chroma collection is searched as the team set it up: settings it cannot take are
/// refused at their line, and it needs the team's server.
#[test]
fn served_chroma_settings_are_refused_at_their_line() {
    let docs = [("a.md", "# A\nTexto.\n")];
    let golden = r#"[{"id": "q1", "question": "texto", "relevant": ["a"]}]"#;
    let head = "name = \"s\"\nunit = \"doc\"\nk = [1]\n";
    let server = "[engines.chroma]\nurl = \"http://127.0.0.1:9\"\n";
    let served = "[[retrievers]]\nkind = \"dense\"\nengine = \"chroma\"\nmodel = \"m\"\ncollection = \"kb\"\n\
                  id_field = \"doc\"\ntext_field = \"document\"\n";
    for (section, extra, line, says) in [
        (server, "ef_search = 40\n", 17, "is not a setting of a served Chroma collection"),
        (server, "vector_field = \"emb\"\n", 17, "is not a setting of a served Chroma collection"),
        ("", "", 12, "is read on the team's own server: declare it in [engines.chroma]"),
    ] {
        let f = common::Fixture::new(&docs, golden, &format!("{head}{section}{served}{extra}"));
        let out = f.cmd().args(["validate", "exp.toml"]).output().unwrap();
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{extra}: {all}");
        assert!(all.contains(&format!("exp.toml:{line}:")) && all.contains(says), "{extra}: {all}");
    }
}

/// What stands in front of a team's Chroma (Chroma 1.x has no authentication of its own): an
/// HTTP proxy that forwards a request only when it carries `x-chroma-token: TOKEN`, and counts
/// what it forwarded and refused.
struct TokenProxy {
    url: String,
    counts: std::sync::Arc<std::sync::Mutex<(usize, usize)>>,
}

impl TokenProxy {
    fn start(upstream: &str, token: &str) -> TokenProxy {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let counts = std::sync::Arc::new(std::sync::Mutex::new((0, 0)));
        let (upstream, token, shared) = (upstream.to_string(), token.to_string(), counts.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (upstream, token, counts) = (upstream.clone(), token.clone(), shared.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut stream = stream;
                    loop {
                        let mut head = String::new();
                        if reader.read_line(&mut head).unwrap_or(0) == 0 {
                            return;
                        }
                        let (mut length, mut allowed) = (0usize, false);
                        loop {
                            let mut line = String::new();
                            reader.read_line(&mut line).unwrap();
                            let line = line.trim_end();
                            if line.is_empty() {
                                break;
                            }
                            let (name, value) = line.split_once(':').unwrap();
                            match name.to_ascii_lowercase().as_str() {
                                "content-length" => length = value.trim().parse().unwrap(),
                                "x-chroma-token" => allowed = value.trim() == token,
                                _ => {}
                            }
                        }
                        let mut body = vec![0; length];
                        reader.read_exact(&mut body).unwrap();
                        let mut parts = head.split_whitespace();
                        let (method, path) = (parts.next().unwrap().to_string(), parts.next().unwrap().to_string());
                        let (status, answer) = if allowed {
                            counts.lock().unwrap().0 += 1;
                            let agent: ureq::Agent =
                                ureq::Agent::config_builder().http_status_as_error(false).build().into();
                            let target = format!("{upstream}{path}");
                            let response = match method.as_str() {
                                "GET" => agent.get(&target).call(),
                                "DELETE" => agent.delete(&target).call(),
                                "PUT" => agent.put(&target).header("Content-Type", "application/json").send(&body[..]),
                                _ => agent.post(&target).header("Content-Type", "application/json").send(&body[..]),
                            }
                            .unwrap();
                            (response.status().as_u16(), response.into_body().read_to_string().unwrap())
                        } else {
                            counts.lock().unwrap().1 += 1;
                            (401, "{\"error\": \"Unauthorized\"}".to_string())
                        };
                        let reply = format!(
                            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                            answer.len()
                        );
                        if stream.write_all(reply.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        TokenProxy { url, counts }
    }
}

/// `token_env`: the token reaches a Chroma behind a proxy that asks for one. With the wrong
/// token `validate` stops without repeating it; with the right one a run builds and searches
/// there, and every request it made carried the token.
#[test]
fn a_chroma_behind_a_token_is_reached_with_the_token_and_never_shows_it() {
    let chroma = UserChroma::start();
    let proxy = TokenProxy::start(&chroma.url, "s3cr3t-t0ken");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::team_corpus(root, 100, 10);
    let exp = common::team_experiment(
        root,
        "token",
        &format!(
            "[engines.chroma]\nurl = \"{}\"\ntoken_env = \"RAGSWEEP_TEST_CHROMA_TOKEN\"\n[[chunkers]]\nkind = \"none\"\n\
             [[retrievers]]\nkind = \"dense\"\nengine = \"chroma\"\nmodel = \"team-16\"\n",
            proxy.url
        ),
    );
    let ragsweep = |command: &str, token: &str| {
        common::on_users_servers(root, command, &exp, &[("RAGSWEEP_TEST_CHROMA_TOKEN", token)])
    };
    let wrong = ragsweep("validate", "n0t-the-t0ken");
    let said = format!("{}{}", String::from_utf8_lossy(&wrong.stdout), String::from_utf8_lossy(&wrong.stderr));
    assert_eq!(wrong.status.code(), Some(2), "{said}");
    assert!(said.contains("401") && !said.contains("n0t-the-t0ken"), "{said}");
    assert_eq!(proxy.counts.lock().unwrap().0, 0, "nothing passed the proxy");

    let out = ragsweep("run", "s3cr3t-t0ken");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (forwarded, refused) = *proxy.counts.lock().unwrap();
    assert!(forwarded > 20, "the collection was built and searched through the proxy: {forwarded}");
    assert_eq!(refused, 1, "only the wrong token's request was refused");
    let written: String =
        common::walk(&root.join("results")).into_iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
    assert!(!written.contains("s3cr3t-t0ken"), "the token is written nowhere");
    assert_eq!(chroma.collections().len(), 1, "{:?}", chroma.collections());
}
