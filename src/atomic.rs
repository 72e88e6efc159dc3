//! Files written whole or not at all: a temporary file in the same directory, synced, then
//! renamed over the target.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// Refuses to write `output` when it is one of `inputs` (named by what each is) or lies inside
/// one that is a folder: compared as real paths, so `./g.json`, a link to it and its absolute
/// path are one file.
pub fn refuse_overwriting(output: &Path, inputs: &[(&str, &Path)]) -> Result<()> {
    let real = |p: &Path| {
        fs::canonicalize(p).ok().or_else(|| {
            let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            Some(fs::canonicalize(parent).ok()?.join(p.file_name()?))
        })
    };
    let Some(out) = real(output) else { return Ok(()) };
    for (what, input) in inputs {
        let Some(input) = real(input) else { continue };
        if out == input || (input.is_dir() && out.starts_with(&input)) {
            let folder = if out == input { String::new() } else { format!(" folder {}", input.display()) };
            return Err(Error::Output {
                path: output.to_path_buf(),
                why: format!("is the run's {what}{folder}: an output never replaces an input; write it elsewhere"),
            });
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |out| out.write_all(bytes))
}

/// Streams what `body` writes to `path` through a buffered temporary file in the same
/// directory, renamed into place once it is complete and synced.
pub fn write_atomic_with(
    path: &Path,
    body: impl FnOnce(&mut BufWriter<fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let file = fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    body(&mut out)
        .and_then(|_| out.into_inner().map_err(|e| e.into_error()))
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Temporary and discarded files older than this belong to no live process.
pub const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

static DISCARDED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Moves a damaged file or directory aside under a name no other process uses, then deletes
/// it. Losing the race to another process that moved it first is not an error; a copy that
/// cannot be deleted now is left under its `.discarded-` name for [`remove_stale`].
pub fn discard(path: &Path) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let n = DISCARDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let aside = parent.join(format!(".discarded-{name}-{}-{n}", std::process::id()));
    match fs::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    }
    let _ = remove_any(&aside);
    Ok(())
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    if fs::symlink_metadata(path)?.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

/// Removes from `dir` what killed or failed processes left behind more than a day ago:
/// temporary files and directories (`*.tmp-*`, `.tmp-*`) and discarded entries. Returns them.
pub fn remove_stale(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.contains(".tmp-") || name.starts_with(".discarded-")) {
            continue;
        }
        let old = entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
        if old.is_some_and(|age| age > STALE_AFTER) && remove_any(&entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}
