#!/usr/bin/env bash
# Filtered vector search latency on SciFact sentence chunks at 1% to 90% allowed:
# the filtered graph search, an exact scan of the allowed vectors, and ragsweep's filter
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
scan_max=$(sed -n 's/^pub const SCAN_MAX_ALLOWED: usize = \(.*\);/\1/p' src/retrieve/dense.rs | tr -d _)
fraction=$(sed -n 's/^pub const GRAPH_MIN_ALLOWED_FRACTION: f64 = \(.*\);/\1/p' src/retrieve/dense.rs)
{
  echo "## Filtered vector search in process: the filter planner off and on (SciFact sentence chunks, MiniLM)"
  echo
  echo "Written by \`scripts/bench-filter.sh $*\` on $(date -u +%Y-%m-%d), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p'))."
  echo "\`graph\`: the filtered graph search; \`scan\`: an exact scan of the allowed vectors; \`auto\`: the planner"
  echo "(scan when at most $scan_max are allowed or under $fraction of the index, else graph). Recall against the exact"
  echo "filtered top 10."
  echo
  grep -v '^|---' "$out" | grep '^|' | head -1
  echo "|---:|---|---:|---:|---:|---:|"
  grep '^| [0-9]' "$out"
  echo
  grep -v '^|' "$out"
} | python3 scripts/benchmarks_section.py filter-planner BENCHMARKS.md
