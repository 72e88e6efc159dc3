//! Vectors made elsewhere (`models add --vectors`), through the binary: the vectors `ragsweep
//! vectors` exports for a model, brought back as a model of their own, score exactly like the
//! model that made them; JSONL keyed by document id and by text hash reads the same; every
//! missing, extra, repeated or misshapen vector is an error at its file and line, and the run
//! writes nothing.

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::{matrix, Fixture};
use predicates::prelude::*;
use serde_json::Value;
use sha2::Digest;

const DIM: usize = 16;
use crate::common::{THREE_PAGES as DOCS, THREE_PAGES_GOLDEN as GOLDEN};

fn experiment(chunker: &str, models: &str) -> String {
    format!(
        "name = \"made\"\nunit = \"doc\"\nk = [1, 3]\nmetrics = [\"hit\", \"ndcg\"]\nreserved_fraction = 0.0\n\
         latency_cases = 3\n[cost]\nembedding_usd_per_1m_tokens = 0.0\n[[chunkers]]\nkind = \"{chunker}\"\n\
         [[retrievers]]\nkind = \"dense\"\nmodel = [{models}]\n"
    )
}

/// A fixture whose models folder holds `local`, a random model with a query prefix.
fn fixture(chunker: &str, models: &str) -> (Fixture, PathBuf) {
    let f = Fixture::new(DOCS, GOLDEN, &experiment(chunker, models));
    let dir = f.path().join("models");
    common::random_model(&dir, "local", DIM, "query: ");
    (f, dir)
}

fn with_dirs<'c>(cmd: &'c mut assert_cmd::Command, f: &Fixture, models: &Path) -> &'c mut assert_cmd::Command {
    cmd.arg("--models").arg(models).arg("--cache").arg(f.path().join("cache"))
}

/// `ragsweep vectors` of the fixture's experiment into `out`.
fn export(f: &Fixture, models: &Path, out: &str) {
    let mut cmd = f.cmd();
    cmd.args(["vectors", "exp.toml", "--out", out]);
    with_dirs(&mut cmd, f, models).assert().success().stdout(predicate::str::contains("with their ids"));
}

fn add(f: &Fixture, models: &Path, folder: &str, name: &str) -> assert_cmd::assert::Assert {
    f.cmd().args(["models", "add", folder, "--vectors", "--name", name, "--models"]).arg(models).assert()
}

fn run(f: &Fixture, models: &Path) -> assert_cmd::assert::Assert {
    run_into(f, models, "out")
}

fn run_into(f: &Fixture, models: &Path, out: &str) -> assert_cmd::assert::Assert {
    let mut cmd = f.cmd();
    cmd.args(["run", "-q", "exp.toml", "--out"]).arg(f.path().join(out));
    with_dirs(&mut cmd, f, models).assert()
}

/// Rewrites the fixture's experiment with `from` replaced by `to` (its models, its chunker).
fn edit_experiment(f: &Fixture, from: &str, to: &str) {
    let path = f.path().join("exp.toml");
    std::fs::write(&path, std::fs::read_to_string(&path).unwrap().replace(from, to)).unwrap();
}

fn metrics(m: &Value, model: &str) -> Value {
    common::row(m, "model", model)["metrics"].clone()
}

#[test]
fn exported_vectors_brought_back_score_like_the_model_that_made_them() {
    let (f, models) = fixture("markdown", "\"local\"");
    export(&f, &models, "vecs");
    for file in ["passages.npy", "passages.ids", "queries.npy", "queries.ids"] {
        assert!(f.path().join("vecs").join(file).is_file(), "{file}");
    }
    let ids = std::fs::read_to_string(f.path().join("vecs/passages.ids")).unwrap();
    assert!(ids.lines().all(|l| l.contains('@')), "chunk ids: {ids}");
    add(&f, &models, "vecs", "made")
        .success()
        .stdout(predicate::str::contains("added made: 16-dimensional vectors made elsewhere"));
    let toml = std::fs::read_to_string(models.join("made/model.toml")).unwrap();
    assert!(toml.contains("kind = \"vectors\"") && toml.contains("dim = 16"), "{toml}");

    edit_experiment(&f, "model = [\"local\"]", "model = [\"local\", \"made\"]");
    // The grid's first dense cell of one model, whatever else the grid holds.
    let mut again = f.cmd();
    again.args(["vectors", "exp.toml", "--model", "local", "--out", "again"]);
    with_dirs(&mut again, &f, &models).assert().success();
    for file in ["passages.npy", "passages.ids", "queries.npy", "queries.ids"] {
        assert_eq!(
            std::fs::read(f.path().join("vecs").join(file)).unwrap(),
            std::fs::read(f.path().join("again").join(file)).unwrap()
        );
    }
    let mut validate = f.cmd();
    validate.args(["validate", "exp.toml"]);
    with_dirs(&mut validate, &f, &models).assert().success().stdout(predicate::str::contains(
        "model made: 7 vectors made elsewhere, 16 dimensions, every id matched both ways",
    ));
    run(&f, &models).success();
    let runs = common::runs_in(&f.path().join("out/made"));
    let m = matrix(&runs[0]);
    assert_eq!(metrics(&m, "local"), metrics(&m, "made"), "the same vectors, the same numbers");
    let made = common::row(&m, "model", "made");
    let stages: Value = serde_json::from_str(&std::fs::read_to_string(runs[0].join("manifest.json")).unwrap()).unwrap();
    let embed: Vec<&Value> = stages["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["stage"] == "embed" && s["key"].as_str().unwrap_or("").starts_with("made"))
        .collect();
    assert!(!embed.is_empty(), "{}", stages["stages"]);
    assert!(embed.iter().all(|s| s["embedding"]["embedded"] == 0), "nothing embedded: {embed:?}");
    assert!(made["cost"]["usd_index"] == 0.0, "{made}");
    let summary = std::fs::read_to_string(runs[0].join("summary.md")).unwrap();
    assert!(
        summary.contains(
            "model made: its vectors were made elsewhere, so its cells' latency leaves out embedding the question"
        ),
        "{summary}"
    );

    assert!(made["latency"]["leaves_out"].as_str().unwrap().contains("embedding the question"), "{made}");

    // Its latency leaves out embedding, so it is never the fastest: prefer = "latency" picks
    // among the cells whose calls were timed whole.
    let exp = f.path().join("exp.toml");
    let text = std::fs::read_to_string(&exp).unwrap().replace("[\"local\", \"made\"]", "[\"made\", \"local\"]");
    std::fs::write(&exp, format!("prefer = \"latency\"\nselect = \"ndcg@3\"\n{text}")).unwrap();
    run_into(&f, &models, "out-latency").success();
    let m = matrix(&common::runs_in(&f.path().join("out-latency/made"))[0]);
    let s = &m["selection"];
    assert_eq!((s["best"].as_str(), s["cell"].as_str()), (Some("c01"), Some("c02")), "{s}");

    // Changed after it was added: damage, as for any model's files.
    let npy = models.join("made/queries.npy");
    let mut bytes = std::fs::read(&npy).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&npy, bytes).unwrap();
    f.cmd()
        .args(["models", "list", "--check", "--models"])
        .arg(&models)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("made").and(predicate::str::contains("DAMAGED")));
    // validate and run refuse it, even with its vectors in the cache, and write nothing.
    let mut validate = f.cmd();
    validate.args(["validate", "exp.toml"]);
    with_dirs(&mut validate, &f, &models).assert().code(2).stderr(predicate::str::contains("model made is damaged"));
    run_into(&f, &models, "out-damaged").code(2).stderr(predicate::str::contains("model made is damaged"));
    assert!(!f.path().join("out-damaged").exists());
}

/// Writes `folder/{passages,queries}.jsonl` from an export, naming each passage by `passage`
/// (of its chunk id and text) and each question by `question` (of its id and text).
fn jsonl(f: &Fixture, from: &str, folder: &str, passage: impl Fn(&str) -> String, question: impl Fn(&str) -> String) {
    let out = f.path().join(folder);
    std::fs::create_dir_all(&out).unwrap();
    for (side, name) in [("passages", &passage as &dyn Fn(&str) -> String), ("queries", &question)] {
        let (values, dim) = ragsweep::npy::read_f32(&f.path().join(from).join(format!("{side}.npy"))).unwrap();
        let ids = std::fs::read_to_string(f.path().join(from).join(format!("{side}.ids"))).unwrap();
        let lines: String = ids
            .lines()
            .zip(values.chunks_exact(dim))
            .map(|(id, v)| format!("{}\n", serde_json::json!({"id": name(id), "vector": v})))
            .collect();
        std::fs::write(out.join(format!("{side}.jsonl")), lines).unwrap();
    }
}

fn sha(text: &str) -> String {
    format!("sha256:{:x}", sha2::Sha256::digest(text.as_bytes()))
}

#[test]
fn jsonl_named_by_document_or_by_text_hash_reads_the_same() {
    let (f, models) = fixture("none", "\"local\"");
    export(&f, &models, "vecs");
    let questions: Value = serde_json::from_str(GOLDEN).unwrap();
    let text_of = |id: &str| {
        questions.as_array().unwrap().iter().find(|q| q["id"] == id).unwrap()["question"].as_str().unwrap().to_string()
    };
    // Passages by document id (chunker none keeps documents whole), questions by text hash.
    jsonl(&f, "vecs", "by-doc", |id| id.split('@').next().unwrap().to_string(), |id| sha(&text_of(id)));
    add(&f, &models, "by-doc", "by-doc").success();
    edit_experiment(&f, "[\"local\"]", "[\"local\", \"by-doc\"]");
    run(&f, &models).success();
    let m = matrix(&common::runs_in(&f.path().join("out/made"))[0]);
    assert_eq!(metrics(&m, "local"), metrics(&m, "by-doc"));
}

/// The error `run` gives with `edit` of the vectors model's passages.jsonl (of the markdown
/// chunker's export) in a folder without an install record; nothing is written.
fn refused_passages(edit: impl Fn(&str) -> String) -> String {
    let (f, models) = fixture("markdown", "\"local\"");
    export(&f, &models, "vecs");
    jsonl(&f, "vecs", "good", str::to_string, str::to_string);
    add(&f, &models, "good", "made").success();
    let path = models.join("made/passages.jsonl");
    std::fs::write(&path, edit(&std::fs::read_to_string(&path).unwrap())).unwrap();
    // A folder written by hand (no install record to be damaged against): read line by line.
    std::fs::remove_file(models.join("made/installed.json")).unwrap();
    edit_experiment(&f, "model = [\"local\"]", "model = [\"made\"]");
    let out = run(&f, &models).failure();
    assert!(!f.path().join("out/made").exists() || common::runs_in(&f.path().join("out/made")).is_empty());
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

#[test]
fn a_missing_extra_repeated_or_misshapen_vector_is_refused_at_its_line() {
    let missing = refused_passages(|text| text.lines().skip(1).map(|l| format!("{l}\n")).collect());
    assert!(missing.contains("passages.jsonl: no vector for 1 of the 4 chunks of markdown"), "{missing}");
    assert!(missing.contains("`doc@start-end`"), "says what an id names: {missing}");

    let extra = refused_passages(|text| {
        format!("{text}{{\"id\": \"gone@0-5\", \"vector\": [{}]}}\n", vec!["0.5"; DIM].join(","))
    });
    assert!(
        extra.contains("passages.jsonl:5: \"gone@0-5\" names none of the chunks of markdown (1 such ids of 5)"),
        "{extra}"
    );

    let repeated = refused_passages(|text| format!("{text}{}\n", text.lines().next().unwrap()));
    assert!(
        repeated.contains("passages.jsonl:5: id ") && repeated.contains("is named twice (first at line 1)"),
        "{repeated}"
    );

    let short = refused_passages(|text| text.replacen("\"vector\":[", "\"vector\":[0.5,", 1));
    assert!(
        short.contains("passages.jsonl:1: the vector of")
            && short.contains("has 17 numbers; the model's vectors have 16"),
        "{short}"
    );

    let zero = refused_passages(|text| {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let row: Value = serde_json::from_str(&lines[1]).unwrap();
        lines[1] = serde_json::json!({"id": row["id"], "vector": vec![0.0; DIM]}).to_string();
        lines.iter().map(|l| format!("{l}\n")).collect()
    });
    assert!(zero.contains("passages.jsonl:2: the vector of") && zero.contains("is zero, not finite"), "{zero}");
    // Denormals (1e-45): not zero, but no cosine could rank them.
    let tiny = refused_passages(|text| {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let row: Value = serde_json::from_str(&lines[1]).unwrap();
        lines[1] = serde_json::json!({"id": row["id"], "vector": vec![1e-45f32; DIM]}).to_string();
        lines.iter().map(|l| format!("{l}\n")).collect()
    });
    assert!(tiny.contains("passages.jsonl:2: the vector of") && tiny.contains("too short to rank"), "{tiny}");
}

#[test]
fn vectors_made_for_another_chunker_or_ids_that_do_not_fit_are_refused() {
    // Made for the markdown chunker, asked for whole documents.
    let (f, models) = fixture("markdown", "\"local\"");
    export(&f, &models, "vecs");
    add(&f, &models, "vecs", "made").success();
    edit_experiment(&f, "model = [\"local\"]", "model = [\"made\"]");
    edit_experiment(&f, "kind = \"markdown\"", "kind = \"none\"");
    run(&f, &models).failure().stderr(predicate::str::contains(
        "passages.ids: no vector for 1 of the 3 chunks of none (the first: \"ferias@0-77\")",
    ));

    // An array whose ids do not name its rows one to one.
    let ids = f.path().join("vecs/passages.ids");
    let text = std::fs::read_to_string(&ids).unwrap();
    std::fs::write(&ids, text.lines().skip(1).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    add(&f, &models, "vecs", "short")
        .failure()
        .stderr(predicate::str::contains("passages.ids: 3 ids for the 4 rows of"));
    std::fs::remove_file(&ids).unwrap();
    add(&f, &models, "vecs", "none").failure().stderr(predicate::str::contains("passages.npy has no passages.ids"));
}

/// `models add --vectors` reads the user's files where they are: an error names the user's file
/// and line (not a copy in a folder deleted afterwards), and a NaN (as Python writes it) is
/// said to be one.
#[test]
fn models_add_names_the_users_file_and_says_nan() {
    let (f, models) = fixture("markdown", "\"local\"");
    export(&f, &models, "vecs");
    jsonl(&f, "vecs", "mine", str::to_string, str::to_string);
    let path = f.path().join("mine/passages.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let comma = lines[1].find("\"vector\":[").unwrap() + "\"vector\":[".len();
    lines[1].insert_str(comma, "NaN,");
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let out = add(&f, &models, "mine", "made").failure();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("error: mine/passages.jsonl:2: "), "the user's file and line: {stderr}");
    assert!(stderr.contains("NaN or Infinity"), "{stderr}");
    assert!(!models.join("made").exists(), "nothing added");
}

/// Two questions of one text each written out under `sha256:` of it: one vector serves both;
/// the same id with another vector is still refused at its line.
#[test]
fn a_text_hash_may_repeat_with_the_same_vector_only() {
    let (f, models) = fixture("none", "\"local\"");
    export(&f, &models, "vecs");
    let questions: Value = serde_json::from_str(GOLDEN).unwrap();
    let text_of = |id: &str| {
        questions.as_array().unwrap().iter().find(|q| q["id"] == id).unwrap()["question"].as_str().unwrap().to_string()
    };
    jsonl(&f, "vecs", "by-text", str::to_string, |id| sha(&text_of(id)));
    let path = f.path().join("by-text/queries.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap().to_string();
    std::fs::write(&path, format!("{text}{first}\n")).unwrap();
    add(&f, &models, "by-text", "by-text").success();
    edit_experiment(&f, "[\"local\"]", "[\"local\", \"by-text\"]");
    run(&f, &models).success();
    let m = matrix(&common::runs_in(&f.path().join("out/made"))[0]);
    assert_eq!(metrics(&m, "local"), metrics(&m, "by-text"));
    let row: Value = serde_json::from_str(&first).unwrap();
    let other = serde_json::json!({"id": row["id"], "vector": vec![0.25; DIM]}).to_string();
    std::fs::write(&path, format!("{text}{other}\n")).unwrap();
    let lines = text.lines().count();
    add(&f, &models, "by-text", "by-text-2").failure().stderr(
        predicate::str::contains(format!("queries.jsonl:{}: id ", lines + 1))
            .and(predicate::str::contains("is named twice")),
    );
}
