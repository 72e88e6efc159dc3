#!/usr/bin/env bash
# A cross-encoder reranking BM25 on SciFact (issue 46): generates the test cross-encoder
# (scripts/cross_encoder_fixture.py), adds it with `models add --cross-encoder` to a models
# folder of its own, runs experiments/scifact-cross-encoder.toml, and scores the reranked
# cell's top 10 of every case again with Python ONNX Runtime: prints the largest difference.
#
# usage: scripts/bench-cross-encoder.sh [WORK_DIR]   (default target/bench-cross-encoder)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-target/bench-cross-encoder}
py=models/.venv/bin/python
rm -rf "$work/export" "$work/out"
mkdir -p "$work/export" "$work/models"
ln -sfn "$PWD/models/onnxruntime" "$work/models/onnxruntime"
cargo build --release -q
bin=target/release/ragsweep
"$py" scripts/cross_encoder_fixture.py make models/minilm-l6 "$work/export" 1
"$bin" models add "$work/export" --name ce-test --cross-encoder --max-length 128 --models "$work/models" --force
/usr/bin/time -f "run: %e s wall, %U s user, %M KB max RSS" \
  "$bin" run experiments/scifact-cross-encoder.toml --models "$work/models" --out "$work/out" --cache "$work/cache"
run=$(ls -d "$work"/out/scifact-cross-encoder/2* | tail -1)
"$bin" contexts "$run" --cell c01 --k 10 --models "$work/models" --cache "$work/cache"
"$py" - "$run/contexts.jsonl" "$work/models/ce-test" <<'PY'
import json, subprocess, sys, tempfile
contexts, model = sys.argv[1], sys.argv[2]
pairs, ours = [], []
for line in open(contexts):
    case = json.loads(line)
    for item in case["items"]:
        pairs.append([case["question"], item["text"]])
        ours.append(item["score"])
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    json.dump(pairs, f)
theirs = json.loads(subprocess.run([sys.executable, "scripts/cross_encoder_fixture.py", "score", model, "128", f.name],
                                   check=True, capture_output=True, text=True).stdout)
diff = max(abs(a - b) for a, b in zip(ours, theirs))
print(f"{len(pairs)} pairs of the reranked top 10: max |ragsweep - onnxruntime| = {diff:.2e}")
sys.exit(0 if diff < 1e-4 else 1)
PY
