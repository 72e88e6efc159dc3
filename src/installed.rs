//! What installers share: where installed things (models, engines) live by default, the
//! checksum that pins what a registry served, and the check of an installed folder against the
//! record its install wrote (`models list` shows it; loading a model refuses a damaged one).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// `./NAME` when it exists (a checkout), else `$XDG_DATA_HOME/ragsweep/NAME`
/// (`~/.local/share/ragsweep/NAME`): where models and engines live by default.
pub fn default_dir_of(name: &str) -> PathBuf {
    let local = PathBuf::from(name);
    if local.is_dir() {
        return local;
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")));
    data.map_or(local, |d| d.join("ragsweep").join(name))
}

/// The sha256 of a file's bytes, as lower-case hex: streamed (a model's extra file of a GiB
/// costs a buffer, not a GiB), from a regular file only (never waiting on a FIFO).
pub fn sha256_of(path: &Path) -> Result<String> {
    use sha2::Digest;
    let (mut file, _) = crate::input::text::open_regular(path)?;
    let mut hasher = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| Error::io(path, e))?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// `installed.json`, written by the installer (`scripts/install_record.py`): each file's size
/// and sha256 at install time.
#[derive(serde::Deserialize)]
struct Record {
    files: std::collections::BTreeMap<String, RecordedFile>,
}

#[derive(serde::Deserialize)]
struct RecordedFile {
    size: u64,
    sha256: String,
}

/// The file of a model folder that holds its settings, which the install record leaves out.
pub const SETTINGS_FILE: &str = "model.toml";

/// Writes `installed.json` for `folder`: each file's size and sha256 (the record
/// `scripts/install_record.py` writes), leaving out the record itself and the settings file.
pub fn write_record(folder: &Path) -> Result<()> {
    let mut files = serde_json::Map::new();
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map_err(|e| Error::io(folder, e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "installed.json" && n != SETTINGS_FILE)
        .collect();
    names.sort();
    for name in names {
        let path = folder.join(&name);
        let size = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
        files.insert(name, serde_json::json!({"size": size, "sha256": sha256_of(&path)?}));
    }
    let text = serde_json::to_string_pretty(&serde_json::json!({ "files": files })).expect("json") + "\n";
    crate::atomic::write_atomic(&folder.join("installed.json"), text.as_bytes())
}

/// Checks every file of an installed folder against its `installed.json`: why it is damaged
/// (no record, a file missing, another size, another sha256). The settings file is not checked.
pub fn verify(folder: &Path) -> std::result::Result<(), String> {
    let path = folder.join("installed.json");
    let record: Record = match crate::input::text::read_bytes(&path, crate::input::text::MAX_TEXT_BYTES)
        .map(|b| serde_json::from_slice(&b))
    {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(format!("installed.json cannot be read: {e}")),
        Err(_) if std::fs::symlink_metadata(&path).is_err() => {
            return Err("no install record (installed.json): reinstall to verify it".into())
        }
        Err(e) => return Err(e.to_string()),
    };
    if record.files.is_empty() {
        return Err("installed.json lists no files".into());
    }
    // `model.toml` holds settings, not installed bytes: editing it makes another model key
    // (its vectors are cached apart), never a damaged model.
    for (name, want) in record.files.iter().filter(|(name, _)| name.as_str() != SETTINGS_FILE) {
        let file = folder.join(name);
        match std::fs::metadata(&file) {
            Ok(m) if m.is_file() && m.len() == want.size => {}
            Ok(m) => return Err(format!("{name} is {} bytes, installed as {}", m.len(), want.size)),
            Err(_) => return Err(format!("{name} is missing")),
        }
        match sha256_of(&file) {
            Ok(got) if got == want.sha256 => {}
            _ => return Err(format!("{name} does not match the sha256 recorded at install")),
        }
    }
    Ok(())
}
