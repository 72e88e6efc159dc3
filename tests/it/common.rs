//! Helpers shared by the integration tests that run the real binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

use assert_cmd::Command;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `ragsweep run -q` on `experiment` (relative to the repo) with the installed models and the
/// given cache and output directories; returns the finished assertion.
pub fn run_experiment(experiment: &str, out: &Path, cache: &Path) -> assert_cmd::assert::Assert {
    Command::cargo_bin("ragsweep")
        .unwrap()
        .args(["run", "-q", "--models"])
        .arg(repo().join("models"))
        .arg("--cache")
        .arg(cache)
        .arg("--out")
        .arg(out)
        .arg(repo().join(experiment))
        .assert()
        .success()
}

/// The run directories in an experiment's folder (`latest` and hidden entries left out).
pub fn runs_in(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    let mut runs: Vec<PathBuf> = entries
        .map(|e| e.unwrap())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name != "latest" && !name.starts_with('.')
        })
        .map(|e| e.path())
        .collect();
    runs.sort();
    runs
}

/// The one run directory under `out/<name>/`.
pub fn run_dir(out: &Path, name: &str) -> PathBuf {
    let mut dirs = runs_in(&out.join(name));
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

/// A matrix.json's rows without what depends on the run: timings and cache reuse.
pub fn stable_rows(matrix: &serde_json::Value) -> serde_json::Value {
    let mut rows = matrix["rows"].clone();
    for r in rows.as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("latency");
        let cost = r["cost"].as_object_mut().unwrap();
        for varies in ["embed_s", "index_s", "reused_texts"] {
            cost.remove(varies);
        }
    }
    rows
}

/// A CSV matrix without the columns that depend on the run: timings and cache reuse.
pub fn without_timing(text: &str) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(text.as_bytes());
    let rows: Vec<Vec<String>> = reader.records().map(|r| r.unwrap().iter().map(str::to_string).collect()).collect();
    let varies = |h: &str| h.ends_with("_ms") || h.ends_with("_s") || h == "reused_texts";
    let keep: Vec<usize> = (0..rows[0].len()).filter(|&i| !varies(&rows[0][i])).collect();
    assert!(keep.len() < rows[0].len(), "the matrix has timing columns");
    rows.iter().map(|r| keep.iter().map(|&i| r[i].clone()).collect()).collect()
}

/// The cache every test of this process shares unless it tests the cache itself: what one test
/// embedded or indexed, the next reuses (concurrent runs on one cache are part of the product).
pub struct SharedCache(PathBuf);

impl SharedCache {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

pub fn shared_cache() -> SharedCache {
    SharedCache(std::env::temp_dir().join(format!("ragsweep-test-cache-{}", std::process::id())))
}

/// The quick start's run, made once per test process on the shared cache, for the tests that
/// read what a run writes: each caller gets its own copy of the output folder to add to, and
/// the run's standard output.
pub struct QuickstartRun {
    pub out: tempfile::TempDir,
    pub stdout: String,
}

pub fn quickstart_run() -> QuickstartRun {
    let (made, stdout) = quickstart_made();
    let copy = tempfile::tempdir().unwrap();
    copy_tree(made, copy.path());
    QuickstartRun { out: copy, stdout: stdout.clone() }
}

/// The quick start's standard output, for a test that reads nothing else of the run.
pub fn quickstart_stdout() -> &'static str {
    &quickstart_made().1
}

/// The quick start's output folder and standard output, made once per test process.
fn quickstart_made() -> &'static (PathBuf, String) {
    static RUN: std::sync::OnceLock<(PathBuf, String)> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        let out = std::env::temp_dir().join(format!("ragsweep-test-quickstart-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let assert = run_experiment("experiments/quickstart.toml", &out, shared_cache().path());
        (out, String::from_utf8(assert.get_output().stdout.clone()).unwrap())
    })
}

/// Copies the folder `from` into `to`, symbolic links as links.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source).unwrap(), &target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&source, &target);
        } else {
            std::fs::copy(&source, &target).unwrap();
        }
    }
}

/// The binary with the installed models and the process's shared cache, outside the working
/// tree, so no test writes inside the repository.
pub fn ragsweep() -> Command {
    let mut cmd = Command::cargo_bin("ragsweep").unwrap();
    cmd.env("RAGSWEEP_MODELS", repo().join("models")).env("RAGSWEEP_CACHE", shared_cache().path());
    cmd
}

/// Every file under `dir`, hidden ones included.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A folder with `docs/` (Markdown files), `golden.json` and `exp.toml`.
pub struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new(docs: &[(&str, &str)], golden: &str, experiment: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        for (name, text) in docs {
            let path = dir.path().join("docs").join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::write(dir.path().join("golden.json"), golden).unwrap();
        std::fs::write(
            dir.path().join("exp.toml"),
            // Top-level keys first, then the corpus and golden tables, then the grids.
            match experiment.split_once("[[") {
                Some((top, grids)) => {
                    format!("{top}[corpus]\npath = \"docs\"\n[golden]\npath = \"golden.json\"\n[[{grids}")
                }
                None => format!("{experiment}[corpus]\npath = \"docs\"\n[golden]\npath = \"golden.json\"\n"),
            },
        )
        .unwrap();
        Fixture { dir }
    }

    pub fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("ragsweep").unwrap();
        cmd.current_dir(self.dir.path());
        cmd
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `ragsweep run` of the experiment with the installed models, the fixture's own cache
    /// and `out/`, not yet asserted.
    pub fn run_cmd(&self) -> Command {
        let mut cmd = self.cmd();
        cmd.args(["run", "-q", "--models"])
            .arg(repo().join("models"))
            .arg("--cache")
            .arg(self.dir.path().join("cache"))
            .arg("--out")
            .arg(self.dir.path().join("out"))
            .arg("exp.toml");
        cmd
    }

    /// `ragsweep explain RUN ARGS…` with the installed models and the fixture's cache, asserted
    /// to succeed.
    #[allow(dead_code)]
    pub fn explain(&self, run: &Path, args: &[&str]) -> std::process::Output {
        let out = self
            .cmd()
            .arg("explain")
            .arg(run)
            .args(args)
            .arg("--models")
            .arg(repo().join("models"))
            .arg("--cache")
            .arg(self.dir.path().join("cache"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out
    }

    /// Runs the experiment and returns its run directory.
    pub fn run(&self) -> PathBuf {
        self.run_cmd().assert().success();
        let out = self.dir.path().join("out");
        let name = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
        let runs = runs_in(&name);
        assert_eq!(runs.len(), 1);
        runs[0].clone()
    }
}

/// The JSON lines of a file (`per_query.jsonl`, `drafts.jsonl`, …), each parsed.
pub fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

pub fn matrix(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("matrix.json")).unwrap()).unwrap()
}

/// The row of cell `id` (`c01`, …) in a run's matrix.
pub fn cell_row<'m>(m: &'m Value, id: &str) -> &'m Value {
    m["rows"].as_array().unwrap().iter().find(|r| r["cell"] == id).unwrap()
}

/// The row of a cell whose configuration has `key = value`.
pub fn row<'m>(m: &'m Value, key: &str, value: &str) -> &'m Value {
    m["rows"].as_array().unwrap().iter().find(|r| r["config"][key] == value).unwrap()
}

/// The headless browser scripts/install-test-tools.sh installs (tests that need one fail, never
/// skip, without it).
/// Prints `html` to `pdf` with headless Chromium, as a browser's "Save as PDF" does.
#[allow(dead_code)]
pub fn print_pdf(html: &Path, pdf: &Path, profile: &Path) {
    print_pdf_with(html, pdf, profile, &[]);
}

/// Prints `html` to `pdf` with an outline (bookmarks) made from its `h1`–`h6` headings.
pub fn print_pdf_with_outline(html: &Path, pdf: &Path, profile: &Path) {
    print_pdf_with(html, pdf, profile, &["--generate-pdf-document-outline"]);
}

fn print_pdf_with(html: &Path, pdf: &Path, profile: &Path, extra: &[&str]) {
    let mut cmd = std::process::Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-pdf-header-footer",
    ])
    .args(extra)
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--print-to-pdf={}", pdf.display()))
    .arg(html);
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e} (scripts/install-test-tools.sh installs it)"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
}

pub fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = std::process::Command::new("which").arg(name).output() {
            if out.status.success() {
                return PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
            }
        }
    }
    panic!("no chromium on the PATH: run scripts/install-test-tools.sh (this test needs a real browser)");
}

/// The demo sweep (tests/fixtures/sweep.toml) as the scheduler recipes' `grid.toml`: named
/// `grid`, its corpus paths absolute so it runs from any folder.
pub fn demo_grid() -> String {
    std::fs::read_to_string(repo().join("tests/fixtures/sweep.toml"))
        .unwrap()
        .replace("name = \"sweep\"", "name = \"grid\"")
        .replace("../../corpora", repo().join("corpora").to_str().unwrap())
}

/// `PATH` with the ragsweep under test first, as a scheduler's task finds `ragsweep`.
pub fn path_with_ragsweep() -> String {
    let bin_dir = assert_cmd::cargo::cargo_bin("ragsweep").parent().unwrap().to_path_buf();
    format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default())
}

/// Runs `grid` unsharded and asserts that `merged` holds its matrix (timings aside) and its
/// per-case lines.
pub fn assert_merged_equals_unsharded(merged: &Path, grid: &str) {
    let whole = tempfile::tempdir().unwrap();
    std::fs::write(whole.path().join("grid.toml"), grid).unwrap();
    ragsweep().args(["run", "-q", "--out"]).arg(whole.path()).arg(whole.path().join("grid.toml")).assert().success();
    let whole = run_dir(whole.path(), "grid");
    let read = |dir: &Path, f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    assert_eq!(without_timing(&read(merged, "matrix.csv")), without_timing(&read(&whole, "matrix.csv")));
    assert_eq!(read(merged, "per_query.jsonl"), read(&whole, "per_query.jsonl"));
}

/// `bench-filter --engine ENGINE` on a synthetic corpus of 300 documents in `root` (the free
/// random model, HNSW m 8, ef_construction 40, 20 queries), the engines installed in the
/// repository: its table, after asserting it succeeded.
pub fn bench_filter(root: &Path, engine: &str) -> String {
    synthetic_project(root, 300, 20);
    let experiment = root.join("bench.toml");
    std::fs::write(
        &experiment,
        "name = \"bench\"\nunit = \"doc\"\nk = [10]\n[corpus]\npath = \"corpus\"\n[golden]\npath = \"corpus\"\n\
         reserved = [\"test\"]\n[[chunkers]]\nkind = \"none\"\n\
         [[retrievers]]\nkind = \"dense\"\nmodel = \"random-64\"\nindex = \"hnsw\"\nm = 8\nef_construction = 40\n",
    )
    .unwrap();
    let out = ragsweep()
        .current_dir(root)
        .arg("bench-filter")
        .arg(&experiment)
        .args(["--queries", "20", "--engine", engine, "--models"])
        .arg(root.join("models"))
        .arg("--engines")
        .arg(repo().join("engines"))
        .arg("--cache")
        .arg(root.join("cache"))
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{}\n{table}", String::from_utf8_lossy(&out.stderr));
    table
}

/// `(rows, under_return, recall_vs_oracle)` of the `bench-filter` parity table's row at `allowed` for `setting`.
pub fn parity_row(table: &str, allowed: &str, setting: &str) -> (f64, usize, f64) {
    let line = table
        .lines()
        .find(|l| l.starts_with(&format!("| {allowed} | {setting} |")))
        .unwrap_or_else(|| panic!("no row {allowed} {setting} in:\n{table}"));
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    let under = cells[7].split(' ').next().unwrap().parse().unwrap();
    (cells[6].parse().unwrap(), under, cells[8].parse().unwrap())
}

/// A loopback OpenAI-compatible embeddings endpoint that answers every request with `dim`-long
/// vectors (the random model's for each text), for as long as the test process lives; its
/// `…/v1` URL.
pub fn openai_endpoint(dim: usize) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(1000) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut line, mut length) = (String::new(), 0usize);
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                line.clear();
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let request: Value = serde_json::from_slice(&body).unwrap();
            let data: Vec<Value> = request["input"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let v = ragsweep::stages::embed::random_unit_vector(t.as_str().unwrap(), dim);
                    serde_json::json!({"index": i, "embedding": v})
                })
                .collect();
            let answer = serde_json::json!({"data": data}).to_string();
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", answer.len());
            let _ = stream.write_all(format!("{head}{answer}").as_bytes());
        }
    });
    url
}

/// Three short Portuguese pages, one question each: the corpus of the tests of models a team
/// brings (every model must rank each page first for its question's words).
pub const THREE_PAGES: &[(&str, &str)] = &[
    ("ferias.md", "# Férias\nTrinta dias de férias por ano.\n## Saldo\nO saldo aparece no portal.\n"),
    ("ponto.md", "# Ponto\nO ponto é registrado no aplicativo.\n"),
    ("frota.md", "# Frota\nCaminhões elétricos rodam na frota urbana.\n"),
];
pub const THREE_PAGES_GOLDEN: &str = r#"[{"id": "q1", "question": "dias de férias", "relevant": ["ferias"]},
  {"id": "q2", "question": "registrar o ponto", "relevant": ["ponto"]},
  {"id": "q3", "question": "caminhões da frota", "relevant": ["frota"]}]"#;

/// Writes a random model `id` (`dim` dimensions, `query_prefix` before each question) into the
/// models folder `models`.
pub fn random_model(models: &Path, id: &str, dim: usize, query_prefix: &str) {
    std::fs::create_dir_all(models.join(id)).unwrap();
    std::fs::write(
        models.join(id).join("model.toml"),
        format!("id = \"{id}\"\nkind = \"random\"\ndim = {dim}\nquery_prefix = \"{query_prefix}\"\n"),
    )
    .unwrap();
}

/// `ragsweep COMMAND EXPERIMENT` with the models and cache of `root` and no engine installed
/// (the experiment's own servers serve its cells), results in `root/results` for `run`, and `env`.
pub fn on_users_servers(root: &Path, command: &str, experiment: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"));
    cmd.arg(command).arg(experiment).arg("--models").arg(root.join("models"));
    cmd.arg("--cache").arg(root.join("cache")).arg("--engines").arg(root.join("no-engines-here"));
    if command == "run" {
        cmd.arg("--out").arg(root.join("results"));
    }
    cmd.envs(env.iter().copied()).output().unwrap()
}

/// Runs `experiment` as shards 1..=`n` of itself at once, each with its own cache and results
/// folder in `root` (`cache-I`, `results-I`: the pods of an Indexed Job) and `env`; asserts
/// every shard passes and returns, per shard, whether its one index stage whose key starts with
/// `engine` was reused.
pub fn run_shards_at_once(root: &Path, experiment: &Path, n: usize, env: &[(&str, &str)], engine: &str) -> Vec<bool> {
    let shards: Vec<std::process::Child> = (1..=n)
        .map(|i| {
            let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"));
            cmd.current_dir(root).arg("run").arg(experiment).args(["--shard", &format!("{i}/{n}"), "-q"]);
            cmd.arg("--models").arg(root.join("models")).arg("--engines").arg(root.join("no-engines-here"));
            cmd.arg("--out").arg(root.join(format!("results-{i}"))).arg("--cache").arg(root.join(format!("cache-{i}")));
            cmd.envs(env.iter().copied());
            cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    shards
        .into_iter()
        .enumerate()
        .map(|(i, shard)| {
            let out = shard.wait_with_output().unwrap();
            assert!(out.status.success(), "shard {}: {}", i + 1, String::from_utf8_lossy(&out.stderr));
            let manifest = walk(&root.join(format!("results-{}", i + 1)))
                .into_iter()
                .find(|p| p.ends_with("manifest.json"))
                .expect("each shard writes its run");
            let manifest: Value = serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
            let stages: Vec<&Value> = manifest["stages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["stage"] == "index" && s["key"].as_str().unwrap().starts_with(engine))
                .collect();
            assert_eq!(stages.len(), 1, "one cell per shard: {manifest}");
            stages[0]["reused"] == true
        })
        .collect()
}

/// A corpus of `n` Markdown pages in `root/docs` (every third restricted to one of ten groups,
/// the others public) and a golden set of up to `questions` questions, each about a page and
/// asked by a member of its group; returns each page's id, body and groups.
pub fn team_corpus(root: &Path, n: usize, questions: usize) -> Vec<(String, String, Vec<String>)> {
    const WORDS: &[&str] = &[
        "prazo", "multa", "sensor", "gateway", "contrato", "férias", "senha", "api", "plano", "erro", "frota", "ponto",
        "rede", "cliente", "fatura", "backup", "cofre", "janela", "turno", "rota",
    ];
    let mut state = 7u64;
    let mut next = |m: usize| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 33) % m as u64) as usize
    };
    std::fs::create_dir_all(root.join("docs")).unwrap();
    let mut pages = Vec::new();
    let mut golden = Vec::new();
    for i in 0..n {
        let id = format!("page-{i:03}");
        let words: Vec<&str> = (0..12).map(|_| WORDS[next(WORDS.len())]).collect();
        let body = format!("Página {i}: {}.\nSegunda linha  com  {}.", words[..6].join(" "), words[6..].join(" "));
        let groups = if i % 3 == 0 { vec![format!("g{}", i % 10)] } else { Vec::new() };
        let front = if groups.is_empty() { String::new() } else { format!("---\nacl: [{}]\n---\n", groups[0]) };
        std::fs::write(root.join("docs").join(format!("{id}.md")), format!("{front}{body}\n")).unwrap();
        if i % 4 == 0 && golden.len() < questions {
            let user = if groups.is_empty() { vec![format!("g{}", i % 10)] } else { groups.clone() };
            golden.push(serde_json::json!({"id": format!("q{i}"), "question": words[2..7].join(" "), "relevant": [id], "groups": user}));
        }
        pages.push((id, body, groups));
    }
    std::fs::write(root.join("golden.json"), serde_json::to_string(&golden).unwrap()).unwrap();
    std::fs::create_dir_all(root.join("models")).unwrap();
    random_model(&root.join("models"), "team-16", 16, "");
    pages
}

/// An experiment over the team corpus (doc unit, k = 10) with `rest` (engine and grid tables).
pub fn team_experiment(root: &Path, name: &str, rest: &str) -> PathBuf {
    let path = root.join(format!("{name}.toml"));
    let text = format!(
        "name = \"{name}\"\nunit = \"doc\"\nk = [10]\nfilter = [\"none\", \"in_query\"]\nreserved_fraction = 0.0\n\
         latency_cases = 3\n[corpus]\npath = \"docs\"\n[golden]\npath = \"golden.json\"\n{rest}"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// A row of the index a team serves: a page of the team corpus, its groups (public pages carry
/// `everyone`), and the vector the `team-16` model makes of it.
pub struct TeamRow {
    pub doc: String,
    pub body: String,
    pub groups: Vec<String>,
    pub vector: Vec<f32>,
}

/// The team corpus of `n` pages and up to `questions` questions in `root` (pages, golden set, the `team-16` model) and its rows,
/// their vectors exported by `ragsweep vectors` from an in-process cell.
pub fn team_rows(root: &Path, n: usize, questions: usize) -> Vec<TeamRow> {
    let pages = team_corpus(root, n, questions);
    let in_process = "[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"team-16\"\n";
    let export = team_experiment(root, "export", in_process);
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
        .arg("vectors")
        .arg(&export)
        .arg("--models")
        .arg(root.join("models"))
        .arg("--cache")
        .arg(root.join("cache"))
        .arg("--out")
        .arg(root.join("vecs"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (vectors, dim) = ragsweep::npy::read_f32(&root.join("vecs/passages.npy")).unwrap();
    let ids = std::fs::read_to_string(root.join("vecs/passages.ids")).unwrap();
    ids.lines()
        .zip(vectors.chunks_exact(dim))
        .map(|(id, v)| {
            let doc = id.split('@').next().unwrap();
            let (_, body, groups) = pages.iter().find(|p| p.0 == doc).unwrap();
            let groups = if groups.is_empty() { vec!["everyone".to_string()] } else { groups.clone() };
            TeamRow { doc: doc.to_string(), body: body.clone(), groups, vector: v.to_vec() }
        })
        .collect()
}

/// A synthetic corpus of `documents` in `root/corpus` and the free random model.
pub fn synthetic_project(root: &Path, documents: usize, questions: usize) {
    ragsweep()
        .arg("synth")
        .arg(root.join("corpus"))
        .args(["--documents", &documents.to_string(), "--questions", &questions.to_string(), "--vocabulary", "5000"])
        .assert()
        .success();
    random_model(&root.join("models"), "random-64", 64, "");
}

/// One HTTP/1.1 request a loopback mock server read: its target, headers (names in lower case)
/// and body.
pub struct MockRequest {
    pub target: String,
    headers: std::collections::HashMap<String, String>,
    pub body: Vec<u8>,
}

impl MockRequest {
    /// The request on `stream`, read to the end of its body.
    pub fn read(stream: &std::net::TcpStream) -> MockRequest {
        use std::io::{BufRead, Read};
        let mut reader = std::io::BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut headers = std::collections::HashMap::new();
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
        }
        let length = headers.get("content-length").map_or(0, |l| l.parse().unwrap());
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        MockRequest { target, headers, body }
    }

    /// Header `name` (lower case), empty when absent.
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// Answers a mock's request with `status`, a JSON `body` and `extra` header lines (each ending
/// in `\r\n`); the connection closes after it.
pub fn mock_answer(stream: &mut std::net::TcpStream, status: u16, extra: &str, body: &str) {
    use std::io::Write;
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(format!("{head}{body}").as_bytes());
}

/// `ragsweep engines serve NAME ARGS…` with the repository's engines: the serving child (its
/// standard input open; closing it stops the server) and the url it printed.
pub fn serve(name: &str, args: &[&std::ffi::OsStr]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut serve = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
        .args(["engines", "serve", name])
        .args(args)
        .arg("--engines")
        .arg(repo().join("engines"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    std::io::BufReader::new(serve.stdout.take().unwrap()).read_line(&mut url).unwrap();
    if url.is_empty() {
        let mut why = String::new();
        std::io::Read::read_to_string(&mut serve.stderr.take().unwrap(), &mut why).unwrap();
        panic!("`engines serve {name}` printed no url ({}): {why}", serve.wait().unwrap());
    }
    (serve, url.trim().to_string())
}
