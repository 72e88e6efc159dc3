#!/usr/bin/env bash
# Four concurrent shards on one Milvus (issue 64): SciFact test (300 questions) with synthetic
# ACLs, MiniLM vectors, Milvus FLAT and HNSW cells with and without the filter, run once
# unsharded and then TRIALS times as four shards at once on the same server, each set of shards
# merged. For each trial: how many per_query lines differ from the unsharded run, and whether
# the merge said that lists moved while the shards ran (it must, whenever they differ).
# Needs scripts/install-models.sh and scripts/install-engines.sh; writes into a temporary folder.
# usage: scripts/shards-milvus-trial.sh [TRIALS]   (BIN=path/to/ragsweep to use another build,
# CACHE=folder to keep the vectors between trials)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
TRIALS=${1:-3}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$REPO/target/release/ragsweep
fi
W=$(mktemp -d)
mkfifo "$W/in"
"$BIN" engines serve milvus --secret-file "$W/token" --engines "$REPO/engines" <"$W/in" >"$W/url" 2>"$W/serve.log" &
exec 3>"$W/in"
trap 'exec 3>&-; wait; rm -rf "$W"' EXIT
until [ -s "$W/url" ]; do sleep 1; done
export TRIAL_MILVUS_TOKEN
TRIAL_MILVUS_TOKEN=$(cat "$W/token")
cat >"$W/exp.toml" <<T
name = "shards-milvus"
unit = "doc"
k = [10]
metrics = ["ndcg", "recall"]
filter = ["none", "in_query"]
[permissions]
synthetic_groups = 10
[corpus]
path = "$REPO/../shared/corpora/scifact"
[golden]
path = "$REPO/../shared/corpora/scifact"
reserved = ["test"]
[engines.milvus]
url = "$(head -1 "$W/url")"
token_env = "TRIAL_MILVUS_TOKEN"
[[chunkers]]
kind = "none"
title = true
[[retrievers]]
kind = "dense"
engine = "milvus"
model = "minilm-l6"
index = "flat"
[[retrievers]]
kind = "dense"
engine = "milvus"
model = "minilm-l6"
index = "hnsw"
m = 16
ef_construction = 64
ef_search = 40
T
run() { "$BIN" run "$W/exp.toml" -q --models "$REPO/models" --cache "${CACHE:-$W/cache}" "$@" 2>/dev/null; }
lines() { sort "$1/per_query.jsonl" | python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    print(d["cell"], d["case"], json.dumps(d["metrics"], sort_keys=True), d.get("top"))'; }
run --out "$W/unsharded" >/dev/null
base=$(ls -d "$W"/unsharded/shards-milvus/2*)
echo "unsharded: $(wc -l <"$base/per_query.jsonl") lines"
for t in $(seq 1 "$TRIALS"); do
  pids=()
  for i in 1 2 3 4; do
    run --shard "$i/4" --out "$W/t$t/s$i" >/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}" # not the server, also a child of this shell
  "$BIN" merge "$W/exp.toml" "$W"/t"$t"/s*/shards-milvus/2* --out "$W/t$t/merged" >"$W/t$t/merge.out" 2>&1
  merged=$(ls -d "$W"/t"$t"/merged/shards-milvus/2*)
  diff <(lines "$base") <(lines "$merged") | grep '^>' >"$W/t$t/differ" || true
  cells=$(cut -d' ' -f2 "$W/t$t/differ" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')
  warned=$(grep -c "latency.moved" "$W/t$t/merge.out" || true)
  echo "trial $t: $(wc -l <"$W/t$t/differ") of $(wc -l <"$merged/per_query.jsonl") lines differ from the unsharded run (${cells:-none}); the merge warned of moved lists: $([ "$warned" -gt 0 ] && echo yes || echo no)"
  # Per cell: the timed calls whose lists moved (as the shards recorded them) beside the cases
  # whose line differs from the unsharded run.
  python3 - "$merged/matrix.json" "$W/t$t/differ" <<'P'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
differ = {}
for line in open(sys.argv[2]):
    _, cell, case = line.split()[:3]
    differ.setdefault(cell, set()).add(case)
for r in rows:
    lat = r.get("latency") or {}
    moved = lat.get("moved") or []
    if r["split"] == "reserved" and (moved or r["cell"] in differ):
        print(f"  {r['cell']}: timed calls {lat.get('n')}, stable {lat.get('stable')}, moved {len(moved)} named; "
              f"{len(differ.get(r['cell'], ()))} cases differ from the unsharded run")
P
done
echo "the cells: $(python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["split"] == "reserved": print(r["cell"], r["label"], r["filter"], end="; ")' "$base/matrix.json")"
echo "the merge's warning (last trial):"
grep -B1 -A2 "latency.moved" "$W/t$TRIALS/merge.out" || true
