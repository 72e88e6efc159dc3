#!/usr/bin/env bash
# ragsweep against its peers, back to back on the same data and machine, written to
# BENCHMARKS.md as ratios (absolute times depend on the machine; the ratios are the claims):
#
#   - BM25 on SciFact and NFCorpus test queries: ragsweep (its timed pass, one query at a
#     time, one thread) against bm25s (one thread), queries/s and nDCG@10;
#   - exact scan and HNSW: ragsweep against faiss-cpu (flat and HNSW) and hnswlib on the same
#     vectors (SciFact MiniLM vectors, 100,000 clustered and 100,000 random unit vectors), same m,
#     ef_construction and ef_search, build on 2 threads, queries one at a time on one thread
#     (scripts/ann_peers.py);
#   - filtered vector search: ragsweep's in-process index with its filter planner off (graph;
#     scan) and on, beside PostgreSQL + pgvector (exact, HNSW per iterative scan) on the same
#     SciFact MiniLM vectors and ACLs at 1/10/50/90% allowed (`bench-filter --engine pg`; needs
#     scripts/install-engines.sh);
#   - the embedder: ragsweep (fastembed + ONNX Runtime) against Python onnxruntime on the
#     same ONNX file, the same texts in the same token-budget batches, 2 threads.
#
# A throw-away virtualenv from PyPI holds the peers. The result replaces the "peers" section of
# BENCHMARKS.md (scripts/bench-scale.sh writes the "scaling" one).
# usage: scripts/bench-peers.sh [N_DOCS] ["bm25 ann filter embed"]   (the parts to run; each writes its own section)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
models="${RAGSWEEP_MODELS:-$root/models}"
shared="$root/../shared/corpora"
n_docs="${1:-500}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check bm25s PyStemmer numpy faiss-cpu hnswlib
cargo build --release --quiet
out="$root/BENCHMARKS.md"
parts="${2:-bm25 ann filter embed}"
wants() { [[ " $parts " == *" $1 "* ]]; }
# Writes the part just measured as its own section of BENCHMARKS.md.
finish() {
  python3 scripts/benchmarks_section.py "peers-$1" "$out" < "$out.tmp"
  rm "$out.tmp"
}
stamp() {
  echo "Written by \`scripts/bench-peers.sh $n_docs $1\` on $(date -u +%Y-%m-%d), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p'))."
}
if wants bm25; then
{
  echo "## BM25 against bm25s (test queries, one thread)"
  echo
  stamp bm25
  echo
  echo "| corpus | ragsweep q/s | bm25s q/s | ratio | ragsweep nDCG@10 | bm25s nDCG@10 |"
  echo "|---|---:|---:|---:|---:|---:|"
} > "$out.tmp"
for corpus in scifact nfcorpus; do
  exp="$work/$corpus.toml"
  cat > "$exp" <<EOF
name = "peers-$corpus"
unit = "doc"
k = [10]
metrics = ["ndcg"]
latency_cases = 100000
[corpus]
path = "$shared/$corpus"
[golden]
path = "$shared/$corpus"
reserved = ["test"]
[[chunkers]]
kind = "none"
title = true
[[retrievers]]
kind = "bm25"
analyzer = "en"
k1 = 0.9
b = 0.4
EOF
  RAYON_NUM_THREADS=1 ./target/release/ragsweep run -q "$exp" --out "$work/out" --cache "$work/cache" > /dev/null 2>&1
  ours=$(python3 - "$work/out/peers-$corpus"/*/matrix.json <<'PY'
import json, sys
row = json.load(open(sys.argv[1]))["rows"][0]
print(f'{1000 / row["latency"]["mean_ms"]:.0f} {row["metrics"]["ndcg@10"]["value"]:.4f}')
PY
)
  theirs=$("$work/venv/bin/python" - "$shared/$corpus" <<'PY'
import json, math, sys, time
import bm25s, Stemmer
d = sys.argv[1]
docs, ids = [], []
for line in open(f"{d}/corpus.jsonl"):
    r = json.loads(line); ids.append(r["_id"]); docs.append((r.get("title") or "") + " " + r["text"])
qrels = {}
for line in list(open(f"{d}/qrels/test.tsv"))[1:]:
    q, doc, g = line.split("\t"); qrels.setdefault(q, {})[doc] = int(g)
queries = {json.loads(l)["_id"]: json.loads(l)["text"] for l in open(f"{d}/queries.jsonl")}
qs = [q for q in qrels if q in queries]
stem = Stemmer.Stemmer("english")
retriever = bm25s.BM25(k1=0.9, b=0.4)
retriever.index(bm25s.tokenize(docs, stopwords="en", stemmer=stem, show_progress=False), show_progress=False)
tokens = bm25s.tokenize([queries[q] for q in qs], stopwords="en", stemmer=stem, show_progress=False)
started = time.perf_counter()
results, _ = retriever.retrieve(tokens, k=10, n_threads=1, show_progress=False)
qps = len(qs) / (time.perf_counter() - started)
def ndcg(q, ranked):
    g = qrels[q]
    dcg = sum(g.get(ids[i], 0) / math.log2(r + 2) for r, i in enumerate(ranked))
    ideal = sum(v / math.log2(r + 2) for r, v in enumerate(sorted(g.values(), reverse=True)[:10]))
    return dcg / ideal if ideal else 0.0
print(f"{qps:.0f} {sum(ndcg(q, results[i]) for i, q in enumerate(qs)) / len(qs):.4f}")
PY
)
  read -r our_qps our_ndcg <<< "$ours"
  read -r their_qps their_ndcg <<< "$theirs"
  ratio=$(python3 -c "print(f'{$our_qps / $their_qps:.1f}x')")
  echo "| $corpus | $our_qps | $their_qps | $ratio | $our_ndcg | $their_ndcg |" >> "$out.tmp"
done
{
  echo
  echo "ragsweep's q/s is its timed pass (one query at a time: analysis, search and judging the"
  echo "list) over every test query; bm25s's is \`retrieve\` on pre-tokenized queries (tokenizing"
  echo "not timed). Both use k1 = 0.9, b = 0.4 on title + text."

} >> "$out.tmp"
finish bm25
fi
if wants ann; then
{
  echo "## Exact scan and HNSW against faiss-cpu and hnswlib (same vectors)"
  echo
  stamp ann
  echo "Build on 2 threads; queries one at a time on one thread (Python calls for the peers); top 10;"
  echo "HNSW m = 16, ef_construction = 200, ef_search = 128 everywhere. Recall@10 is against each"
  echo "library's own exact search. Recall-matched columns: q/s at the smallest ef_search (of 10 to"
  echo "512) whose recall@10 reaches 0.95 and 0.99, each library with its own ef. The last column is"
  echo "ragsweep's q/s (and build time) divided by the peer's."
  echo
  echo "| vectors | engine | build s | q/s at ef 128 | recall@10 | q/s at recall ≥ 0.95 | q/s at recall ≥ 0.99 | ragsweep / peer |"
  echo "|---|---|---:|---:|---:|---:|---:|---|"
} >> "$out.tmp"
RAGSWEEP_CACHE="${RAGSWEEP_CACHE:-$root/cache}" ./target/release/ragsweep vectors experiments/scifact-dense.toml \
  --out "$work/vectors-scifact" > /dev/null
"$work/venv/bin/python" scripts/ann_peers.py random "$work/vectors-random"
"$work/venv/bin/python" scripts/ann_peers.py clustered "$work/vectors-clustered"
for vectors in scifact clustered random; do
  dir="$work/vectors-$vectors"
  RAYON_NUM_THREADS=2 ./target/release/ragsweep bench-ann "$dir/passages.npy" "$dir/queries.npy" > "$work/ann-$vectors.jsonl"
  "$work/venv/bin/python" scripts/ann_peers.py bench "$dir" >> "$work/ann-$vectors.jsonl"
  python3 scripts/ann_peers.py table "$work/ann-$vectors.jsonl" "$vectors" >> "$out.tmp"
done
finish ann
fi
if wants filter; then
{
  echo "## Filtered vector search: in process (planner off and on) beside PostgreSQL + pgvector"
  echo
  stamp filter
  echo "SciFact documents (title + text) embedded with MiniLM; HNSW m = 16, ef_construction = 64 in"
  echo "process and in pgvector; each document in one of 100 groups, the user in the first 1, 10, 50"
  echo "or 90; top 10, one query at a time (the engine over its unix socket). \`recall_vs_oracle@10\`:"
  echo "against the exact filtered top 10 of the same vectors."
  echo
  RAGSWEEP_CACHE="${RAGSWEEP_CACHE:-$root/cache}" ./target/release/ragsweep bench-filter experiments/bench-filter-pg.toml \
    --queries 300 --engine pg 2> /dev/null | sed -n '/^Filter parity/,$p' | grep '^|'
} > "$out.tmp"
finish filter
fi
if wants embed; then
{
  echo "## Embedding against Python onnxruntime (SciFact, first $n_docs documents, 2 threads)"
  echo
  stamp embed
  echo
  echo "| model | ragsweep passages/s | Python onnxruntime passages/s | ratio |"
  echo "|---|---:|---:|---:|"
} >> "$out.tmp"
for model in minilm-l6 minilm-l6-int8 e5-small e5-small-int8; do
  line=$(scripts/bench-embed.sh "$model" "$n_docs" 2 tokens)
  ours=$(echo "$line" | sed -n 's/^ragsweep .*passages_per_s=\([0-9.]*\).*/\1/p')
  theirs=$(echo "$line" | sed -n 's/^python .*passages_per_s=\([0-9.]*\).*/\1/p')
  ratio=$(python3 -c "print(f'{$ours / $theirs:.2f}x')")
  echo "| $model | $ours | $theirs | $ratio |" >> "$out.tmp"
done
{
  echo
  echo "Both sides embed the same texts in the same batches: token counts from the model's"
  echo "tokenizer, longest first, each batch's size × longest text within 1,024 tokens."
} >> "$out.tmp"
finish embed
fi
cat "$out"

