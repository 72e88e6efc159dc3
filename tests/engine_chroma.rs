//! Chroma as a serving engine, through the binary: `engine = "chroma"` cells start Chroma's
//! Rust server (the module of the pinned `chromadb` wheel that scripts/install-engines.sh
//! installs, which .ci/run calls; the test fails when it is missing, it is never skipped), load
//! the same vectors with each chunk's groups as metadata and search with the filter as Chroma's
//! own `where`. With a search list as wide as the collection it lists what the in-process exact
//! scan lists, case by case, filtered or not; a second run reuses its collections; the server
//! is gone when the run ends.

mod common;

use std::path::Path;

use common::repo;
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
    assert!(
        repo().join("engines/chroma/chromadb_rust_bindings").is_dir(),
        "Chroma is not installed: run scripts/install-engines.sh (.ci/run does)"
    );
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
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
            .arg("run")
            .arg(&exp)
            .arg("--models")
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
    let row = |id: &str| matrix["rows"].as_array().unwrap().iter().find(|r| r["cell"] == id).unwrap().clone();
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

    // A second run finds both collections in the cache's server data.
    let (_, manifest, _) = run();
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
