//! The documentation works as written: every TOML block of README.md and docs/ is validated by
//! the binary (experiments with `ragsweep validate`, model files through an experiment that uses
//! them), and the numbers the README quotes for the demo are the ones the binary reports.

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::{ragsweep, repo};

/// Every fenced ```toml block of the Markdown files of the README and docs/, with where it is.
fn toml_blocks() -> Vec<(String, String)> {
    let mut files = vec![repo().join("README.md")];
    for entry in std::fs::read_dir(repo().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut blocks = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut lines = text.lines().enumerate();
        while let Some((n, line)) = lines.next() {
            if line.trim_start().starts_with("```toml") {
                let body: Vec<&str> =
                    lines.by_ref().map(|(_, l)| l).take_while(|l| !l.trim_start().starts_with("```")).collect();
                blocks.push((format!("{}:{}", file.display(), n + 1), body.join("\n") + "\n"));
            }
        }
    }
    blocks
}

/// A folder where paths written relative to `experiments/` (`../../shared/corpora/…`) resolve:
/// `ROOT/a/b/` with `ROOT/shared` pointing at the real shared folder.
fn project() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("a/b");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(repo().join("../shared").canonicalize().unwrap(), root.path().join("shared")).unwrap();
    (root, dir)
}

/// An experiment over one document and one question in `dir`, with `sections` (TOML tables)
/// and one retriever.
fn one_document_experiment(dir: &Path, sections: &str, retriever: &str) -> PathBuf {
    std::fs::write(dir.join("docs.jsonl"), "{\"id\": \"d1\", \"text\": \"one document\"}\n").unwrap();
    std::fs::write(dir.join("golden.jsonl"), "{\"id\": \"q1\", \"question\": \"one\", \"relevant\": [\"d1\"]}\n")
        .unwrap();
    let file = dir.join("experiment.toml");
    // A `[golden]` section shown in the docs is the experiment's (its path is the fixture's).
    let golden = if sections.contains("[golden]") { "" } else { "[golden]\npath = \"golden.jsonl\"\n" };
    std::fs::write(
        &file,
        format!(
            "name = \"m\"\nk = [1, 5, 10]\n{sections}[corpus]\npath = \"docs.jsonl\"\n{golden}\
             [[chunkers]]\nkind = \"none\"\n[[retrievers]]\n{retriever}"
        ),
    )
    .unwrap();
    file
}

fn validate(experiment: &Path, models: &Path) -> std::process::Output {
    let mut cmd = ragsweep();
    cmd.arg("validate").arg(experiment).arg("--models").arg(models).arg("--engines").arg(repo().join("engines"));
    cmd.output().unwrap()
}

#[test]
fn every_toml_block_in_the_docs_validates() {
    let blocks = toml_blocks();
    assert!(blocks.len() >= 2, "{blocks:?}");
    let mut checked = 0;
    for (place, body) in &blocks {
        let (_root, dir) = project();
        let value: toml::Value = toml::from_str(body).unwrap_or_else(|e| panic!("{place}: not TOML: {e}"));
        if value.get("retrievers").is_some() {
            let file = dir.join("experiment.toml");
            std::fs::write(&file, body).unwrap();
            let out = validate(&file, &repo().join("models"));
            assert!(out.status.success(), "{place}: {}", String::from_utf8_lossy(&out.stderr));
        } else if let Some(id) = value.get("id").and_then(|v| v.as_str()) {
            // A model.toml: installed in a models folder and used by a one-cell experiment. An
            // http model's endpoint is a loopback one answering with vectors of its `dim`, and
            // the key variable it names is set.
            let models = dir.join("models");
            std::fs::create_dir_all(models.join(id)).unwrap();
            let mut body = body.clone();
            let mut cmd = ragsweep();
            if value.get("kind").and_then(|k| k.as_str()) == Some("http") {
                let dim = value["dim"].as_integer().unwrap() as usize;
                let url = value["url"].as_str().unwrap();
                body = body.replace(url, &common::openai_endpoint(dim));
                if let Some(var) = value.get("api_key_env").and_then(|v| v.as_str()) {
                    cmd.env(var, "a secret");
                }
            }
            std::fs::write(models.join(id).join("model.toml"), &body).unwrap();
            let file = one_document_experiment(&dir, "", &format!("kind = \"dense\"\nmodel = \"{id}\"\n"));
            cmd.arg("validate").arg(&file).arg("--models").arg(&models).arg("--engines").arg(repo().join("engines"));
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "{place}: {}", String::from_utf8_lossy(&out.stderr));
        } else if value.as_table().is_some_and(|t| {
            t.keys().all(|k| {
                ["engines", "cost", "permissions", "require", "margin", "prefer", "select", "golden"]
                    .contains(&k.as_str())
            })
        }) {
            // Decision keys or a section of an experiment, inside the smallest experiment
            // around them (cut-offs 1, 5 and 10); a password or token variable it names is
            // set, as a user running it would set it.
            let file = one_document_experiment(&dir, body, "kind = \"bm25\"\n");
            let engines = value.get("engines");
            let pg = engines.and_then(|e| e.get("pg")).and_then(|p| p.get("password_env"));
            let milvus = engines.and_then(|e| e.get("milvus")).and_then(|m| m.get("token_env"));
            let mut cmd = ragsweep();
            cmd.arg("validate").arg(&file).arg("--models").arg(repo().join("models"));
            for var in [pg, milvus].into_iter().flatten().filter_map(toml::Value::as_str) {
                cmd.env(var, "a secret");
            }
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "{place}: {}", String::from_utf8_lossy(&out.stderr));
        } else {
            panic!("{place}: a TOML block that is neither an experiment, an experiment's section nor a model.toml");
        }
        checked += 1;
    }
    assert_eq!(checked, blocks.len());
}

/// "… and 51 questions typed the way people type, 12 of them unanswerable …": the numbers
/// the README gives for the demo are what `validate` counts.
#[test]
fn the_readme_quotes_the_demo_as_it_is() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let sentence =
        readme.split("and ").find(|s| s.contains("questions typed the way people type")).expect("the demo sentence");
    let numbers: Vec<usize> = sentence
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .take(2)
        .map(|w| w.parse().unwrap())
        .collect();
    let out = ragsweep()
        .args(["validate", "experiments/quickstart.toml", "--models"])
        .arg(repo().join("models"))
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let expected = format!("{} cases ({} unanswerable)", numbers[0], numbers[1]);
    assert!(stdout.contains(&expected), "README says {expected:?}; validate says {stdout}");
    let cells = stdout.split(" cells").next().unwrap().rsplit(' ').next().unwrap();
    assert!(
        readme.contains(&format!("Portuguese knowledge base: {cells} cells")),
        "README's cell count; validate: {stdout}"
    );
}
