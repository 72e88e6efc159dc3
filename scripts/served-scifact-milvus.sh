#!/usr/bin/env bash
# SciFact as a team would serve it from Milvus: a collection of their own, made by pymilvus (an
# independent client), with their field names, an HNSW index over cosine and MiniLM vectors of
# the whole documents, measured read only beside ragsweep's in-process exact scan of the same
# vectors; the collections and the row count are compared before and after. Needs
# scripts/install-models.sh and scripts/install-engines.sh, and pip's access to PyPI (pymilvus
# into a temporary virtual environment). Writes into a temporary folder.
# usage: scripts/served-scifact-milvus.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD; BIN=$REPO/target/release/ragsweep; SCIFACT=$REPO/../shared/corpora/scifact
cargo build --release --quiet
W=$(mktemp -d)
mkfifo $W/in
$BIN engines serve milvus --secret-file $W/token --engines $REPO/engines < $W/in > $W/url 2>$W/serve.log &
exec 3>$W/in
trap 'exec 3>&-; wait; rm -rf $W' EXIT
python3 -m venv $W/venv
$W/venv/bin/pip install --quiet --disable-pip-version-check pymilvus==2.3.7 "setuptools<70" "marshmallow<3.24" numpy
until [ -s $W/url ]; do sleep 1; done
URL=$(head -1 $W/url); TOKEN=$(cat $W/token)
. scripts/scifact-served-common.sh
export_vectors $W/vecs
exact_experiment $W/exact.toml sf-exact
cat > $W/team.py <<'P'
import json, sys
import numpy as np
from pymilvus import Collection, CollectionSchema, DataType, FieldSchema, connections, utility
url, token, vecs, corpus, what = sys.argv[1:6]
connections.connect(uri=url, token=token)
if what == "state":
    names = sorted(utility.list_collections())
    print(" ".join(names), Collection("kb_passages").num_entities if "kb_passages" in names else "-")
    sys.exit(0)
v = np.load(f"{vecs}/passages.npy"); ids = open(f"{vecs}/passages.ids").read().split("\n")
body = {}
for line in open(corpus):
    d = json.loads(line); body[d["_id"]] = d["text"]
docs = [i.split("@")[0] for i in ids[: len(v)]]
schema = CollectionSchema([
    FieldSchema("passage_id", DataType.INT64, is_primary=True, auto_id=True),
    FieldSchema("doc", DataType.VARCHAR, max_length=64),
    FieldSchema("body", DataType.VARCHAR, max_length=65535),
    FieldSchema("vec", DataType.FLOAT_VECTOR, dim=v.shape[1]),
], description="the team's passages")
c = Collection("kb_passages", schema)
for start in range(0, len(docs), 1000):
    end = min(start + 1000, len(docs))
    c.insert([docs[start:end], [body[d] for d in docs[start:end]], v[start:end].tolist()])
c.flush()
c.create_index("vec", {"index_type": "HNSW", "metric_type": "COSINE", "params": {"M": 16, "efConstruction": 64}})
c.load()
print(f"collection kb_passages: {c.num_entities} rows, HNSW M=16 efConstruction=64 over COSINE, loaded")
P
$W/venv/bin/python $W/team.py "$URL" "$TOKEN" $W/vecs $SCIFACT/corpus.jsonl load
cat > $W/served.toml <<T
$(experiment_head sf-milvus-served)
[engines.milvus]
url = "$URL"
token_env = "TEAM_MILVUS_TOKEN"
[[retrievers]]
kind = "dense"
engine = "milvus"
model = "minilm-l6"
collection = "kb_passages"
id_field = "doc"
text_field = "body"
vector_field = "vec"
ef_search = [40, 200]
T
export TEAM_MILVUS_TOKEN=$TOKEN
BEFORE=$($W/venv/bin/python $W/team.py "$URL" "$TOKEN" - - state)
$BIN validate $W/served.toml --models $REPO/models --cache $REPO/cache | grep "engine milvus"
/usr/bin/time -f "served run: %e s wall, %M KB" $BIN run $W/served.toml -q --models $REPO/models --cache $REPO/cache --out $W/results
AFTER=$($W/venv/bin/python $W/team.py "$URL" "$TOKEN" - - state)
echo "collections and rows before: $BEFORE"; echo "collections and rows after:  $AFTER"
$BIN run $W/exact.toml -q --models $REPO/models --cache $REPO/cache --out $W/results > /dev/null
print_matrix sf-milvus-served sf-exact
