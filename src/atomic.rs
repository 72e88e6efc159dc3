//! Files written whole or not at all: a temporary file in the same directory, synced, then
//! renamed over the target.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::{Error, Result};

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
