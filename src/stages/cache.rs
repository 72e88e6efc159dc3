//! On-disk store for built stages (chunk sets, BM25 indexes, HNSW graphs), keyed by the
//! content they are built from, so a rerun that changes only query-time parameters
//! (k1, b, ef_search, fusion, filters, k) builds nothing.
//!
//! An entry is a directory `<root>/<kind>/<key>/`. It is written under a temporary name and
//! renamed into place, so a crash never leaves a half-written entry, and two processes that
//! build the same entry at once both end up reading one complete copy. Each entry records
//! what building it cost (`build.json`), so reused work is reported as reused, not as free,
//! and the blake3 of every file it wrote: an entry whose files do not match (edited, flipped
//! bytes, truncated) or that has no record is reported, discarded and rebuilt, never read.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Bump when the on-disk layout of any stage changes.
const FORMAT: &str = "ragsweep-stage-v2";
const RECORD: &str = "build.json";
/// A record lists a checksum per file: 64 MiB is room for hundreds of thousands of them.
const MAX_RECORD_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildRecord {
    /// Seconds the build took when it ran.
    pub seconds: f64,
}

/// `build.json`: the build's cost and the blake3 of each file (path relative to the entry).
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    #[serde(flatten)]
    build: BuildRecord,
    files: BTreeMap<String, String>,
}

/// A stage's value and where it came from.
pub struct Cached<T> {
    pub value: T,
    /// The original build's cost.
    pub build: BuildRecord,
    /// True when the entry was already on disk.
    pub reused: bool,
}

impl<T> Cached<T> {
    /// The value, and the record of where it came from.
    pub fn into_parts(self) -> (T, Cached<()>) {
        (self.value, Cached { value: (), build: self.build, reused: self.reused })
    }
}

#[derive(Debug)]
pub struct StageCache {
    root: PathBuf,
    /// Entries found broken and rebuilt, with why.
    repairs: Mutex<Vec<String>>,
    /// Seconds spent checking entries' checksums.
    verify_seconds: Mutex<f64>,
}

/// A content key: blake3 over the stage format, the stage kind and the given parts.
pub fn key(kind: &str, parts: &[&[u8]]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(FORMAT.as_bytes());
    h.update(&[0]);
    h.update(kind.as_bytes());
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().to_hex()[..32].to_string()
}

static TEMP: AtomicUsize = AtomicUsize::new(0);

impl StageCache {
    pub fn new(root: &Path) -> Self {
        StageCache { root: root.join("stages"), repairs: Mutex::default(), verify_seconds: Mutex::default() }
    }

    /// What was found broken and rebuilt, and the seconds spent verifying entries.
    pub fn checks(&self) -> (Vec<String>, f64) {
        (self.repairs.lock().expect("repairs").clone(), *self.verify_seconds.lock().expect("verify time"))
    }

    fn repaired(&self, dir: &Path, why: &str) -> Result<()> {
        self.repairs.lock().expect("repairs").push(format!("{}: {why}; rebuilt", dir.display()));
        crate::atomic::discard(dir)
    }

    pub fn entry(&self, kind: &str, key: &str) -> PathBuf {
        self.root.join(kind).join(key)
    }

    /// Opens the entry when it is there and verifies; `None` otherwise (a broken one is
    /// discarded, as `get_or_build` would before rebuilding it).
    pub fn get<T>(&self, kind: &str, key: &str, open: impl Fn(&Path) -> Result<T>) -> Result<Option<T>> {
        let dir = self.entry(kind, key);
        if fs::symlink_metadata(&dir).is_err() {
            return Ok(None);
        }
        let checked = if dir.is_dir() { verify(&dir) } else { Err("not a directory".into()) };
        match checked.map(|_| open(&dir)) {
            Ok(Ok(value)) => Ok(Some(value)),
            Ok(Err(e)) => self.repaired(&dir, &format!("could not be opened ({e})")).map(|()| None),
            Err(why) => self.repaired(&dir, &why).map(|()| None),
        }
    }

    /// Opens the entry, or runs `write` into a fresh directory, moves it into place and
    /// opens that. An entry that fails to open is discarded and rebuilt.
    pub fn get_or_build<T>(
        &self,
        kind: &str,
        key: &str,
        write: impl FnOnce(&Path) -> Result<()>,
        open: impl Fn(&Path) -> Result<T>,
    ) -> Result<Cached<T>> {
        let dir = self.entry(kind, key);
        if fs::symlink_metadata(&dir).is_ok() {
            let started = Instant::now();
            let checked = if dir.is_dir() { verify(&dir) } else { Err("not a directory".into()) };
            *self.verify_seconds.lock().expect("verify time") += started.elapsed().as_secs_f64();
            match checked {
                Ok(build) => match open(&dir) {
                    Ok(value) => return Ok(Cached { value, build, reused: true }),
                    Err(e) => self.repaired(&dir, &format!("could not be opened ({e})"))?,
                },
                Err(why) => self.repaired(&dir, &why)?,
            }
        }
        let parent = dir.parent().expect("entries have a parent");
        fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        crate::atomic::remove_stale(parent);
        let temp = parent.join(format!(".tmp-{key}-{}-{}", std::process::id(), TEMP.fetch_add(1, Ordering::Relaxed)));
        fs::create_dir(&temp).map_err(|e| Error::io(&temp, e))?;
        let started = Instant::now();
        let written = write(&temp);
        let build = BuildRecord { seconds: started.elapsed().as_secs_f64() };
        if let Err(e) = written.and_then(|()| write_record(&temp, build)) {
            let _ = fs::remove_dir_all(&temp);
            return Err(e);
        }
        if fs::rename(&temp, &dir).is_err() {
            // Another process finished the same entry first; theirs is as good as ours.
            let _ = fs::remove_dir_all(&temp);
            if verify(&dir).is_err() {
                return Err(Error::Damaged(format!("{}: could not move the built stage into place", dir.display())));
            }
        }
        let value = open(&dir)?;
        Ok(Cached { value, build, reused: false })
    }
}

/// The entry's record, when it is a regular file (a FIFO in its place is not waited on) of a
/// sane size.
fn read_record(dir: &Path) -> Option<Record> {
    serde_json::from_slice(&crate::input::text::read_bytes(&dir.join(RECORD), MAX_RECORD_BYTES).ok()?).ok()
}

/// The entry's build record, once every file it lists has its recorded checksum.
fn verify(dir: &Path) -> Result<BuildRecord, String> {
    if let Some(odd) = not_regular(dir, "") {
        return Err(format!("{odd} is not a regular file"));
    }
    let record = read_record(dir).ok_or_else(|| format!("no readable {RECORD}"))?;
    for (name, want) in &record.files {
        let got = file_hash(&dir.join(name)).map_err(|e| format!("{name}: {e}"))?;
        if &got != want {
            return Err(format!("{name} does not match its checksum"));
        }
    }
    Ok(record.build)
}

/// The blake3 of a file's bytes, as hex: how the cache and a run's manifest check their files.
pub fn file_hash(path: &Path) -> Result<String> {
    // A FIFO in its place is an error, not a wait.
    let (file, _) = crate::input::text::open_regular(path)?;
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(file).map_err(|e| Error::io(path, e))?;
    Ok(hasher.finalize().to_hex().to_string())
}

/// The first entry under `dir` (relative to it) that is neither a folder nor a regular file:
/// a FIFO, socket or link where a built file belongs (a lock file too: the index would wait on
/// it). An entry that cannot be listed counts as one.
fn not_regular(dir: &Path, prefix: &str) -> Option<String> {
    let Ok(entries) = fs::read_dir(dir) else { return Some(prefix.trim_end_matches('/').to_string()) };
    for entry in entries {
        let Ok(entry) = entry else { return Some(prefix.to_string()) };
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        match entry.file_type() {
            Ok(t) if t.is_dir() => {
                if let Some(odd) = not_regular(&entry.path(), &format!("{name}/")) {
                    return Some(odd);
                }
            }
            Ok(t) if t.is_file() => {}
            _ => return Some(name),
        }
    }
    None
}

/// Every file under `dir`, relative to it, but lock files (empty, and touched by readers).
fn files_under(dir: &Path, prefix: &str, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if entry.file_type()?.is_dir() {
            files_under(&entry.path(), &format!("{name}/"), out)?;
        } else if !name.ends_with(".lock") {
            out.push(name);
        }
    }
    Ok(())
}

fn write_record(dir: &Path, build: BuildRecord) -> Result<()> {
    let mut names = Vec::new();
    files_under(dir, "", &mut names).map_err(|e| Error::io(dir, e))?;
    let mut files = BTreeMap::new();
    for name in names {
        let path = dir.join(&name);
        files.insert(name, file_hash(&path)?);
    }
    let path = dir.join(RECORD);
    let record = Record { build, files };
    fs::write(&path, serde_json::to_vec(&record).expect("serializable")).map_err(|e| Error::io(&path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(dir: &Path) -> Result<String> {
        fs::read_to_string(dir.join("value")).map_err(|e| Error::io(dir, e))
    }

    #[test]
    fn builds_once_then_reuses() {
        let root = tempfile::tempdir().unwrap();
        let cache = StageCache::new(root.path());
        let k = key("t", &[b"a"]);
        let write = |d: &Path| fs::write(d.join("value"), "built").map_err(|e| Error::io(d, e));
        let first = cache.get_or_build("t", &k, write, read).unwrap();
        assert!(!first.reused);
        assert_eq!(first.value, "built");
        let second = cache.get_or_build("t", &k, |_| panic!("must not rebuild"), read).unwrap();
        assert!(second.reused);
        assert_eq!(second.build, first.build);
    }

    #[test]
    fn a_failed_build_leaves_nothing_and_a_broken_entry_is_rebuilt() {
        let root = tempfile::tempdir().unwrap();
        let cache = StageCache::new(root.path());
        let k = key("t", &[b"a"]);
        let failed = cache.get_or_build("t", &k, |_| Err(Error::Damaged("boom".into())), read);
        assert!(failed.is_err());
        assert_eq!(fs::read_dir(root.path().join("stages/t")).unwrap().count(), 0);

        let entry = cache.entry("t", &k);
        fs::create_dir_all(&entry).unwrap();
        write_record(&entry, BuildRecord { seconds: 1.0 }).unwrap();
        let write = |d: &Path| fs::write(d.join("value"), "again").map_err(|e| Error::io(d, e));
        let rebuilt = cache.get_or_build("t", &k, write, read).unwrap();
        assert!(!rebuilt.reused);
        assert_eq!(rebuilt.value, "again");
    }

    #[test]
    fn keys_separate_parts() {
        assert_ne!(key("t", &[b"ab", b"c"]), key("t", &[b"a", b"bc"]));
        assert_ne!(key("t", &[b"a"]), key("u", &[b"a"]));
    }
}
