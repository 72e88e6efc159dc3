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
done
python3 "$root/scripts/benchmarks_section.py" scaling "$root/BENCHMARKS.md" < <(python3 - "$results" "$*" "$(nproc)" <<'PY'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
args, cores = sys.argv[2], sys.argv[3]
def slope(key):
    have = [r for r in rows if r[key] is not None]
    xs = [math.log(r["documents"]) for r in have]; ys = [math.log(max(r[key], 1e-9)) for r in have]
    if len(have) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return b, my - b * mx
print("## Scaling with corpus size (synthetic corpus, 12-cell grid, cold run)")
print()
print(f"Written by `scripts/bench-scale.sh {args}`, {cores} cores. Corpus: `ragsweep synth` (Zipfian")
print("pseudo-words over a 1M-word vocabulary, SciFact-like title and body lengths, 500 questions);")
print("dense cells use `kind = \"random\"` unit vectors (384 dims), so nothing is embedded and the")
print("vectors have no low-dimensional structure: the hardest case for a graph index. Latencies are")
print("the run's timed pass (200 questions, one at a time, unfiltered cells); recall@10 is HNSW's")
print("top 10 against the exact scan's; peak RSS is the whole `ragsweep run` (all 12 cells, BM25 +")
print("exact + HNSW indexes in memory). HNSW: m = 16, ef_construction = 200, ef_search = 128.")
print("A size with \"not run\" in the HNSW columns ran 9 cells, without the HNSW retriever.")
print()
print("| documents | BM25 build s | BM25 index MB | BM25 p50 / p95 ms | exact p50 / p95 ms | HNSW build s | HNSW p50 / p95 ms | HNSW recall@10 | peak RSS MB | run wall s |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    if r["hnsw_build_s"] is None:
        hnsw = "not run | not run | not run"
    else:
        hnsw = f"{r['hnsw_build_s']:.1f} | {r['hnsw_p50_ms']:.2f} / {r['hnsw_p95_ms']:.2f} | {r['hnsw_recall10']:.3f}"
    print(f"| {r['documents']:,} ({r['cells']} cells) | {r['bm25_build_s']:.1f} | {r['bm25_bytes']/1e6:.0f} | {r['bm25_p50_ms']:.2f} / {r['bm25_p95_ms']:.2f} "
          f"| {r['exact_p50_ms']:.2f} / {r['exact_p95_ms']:.2f} | {hnsw} | {r['peak_rss_mb']:,.0f} | {r['wall_s']:.0f} |")
print()
fits = {}
if len(rows) >= 2:
    print("Exponent b of each curve, cost ∝ documents^b (least squares on log–log):")
    print()
    print("| curve | b |")
    print("|---|---:|")
    for key, name in [("bm25_build_s", "BM25 build time"), ("bm25_bytes", "BM25 index size"), ("bm25_p50_ms", "BM25 p50 latency"),
                      ("exact_p50_ms", "exact scan p50 latency"), ("hnsw_build_s", "HNSW build time"),
                      ("hnsw_p50_ms", "HNSW p50 latency"), ("peak_rss_mb", "peak RSS")]:
        fits[key] = slope(key)
        if fits[key]:
            print(f"| {name} | {fits[key][0]:.2f} |")
    print()
    (be, ae), (bh, ah) = fits["exact_p50_ms"], fits["hnsw_p50_ms"] or (0, 0)
    faster = [r["documents"] for r in rows if r["hnsw_p50_ms"] is not None and r["hnsw_p50_ms"] < r["exact_p50_ms"]]
    if not fits["hnsw_p50_ms"]:
        print("HNSW ran at fewer than two sizes: no crossover estimate.")
    elif be > bh:
        cross = math.exp((ah - ae) / (be - bh))
        print(f"HNSW beats the exact scan (p50) from about **{cross:,.0f} documents** on (where the two fitted lines cross); "
              f"measured faster at: {', '.join(f'{d:,}' for d in faster) or 'no measured size'}.")
    else:
        print("The exact scan's latency does not grow faster than HNSW's here: no crossover.")
    print()
largest = rows[-1]
dense = "exact and HNSW" if largest["hnsw_build_s"] is not None else "exact scan only"
print(f"Memory: the {largest['documents']:,}-document run (BM25 + {largest['documents']:,} × 384 dense, {dense}, {largest['cells']} cells) "
      f"peaked at **{largest['peak_rss_mb']/1024:.2f} GiB** RSS.")
PY
)
echo "wrote the scaling section of BENCHMARKS.md" >&2
