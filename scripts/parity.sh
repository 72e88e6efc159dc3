#!/usr/bin/env bash
# Metric parity: scores ragsweep's SciFact BM25 run with pytrec_eval (trec_eval's C code,
# installed from PyPI into a throw-away virtualenv) and refreshes the test fixture
# tests/fixtures/scifact-parity/ that `cargo test` checks against.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${PARITY_VENV:-${TMPDIR:-/tmp}/ragsweep-parity-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet pytrec-eval-terrier
fi
cargo build --release --quiet
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
./target/release/ragsweep run --quiet --out "$out" experiments/scifact-bm25.toml > /dev/null
run_dir="$(ls -d "$out"/scifact-bm25/*/)"
"$venv/bin/python" scripts/parity_check.py "$run_dir" ../shared/corpora/scifact/qrels/test.tsv tests/fixtures/scifact-parity
