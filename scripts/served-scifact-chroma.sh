#!/usr/bin/env bash
# SciFact as a team would serve it from Chroma: collections of their own on a Chroma server of
# their own (the installed Chroma, started here as the team's), made over Chroma's HTTP API by a
# Python script (an independent client) with their keys (each record's page in metadata `doc`,
# its text as the record's document), HNSW over cosine (m 16, ef_construction 64) holding MiniLM
# vectors of the whole documents: `kb_passages` searched at ef_search 40, `kb_passages_wide` at
# 10,000. Each is measured read only beside ragsweep's in-process exact scan of the same vectors;
# the collections and record counts are compared before and after. Needs
# scripts/install-models.sh and scripts/install-engines.sh. Writes into a temporary folder.
# usage: scripts/served-scifact-chroma.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD; BIN=$REPO/target/release/ragsweep; SCIFACT=$REPO/../shared/corpora/scifact
cargo build --release --quiet
W=$(mktemp -d)
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
PYTHONPATH=$REPO/engines/chroma setsid python3 -c "import chromadb_rust_bindings as b; b.cli(['chroma', 'run', '--path', '$W/data', '--host', '127.0.0.1', '--port', '$PORT'])" > $W/server.log 2>&1 &
SERVER=$!
trap 'kill -- -$SERVER 2>/dev/null; wait; rm -rf $W' EXIT
until curl -sf $URL/api/v2/heartbeat > /dev/null; do sleep 0.2; done
. scripts/scifact-served-common.sh
export_vectors $W/vecs
exact_experiment $W/exact.toml sf-exact
cat > $W/team.py <<'P'
import array, ast, json, sys, urllib.request
url, vecs, corpus, what = sys.argv[1:5]
base = f"{url}/api/v2/tenants/default_tenant/databases/default_database/collections"
def call(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request))
if what == "state":
    names = sorted(c["name"] for c in call(""))
    print(" ".join(f"{n}:{call('/' + call('/' + n)['id'] + '/count')}" for n in names))
    sys.exit(0)
raw = open(f"{vecs}/passages.npy", "rb").read()
header_len = int.from_bytes(raw[8:10], "little")
header = ast.literal_eval(raw[10 : 10 + header_len].decode())
rows, dim = header["shape"]
values = array.array("f"); values.frombytes(raw[10 + header_len :])
ids = open(f"{vecs}/passages.ids").read().split("\n")
body = {}
for line in open(corpus):
    d = json.loads(line); body[d["_id"]] = d["text"]
docs = [i.split("@")[0] for i in ids[:rows]]
for name, ef in [("kb_passages", 40), ("kb_passages_wide", 10000)]:
    hnsw = {"space": "cosine", "max_neighbors": 16, "ef_construction": 64, "ef_search": ef}
    made = call("", {"name": name, "configuration": {"hnsw": hnsw}})
    for start in range(0, rows, 500):
        end = min(start + 500, rows)
        call(f"/{made['id']}/add", {
            "ids": [f"p{i}" for i in range(start, end)],
            "embeddings": [values[i * dim : (i + 1) * dim].tolist() for i in range(start, end)],
            "documents": [body[d] for d in docs[start:end]],
            "metadatas": [{"doc": d} for d in docs[start:end]],
        })
    print(f"collection {name}: {call('/' + made['id'] + '/count')} records, HNSW m=16 ef_construction=64 ef_search={ef} over cosine")
P
python3 $W/team.py $URL $W/vecs $SCIFACT/corpus.jsonl load
served() {
  printf '[[retrievers]]\nkind = "dense"\nengine = "chroma"\nmodel = "minilm-l6"\ncollection = "%s"\nid_field = "doc"\ntext_field = "document"\n' "$1"
}
cat > $W/served.toml <<T
$(experiment_head sf-chroma-served)
[engines.chroma]
url = "$URL"
$(served kb_passages)
$(served kb_passages_wide)
T
BEFORE=$(python3 $W/team.py $URL - - state)
$BIN validate $W/served.toml --models $REPO/models --cache $REPO/cache | grep -E "engine chroma|served chroma"
/usr/bin/time -f "served run: %e s wall, %M KB" $BIN run $W/served.toml -q --models $REPO/models --cache $REPO/cache --out $W/results
AFTER=$(python3 $W/team.py $URL - - state)
echo "collections and records before: $BEFORE"; echo "collections and records after:  $AFTER"
$BIN run $W/exact.toml -q --models $REPO/models --cache $REPO/cache --out $W/results > /dev/null
print_matrix sf-chroma-served sf-exact
