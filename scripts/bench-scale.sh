#!/usr/bin/env bash
# How ragsweep's costs grow with corpus size, written to the "Scaling" section of BENCHMARKS.md.
#
# For each size: `ragsweep synth` writes a synthetic corpus (Zipfian pseudo-words, SciFact-like
# lengths, 500 questions), then one cold run of a 12-cell grid (BM25, exact and HNSW dense,
# hybrid; no filter, in-query and post filters over 10 synthetic groups) with a random-vector
# model (no embedding cost), under /usr/bin/time for its peak RSS. From the run's own
# manifest, matrix and TREC files: BM25 build time and size, HNSW build time, p50/p95 latency
# of BM25, exact scan and HNSW (unfiltered cells, one query at a time), and HNSW recall@10
# against the exact scan. Then the exponent of each curve and the HNSW/scan crossover.
#
# usage: scripts/bench-scale.sh [SIZE ...]   (default 10000 100000 1000000)
# Work files go to $RAGSWEEP_SCALE_DIR (default target/scale; the 1M size needs ~8 GB of disk).
# Sizes above $RAGSWEEP_SCALE_HNSW_MAX (default: all) run without the HNSW retriever (9 cells):
# on 2 cores hnsw_rs builds a graph over 1M random 384-d vectors in over an hour.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
sizes=("${@:-10000 100000 1000000}")
read -r -a sizes <<< "${sizes[*]}"
work="${RAGSWEEP_SCALE_DIR:-$root/target/scale}"
hnsw_max="${RAGSWEEP_SCALE_HNSW_MAX:-0}"
mkdir -p "$work/models/random-384"
cat > "$work/models/random-384/model.toml" <<'EOF'
id = "random-384"
kind = "random"
dim = 384
description = "unit vectors drawn from the hash of each text: no meaning, no embedding cost"
EOF
cargo build --release --quiet
bin="$root/target/release/ragsweep"
results="$work/results.jsonl"
: > "$results"
# Rewrites the table after every size, so a long run leaves what it measured so far.
write_table() {
  python3 "$root/scripts/scale_table.py" "$results" "$(nproc)" | python3 "$root/scripts/benchmarks_section.py" scaling "$root/BENCHMARKS.md"
  echo "wrote the scaling section of BENCHMARKS.md" >&2
}
for n in "${sizes[@]}"; do
  corpus="$work/corpus-$n"
  [ -f "$corpus/SOURCE.txt" ] || "$bin" synth "$corpus" --documents "$n" --questions 500
  indexes='["exact", "hnsw"]'
  if [ "$hnsw_max" -gt 0 ] && [ "$n" -gt "$hnsw_max" ]; then indexes='"exact"'; fi
  cat > "$work/scale-$n.toml" <<EOF
name = "scale-$n"
unit = "doc"
k = [10]
metrics = ["ndcg", "recall"]
filter = ["none", "in_query", "post"]
latency_cases = 200
[permissions]
synthetic_groups = 10
[corpus]
path = "$corpus"
[golden]
path = "$corpus"
tuning = ["train"]
reserved = ["test"]
[[chunkers]]
kind = "none"
title = true
[[retrievers]]
kind = "bm25"
[[retrievers]]
kind = "dense"
model = "random-384"
index = $indexes
[[retrievers]]
kind = "hybrid"
model = "random-384"
fusion = "dbsf"
EOF
  rm -rf "$work/cache-$n" "$work/out-$n"
  echo "size $n: cold 12-cell run" >&2
  /usr/bin/time -v "$bin" run -q "$work/scale-$n.toml" --models "$work/models" --cache "$work/cache-$n" \
    --out "$work/out-$n" > "$work/run-$n.log" 2> "$work/time-$n.txt" || { cat "$work/time-$n.txt" >&2; exit 1; }
  python3 - "$n" "$work" >> "$results" <<'PY'
import json, sys, glob, re
n, work = int(sys.argv[1]), sys.argv[2]
run = glob.glob(f"{work}/out-{n}/scale-{n}/*/")[0]
manifest = json.load(open(run + "manifest.json"))
rows = [r for r in json.load(open(run + "matrix.json"))["rows"] if r["split"] == "tuning"]
def index(prefix):
    found = [s for s in manifest["stages"] if s["stage"] == "index" and s["key"].startswith(prefix)]
    return found[0] if found else {"seconds": None, "bytes": None}
def cell(kind, index=None):
    found = [c for c in manifest["cells"] if c["retriever"]["kind"] == kind and "filter=" not in c["label"]
             and (index is None or c["retriever"]["index"]["type"] == index)]
    if not found:
        return None, {"p50_ms": None, "p95_ms": None}
    [row] = [r for r in rows if r["cell"] == found[0]["cell"]]
    return found[0]["cell"], row["latency"]
def top10(cell):
    out = {}
    for line in open(f"{run}runs/{cell}.trec"):
        q, _, doc, rank, _, _ = line.split()
        if int(rank) <= 10:
            out.setdefault(q, set()).add(doc)
    return out
bm25_cell, bm25 = cell("bm25")
exact_cell, exact = cell("dense", "exact")
hnsw_cell, hnsw = cell("dense", "hnsw")
recall = None
if hnsw_cell:
    e, h = top10(exact_cell), top10(hnsw_cell)
    recall = sum(len(e[q] & h.get(q, set())) / len(e[q]) for q in e) / len(e)
time = open(f"{work}/time-{n}.txt").read()
rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", time).group(1))
wall = manifest["wall_seconds"]
print(json.dumps({
    "documents": n, "cells": len(manifest["cells"]),
    "bm25_build_s": index("bm25")["seconds"], "bm25_bytes": index("bm25")["bytes"],
    "bm25_p50_ms": bm25["p50_ms"], "bm25_p95_ms": bm25["p95_ms"],
    "exact_p50_ms": exact["p50_ms"], "exact_p95_ms": exact["p95_ms"],
    "hnsw_build_s": index("hnsw")["seconds"], "hnsw_bytes": index("hnsw")["bytes"],
    "hnsw_p50_ms": hnsw["p50_ms"], "hnsw_p95_ms": hnsw["p95_ms"], "hnsw_recall10": recall,
    "peak_rss_mb": rss_kb / 1024, "wall_s": wall,
}))
PY
  tail -1 "$results" >&2
  write_table
done
