#!/usr/bin/env bash
# Size and render time of report.html for a 40-cell × 1,109-question grid (SciFact train and test;
# BM25 analyzer × k1 × b, every default metric at five k): the page must stay under 5 MB and render
# in headless Chromium under 1 s. Prints the size and each of five render times (the page's own
# performance.now() when its script finished, data-render-ms).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
dir=$(mktemp -d)
cat > "$dir/report-40.toml" <<TOML
name = "report-40"
unit = "doc"
k = [1, 3, 5, 10, 100]
select = "ndcg@10"
latency_cases = 20
[corpus]
path = "$PWD/../shared/corpora/scifact"
[golden]
path = "$PWD/../shared/corpora/scifact"
tuning = ["train"]
reserved = ["test"]
[[chunkers]]
kind = "none"
title = true
[[retrievers]]
kind = "bm25"
analyzer = ["en", "simple"]
k1 = [0.6, 0.9, 1.2, 1.5, 1.8]
b = [0.3, 0.5, 0.75, 0.9]
TOML
./target/release/ragsweep run -q --out "$dir/out" --cache "$dir/cache" "$dir/report-40.toml" >/dev/null 2>"$dir/run.log" || { cat "$dir/run.log" >&2; exit 1; }
page=$(readlink -f "$dir/out/report-40/latest")/report.html
cells=$(grep -o '"cell": "c[0-9]*"' "$(dirname "$page")/manifest.json" | sort -u | wc -l)
cases=$(wc -l < "$(dirname "$page")/cases.jsonl")
echo "report.html: $(stat -c %s "$page") bytes for $cells cells × $cases questions"
for i in 1 2 3 4 5; do
  ms=$(chromium --headless=new --no-sandbox --disable-gpu --virtual-time-budget=5000 --dump-dom "file://$page" 2>/dev/null \
    | grep -o 'data-render-ms="[0-9]*"' | grep -o '[0-9]*')
  echo "render $i: $ms ms"
done
