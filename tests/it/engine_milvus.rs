//! Milvus as a serving engine, through the binary: `engine = "milvus"` cells start a private
//! Milvus 2.3.5 standalone server (installed by scripts/install-engines.sh, which .ci/run calls;
//! the tests fail when it is missing, they are never skipped), load the same vectors with their
//! ACLs, and search with the filter as Milvus's own expression. The flat index returns the
//! in-process exact lists case by case; group names stay values in the filter expression; the
//! server is gone when the run ends and after Ctrl-C; a run after a SIGKILL stops the orphaned
//! server and reuses the collections.

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::repo;
use serde_json::Value;

/// `ragsweep run` of `experiment` in `root` with the project's models, cache and results.
fn command(root: &Path, experiment: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"));
    cmd.current_dir(root).arg("run").arg(experiment).arg("--models").arg(root.join("models"));
    cmd.arg("--engines").arg(repo().join("engines")).arg("--out").arg(root.join("results"));
    cmd.arg("--cache").arg(root.join("cache"));
    cmd
}

/// Starts the run and waits until its Milvus server process runs, and with `serving` until the
/// server's proxy serves (a server killed while it still starts up may lose what it was
/// recovering; one killed while it serves must not).
fn spawn_until_the_server_runs(root: &Path, experiment: &Path, serving: bool) -> std::process::Child {
    let said = root.join("run.stderr");
    let mut child = command(root, experiment)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&said).unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    // The server's own log says when its proxy serves.
    let proxy_started = || {
        common::walk(&root.join("cache")).iter().any(|p| {
            p.ends_with("logs/milvus-stdout.log")
                && std::fs::read_to_string(p).is_ok_and(|log| log.contains("Proxy successfully started"))
        })
    };
    let ready = || servers_under(root) > 0 && (!serving || proxy_started());
    while !ready() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended first: {}",
            std::fs::read_to_string(&said).unwrap()
        );
        assert!(started.elapsed().as_secs() < 180, "the server never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if !serving {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    child
}

fn run(root: &Path, experiment: &Path) -> std::process::Output {
    let out = command(root, experiment).output().unwrap();
    assert!(
        out.status.success(),
        "the run failed (scripts/install-engines.sh installs Milvus; .ci/run does):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Lines of the latest run's per_query.jsonl of experiment `name`.
fn per_query(root: &Path, name: &str) -> Vec<Value> {
    std::fs::read_to_string(root.join("results").join(name).join("latest/per_query.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The ranked documents of `cell` for `case`, and the first one's score.
fn top(lines: &[Value], cell: &str, case: &str) -> (Vec<String>, f64) {
    let line = lines.iter().find(|l| l["cell"] == cell && l["case"] == case).expect("a line per cell and case");
    let docs = line["top"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_string()).collect();
    (docs, line["top_score"].as_f64().unwrap_or(f64::NAN))
}

/// Milvus processes whose data folder is under `root`.
fn servers_under(root: &Path) -> usize {
    let root = root.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter(|e| {
            let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            cwd.to_string_lossy().starts_with(&root) && String::from_utf8_lossy(&cmdline).contains("milvus")
        })
        .count()
}

/// A synthetic corpus of 1,200 documents (one segment over Milvus's 1,024-row indexing
/// threshold) in 10 synthetic ACL groups, searched without and with the filter: in process
/// exactly, by Milvus's flat index and by its HNSW graph.
fn grid_project(root: &Path) -> PathBuf {
    common::synthetic_project(root, 1_200, 60);
    let exp = root.join("grid.toml");
    std::fs::write(
        &exp,
        "name = \"grid\"\nunit = \"doc\"\nk = [10]\nfilter = [\"none\", \"in_query\"]\n\
         [permissions]\nsynthetic_groups = 10\n[corpus]\npath = \"corpus\"\n[golden]\npath = \"corpus\"\n\
         reserved = [\"test\"]\n[[chunkers]]\nkind = \"none\"\n\
         [[retrievers]]\nkind = \"dense\"\nmodel = \"random-64\"\n\
         [[retrievers]]\nkind = \"dense\"\nengine = \"milvus\"\nmodel = \"random-64\"\nindex = [\"flat\", \"hnsw\"]\n",
    )
    .unwrap();
    exp
}

#[test]
fn milvus_flat_returns_the_in_process_exact_lists_case_by_case_and_builds_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let exp = grid_project(root);
    run(root, &exp);
    assert_eq!(servers_under(root), 0, "the server stops with the run");
    let lines = per_query(root, "grid");
    let matrix: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("results/grid/latest/matrix.json")).unwrap()).unwrap();
    let rows = matrix["rows"].as_array().unwrap();
    let row = |cell: &str| rows.iter().find(|r| r["cell"] == cell).unwrap_or_else(|| panic!("no row {cell}"));
    // c01/c02: in process without and with the filter; c03/c04 Milvus flat; c05/c06 HNSW.
    let cases: Vec<String> =
        lines.iter().filter(|l| l["cell"] == "c01").map(|l| l["case"].as_str().unwrap().to_string()).collect();
    assert!(cases.len() >= 20, "{}", cases.len());
    for (milvus, exact) in [("c03", "c01"), ("c04", "c02")] {
        for case in &cases {
            let ((m, ms), (e, es)) = (top(&lines, milvus, case), top(&lines, exact, case));
            assert_eq!(m.len(), 10, "{milvus} {case}");
            assert_eq!(m, e, "{milvus} ranks {case} as the exact search does");
            assert!((ms - es).abs() < 1e-4, "{milvus} {case}: top score {ms} vs {es}");
        }
        assert_eq!(row(milvus)["under_return"]["@10"], 0, "{milvus}");
        assert_eq!(row(milvus)["recall_vs_oracle"]["@10"], 1.0, "{milvus}");
        assert_eq!(row(milvus)["engine_plan"]["@10"], "flat (exact)", "{milvus}");
    }
    assert_eq!(row("c06")["engine_plan"]["@10"], "hnsw index", "1,200 rows are one indexed segment");
    for cell in ["c02", "c04", "c06"] {
        assert!(lines.iter().filter(|l| l["cell"] == cell).all(|l| l["leaks"] == 0), "{cell} filters in the query");
    }
    let csv = std::fs::read_to_string(root.join("results/grid/latest/matrix.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains("plan@10"), "{csv:.300}");
    assert!(csv.contains("engine=milvus") || csv.contains(",milvus,"), "the engine is a column value: {csv:.600}");

    // Ctrl-C stops the server; SIGKILL leaves it running on the cache, and the next run stops
    // that orphan, reuses the collections and returns the same lists.
    let mut child = spawn_until_the_server_runs(root, &exp, false);
    std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_eq!(servers_under(root), 0, "Ctrl-C stops the server");
    let mut child = spawn_until_the_server_runs(root, &exp, true);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(servers_under(root), 1, "SIGKILL leaves the server");
    let out = run(root, &exp);
    assert_eq!(servers_under(root), 0, "the next run stopped the orphan");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("results/grid/latest/manifest.json")).unwrap())
            .unwrap();
    let milvus: Vec<&Value> = manifest["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["stage"] == "index" && s["key"].as_str().unwrap().starts_with("milvus"))
        .collect();
    assert_eq!(milvus.len(), 2, "{manifest}");
    assert!(
        milvus.iter().all(|s| s["reused"] == true),
        "collections are reused: {milvus:?}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let again = per_query(root, "grid");
    for case in &cases {
        assert_eq!(top(&again, "c04", case).0, top(&lines, "c04", case).0, "{case}");
    }
}

/// Group names with quotes, brackets, backslashes and accents, one written as an attempt to
/// widen the filter expression, reach Milvus's ACL field and its filter as values: each user
/// sees exactly what the in-process filter shows them.
#[test]
fn odd_group_names_stay_values_in_the_milvus_filter_expression() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    let docs = [
        ("lab.md", r#"acl: ["r&d, \"lab\""]"#, "O protocolo do laboratório exige luvas nitrílicas."),
        ("cofre.md", r#"acl: ["a\\b", "colchete ][ 'ação'"]"#, "O cofre abre com a senha trimestral do financeiro."),
        ("rh.md", r#"acl: ["rh"]"#, "A folha de pagamento fecha no dia vinte."),
        ("geral.md", "", "O refeitório abre às onze horas."),
    ];
    for (name, acl, text) in docs {
        let front = if acl.is_empty() { String::new() } else { format!("---\n{acl}\n---\n") };
        std::fs::write(root.join("docs").join(name), format!("{front}# {name}\n{text}\n")).unwrap();
    }
    let widen = r#"x\"]) || array_contains_any(acl, [\"rh"#;
    std::fs::write(
        root.join("golden.jsonl"),
        [
            r#"{"id": "q1", "question": "luvas no laboratório", "relevant": ["lab"], "groups": ["r&d, \"lab\""]}"#
                .to_string(),
            r#"{"id": "q2", "question": "senha do cofre", "relevant": ["cofre"], "groups": ["colchete ][ 'ação'"]}"#
                .into(),
            format!(
                r#"{{"id": "q3", "question": "folha de pagamento", "relevant": ["geral"], "groups": ["{widen}"]}}"#
            ),
            r#"{"id": "q4", "question": "senha", "relevant": ["cofre"], "groups": ["a\\b"]}"#.into(),
        ]
        .join("\n"),
    )
    .unwrap();
    common::random_model(&root.join("models"), "random-64", 64, "");
    let exp = root.join("odd.toml");
    std::fs::write(
        &exp,
        "name = \"odd\"\nunit = \"doc\"\nk = [4]\nreserved_fraction = 0.0\nfilter = \"in_query\"\n\
         [corpus]\npath = \"docs\"\n[golden]\npath = \"golden.jsonl\"\n[[chunkers]]\nkind = \"none\"\n\
         [[retrievers]]\nkind = \"dense\"\nmodel = \"random-64\"\n\
         [[retrievers]]\nkind = \"dense\"\nengine = \"milvus\"\nmodel = \"random-64\"\n",
    )
    .unwrap();
    run(root, &exp);
    let lines = per_query(root, "odd");
    let top = |cell: &str, case: &str| -> Vec<String> {
        let mut docs = top(&lines, cell, case).0;
        docs.sort();
        docs
    };
    assert_eq!(top("c01", "q1").len(), 2, "the lab user sees the lab and the public document");
    assert_eq!(top("c01", "q2").len(), 2, "the user of a group with brackets and quotes sees the safe and the public");
    assert_eq!(top("c01", "q3").len(), 1, "the widening group sees only the public document");
    for case in ["q1", "q2", "q3", "q4"] {
        assert_eq!(top("c02", case), top("c01", case), "Milvus's filter matches the in-process one for {case}");
    }
}

/// `ragsweep engines install milvus` from the wheel already fetched (no network) unpacks the
/// same server and libraries as scripts/install-engines.sh.
#[test]
fn engines_install_unpacks_the_same_milvus_as_the_script() {
    let installed = repo().join("engines/milvus");
    let wheel = repo().join("engines/.wheels/milvus-2.3.5-py3-none-manylinux2014_x86_64.whl");
    assert!(wheel.is_file(), "scripts/install-engines.sh keeps the wheel in engines/.wheels");
    let engines = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(engines.path().join(".wheels")).unwrap();
    std::fs::copy(&wheel, engines.path().join(".wheels").join(wheel.file_name().unwrap())).unwrap();
    assert_cmd::Command::cargo_bin("ragsweep")
        .unwrap()
        .args(["engines", "install", "milvus", "--engines"])
        .arg(engines.path())
        .assert()
        .success()
        .stdout(predicates::str::contains("Milvus 2.3.5"));
    let files = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir.join("bin"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .chain([dir.join("config.yaml.template"), dir.join("glog.conf")])
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
            .collect();
        out.sort();
        out
    };
    let (ours, script) = (files(&engines.path().join("milvus")), files(&installed));
    assert_eq!(ours.len(), script.len());
    for ((name, bytes), (script_name, script_bytes)) in ours.iter().zip(&script) {
        assert_eq!(name, script_name);
        assert!(bytes == script_bytes, "{name} differs from the script's");
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(engines.path().join("milvus/bin/milvus")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o111, 0o111, "the server is executable");
}

/// `bench-filter --engine milvus`: the same vectors and tenant ACLs loaded through the grid's
/// loader, each search through a grid cell's source. FLAT returns the exact filtered lists at
/// every allowed fraction; HNSW and IVF_FLAT rows are measured beside it; no server is left.
#[test]
fn bench_filter_measures_milvus_beside_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let table = common::bench_filter(root, "milvus");
    for allowed in ["1%", "10%", "50%", "90%"] {
        let (_, under_return, recall) = common::parity_row(&table, allowed, "milvus flat");
        assert_eq!((under_return, recall), (0, 1.0), "FLAT at {allowed} is the oracle:\n{table}");
        common::parity_row(&table, allowed, "milvus hnsw(m=8,efc=40,ef=40)");
        common::parity_row(&table, allowed, "milvus ivf_flat(nlist=128,nprobe=8)");
    }
    assert_eq!(servers_under(root), 0, "the benchmark's server is stopped");
}

/// A Milvus retriever's settings are checked before anything starts, each error at its key:
/// `validate` stops with the file, line and column and writes nothing.
#[test]
fn milvus_settings_are_refused_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("corpus.jsonl"), "{\"id\": \"d1\", \"text\": \"one\"}\n").unwrap();
    std::fs::write(root.join("golden.jsonl"), "{\"id\": \"q1\", \"question\": \"one?\", \"relevant\": [\"d1\"]}\n")
        .unwrap();
    let cases = [
        ("kind = \"bm25\"\nengine = \"milvus\"\n", 11, "engine = \"milvus\" serves dense retrieval only"),
        (
            "kind = \"dense\"\nmodel = \"m\"\nengine = \"milvus\"\niterative_scan = \"relaxed_order\"\n",
            13,
            "is a pgvector setting",
        ),
        (
            "kind = \"dense\"\nmodel = \"m\"\nengine = \"milvus\"\nindex = \"flat\"\nm = 16\n",
            14,
            "only applies to index = \"hnsw\"",
        ),
        (
            "kind = \"dense\"\nmodel = \"m\"\nengine = \"milvus\"\nindex = \"hnsw\"\nm = 1\n",
            14,
            "`m` must be between 2 and 2048",
        ),
        (
            "kind = \"dense\"\nmodel = \"m\"\nengine = \"milvus\"\nindex = \"ivf_flat\"\nlists = 4\nprobes = 8\n",
            15,
            "`probes` between 1 and `lists`",
        ),
        ("kind = \"dense\"\nmodel = \"m\"\nengine = \"qdrant\"\n", 12, "unknown engine \"qdrant\""),
    ];
    for (retriever, line, message) in cases {
        let exp = root.join("exp.toml");
        std::fs::write(
            &exp,
            format!(
                "name = \"v\"\nk = [10]\n[corpus]\npath = \"corpus.jsonl\"\n[golden]\npath = \"golden.jsonl\"\n\
                 [[chunkers]]\nkind = \"none\"\n[[retrievers]]\n{retriever}"
            ),
        )
        .unwrap();
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
            .current_dir(root)
            .args(["validate", "exp.toml", "--engines"])
            .arg(repo().join("engines"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{retriever}: {stderr}");
        assert!(stderr.contains(&format!("exp.toml:{line}:")) && stderr.contains(message), "{retriever}: {stderr}");
    }
    assert!(!root.join("results").exists() && !root.join("cache").exists(), "nothing written");
}

/// Four shards of one grid at once against one user Milvus, each with its own cache (the pods
/// of an Indexed Job): their four cells share one collection, which one shard builds under the
/// server's lock while the others wait and reuse it; every shard passes. The server is the
/// user's own (`ragsweep engines serve milvus`, the token in a file of mode 0600).
/// `ragsweep engines serve milvus`: a Milvus of the user's own, its token in `token_file`, served
/// until the returned child's standard input closes; and its address.
fn serve_milvus(token_file: &Path) -> (std::process::Child, String) {
    common::serve("milvus", &["--secret-file".as_ref(), token_file.as_os_str()])
}

#[test]
fn four_shards_on_one_user_milvus_build_the_shared_collection_once() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::synthetic_project(root, 1_200, 60);
    let token = root.join("token");
    let (mut serve, url) = serve_milvus(&token);
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
    assert_eq!(std::fs::metadata(&token).unwrap().permissions().mode() & 0o777, 0o600);
    let exp = root.join("grid.toml");
    std::fs::write(
        &exp,
        format!(
            "name = \"grid\"\nunit = \"doc\"\nk = [10]\nfilter = \"in_query\"\n\
             [permissions]\nsynthetic_groups = 10\n[engines.milvus]\nurl = \"{url}\"\ntoken_env = \"RAGSWEEP_TEST_MILVUS_TOKEN\"\n\
             [corpus]\npath = \"corpus\"\n[golden]\npath = \"corpus\"\nreserved = [\"test\"]\n[[chunkers]]\nkind = \"none\"\n\
             [[retrievers]]\nkind = \"dense\"\nengine = \"milvus\"\nmodel = \"random-64\"\nindex = \"hnsw\"\nef_search = [16, 32, 64, 128]\n"
        ),
    )
    .unwrap();
    let secret = std::fs::read_to_string(&token).unwrap();
    // A token the server does not accept: validate stops with Milvus's reason, the token unsaid.
    let mut wrong = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"));
    wrong.current_dir(root).arg("validate").arg(&exp).arg("--models").arg(root.join("models"));
    let refused = wrong.env("RAGSWEEP_TEST_MILVUS_TOKEN", "root:not-the-password").output().unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("milvus") && !stderr.contains("not-the-password"), "{stderr}");
    let mut validate = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"));
    validate.current_dir(root).arg("validate").arg(&exp).arg("--models").arg(root.join("models"));
    validate.env("RAGSWEEP_TEST_MILVUS_TOKEN", &secret);
    let validated = validate.output().unwrap();
    let said = String::from_utf8_lossy(&validated.stdout);
    assert!(validated.status.success(), "{}", String::from_utf8_lossy(&validated.stderr));
    assert!(said.contains("healthy, may create and drop collections (tried)"), "{said}");
    let reused = common::run_shards_at_once(root, &exp, 4, &[("RAGSWEEP_TEST_MILVUS_TOKEN", &secret)], "milvus");
    let built = reused.iter().filter(|r| !**r).count();
    assert_eq!(built, 1, "one shard built the collection, three reused it");

    // The whole grid again on the loaded collection: Milvus answers a vector it has answered
    // since the load differently from the first time, so a rerun would have asked repeated
    // vectors; every search asks a new one, and the rerun writes the shards' lists, every list
    // stable in every timed pass.
    let mut rerun = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"));
    rerun.current_dir(root).arg("run").arg(&exp).arg("-q").arg("--models").arg(root.join("models"));
    rerun.arg("--out").arg(root.join("results-all")).arg("--cache").arg(root.join("cache-all"));
    let out = rerun.env("RAGSWEEP_TEST_MILVUS_TOKEN", &secret).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines_of = |dir: &str| -> std::collections::BTreeMap<(String, String), Value> {
        common::walk(&root.join(dir))
            .into_iter()
            .filter(|p| p.ends_with("per_query.jsonl"))
            .flat_map(|p| common::jsonl(&p))
            .map(|l| {
                ((l["cell"].as_str().unwrap().to_string(), l["case"].as_str().unwrap().to_string()), l["top"].clone())
            })
            .collect()
    };
    let all = lines_of("results-all");
    let shards: std::collections::BTreeMap<_, _> = (1..=4).flat_map(|i| lines_of(&format!("results-{i}"))).collect();
    assert_eq!(all.len(), shards.len());
    let moved: Vec<_> = all.iter().filter(|(k, v)| shards.get(*k) != Some(v)).map(|(k, _)| k).collect();
    assert!(moved.is_empty(), "the rerun's lists differ from the shards' in {} lines: {moved:?}", moved.len());
    for run in common::walk(&root.join("results-all")).into_iter().filter(|p| p.ends_with("matrix.json")) {
        let matrix: Value = serde_json::from_str(&std::fs::read_to_string(run).unwrap()).unwrap();
        for row in matrix["rows"].as_array().unwrap() {
            assert_eq!(row["latency"]["stable"], row["latency"]["n"], "every list asked again comes back: {row}");
        }
    }
    drop(serve.stdin.take());
    assert!(serve.wait().unwrap().success());
}

/// The team's collection on the user's Milvus at `url`: their own schema (an Int64 key, the
/// page id and text as VarChar, an ACL array, a 16-dimensional vector), the rows inserted and
/// flushed, an HNSW index over cosine built and the collection loaded, by ragsweep's gRPC
/// client as any client would. Its searches are bounded-stale by default, as pymilvus creates
/// collections: the rows are searched once the 5 s Milvus may lag behind them have passed
/// (a strongly consistent search waits up to a time tick, 200 ms, per search).
fn team_collection(url: &str, token: &str, rows: &[common::TeamRow]) {
    use ragsweep::engine::milvus::proto::{self, data_type::*, field, kv, scalar_field::Data};
    let client = ragsweep::engine::milvus::Client::connect(url, Some(token)).unwrap();
    let name = "team_pages".to_string();
    let schema = proto::CollectionSchema {
        name: name.clone(),
        description: "the team's pages".into(),
        fields: vec![
            proto::FieldSchema { is_primary_key: true, ..field("page_key", INT64, vec![]) },
            field("source_doc", VARCHAR, vec![kv("max_length", "64")]),
            field("content", VARCHAR, vec![kv("max_length", "2048")]),
            proto::FieldSchema {
                element_type: VARCHAR,
                ..field("allowed", ARRAY, vec![kv("max_capacity", "8"), kv("max_length", "32")])
            },
            field("emb", FLOAT_VECTOR, vec![kv("dim", "16")]),
        ],
    };
    let request = proto::CreateCollectionRequest {
        collection_name: name.clone(),
        schema: prost::Message::encode_to_vec(&schema),
        shards_num: 1,
        consistency_level: 2,
    };
    let _: proto::Status = client.call("CreateCollection", request).unwrap();
    let scalars = |data: Data| Some(proto::ScalarField { data: Some(data) });
    let text =
        |f: fn(&common::TeamRow) -> String| Data::Strings(proto::StringArray { data: rows.iter().map(f).collect() });
    let column = |name: &str, r#type: i32, data: Data| proto::FieldData {
        r#type,
        field_name: name.into(),
        scalars: scalars(data),
        vectors: None,
    };
    let groups = rows
        .iter()
        .map(|r| proto::ScalarField { data: Some(Data::Strings(proto::StringArray { data: r.groups.clone() })) })
        .collect();
    let request = proto::InsertRequest {
        collection_name: name.clone(),
        num_rows: rows.len() as u32,
        fields_data: vec![
            column(
                "page_key",
                INT64,
                Data::Long(proto::LongArray { data: (0..rows.len() as i64).map(|i| 1000 + 7 * i).collect() }),
            ),
            column("source_doc", VARCHAR, text(|r| r.doc.clone())),
            column("content", VARCHAR, text(|r| r.body.clone())),
            column("allowed", ARRAY, Data::Array(proto::ArrayArray { data: groups, element_type: VARCHAR })),
            proto::FieldData {
                r#type: FLOAT_VECTOR,
                field_name: "emb".into(),
                scalars: None,
                vectors: Some(proto::VectorField {
                    dim: 16,
                    float_vector: Some(proto::FloatArray {
                        data: rows.iter().flat_map(|r| r.vector.clone()).collect(),
                    }),
                }),
            },
        ],
    };
    let inserted: proto::MutationResult = client.call("Insert", request).unwrap();
    let visible = std::time::Instant::now() + std::time::Duration::from_secs(6);
    assert_eq!(inserted.insert_cnt, rows.len() as i64);
    let _: proto::FlushResponse =
        client.call("Flush", proto::FlushRequest { collection_names: vec![name.clone()] }).unwrap();
    let index =
        vec![kv("index_type", "HNSW"), kv("metric_type", "COSINE"), kv("params", "{\"M\": 8, \"efConstruction\": 32}")];
    let _: proto::Status = client
        .call(
            "CreateIndex",
            proto::CreateIndexRequest { collection_name: name.clone(), field_name: "emb".into(), extra_params: index },
        )
        .unwrap();
    let _: proto::Status =
        client.call("LoadCollection", proto::CollectionName { collection_name: name.clone() }).unwrap();
    let started = std::time::Instant::now();
    loop {
        let state: proto::GetLoadStateResponse =
            client.call("GetLoadState", proto::GetLoadStateRequest { collection_name: name.clone() }).unwrap();
        if state.state == 3 {
            break;
        }
        assert!(started.elapsed().as_secs() < 120, "the collection never loaded");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    std::thread::sleep(visible.saturating_duration_since(std::time::Instant::now()));
}

/// `engine = "milvus"` with `collection = …` measures a collection the team serves, as it is:
/// their field names, an ACL array, their HNSW index over cosine, their rows (over 1,024, so the
/// segment is indexed). Its cells list exactly what the in-process exact scan of the same
/// vectors lists, case by case, filtered or not; its oracle is an exact scan of its rows; no
/// collection is created or dropped and its rows are unchanged.
#[test]
fn a_served_milvus_collection_is_measured_as_it_is_and_the_server_is_unchanged() {
    use ragsweep::engine::milvus::proto;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let rows = common::team_rows(root, 1_500, 60);
    let (mut serve, url) = serve_milvus(&root.join("token"));
    let token = std::fs::read_to_string(root.join("token")).unwrap();
    team_collection(&url, &token, &rows);
    let client = ragsweep::engine::milvus::Client::connect(&url, Some(&token)).unwrap();
    let state = || {
        let shown: proto::ShowCollectionsResponse =
            client.call("ShowCollections", proto::ShowCollectionsRequest {}).unwrap();
        let count: proto::QueryResults = client
            .call(
                "Query",
                proto::QueryRequest {
                    collection_name: "team_pages".into(),
                    expr: String::new(),
                    output_fields: vec!["count(*)".into()],
                    ..Default::default()
                },
            )
            .unwrap();
        (shown.collection_names, format!("{:?}", count.fields_data))
    };
    let before = state();
    assert_eq!(before.0, ["team_pages"]);

    let served =
        "[[retrievers]]\nkind = \"dense\"\nengine = \"milvus\"\nmodel = \"team-16\"\ncollection = \"team_pages\"\n\
         id_field = \"source_doc\"\ntext_field = \"content\"\nvector_field = \"emb\"\nacl_field = \"allowed\"\n\
         public_group = \"everyone\"\nef_search = 2000\n";
    let exp = common::team_experiment(
        root,
        "both",
        &format!(
            "[engines.milvus]\nurl = \"{url}\"\ntoken_env = \"RAGSWEEP_TEST_MILVUS_TOKEN\"\n\
             [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"team-16\"\n{served}"
        ),
    );
    let ragsweep =
        |command: &str| common::on_users_servers(root, command, &exp, &[("RAGSWEEP_TEST_MILVUS_TOKEN", &token)]);
    let validated = ragsweep("validate");
    let said = String::from_utf8_lossy(&validated.stdout);
    assert!(validated.status.success(), "{}", String::from_utf8_lossy(&validated.stderr));
    assert!(said.contains("its served collections are only read, nothing is written"), "{said}");
    assert!(
        said.contains("served milvus collection team_pages as served (read only): 1500 chunks placed in their documents; index HNSW {\"M\": 8, \"efConstruction\": 32}; metric cosine; 1500 rows"),
        "{said}"
    );
    let out = ragsweep("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(state(), before, "no collection made or dropped, the rows unchanged");

    let latest = root.join("results/both/latest");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("manifest.json")).unwrap()).unwrap();
    let labels: Vec<&str> =
        manifest["cells"].as_array().unwrap().iter().map(|c| c["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels[2], "served(milvus team_pages) dense(team-16,milvus collection team_pages as served,ef_search=2000)",
        "{labels:?}"
    );
    let matrix: Value = serde_json::from_str(&std::fs::read_to_string(latest.join("matrix.json")).unwrap()).unwrap();
    let row = |id: &str| common::cell_row(&matrix, id);
    assert_eq!(row("c04")["engine_plan"]["@10"], "HNSW {\"M\": 8, \"efConstruction\": 32} index", "{}", row("c04"));
    assert_eq!(row("c04")["leaks"], 0, "the team's ACL array filters in Milvus's query");
    assert!(row("c03")["leaks"].as_u64().unwrap() > 0);
    assert_eq!(row("c04")["recall_vs_oracle"]["@10"], 1.0, "{}", row("c04"));
    let lines = per_query(root, "both");
    let cases: Vec<String> =
        lines.iter().filter(|l| l["cell"] == "c01").map(|l| l["case"].as_str().unwrap().to_string()).collect();
    assert_eq!(cases.len(), 60);
    for case in &cases {
        assert_eq!(top(&lines, "c03", case).0, top(&lines, "c01", case).0, "served = in-process exact, case {case}");
        assert_eq!(top(&lines, "c04", case).0, top(&lines, "c02", case).0, "filtered in the query, case {case}");
    }
    drop(serve.stdin.take());
    assert!(serve.wait().unwrap().success());
}

/// A private server that dies while it starts is started once more in a new folder; when both
/// die, the error gives each attempt's reason, the line a Go crash opens with, not its stacks.
#[test]
fn a_server_that_dies_while_starting_is_tried_twice_and_its_reason_said() {
    use std::os::unix::fs::PermissionsExt;
    let engines = tempfile::tempdir().unwrap();
    let fake = engines.path().join("milvus");
    std::fs::create_dir_all(fake.join("bin")).unwrap();
    for file in ["config.yaml.template", "glog.conf"] {
        std::fs::copy(repo().join("engines/milvus").join(file), fake.join(file)).unwrap();
    }
    let attempts = engines.path().join("attempts");
    let bin = fake.join("bin/milvus");
    std::fs::write(
        &bin,
        format!(
            "#!/bin/sh\necho started >> '{}'\necho 'panic: planted crash'\necho\necho 'goroutine 1 [running]:'\nexit 2\n",
            attempts.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
        .args(["engines", "serve", "milvus", "--secret-file"])
        .arg(engines.path().join("token"))
        .arg("--engines")
        .arg(engines.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(std::fs::read_to_string(&attempts).unwrap().lines().count(), 2, "started twice: {stderr}");
    assert_eq!(stderr.matches("while starting: panic: planted crash").count(), 2, "{stderr}");
    assert!(stderr.contains("the first attempt") && !stderr.contains("goroutine"), "{stderr}");
    assert!(!engines.path().join("token").exists(), "no token for a server that never served");
}
