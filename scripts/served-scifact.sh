#!/usr/bin/env bash
# SciFact as a team would serve it: a pgvector table of their own (their field names, an HNSW
# index over cosine, MiniLM vectors of the whole documents), measured read only by a role that
# may only SELECT, beside ragsweep's own upload of the same vectors; the table's rows and the
# server's catalog are compared before and after. Needs scripts/install-models.sh and
# scripts/install-engines.sh; writes into a temporary folder.
# usage: scripts/served-scifact.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD; BIN=$REPO/target/release/ragsweep; PG=$REPO/engines/pg/bin; SCIFACT=$REPO/../shared/corpora/scifact
cargo build --release --quiet
W=$(mktemp -d); mkdir -p $W/data
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# PostgreSQL refuses to run as root.
as_server() { if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown -R nobody $W
as_server $PG/initdb -D $W/data -U team -A trust --no-sync >/dev/null
as_server $PG/pg_ctl -D $W/data -l $W/log -o "-c listen_addresses=127.0.0.1 -p $PORT -k $W -c fsync=off" -w start >/dev/null
trap 'as_server $PG/pg_ctl -D $W/data -m immediate -w stop >/dev/null; rm -rf $W' EXIT
. scripts/scifact-served-common.sh
export_vectors $W/vecs
$REPO/models/.venv/bin/python - <<P
import json, numpy as np
v = np.load("$W/vecs/passages.npy"); ids = open("$W/vecs/passages.ids").read().split("\n")
body = {}
for line in open("$REPO/../shared/corpora/scifact/corpus.jsonl"):
    d = json.loads(line); body[d["_id"]] = d["text"]
esc = lambda s: s.replace("\\\\", "\\\\\\\\").replace("\t", "\\\\t").replace("\n", "\\\\n").replace("\r", "\\\\r")
with open("$W/rows.tsv", "w") as f:
    for i, vec in zip(ids, v):
        doc = i.split("@")[0]
        f.write(f"{doc}\t{esc(body[doc])}\t[{','.join(repr(float(x)) for x in vec)}]\n")
P
$PG/psql -h 127.0.0.1 -p $PORT -U team -d postgres -q <<S
CREATE EXTENSION vector; CREATE SCHEMA kb;
CREATE TABLE kb.passages (passage_id bigserial PRIMARY KEY, doc text NOT NULL, body text NOT NULL, vec vector(384) NOT NULL);
\copy kb.passages (doc, body, vec) FROM '$W/rows.tsv'
CREATE INDEX ON kb.passages USING hnsw (vec vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE ROLE reader LOGIN; GRANT USAGE ON SCHEMA kb TO reader; GRANT SELECT ON kb.passages TO reader;
S
cat > $W/served.toml <<T
$(experiment_head sf-served)
[engines.pg]
url = "postgresql://reader@127.0.0.1:$PORT/postgres"
[[retrievers]]
kind = "dense"
engine = "pg"
model = "minilm-l6"
table = "kb.passages"
id_field = "doc"
text_field = "body"
vector_field = "vec"
ef_search = [40, 200]
T
cat > $W/upload.toml <<T
$(experiment_head sf-upload)
[engines.pg]
url = "postgresql://team@127.0.0.1:$PORT/postgres"
[[chunkers]]
kind = "none"
title = true
[[retrievers]]
kind = "dense"
engine = "pg"
model = "minilm-l6"
T
STATE="SELECT md5(string_agg(p::text, ',' ORDER BY passage_id)) || ' ' || (SELECT count(*) FROM pg_class) FROM kb.passages p"
BEFORE=$($PG/psql -h 127.0.0.1 -p $PORT -U team -d postgres -tAc "$STATE")
$BIN validate $W/served.toml --models $REPO/models --cache $REPO/cache | grep "engine pg"
/usr/bin/time -f "served run: %e s wall, %M KB" $BIN run $W/served.toml -q --models $REPO/models --cache $REPO/cache --out $W/results
AFTER=$($PG/psql -h 127.0.0.1 -p $PORT -U team -d postgres -tAc "$STATE")
echo "server state before: $BEFORE"; echo "server state after:  $AFTER"
/usr/bin/time -f "upload run: %e s wall, %M KB" $BIN run $W/upload.toml -q --models $REPO/models --cache $REPO/cache --out $W/results
print_matrix sf-served sf-upload
