# Sourced by scripts/served-scifact.sh and scripts/served-scifact-milvus.sh: SciFact's test
# split as an experiment head, and the MiniLM vectors of its whole documents (title and text)
# that the team's index holds, exported by `ragsweep vectors`. Needs REPO, BIN and SCIFACT.

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
