#!/usr/bin/env bash
# Builds the ragsweep wheel (maturin, from PyPI) in a throw-away virtualenv for manylinux2014
# (glibc 2.17, so `pip install` works on Ubuntu 20.04, Debian 11, RHEL 8 and older: maturin
# links against old glibc symbols through zig, from the `ziglang` wheel on PyPI), checks the
# tag with auditwheel, installs the wheel into another virtualenv, and runs `ragsweep --version`
# and the quick start from there. Prints the wheel's size and the install time. Needs python3
# with venv, network access to PyPI, and the models (scripts/install-models.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/build"
"$work/build/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.5,<2.0" ziglang auditwheel
(cd "$root" && PATH="$work/build/bin:$PATH" CARGO_TARGET_DIR="$root/target/wheel" "$work/build/bin/maturin" build \
    --release --quiet --zig --compatibility manylinux2014 --target x86_64-unknown-linux-gnu --out "$work/dist")
wheel="$(ls "$work"/dist/ragsweep-*.whl)"
echo "wheel: $(basename "$wheel"), $(du -h "$wheel" | cut -f1)"
case "$(basename "$wheel")" in
  *manylinux_2_17_x86_64*|*manylinux2014_x86_64*) ;;
  *) echo "test-wheel: the wheel is not tagged manylinux2014 / manylinux_2_17" >&2; exit 1 ;;
esac
# auditwheel reads the binary's symbol versions: the highest glibc it needs must be <= 2.17.
"$work/build/bin/auditwheel" show "$wheel" | tee "$work/audit.txt"
grep -q 'manylinux_2_17_x86_64' "$work/audit.txt" || { echo "test-wheel: auditwheel does not find the binary manylinux_2_17 compatible" >&2; exit 1; }
python3 -m venv "$work/user"
start=$(date +%s.%N)
"$work/user/bin/pip" install --quiet --disable-pip-version-check "$wheel"
echo "install: $(echo "$(date +%s.%N) - $start" | bc) s"
"$work/user/bin/ragsweep" --version
cd "$root"
RAGSWEEP_MODELS="$root/models" RAGSWEEP_CACHE="$work/cache" \
    "$work/user/bin/ragsweep" run -q --out "$work/results" experiments/quickstart.toml | tail -n 4
echo "test-wheel: OK"
