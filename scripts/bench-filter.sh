#!/usr/bin/env bash
# Filtered vector search latency on SciFact sentence chunks at 1%, 10%, 50% and 90% allowed:
# hnsw_rs's filtered graph search, an exact scan of the allowed vectors, and ragsweep's filter
# planner choosing per query (GRAPH_MIN_ALLOWED_FRACTION and SCAN_MAX_ALLOWED in
# src/retrieve/dense.rs), i.e. the planner off (graph or scan) and on (auto). One query at a time.
# Writes the "filter-planner" section of BENCHMARKS.md.
# usage: scripts/bench-filter.sh [--queries N]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
./target/release/ragsweep bench-filter experiments/bench-filter.toml "$@" > "$out"
{
  echo "## Filtered vector search in process: the filter planner off and on (SciFact sentence chunks, MiniLM)"
  echo
  echo "Written by \`scripts/bench-filter.sh $*\` on $(date -u +%Y-%m-%d), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p'))."
  echo "\`graph\`: hnsw_rs's filtered graph; \`scan\`: an exact scan of the allowed vectors; \`auto\`: the planner"
  echo "(scan when at most 16,384 are allowed or under half of the index, else graph). Recall against the exact"
  echo "filtered top 10."
  echo
  grep -v '^|---' "$out" | grep '^|' | head -1
  echo "|---:|---|---:|---:|---:|---:|"
  grep '^| [0-9]' "$out"
  echo
  grep -v '^|' "$out"
} | python3 scripts/benchmarks_section.py filter-planner BENCHMARKS.md
