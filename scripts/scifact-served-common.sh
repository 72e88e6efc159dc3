# Sourced by scripts/served-scifact.sh, scripts/served-scifact-milvus.sh and
# scripts/served-scifact-chroma.sh: SciFact's test
# split as an experiment head, the MiniLM vectors of its whole documents (title and text) that
# the team's index holds, exported by `ragsweep vectors`, and the matrices printed. Needs REPO,
# BIN, SCIFACT and W.

# An experiment's first lines: its name, and SciFact's test split.
experiment_head() {
  printf 'name = "%s"\nunit = "doc"\nk = [10, 100]\nmetrics = ["ndcg", "recall"]\n' "$1"
  printf '[corpus]\npath = "%s"\n[golden]\npath = "%s"\nreserved = ["test"]\n' "$SCIFACT" "$SCIFACT"
}

# exact_experiment FILE NAME: the in-process exact MiniLM cell over whole documents.
exact_experiment() {
  { experiment_head "$2"; printf '[[chunkers]]\nkind = "none"\ntitle = true\n[[retrievers]]\nkind = "dense"\nmodel = "minilm-l6"\n'; } > "$1"
}

# export_vectors FOLDER: the passage and query vectors of that cell, as NumPy files.
export_vectors() {
  exact_experiment "$1.toml" sf-export
  "$BIN" vectors "$1.toml" --out "$1" --models "$REPO/models" --cache "$REPO/cache" 2>&1 | tail -1
}

# print_matrix RUN…: each row of each run's matrix (its latest results in $W/results): cell,
# split, label, nDCG@10, recall@100, the parity columns, the plan and the p50 latency.
print_matrix() {
  for run in "$@"; do
    python3 - "$W/results/$run/latest/matrix.json" <<'P'
import json, sys
m = json.load(open(sys.argv[1]))
for r in m["rows"]:
    print(r["cell"], r["split"], r["label"][:100], "ndcg@10=%.4f" % r["metrics"]["ndcg@10"]["value"], "recall@100=%.4f" % r["metrics"]["recall@100"]["value"],
          "under@10=", (r.get("under_return") or {}).get("@10"), "rvo@10=", (r.get("recall_vs_oracle") or {}).get("@10"), "plan=", (r.get("engine_plan") or {}).get("@10"), "p50=%.2f" % r["latency"]["p50_ms"])
P
  done
}
