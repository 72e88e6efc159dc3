#!/usr/bin/env bash
# Whether a cell's label against the best hangs on the resampling seed (issue 47, SPEC §7):
# runs the quick start and the NFCorpus BM25 grid, then recomputes every cell's comparison with
# the best over SEEDS seeds at several bootstrap sizes B (examples/seed_stability.rs) and prints
# how many labels changed and how far an interval end moved between seeds (the band within
# which the margin must lie for a label to change).
#
# usage: scripts/bench-seed-stability.sh [SEEDS] [B,B,...]   (default 20, 1000,2000,5000,10000)
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-20}
sizes=${2:-1000,2000,5000,10000}
work=target/bench-seed-stability
rm -rf "$work"
cargo build --release -q --bin ragsweep --example seed_stability
for exp in quickstart nfcorpus-grid; do
  target/release/ragsweep run "experiments/$exp.toml" --out "$work" -q > /dev/null
done
target/release/examples/seed_stability ndcg@10 0.02 "$seeds" "$sizes" "$work"/quickstart/2*/ "$work"/nfcorpus-grid/2*/
