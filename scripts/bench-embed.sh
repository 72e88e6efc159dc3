#!/usr/bin/env bash
# Embedding throughput: ragsweep's embedder (fastembed + ONNX Runtime from the wheel) against
# the same ONNX file run by Python onnxruntime, same threads, batch size, max length and
# length-sorted batches, on the first N SciFact documents (title + text).
#
#   scripts/bench-embed.sh [MODEL] [N] [THREADS] [BATCH]     (defaults: minilm-l6 1000 2 32)
#
# BATCH "tokens" batches as runs do: by token count, longest first, each batch's size ×
# longest text within 1,024 tokens (src/stages/embed.rs TOKEN_BUDGET), on both sides.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
models="${RAGSWEEP_MODELS:-$root/models}"
model="${1:-minilm-l6}" n="${2:-1000}" threads="${3:-2}" batch="${4:-32}"
corpus="$root/../shared/corpora/scifact/corpus.jsonl"
"$models/.venv/bin/pip" install --quiet --disable-pip-version-check onnxruntime==1.31.1
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
if [ "$batch" = tokens ]; then
  how=(--token-budget 1024)
else
  how=(--batch "$batch")
fi
"$root/target/release/ragsweep" bench-embed "$corpus" --model "$model" --limit "$n" --threads "$threads" "${how[@]}" --models "$models"
"$models/.venv/bin/python" - "$models/$model" "$corpus" "$n" "$threads" "$batch" <<'PY'
import json, sys, time, tomllib
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
model_dir, corpus, n, threads, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
info = tomllib.loads(open(f"{model_dir}/model.toml").read())
texts = []
with open(corpus) as f:
    for line in f:
        d = json.loads(line)
        texts.append(info.get("passage_prefix", "") + (d["title"] + " " + d["text"] if d.get("title") else d["text"]))
        if len(texts) == n:
            break
texts.sort(key=len, reverse=True)
tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
tok.enable_truncation(info["max_length"])
tok.enable_padding(pad_id=tok.token_to_id("<pad>") or 0)
opts = ort.SessionOptions()
opts.intra_op_num_threads = threads
opts.inter_op_num_threads = 1
sess = ort.InferenceSession(f"{model_dir}/model.onnx", opts, providers=["CPUExecutionProvider"])
def embed(chunk):
    enc = tok.encode_batch(chunk)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    h = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    v = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return v / np.linalg.norm(v, axis=1, keepdims=True)
if batch == "tokens":
    counter = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    counter.enable_truncation(info["max_length"])
    counted = sorted(((len(e.ids), t) for e, t in zip(counter.encode_batch(texts), texts)), key=lambda c: -c[0])
    texts = [t for _, t in counted]
    bounds, i = [], 0
    while i < len(texts):
        size = max(1, min(256, 1024 // max(counted[i][0], 1), len(texts) - i))
        bounds.append((i, i + size))
        i += size
else:
    bounds = [(i, min(i + int(batch), len(texts))) for i in range(0, len(texts), int(batch))]
embed(texts[bounds[0][0]:bounds[0][1]])
t = time.perf_counter()
for a, b in bounds:
    embed(texts[a:b])
secs = time.perf_counter() - t
print(f"python    model={info['id']} texts={len(texts)} batch={batch} threads={threads} seconds={secs:.2f} passages_per_s={len(texts) / secs:.1f}")
PY
