#!/usr/bin/env python3
"""Writes tests/fixtures/embeddings.json: reference vectors for a few texts, computed with
the installed ONNX files by Python tokenizers + onnxruntime (mean pooling over the attention
mask, L2-normalised), so a test can check ragsweep's embedder against an independent path.

usage: models/.venv/bin/python scripts/embedding_fixture.py MODELS_DIR OUT_JSON
"""
import json
import sys
import tomllib

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

TEXTS = [
    ("query", "how much protein should a female eat"),
    ("passage", "Vitamin D deficiency is associated with bone loss in older adults."),
    ("query", "qual o prazo pra devolver os sensores?"),
    ("passage", "Na rescisão, os sensores locados devem ser devolvidos em até 30 dias."),
]

models_dir, out = sys.argv[1], sys.argv[2]
result = {}
for model in ["minilm-l6", "e5-small"]:
    info = tomllib.loads(open(f"{models_dir}/{model}/model.toml").read())
    tok = Tokenizer.from_file(f"{models_dir}/{model}/tokenizer.json")
    tok.no_padding()  # some tokenizer.json files pad to a fixed length by default
    tok.enable_truncation(info["max_length"])
    sess = ort.InferenceSession(f"{models_dir}/{model}/model.onnx", providers=["CPUExecutionProvider"])
    rows = []
    for role, text in TEXTS:
        prefix = info.get("query_prefix" if role == "query" else "passage_prefix", "")
        ids = np.array([tok.encode(prefix + text).ids], dtype=np.int64)
        h = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})[0][0]
        v = h.mean(0)
        rows.append({"role": role, "text": text, "vector": [round(float(x), 7) for x in v / np.linalg.norm(v)]})
    result[model] = rows
with open(out, "w") as f:
    json.dump(result, f, ensure_ascii=False)
    f.write("\n")
