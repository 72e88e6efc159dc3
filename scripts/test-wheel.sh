#!/usr/bin/env bash
# Builds the ragsweep wheel (maturin, from PyPI) in a throw-away virtualenv, installs it into
# another one, and runs `ragsweep --version` and the quick start from there. Prints the wheel's
# size and the install time. Needs python3 with venv, network access to PyPI, and the models
# (scripts/install-models.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/build"
"$work/build/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.5,<2.0"
(cd "$root" && "$work/build/bin/maturin" build --release --quiet --out "$work/dist")
wheel="$(ls "$work"/dist/ragsweep-*.whl)"
echo "wheel: $(basename "$wheel"), $(du -h "$wheel" | cut -f1)"
python3 -m venv "$work/user"
start=$(date +%s.%N)
"$work/user/bin/pip" install --quiet --disable-pip-version-check "$wheel"
echo "install: $(echo "$(date +%s.%N) - $start" | bc) s"
"$work/user/bin/ragsweep" --version
cd "$root"
RAGSWEEP_MODELS="$root/models" RAGSWEEP_CACHE="$work/cache" \
    "$work/user/bin/ragsweep" run -q --out "$work/results" experiments/quickstart.toml | tail -n 4
echo "test-wheel: OK"
