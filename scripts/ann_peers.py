"""Dense-search peers for scripts/bench-peers.sh.

  ann_peers.py random DIR      write DIR/passages.npy (100,000) and DIR/queries.npy (1,000):
                               random unit vectors, 384 dims, seed 0
  ann_peers.py clustered DIR   the same shapes drawn around 2,000 subtopics of 100 topics (as
                               embeddings of real text cluster), seed 0
  ann_peers.py bench DIR       faiss flat, faiss HNSW and hnswlib on DIR's vectors: one JSON
                               line each (build on 2 threads, queries one at a time, 1 thread),
                               with a sweep of ef_search for recall-matched comparisons
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


def clustered_vectors(out):
    import numpy as np

    rng = np.random.default_rng(0)
    os.makedirs(out, exist_ok=True)

    def around(centres, n, spread):
        v = centres[rng.integers(0, len(centres), n)] + spread * rng.standard_normal((n, 384), dtype=np.float32) / np.sqrt(384)
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    # Topics, subtopics around them, texts around those: hnswlib's recall@10 on 20,000 of them
    # is 0.996 at ef 64, about as on SciFact's MiniLM vectors (random vectors are far harder).
    topics = around(rng.standard_normal((100, 384), dtype=np.float32), 100, 0.0)
    subtopics = around(topics, 2_000, 1.5)
    for name, n in [("passages", 100_000), ("queries", 1_000)]:
        np.save(f"{out}/{name}.npy", around(subtopics, n, 1.2))


SWEEP = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]


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
    faiss.omp_set_num_threads(1)

    def faiss_at(ef):
        graph.hnsw.efSearch = ef
        found, qps = timed(lambda q: graph.search(q, K)[1][0])
        return qps, recall(found)

    qps, r = faiss_at(EF_SEARCH)
    sweep = [[ef, *faiss_at(ef)] for ef in SWEEP]
    print(json.dumps({"engine": "faiss HNSW", "build_s": build, "qps": qps, "recall": r, "sweep": sweep}))

    h = hnswlib.Index(space="ip", dim=dim)
    h.init_index(max_elements=n, ef_construction=EF_CONSTRUCTION, M=M, random_seed=0)
    h.set_num_threads(2)
    started = time.perf_counter()
    h.add_items(P, np.arange(n))
    build = time.perf_counter() - started
    h.set_num_threads(1)

    def hnswlib_at(ef):
        h.set_ef(ef)
        found, qps = timed(lambda q: h.knn_query(q, k=K)[0][0])
        return qps, recall(found)

    qps, r = hnswlib_at(EF_SEARCH)
    sweep = [[ef, *hnswlib_at(ef)] for ef in SWEEP]
    print(json.dumps({"engine": "hnswlib", "build_s": build, "qps": qps, "recall": r, "sweep": sweep}))


def at_recall(sweep, target):
    """Queries/s and ef of the smallest beam whose recall reaches target, else None."""
    for ef, qps, recall in sweep:
        if recall >= target:
            return qps, int(ef)
    return None


def table(path, which):
    ours, *peers = [json.loads(line) for line in open(path)]
    shape = f"{ours['passages']:,} × {ours['dim']}, {ours['queries']:,} queries"
    label = {
        "scifact": f"SciFact MiniLM ({shape})",
        "random": f"random unit ({shape})",
        "clustered": f"clustered unit ({shape})",
    }[which]
    print(f"| {label} | ragsweep exact | – | {ours['exact_qps']:,.0f} | 1.000 | – | – | – |")

    def matched(sweep, target):
        found = at_recall(sweep, target)
        return f"{found[0]:,.0f} (ef {found[1]})" if found else "not reached"

    mine = {t: at_recall(ours["sweep"], t) for t in (0.95, 0.99)}

    def ratio(sweep, target):
        theirs = at_recall(sweep, target)
        return f"{mine[target][0] / theirs[0]:.2f}×" if mine[target] and theirs else "–"

    print(
        f"| | ragsweep HNSW | {ours['hnsw_build_s']:.1f} | {ours['hnsw_qps']:,.0f} | {ours['hnsw_recall']:.3f} | "
        f"{matched(ours['sweep'], 0.95)} | {matched(ours['sweep'], 0.99)} | – |"
    )
    for p in peers:
        if p["build_s"] is None:
            print(f"| | {p['engine']} | – | {p['qps']:,.0f} | {p['recall']:.3f} | – | – | {ours['exact_qps'] / p['qps']:.2f}× |")
            continue
        print(
            f"| | {p['engine']} | {p['build_s']:.1f} | {p['qps']:,.0f} | {p['recall']:.3f} | "
            f"{matched(p['sweep'], 0.95)} | {matched(p['sweep'], 0.99)} | "
            f"{ours['hnsw_qps'] / p['qps']:.2f}× at ef 128; {ratio(p['sweep'], 0.95)} at 0.95, {ratio(p['sweep'], 0.99)} at 0.99; build {ours['hnsw_build_s'] / p['build_s']:.2f}× |"
        )


if __name__ == "__main__":
    {"random": random_vectors, "clustered": clustered_vectors, "bench": bench, "table": table}[sys.argv[1]](
        *sys.argv[2:]
    )
