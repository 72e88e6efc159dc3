"""The record of an installed model or runtime folder: every file's size and sha256, written
when the folder is installed (installed.json) and checked before an install is skipped, so a
truncated or edited file is reinstalled, never listed as installed. `ragsweep models list`
reads the same record."""
import hashlib
import json
from pathlib import Path

RECORD = "installed.json"
# Settings, not installed bytes: editing model.toml makes another model key, never damage.
SETTINGS = "model.toml"


def _files(folder: Path):
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in (RECORD, SETTINGS))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write(folder: Path):
    files = {str(p.relative_to(folder)): {"size": p.stat().st_size, "sha256": _sha256(p)} for p in _files(folder)}
    tmp = folder / (RECORD + ".tmp")
    tmp.write_text(json.dumps({"files": files}, indent=1) + "\n")
    tmp.replace(folder / RECORD)


def intact(folder: Path) -> bool:
    try:
        files = json.loads((folder / RECORD).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    for name, want in files.items():
        if name == SETTINGS:
            continue
        p = folder / name
        if not p.is_file() or p.stat().st_size != want["size"] or _sha256(p) != want["sha256"]:
            return False
    return bool(files)
