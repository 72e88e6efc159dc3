"""Dense-search peers for scripts/bench-peers.sh.

  ann_peers.py random DIR      write DIR/passages.npy (100,000) and DIR/queries.npy (1,000):
                               random unit vectors, 384 dims, seed 0
  ann_peers.py bench DIR       faiss flat, faiss HNSW and hnswlib on DIR's vectors: one JSON
                               line each (build on 2 threads, queries one at a time, 1 thread)
  ann_peers.py table FILE SET  Markdown rows from ragsweep's bench-ann line and the peers' lines
"""
import json
import os
import sys
import time

K, M, EF_CONSTRUCTION, EF_SEARCH = 10, 16, 200, 128


def random_vectors(out):
    import numpy as np

    rng = np.random.default_rng(0)
    os.makedirs(out, exist_ok=True)
    for name, n in [("passages", 100_000), ("queries", 1_000)]:
        v = rng.standard_normal((n, 384), dtype=np.float32)
        np.save(f"{out}/{name}.npy", v / np.linalg.norm(v, axis=1, keepdims=True))


def bench(directory):
    import faiss
    import hnswlib
    import numpy as np

    P, Q = np.load(f"{directory}/passages.npy"), np.load(f"{directory}/queries.npy")
    n, dim = P.shape

    def timed(search):
        started = time.perf_counter()
        out = [search(Q[i : i + 1]) for i in range(len(Q))]
        return out, len(Q) / (time.perf_counter() - started)

    flat = faiss.IndexFlatIP(dim)
    flat.add(P)
    faiss.omp_set_num_threads(1)
    truth, qps = timed(lambda q: flat.search(q, K)[1][0])
    print(json.dumps({"engine": "faiss flat", "build_s": None, "qps": qps, "recall": 1.0}))

    def recall(found):
        return sum(len(set(f) & set(t)) for f, t in zip(found, truth)) / sum(len(t) for t in truth)

    faiss.omp_set_num_threads(2)
    graph = faiss.IndexHNSWFlat(dim, M, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = EF_CONSTRUCTION
    started = time.perf_counter()
    graph.add(P)
    build = time.perf_counter() - started
    graph.hnsw.efSearch = EF_SEARCH
    faiss.omp_set_num_threads(1)
    found, qps = timed(lambda q: graph.search(q, K)[1][0])
    print(json.dumps({"engine": "faiss HNSW", "build_s": build, "qps": qps, "recall": recall(found)}))

    h = hnswlib.Index(space="ip", dim=dim)
    h.init_index(max_elements=n, ef_construction=EF_CONSTRUCTION, M=M, random_seed=0)
    h.set_num_threads(2)
    started = time.perf_counter()
    h.add_items(P, np.arange(n))
    build = time.perf_counter() - started
    h.set_ef(EF_SEARCH)
    h.set_num_threads(1)
    found, qps = timed(lambda q: h.knn_query(q, k=K)[0][0])
    print(json.dumps({"engine": "hnswlib", "build_s": build, "qps": qps, "recall": recall(found)}))


def table(path, which):
    ours, *peers = [json.loads(line) for line in open(path)]
    shape = f"{ours['passages']:,} × {ours['dim']}, {ours['queries']:,} queries"
    label = {"scifact": f"SciFact MiniLM ({shape})", "random": f"random unit ({shape})"}[which]
    print(f"| {label} | ragsweep exact | – | {ours['exact_qps']:,.0f} | 1.000 | – |")
    print(f"| | ragsweep HNSW | {ours['hnsw_build_s']:.1f} | {ours['hnsw_qps']:,.0f} | {ours['hnsw_recall']:.3f} | – |")
    for p in peers:
        exact = p["build_s"] is None
        mine = ours["exact_qps"] if exact else ours["hnsw_qps"]
        build = "–" if exact else f"{p['build_s']:.1f}"
        print(f"| | {p['engine']} | {build} | {p['qps']:,.0f} | {p['recall']:.3f} | {mine / p['qps']:.2f}× |")


if __name__ == "__main__":
    {"random": random_vectors, "bench": bench, "table": table}[sys.argv[1]](*sys.argv[2:])
