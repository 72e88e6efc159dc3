#!/usr/bin/env bash
# What request concurrency buys against an embeddings endpoint (issue 46): a local mock
# (scripts/mock_embeddings.py) answers every request after a fixed latency, as a GPU server
# far away would; ragsweep embeds SciFact passages through it as an http model with 1, 4 and
# 16 requests in flight, 32 texts each. Prints passages per second for each.
#
# usage: scripts/bench-http-concurrency.sh [LATENCY_MS] [PASSAGES]   (default 50, 2048)
set -euo pipefail
cd "$(dirname "$0")/.."
latency=${1:-50}
passages=${2:-2048}
work=target/bench-http-concurrency
py=models/.venv/bin/python
port=8093
rm -rf "$work" && mkdir -p "$work/models"
cargo build --release -q
bin=target/release/ragsweep
"$py" scripts/mock_embeddings.py --port $port --latency-ms "$latency" --dim 384 &
server=$!
trap 'kill $server' EXIT
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
for c in 1 4 16; do
  "$bin" models add --name "mock-c$c" --url "http://127.0.0.1:$port/v1" --model mock --concurrency $c \
    --batch-size 32 --max-length 256 --models "$work/models" > /dev/null
  echo -n "latency ${latency} ms, concurrency $c: "
  "$bin" bench-embed ../shared/corpora/scifact --model "mock-c$c" --batch 512 --limit "$passages" \
    --models "$work/models" | grep -o 'texts=[0-9]* .*passages_per_s=[0-9.]*'
done
