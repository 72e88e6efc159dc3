#!/usr/bin/env python3
"""A tiny cross-encoder for tests, and the scores Python ONNX Runtime gives with it.

  make SRC_MODEL_DIR OUT_DIR LOGITS   writes OUT_DIR/model.onnx and the tokenizer files: the
      BERT body of an installed sentence model (its `last_hidden_state`) with a seeded random
      classification head on the [CLS] token (dense + tanh, then LOGITS outputs named
      `logits`), as BertForSequenceClassification exports have. Its scores mean nothing; it
      tests the plumbing, not the quality.
  score MODEL_DIR MAX_LENGTH PAIRS_JSON   prints the score of each [question, passage] pair
      of PAIRS_JSON as JSON: tokenizers' pair encoding truncated longest-first to MAX_LENGTH,
      one pair per call, and for two logits their difference (relevant minus not).

usage: models/.venv/bin/python scripts/cross_encoder_fixture.py make|score ...
"""
import json
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper, TensorProto
from tokenizers import Tokenizer

TOKENIZER_FILES = ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]


def make(src, out, logits):
    model = onnx.load(f"{src}/model.onnx")
    graph = model.graph
    hidden = graph.output[0].name
    width = None
    for value in list(graph.value_info) + list(graph.output):
        dims = value.type.tensor_type.shape.dim
        if value.name == hidden and len(dims) == 3 and dims[2].dim_value:
            width = dims[2].dim_value
    if width is None:
        width = ort.InferenceSession(f"{src}/model.onnx").get_outputs()[0].shape[2]
    rng = np.random.default_rng(20261203)
    weights = {
        "ce_dense_w": rng.normal(0, 0.05, (width, width)).astype(np.float32),
        "ce_dense_b": rng.normal(0, 0.05, (width,)).astype(np.float32),
        "ce_out_w": rng.normal(0, 0.5, (width, logits)).astype(np.float32),
        "ce_out_b": rng.normal(0, 0.1, (logits,)).astype(np.float32),
        "ce_cls": np.array(0, dtype=np.int64),
    }
    graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in weights.items())
    graph.node.extend([
        helper.make_node("Gather", [hidden, "ce_cls"], ["ce_first"], axis=1),
        helper.make_node("MatMul", ["ce_first", "ce_dense_w"], ["ce_dense"]),
        helper.make_node("Add", ["ce_dense", "ce_dense_b"], ["ce_dense_biased"]),
        helper.make_node("Tanh", ["ce_dense_biased"], ["ce_pooled"]),
        helper.make_node("MatMul", ["ce_pooled", "ce_out_w"], ["ce_logits"]),
        helper.make_node("Add", ["ce_logits", "ce_out_b"], ["logits"]),
    ])
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", logits]))
    onnx.checker.check_model(model)
    onnx.save(model, f"{out}/model.onnx")
    for name in TOKENIZER_FILES:
        shutil.copy(f"{src}/{name}", f"{out}/{name}")


def score(model_dir, max_length, pairs):
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(max_length)
    sess = ort.InferenceSession(f"{model_dir}/model.onnx", providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    scores = []
    for question, passage in pairs:
        e = tok.encode(question, passage)
        feed = {
            "input_ids": np.array([e.ids], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids], dtype=np.int64),
        }
        out = sess.run(None, {k: v for k, v in feed.items() if k in names})[0][0]
        scores.append(float(out[1] - out[0]) if len(out) == 2 else float(out[0]))
    return scores


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "score":
        pairs = json.load(open(sys.argv[4]))
        print(json.dumps(score(sys.argv[2], int(sys.argv[3]), pairs)))
    else:
        sys.exit(__doc__)
