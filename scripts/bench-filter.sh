#!/usr/bin/env bash
# Filtered vector search latency on SciFact chunks at 1%, 10% and 50% allowed: hnsw_rs's
# filtered graph search, an exact scan of the allowed vectors, and ragsweep's per-query
# choice between them (GRAPH_MIN_ALLOWED_FRACTION in src/index/dense.rs). One thread.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
./target/release/ragsweep bench-filter experiments/bench-filter.toml "$@"
