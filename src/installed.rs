//! What installers share: where installed things (models, engines) live by default, and the
//! checksum that pins what a registry served.

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

/// The sha256 of a file's bytes, as lower-case hex.
pub fn sha256_of(path: &Path) -> Result<String> {
    use sha2::Digest;
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(format!("{:x}", sha2::Sha256::digest(&bytes)))
}
