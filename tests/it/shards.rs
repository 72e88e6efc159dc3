//! Three shards plus `merge` give the run an unsharded run gives, apart from timings.

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::{ragsweep, repo, run_dir, walk, without_timing};

/// A JSON file without what depends on the moment it was made: run ids, timings, cache reuse.
fn stable_json(dir: &Path, file: &str) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                map.retain(|k, _| {
                    !(k.ends_with("_ms")
                        || k.ends_with("_s")
                        || k == "seconds"
                        || k == "wall_seconds"
                        || k == "run_id"
                        || k == "stages"
                        || k == "reused_texts")
                });
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: serde_json::Value = serde_json::from_str(&read(dir, file)).unwrap();
    strip(&mut v);
    v
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap()
}

#[test]
fn three_shards_merge_into_the_unsharded_run() {
    let experiment = repo().join("tests/fixtures/sweep.toml");
    let whole = tempfile::tempdir().unwrap();
    ragsweep().args(["run", "-q", "--out"]).arg(whole.path()).arg(&experiment).assert().success();
    let whole = run_dir(whole.path(), "sweep");

    let sharded = tempfile::tempdir().unwrap();
    for i in 1..=3 {
        ragsweep()
            .args(["run", "-q", "--shard", &format!("{i}/3"), "--out"])
            .arg(sharded.path())
            .arg(&experiment)
            .assert()
            .success();
    }
    let shards: Vec<PathBuf> = {
        let mut v: Vec<_> = common::runs_in(&sharded.path().join("sweep"));
        v.sort();
        v
    };
    assert_eq!(shards.len(), 3);
    let shard_rows = read(&shards[0], "matrix.csv").lines().count() - 1;
    assert_eq!(shard_rows, 4 * 2, "12 cells over 3 shards, 2 splits each");

    // Two shards are not the whole grid.
    let partial = tempfile::tempdir().unwrap();
    ragsweep()
        .arg("merge")
        .arg(&experiment)
        .args(&shards[..2])
        .arg("--out")
        .arg(partial.path())
        .assert()
        .failure()
        .stderr(predicates::str::contains("merge needs every shard"));

    let merged = tempfile::tempdir().unwrap();
    ragsweep().arg("merge").arg(&experiment).args(&shards).arg("--out").arg(merged.path()).assert().success();
    let merged = run_dir(merged.path(), "sweep");

    assert_eq!(without_timing(&read(&merged, "matrix.csv")), without_timing(&read(&whole, "matrix.csv")));
    assert_eq!(read(&merged, "per_query.jsonl"), read(&whole, "per_query.jsonl"));
    for cell in 1..=12 {
        let f = format!("runs/c{cell:02}.trec");
        assert_eq!(read(&merged, &f), read(&whole, &f), "{f}");
    }
    assert_eq!(read(&merged, "matrix.md"), read(&whole, "matrix.md"));
    assert_eq!(read(&merged, "slices.csv"), read(&whole, "slices.csv"));
    assert_eq!(read(&merged, "cases.jsonl"), read(&whole, "cases.jsonl"));
    assert_eq!(stable_json(&merged, "matrix.json"), stable_json(&whole, "matrix.json"));
    assert_eq!(stable_json(&merged, "manifest.json"), stable_json(&whole, "manifest.json"));

    // The same shard twice is refused, and leaves nothing behind.
    let twice = tempfile::tempdir().unwrap();
    ragsweep()
        .arg("merge")
        .arg(&experiment)
        .args([&shards[0], &shards[0], &shards[1], &shards[2]])
        .arg("--out")
        .arg(twice.path())
        .assert()
        .failure()
        .stderr(predicates::str::contains("given twice"));
    let left: Vec<_> = walk(twice.path());
    assert!(left.is_empty(), "a refused merge leaves nothing: {left:?}");
}

/// Runs `sweep.toml` as shard `i` of `n` into `out` and returns the shard's run directory.
fn shard(out: &Path, i: usize, n: usize) -> PathBuf {
    let experiment = repo().join("tests/fixtures/sweep.toml");
    let before: Vec<PathBuf> = common::runs_in(&out.join("sweep"));
    ragsweep()
        .args(["run", "-q", "--shard", &format!("{i}/{n}"), "--out"])
        .arg(out)
        .arg(&experiment)
        .assert()
        .success();
    common::runs_in(&out.join("sweep")).into_iter().find(|p| !before.contains(p)).unwrap()
}

/// A copy of a shard directory, to damage.
fn copy(dir: &Path, to: &Path) -> PathBuf {
    let target = to.join(dir.file_name().unwrap());
    for file in walk(dir) {
        let dest = target.join(file.strip_prefix(dir).unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&file, &dest).unwrap();
    }
    target
}

#[test]
fn merge_refuses_shards_that_do_not_belong_together_and_writes_nothing() {
    let experiment = repo().join("tests/fixtures/sweep.toml");
    let runs = tempfile::tempdir().unwrap();
    let whole: Vec<PathBuf> = (1..=2).map(|i| shard(runs.path(), i, 2)).collect();
    let other_n = shard(runs.path(), 1, 3);
    let damaged = tempfile::tempdir().unwrap();

    let no_trec = copy(&whole[1], damaged.path());
    let trec = walk(&no_trec.join("runs")).into_iter().find(|p| p.extension().is_some_and(|e| e == "trec")).unwrap();
    std::fs::remove_file(trec).unwrap();

    // A copy of shard 2 with one JSON file edited.
    let edited = |name: &str, file: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let dir = copy(&whole[1], &damaged.path().join(name));
        let mut v: serde_json::Value = serde_json::from_str(&read(&dir, file)).unwrap();
        edit(&mut v);
        std::fs::write(dir.join(file), serde_json::to_vec(&v).unwrap()).unwrap();
        dir
    };
    let other_corpus = edited("corpus", "manifest.json", &|m| m["corpus"]["hash"] = "0000".into());
    let other_version = edited("version", "manifest.json", &|m| m["ragsweep_version"] = "0.0.9".into());
    let metric_edited = edited("metric", "matrix.json", &|m| {
        let v = &mut m["rows"][0]["metrics"]["ndcg@5"]["value"];
        *v = (v.as_f64().unwrap() + 0.1).into();
    });
    let row_deleted = edited("row", "matrix.json", &|m| {
        m["rows"].as_array_mut().unwrap().remove(1);
    });
    let lines_deleted = copy(&whole[1], &damaged.path().join("lines"));
    let per_query = read(&lines_deleted, "per_query.jsonl");
    let kept: Vec<&str> = per_query.lines().skip(10).collect();
    std::fs::write(lines_deleted.join("per_query.jsonl"), kept.join("\n") + "\n").unwrap();
    // Two shards whose manifests name the same model with different keys (another model.onnx).
    let model = |key: &str| serde_json::json!({"id": "m", "description": null, "file_hash": key, "key": key, "dim": 8, "max_length": 16, "query_prefix": "", "passage_prefix": ""});
    let first_with_model = {
        let dir = copy(&whole[0], &damaged.path().join("model-a"));
        let mut v: serde_json::Value = serde_json::from_str(&read(&dir, "manifest.json")).unwrap();
        v["models"] = serde_json::json!([model("m-aaaa")]);
        std::fs::write(dir.join("manifest.json"), serde_json::to_vec(&v).unwrap()).unwrap();
        dir
    };
    let other_model = edited("model-b", "manifest.json", &|m| m["models"] = serde_json::json!([model("m-bbbb")]));
    // A run file whose first ranked item was swapped, and a case missing from cases.jsonl.
    let trec_edited = copy(&whole[1], &damaged.path().join("trec"));
    let trec =
        walk(&trec_edited.join("runs")).into_iter().find(|p| p.extension().is_some_and(|e| e == "trec")).unwrap();
    let text = std::fs::read_to_string(&trec).unwrap();
    let first_line = text.lines().next().unwrap().to_string();
    let mut fields: Vec<&str> = first_line.split(' ').collect();
    fields[2] = "not-the-item";
    std::fs::write(&trec, text.replacen(&first_line, &fields.join(" "), 1)).unwrap();
    let cases_edited = copy(&whole[1], &damaged.path().join("cases"));
    let cases = read(&cases_edited, "cases.jsonl");
    std::fs::write(cases_edited.join("cases.jsonl"), cases.lines().skip(1).collect::<Vec<_>>().join("\n") + "\n")
        .unwrap();

    for (first, second, message) in [
        (&whole[0], &other_n, "shard count differs: \"3\" here, \"2\""),
        (&whole[0], &no_trec, "runs/c"),
        (&whole[0], &other_corpus, "corpus hash differs"),
        (&whole[0], &other_version, "ragsweep_version differs: this shard \"0.0.9\""),
        (&whole[0], &metric_edited, "`metrics.ndcg@5.value` is"),
        (&whole[0], &row_deleted, "rows here but its case lines give"),
        (&whole[0], &lines_deleted, "`cases` is"),
        (&first_with_model, &other_model, "model m key differs: \"m-bbbb\" here, \"m-aaaa\""),
        (&whole[0], &trec_edited, "the run file's ranking is not the case line's list at @"),
        (&whole[0], &cases_edited, "is not in cases.jsonl with split"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let merged = ragsweep()
            .arg("merge")
            .arg(&experiment)
            .args([first, second])
            .arg("--out")
            .arg(out.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&merged.stderr);
        assert!(!merged.status.success() && stderr.contains(message), "{message}: {stderr}");
        assert!(walk(out.path()).is_empty(), "a refused merge leaves nothing: {message}");
    }
}

/// Three shards started together, as a job array would, on one fresh cache they all fill at
/// once (chunk sets, BM25 indexes and e5 vectors), merge into the unsharded run.
#[test]
fn three_concurrent_shards_on_one_fresh_cache_merge_into_the_unsharded_run() {
    let experiment = repo().join("experiments/demo-filters.toml");
    let (whole_out, whole_cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    ragsweep()
        .args(["run", "-q", "--out"])
        .arg(whole_out.path())
        .arg("--cache")
        .arg(whole_cache.path())
        .arg(&experiment)
        .assert()
        .success();
    let whole = run_dir(whole_out.path(), "demo-filters");

    let (sharded, shared_cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let children: Vec<std::process::Child> = (1..=3)
        .map(|i| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
                .args(["run", "-q", "--shard", &format!("{i}/3"), "--models"])
                .arg(repo().join("models"))
                .arg("--cache")
                .arg(shared_cache.path())
                .arg("--out")
                .arg(sharded.path())
                .arg(&experiment)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut shards: Vec<PathBuf> = common::runs_in(&sharded.path().join("demo-filters"));
    shards.sort();
    assert_eq!(shards.len(), 3);
    let merged = tempfile::tempdir().unwrap();
    ragsweep().arg("merge").arg(&experiment).args(&shards).arg("--out").arg(merged.path()).assert().success();
    let merged = run_dir(merged.path(), "demo-filters");
    assert_eq!(read(&merged, "per_query.jsonl"), read(&whole, "per_query.jsonl"));
    assert_eq!(stable_json(&merged, "matrix.json"), stable_json(&whole, "matrix.json"));
    assert_eq!(without_timing(&read(&merged, "matrix.csv")), without_timing(&read(&whole, "matrix.csv")));
}

/// `--shard from-env`: a task of a Kubernetes Indexed Job or of a Slurm job array runs the
/// shard its scheduler's variables name (the same cells as `--shard I/N`), and a process no
/// scheduler started stops before writing anything.
#[test]
fn a_scheduler_task_runs_the_shard_its_variables_name() {
    let experiment = repo().join("tests/fixtures/sweep.toml");
    const VARS: [&str; 6] = [
        "JOB_COMPLETION_INDEX",
        "JOB_COMPLETIONS",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_STEP",
    ];
    let task = |out: &Path, vars: &[(&str, String)]| {
        let mut cmd = ragsweep();
        for v in VARS {
            cmd.env_remove(v);
        }
        cmd.envs(vars.iter().map(|(k, v)| (*k, v.as_str())));
        cmd.args(["run", "-q", "--shard", "from-env", "--out"]).arg(out).arg(&experiment).assert()
    };
    let given = tempfile::tempdir().unwrap();
    let kubernetes = tempfile::tempdir().unwrap();
    let slurm = tempfile::tempdir().unwrap();
    for i in 1..=3usize {
        let expected = shard(given.path(), i, 3);
        task(kubernetes.path(), &[("JOB_COMPLETION_INDEX", (i - 1).to_string()), ("JOB_COMPLETIONS", "3".into())])
            .success();
        // `sbatch --array=4-8:2`: tasks 4, 6 and 8.
        task(
            slurm.path(),
            &[
                ("SLURM_ARRAY_TASK_ID", (2 + 2 * i).to_string()),
                ("SLURM_ARRAY_TASK_COUNT", "3".into()),
                ("SLURM_ARRAY_TASK_MIN", "4".into()),
                ("SLURM_ARRAY_TASK_STEP", "2".into()),
            ],
        )
        .success();
        for out in [&kubernetes, &slurm] {
            let run = common::runs_in(&out.path().join("sweep"))
                .into_iter()
                .find(|p| p.to_string_lossy().ends_with(&format!("shard{i}of3")))
                .unwrap_or_else(|| panic!("no shard{i}of3 in {}", out.path().display()));
            assert_eq!(without_timing(&read(&run, "matrix.csv")), without_timing(&read(&expected, "matrix.csv")));
        }
    }

    let nowhere = tempfile::tempdir().unwrap();
    task(nowhere.path(), &[]).failure().stderr(predicates::str::contains("give --shard I/N"));
    task(nowhere.path(), &[("JOB_COMPLETION_INDEX", "3".into()), ("JOB_COMPLETIONS", "3".into())])
        .failure()
        .stderr(predicates::str::contains("shard 4 of 3"));
    let max = usize::MAX.to_string();
    task(nowhere.path(), &[("JOB_COMPLETION_INDEX", max.clone()), ("JOB_COMPLETIONS", "2".into())])
        .failure()
        .stderr(predicates::str::contains("past any shard"));
    task(nowhere.path(), &[("SLURM_ARRAY_TASK_ID", max), ("SLURM_ARRAY_TASK_COUNT", "2".into())])
        .failure()
        .stderr(predicates::str::contains("of 2"));
    // More shards than cells: the shard that would run nothing is an error, not an empty pass.
    let cells: usize = common::runs_in(&given.path().join("sweep"))
        .iter()
        .map(|run| {
            serde_json::from_str::<serde_json::Value>(&read(run, "manifest.json")).unwrap()["cells"]
                .as_array()
                .unwrap()
                .len()
        })
        .sum();
    let too_many = cells + 1;
    task(
        nowhere.path(),
        &[("JOB_COMPLETION_INDEX", (too_many - 1).to_string()), ("JOB_COMPLETIONS", too_many.to_string())],
    )
    .failure()
    .stderr(predicates::str::contains("holds no cell"));
    assert!(walk(nowhere.path()).is_empty(), "nothing written: {:?}", walk(nowhere.path()));
}

/// docs/scheduler/k8s-indexed-job.yml as Kubernetes runs it: the shard Job's container command
/// once per completion index, with the variables its spec and Kubernetes set, then the merge
/// Job's command; `/shared` is a temporary folder holding the demo grid. The merged run equals
/// an unsharded one.
#[test]
fn the_kubernetes_recipe_runs_and_merges_into_the_unsharded_run() {
    use yaml_rust2::{Yaml, YamlLoader};
    let text = std::fs::read_to_string(repo().join("docs/scheduler/k8s-indexed-job.yml")).unwrap();
    let jobs = YamlLoader::load_from_str(&text).unwrap();
    assert_eq!(jobs.len(), 2, "the shard Job and the merge Job");
    let shared = tempfile::tempdir().unwrap();
    let root = shared.path().to_str().unwrap().to_string();
    let local = |s: &str| s.replace("/shared", &root);
    std::fs::create_dir_all(shared.path().join("exp")).unwrap();
    let grid = common::demo_grid();
    std::fs::write(shared.path().join("exp/grid.toml"), &grid).unwrap();
    let container = |job: &Yaml| job["spec"]["template"]["spec"]["containers"][0].clone();
    let words = |c: &Yaml| -> Vec<String> {
        c["command"].as_vec().unwrap().iter().map(|w| local(w.as_str().unwrap())).collect()
    };
    let path = common::path_with_ragsweep();

    let shard_job = &jobs[0];
    assert_eq!(shard_job["spec"]["completionMode"].as_str(), Some("Indexed"));
    let completions = shard_job["spec"]["completions"].as_i64().unwrap();
    let shard = container(shard_job);
    let env: Vec<(String, String)> = shard["env"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_string(), local(e["value"].as_str().unwrap())))
        .collect();
    assert!(env.contains(&("JOB_COMPLETIONS".into(), completions.to_string())), "{env:?}");
    for index in 0..completions {
        let command = words(&shard);
        std::process::Command::new(&command[0])
            .args(&command[1..])
            .env("PATH", &path)
            .env_remove("SLURM_ARRAY_TASK_ID")
            .envs(env.iter().cloned())
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .env("RAGSWEEP_CACHE", shared.path().join("cache"))
            .status()
            .map(|s| assert!(s.success(), "shard {index}: {command:?}"))
            .unwrap();
    }
    let shards_of = |c: &Yaml| -> Vec<(String, String)> {
        c["env"]
            .as_vec()
            .unwrap()
            .iter()
            .map(|e| (e["name"].as_str().unwrap().into(), e["value"].as_str().unwrap().into()))
            .collect()
    };
    let merge_job = &jobs[1]["spec"]["template"]["spec"];
    let expected = vec![("RAGSWEEP_SHARDS".to_string(), completions.to_string())];
    assert_eq!(shards_of(&merge_job["initContainers"][0]), expected, "the wait counts the shard Job's completions");
    assert_eq!(shards_of(&container(&jobs[1])), expected, "the merge globs the shard Job's completions");
    let merge = words(&container(&jobs[1]));
    let status =
        std::process::Command::new(&merge[0]).args(&merge[1..]).env("PATH", &path).envs(expected).status().unwrap();
    assert!(status.success(), "{merge:?}");

    let merged = common::runs_in(&shared.path().join("results/grid"))
        .into_iter()
        .find(|p| !p.to_string_lossy().contains("shard"))
        .expect("the merged run");
    common::assert_merged_equals_unsharded(&merged, &grid);
}

/// `embed --shard I/4` on four processes at once, then `run`: each distinct text is embedded by
/// exactly one share, and the run embeds nothing.
#[test]
fn four_embed_shards_embed_each_text_once_and_the_run_after_them_nothing() {
    let docs: Vec<(String, String)> = (0..40)
        .map(|i| (format!("d{i:02}.md"), format!("# Documento {i}\nTexto número {i} sobre férias.\n")))
        .collect();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let f = common::Fixture::new(
        &docs,
        r#"[{"id": "q1", "question": "férias", "relevant": ["d01"]}, {"id": "q2", "question": "texto 7", "relevant": ["d07"]}]"#,
        "name = \"embed\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n\
         [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"random-16\"\n",
    );
    let models = f.path().join("models");
    std::fs::create_dir_all(models.join("random-16")).unwrap();
    std::fs::write(models.join("random-16/model.toml"), "id = \"random-16\"\nkind = \"random\"\ndim = 16\n").unwrap();
    let shards: Vec<std::process::Child> = (1..=4)
        .map(|i| {
            let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"));
            cmd.current_dir(f.path())
                .args(["embed", "exp.toml", "-q", "--shard", &format!("{i}/4"), "--models"])
                .arg(&models)
                .arg("--cache")
                .arg(f.path().join("cache"))
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let (mut passages, mut questions) = (0, 0);
    for child in shards {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let embedded: usize = line.split(" reused, ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
            if line.contains(" passages ") {
                passages += embedded;
            } else {
                questions += embedded;
            }
        }
    }
    // Whole documents and Markdown sections are the same text here: 40 distinct passages.
    assert_eq!((passages, questions), (40, 2), "each distinct text once over the four shares");
    let out = f
        .cmd()
        .args(["run", "exp.toml", "--models"])
        .arg(&models)
        .arg("--cache")
        .arg(f.path().join("cache"))
        .args(["--out", "out", "-q"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let embed_lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("embed ")).collect();
    assert!(!embed_lines.is_empty() && embed_lines.iter().all(|l| l.contains(" 0 embedded")), "{stderr}");
}

/// A shard whose timed pass saw an engine's list move names the cases, and the merged run says
/// which cells and cases need not repeat their numbers.
#[test]
fn merge_names_the_cells_and_cases_whose_lists_moved_in_a_shard() {
    let experiment = repo().join("tests/fixtures/sweep.toml");
    let runs = tempfile::tempdir().unwrap();
    let shards: Vec<PathBuf> = (1..=2).map(|i| shard(runs.path(), i, 2)).collect();
    let mut matrix: serde_json::Value = serde_json::from_str(&read(&shards[1], "matrix.json")).unwrap();
    // The fixture times nothing (latency_cases = 0): the shard's timed pass is written here.
    let cell = matrix["rows"][0]["cell"].as_str().unwrap().to_string();
    let case = read(&shards[1], "per_query.jsonl")
        .lines()
        .next()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["case"].as_str().unwrap().to_string());
    let (case, n) = (case.unwrap(), 3);
    let latency = serde_json::json!({"n": n, "p50_ms": 1.0, "p95_ms": 1.0, "p99_ms": 1.0, "mean_ms": 1.0,
        "embed_ms": 0.0, "search_ms": 1.0, "fuse_ms": 0.0, "stable": n - 1, "moved": [case]});
    for row in matrix["rows"].as_array_mut().unwrap().iter_mut().filter(|r| r["cell"] == cell.as_str()) {
        row["latency"] = latency.clone();
    }
    std::fs::write(shards[1].join("matrix.json"), serde_json::to_vec(&matrix).unwrap()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let merged = ragsweep().arg("merge").arg(&experiment).args(&shards).arg("--out").arg(out.path()).assert().success();
    let said = String::from_utf8_lossy(&merged.get_output().stdout).replace('\n', " ");
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(said.contains("unstable lists") && said.contains(&format!("{cell} (1 of {n}: {case})")), "{said}");
}

/// One function makes a cell's rows: a fresh run, the rescore of an older run under the same
/// judgments, and the merge of four shards write the same rows, metrics, standing, costs and
/// engine columns alike (timings and cache reuse apart), on a grid with budgets, every filter
/// mode, reserved cases, prices and a dense and a hybrid cell. Once a judgment changes a case's
/// labels, the rescore's numbers are still the fresh run's, and its misses of that case are
/// `undecided` (which relevant item decides a cause only retrieving again can tell).
#[test]
fn a_run_its_rescore_and_its_merged_shards_write_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let demo = repo().join("corpora/nuvem-verde");
    let models = root.join("models");
    common::random_model(&models, "random-16", 16, "query: ");
    std::fs::write(
        root.join("grid.toml"),
        format!(
            "name = \"rows\"\nunit = \"section\"\nk = [1, 5]\nbudget = [256, 512]\nreserved_fraction = 0.3\nseed = 3\n\
             latency_cases = 0\nfilter = [\"none\", \"in_query\", \"post\"]\nprefer = \"cost\"\n\
             [corpus]\npath = \"{}\"\n[golden]\npath = \"{}\"\njudgments = \"judgments.jsonl\"\n\
             [permissions]\ndefault_groups = [\"rh\"]\n\
             [cost]\nembedding_usd_per_1m_tokens = 0.02\nllm_usd_per_1m_input_tokens = 2.5\n\
             [[chunkers]]\nkind = \"markdown\"\ntitle = true\n[[chunkers]]\nkind = \"recursive\"\nsize = 400\noverlap = 50\n\
             [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"random-16\"\n\
             [[retrievers]]\nkind = \"hybrid\"\nmodel = \"random-16\"\nfusion = \"rrf\"\nanalyzer = \"pt\"\n",
            demo.join("docs").display(),
            demo.join("golden.json").display()
        ),
    )
    .unwrap();
    let run = |args: &[&str], out: &str| {
        ragsweep()
            .current_dir(root)
            .args(["run", "-q", "--models"])
            .arg(&models)
            .args(args)
            .args(["--out", out, "grid.toml"])
            .assert()
            .success();
        if args.is_empty() {
            Some(run_dir(&root.join(out), "rows"))
        } else {
            None
        }
    };
    let rescore = |run: &Path| {
        let before = common::runs_in(&root.join("before/rows"));
        ragsweep().current_dir(root).arg("rescore").arg(run).arg("--models").arg(&models).assert().success();
        common::runs_in(&root.join("before/rows")).into_iter().find(|p| !before.contains(p)).unwrap()
    };
    let rows = |dir: &Path| stable_json(dir, "matrix.json")["rows"].clone();
    let before = run(&[], "before").unwrap();

    // A judgment that changes no number: grade 0 for a section no cell returned for nv-01.
    let lines = common::jsonl(&before.join("per_query.jsonl"));
    let seen: Vec<&str> = lines
        .iter()
        .filter(|l| l["case"] == "nv-01")
        .flat_map(|l| l["top"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()))
        .collect();
    let golden: serde_json::Value = serde_json::from_str(&read(&demo, "golden.json")).unwrap();
    let unseen = golden
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["relevant"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()))
        .find(|unit| !seen.iter().any(|t| t.starts_with(unit.split('#').next().unwrap())))
        .unwrap();
    let judgment = |id: &str, grade: u32| {
        format!("{{\"case\": \"nv-01\", \"id\": \"{id}\", \"grade\": {grade}, \"who\": \"t\"}}\n")
    };
    std::fs::write(root.join("judgments.jsonl"), judgment(unseen, 0)).unwrap();
    let fresh = run(&[], "fresh").unwrap();
    for i in 1..=4 {
        run(&["--shard", &format!("{i}/4")], "shards");
    }
    let mut shards = common::runs_in(&root.join("shards/rows"));
    shards.sort();
    assert_eq!(shards.len(), 4);
    ragsweep()
        .current_dir(root)
        .arg("merge")
        .arg("grid.toml")
        .args(&shards)
        .args(["--out", "merged"])
        .assert()
        .success();
    let merged = run_dir(&root.join("merged"), "rows");
    let rescored = rescore(&before);

    let expected = rows(&fresh);
    assert_eq!(expected.as_array().unwrap().len(), 2 * 3 * 3 * 2, "2 chunkers × 3 retrievers × 3 filters × 2 splits");
    assert_eq!(rows(&before), expected, "the judgment changes no number");
    assert_eq!(rows(&rescored), expected, "rescore");
    assert_eq!(rows(&merged), expected, "merge");
    for file in ["per_query.jsonl", "slices.csv", "cases.jsonl"] {
        assert_eq!(read(&rescored, file), read(&fresh, file), "rescore: {file}");
        assert_eq!(read(&merged, file), read(&fresh, file), "merge: {file}");
    }
    for dir in [&rescored, &merged] {
        assert_eq!(without_timing(&read(dir, "matrix.csv")), without_timing(&read(&fresh, "matrix.csv")));
    }

    // A judgment that makes another section relevant to nv-01.
    let relevant = "politicas/ferias#Fracionamento";
    std::fs::write(root.join("judgments.jsonl"), judgment(unseen, 0) + &judgment(relevant, 1)).unwrap();
    let fresh = run(&[], "fresh2").unwrap();
    let rescored = rescore(&before);
    assert_ne!(rows(&rescored), rows(&before), "the judgment changes the numbers");
    let without_misses = |dir: &Path| {
        let mut rows = rows(dir);
        rows.as_array_mut().unwrap().iter_mut().for_each(|r| {
            r.as_object_mut().unwrap().remove("misses");
        });
        rows
    };
    assert_eq!(without_misses(&rescored), without_misses(&fresh));
    let undecided = common::jsonl(&rescored.join("per_query.jsonl"))
        .into_iter()
        .filter(|l| l["case"] == "nv-01")
        .flat_map(|l| l["misses"].as_array().cloned().unwrap_or_default())
        .map(|m| m["cause"].as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    assert!(!undecided.is_empty() && undecided.iter().all(|c| c == "undecided"), "{undecided:?}");
}
