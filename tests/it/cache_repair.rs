//! A damaged cache heals itself on the next run, also when several runs find the damage at
//! once, and debris left by killed runs does not stay forever.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::Fixture;

const DOCS: &[(&str, &str)] = &[
    ("ferias.md", "# Férias\nTrinta dias de férias por ano.\n## Saldo\nO saldo aparece no portal.\n"),
    ("ponto.md", "# Ponto\nO ponto é registrado no aplicativo.\n"),
];
const GOLDEN: &str = r#"[{"id": "q1", "question": "dias de férias", "relevant": ["ferias"]},
  {"id": "q2", "question": "registrar o ponto", "relevant": ["ponto"]}]"#;
const EXPERIMENT: &str = "name = \"heal\"\nunit = \"doc\"\nk = [1, 2]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
    [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n\
    [[retrievers]]\nkind = \"dense\"\nmodel = \"random-16\"\n";

/// The fixture with a models folder holding a random model (no files, no ONNX Runtime).
fn fixture() -> (Fixture, PathBuf) {
    let f = Fixture::new(DOCS, GOLDEN, EXPERIMENT);
    let models = f.path().join("models");
    fs::create_dir_all(models.join("random-16")).unwrap();
    fs::write(models.join("random-16/model.toml"), "id = \"random-16\"\nkind = \"random\"\ndim = 16\n").unwrap();
    (f, models)
}

fn run(f: &Fixture, models: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ragsweep"));
    cmd.current_dir(f.path())
        .args(["run", "-q", "--models"])
        .arg(models)
        .arg("--cache")
        .arg(f.path().join("cache"))
        .arg("--out")
        .arg(f.path().join("out"))
        .arg("exp.toml")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

fn ok(f: &Fixture, models: &Path) -> String {
    let out = run(f, models).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// Every entry folder of a stage kind.
fn entries(f: &Fixture, kind: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        fs::read_dir(f.path().join("cache/stages").join(kind)).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

/// The first file of an entry that its build record lists (not the record itself).
fn some_file(entry: &Path) -> PathBuf {
    common::walk(entry)
        .into_iter()
        .filter(|p| !p.ends_with("build.json"))
        .max_by_key(|p| fs::metadata(p).unwrap().len())
        .unwrap()
}

#[test]
fn three_runs_that_find_damaged_entries_at_once_all_succeed() {
    let (f, models) = fixture();
    // Enough documents that removing and rebuilding an entry takes a while.
    for i in 0..400 {
        let text = format!("# Documento {i}\n{}\n", "palavra ".repeat(50 + i % 50));
        fs::write(f.path().join("docs").join(format!("d{i:03}.md")), text).unwrap();
    }
    ok(&f, &models);
    for trial in 0..8 {
        let entry = entries(&f, "bm25")[0].clone();
        for kind in ["chunks", "bm25", "tokens"] {
            for e in entries(&f, kind) {
                let file = some_file(&e);
                let mut bytes = fs::read(&file).unwrap();
                bytes[0] ^= 0xff;
                fs::write(&file, bytes).unwrap();
            }
        }
        let children: Vec<_> = (0..3).map(|_| run(&f, &models).spawn().unwrap()).collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "trial {trial}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let left: Vec<_> = fs::read_dir(entry.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "trial {trial}: nothing set aside is left behind: {left:?}");
    }
}

#[test]
fn a_stage_path_that_is_a_file_or_a_segment_that_is_a_folder_is_repaired() {
    let (f, models) = fixture();
    ok(&f, &models);
    // A chunk-set entry replaced by a plain file.
    let chunks = entries(&f, "chunks")[0].clone();
    fs::remove_dir_all(&chunks).unwrap();
    fs::write(&chunks, "not a directory").unwrap();
    // A folder where a vector segment should be.
    let vectors = fs::read_dir(f.path().join("cache/embeddings")).unwrap().next().unwrap().unwrap().path();
    let segment = fs::read_dir(&vectors)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    fs::remove_file(&segment).unwrap();
    fs::create_dir(&segment).unwrap();
    let stderr = ok(&f, &models);
    assert!(stderr.contains("not a directory; rebuilt"), "{stderr}");
    assert!(stderr.contains(".seg: "), "{stderr}");
    assert!(chunks.is_dir(), "the chunk set is rebuilt in place");
    assert!(!segment.is_dir(), "the folder posing as a segment is gone; its texts were embedded again");
    ok(&f, &models);
    // A file, then a FIFO, where the model's vector folder belongs: removed, said, re-embedded;
    // never "File exists" on every later run, never a wait.
    fs::remove_dir_all(&vectors).unwrap();
    fs::write(&vectors, "not a folder").unwrap();
    let stderr = ok(&f, &models);
    assert!(stderr.contains("was not a folder: removed"), "{stderr}");
    assert!(vectors.is_dir());
    fs::remove_dir_all(&vectors).unwrap();
    assert!(Command::new("mkfifo").arg(&vectors).status().unwrap().success());
    let stderr = ok(&f, &models);
    assert!(stderr.contains("was not a folder: removed"), "{stderr}");
    ok(&f, &models);
}

#[test]
fn temporary_files_older_than_a_day_are_removed_and_fresh_ones_kept() {
    let (f, models) = fixture();
    ok(&f, &models);
    let vectors = fs::read_dir(f.path().join("cache/embeddings")).unwrap().next().unwrap().unwrap().path();
    let kind = f.path().join("cache/stages/bm25");
    let old_file = vectors.join("x.seg.tmp-4242");
    let old_dir = kind.join(".tmp-abc-4242-0");
    let fresh = vectors.join("y.seg.tmp-4243");
    fs::write(&old_file, "partial").unwrap();
    fs::create_dir(&old_dir).unwrap();
    fs::write(&fresh, "partial").unwrap();
    for old in [&old_file, &old_dir] {
        let status = Command::new("touch").args(["-d", "3 days ago"]).arg(old).status().unwrap();
        assert!(status.success());
    }
    // A rebuild of the BM25 index is what visits its stage folder.
    for e in entries(&f, "bm25") {
        fs::remove_dir_all(e).unwrap();
    }
    ok(&f, &models);
    assert!(!old_file.exists() && !old_dir.exists(), "3-day-old debris is removed");
    assert!(fresh.exists(), "a fresh temporary file may belong to a live run");
}

/// A FIFO planted where any file of the cache belongs (a stage's build record, an index file,
/// tantivy's lock file, an HNSW graph, a vector segment) is found and rebuilt in seconds, never
/// waited on, and the run's numbers are those of the intact cache.
#[test]
fn a_fifo_anywhere_in_the_cache_is_rebuilt_not_waited_on() {
    let (f, models) = fixture();
    let exp = f.path().join("exp.toml");
    let grid = fs::read_to_string(&exp).unwrap();
    fs::write(&exp, format!("{grid}[[retrievers]]\nkind = \"dense\"\nmodel = \"random-16\"\nindex = \"hnsw\"\n"))
        .unwrap();
    ok(&f, &models);
    let intact = common::stable_rows(&common::matrix(&common::run_dir(&f.path().join("out"), "heal")));
    let cache = f.path().join("cache");
    let pristine = f.path().join("pristine");
    assert!(Command::new("cp").arg("-a").arg(&cache).arg(&pristine).status().unwrap().success());
    let mut files: Vec<PathBuf> =
        common::walk(&pristine).into_iter().map(|p| p.strip_prefix(&pristine).unwrap().to_path_buf()).collect();
    files.sort();
    for kind in ["stages/bm25/", "stages/hnsw/", "stages/chunks/", "stages/tokens/", "embeddings/"] {
        assert!(files.iter().any(|p| p.starts_with(kind)), "the cache holds {kind}: {files:?}");
    }
    assert!(files.iter().any(|p| p.ends_with(".tantivy-meta.lock")), "{files:?}");
    for file in &files {
        fs::remove_dir_all(&cache).unwrap();
        assert!(Command::new("cp").arg("-a").arg(&pristine).arg(&cache).status().unwrap().success());
        fs::remove_file(cache.join(file)).unwrap();
        assert!(Command::new("mkfifo").arg(cache.join(file)).status().unwrap().success());
        fs::remove_dir_all(f.path().join("out")).unwrap();
        let mut child = run(&f, &models).spawn().unwrap();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed().as_secs() > 30 {
                child.kill().unwrap();
                panic!("{}: the run waited on the FIFO", file.display());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let stderr = String::from_utf8_lossy(&child.wait_with_output().unwrap().stderr).into_owned();
        assert!(status.success(), "{}: {stderr}", file.display());
        assert!(stderr.contains("rebuilt") || stderr.contains("embedded again"), "{}: {stderr}", file.display());
        let rows = common::stable_rows(&common::matrix(&common::run_dir(&f.path().join("out"), "heal")));
        assert_eq!(rows, intact, "{}", file.display());
    }
}
