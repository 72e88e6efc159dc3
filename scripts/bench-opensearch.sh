#!/usr/bin/env bash
# SciFact and NFCorpus through OpenSearch's BM25 (english analyzer, k1 0.9, b 0.4) beside
# ragsweep's own BM25 at the same settings (experiments/{scifact,nfcorpus}-opensearch.toml), on the
# cluster at http://127.0.0.1:9200: your OpenSearch, or, when nothing answers there, the Lucene
# stand-in of scripts/lucene-node started here (no registry reachable from these machines ships
# an OpenSearch node). Prints each run's reserved nDCG@10 and `ragsweep diff --causes` of the two
# cells (the cases each list fixed and broke, and why their lists differ). Anserini's anchors:
# 0.6789 and 0.3218.
# usage: scripts/bench-opensearch.sh [OUT]   (default: a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
cargo build --release --quiet
BIN=target/release/ragsweep
if ! curl -sf http://127.0.0.1:9200/ > /dev/null; then
    scripts/lucene-node/run.sh 9200 "$OUT/node.log" > "$OUT/node.out" 2>&1 &
    NODE=$!
    trap 'kill $NODE 2>/dev/null || true' EXIT
    until grep -q listening "$OUT/node.out" 2>/dev/null; do
        kill -0 $NODE 2>/dev/null || { cat "$OUT/node.out" >&2; exit 1; }
        sleep 0.2
    done
fi
curl -s http://127.0.0.1:9200/ && echo
for corpus in scifact nfcorpus; do
    "$BIN" run -q "experiments/$corpus-opensearch.toml" --out "$OUT/results"
    run="$OUT/results/$corpus-opensearch/latest"
    python3 - "$run" <<'P'
import csv, sys
for row in csv.DictReader(open(sys.argv[1] + "/matrix.csv")):
    print(row["cell"], row["label"], row["split"], "ndcg@10", row["ndcg@10"])
P
    "$BIN" diff --run "$run" c01 c02 --metric ndcg@10 --causes | sed -n '1,8p;/^why the lists/,/ties or rounding/p'
done
echo "results in $OUT"
