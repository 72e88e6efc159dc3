#!/usr/bin/env python3
"""Scores a ragsweep TREC run with pytrec_eval and compares it with ragsweep's own numbers.

usage: parity_check.py RUN_DIR QRELS_TSV FIXTURE_DIR

Reads RUN_DIR/runs/c01.trec and RUN_DIR/per_query.jsonl, evaluates the run on the queries in
QRELS_TSV with pytrec_eval (trec_eval's C code), prints the largest per-query difference for
each metric, and writes FIXTURE_DIR/{run.trec,pytrec_eval.json} for the Rust parity test.
Exits 1 if any difference exceeds 1e-6.
"""
import json
import sys
from pathlib import Path

import pytrec_eval

# trec_eval measure -> ragsweep column
MEASURES = {
    "ndcg_cut_10": "ndcg@10",
    "recall_100": "recall@100",
    "map_cut_100": "ap@100",
    "recip_rank": "mrr@100",
    "P_10": "precision@10",
}


def main():
    run_dir, qrels_path, fixture_dir = map(Path, sys.argv[1:4])
    qrels = {}
    for i, line in enumerate(qrels_path.read_text().splitlines()):
        parts = line.split("\t")
        if i == 0 and parts[0] == "query-id":
            continue
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])

    run = {}
    lines = []
    for line in (run_dir / "runs" / "c01.trec").read_text().splitlines():
        qid, _, doc, _rank, score, _tag = line.split()
        if qid in qrels:
            run.setdefault(qid, {})[doc] = float(score)
            lines.append(line)

    ties = sum(len(d) - len(set(d.values())) for d in run.values())
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES))
    theirs = evaluator.evaluate(run)
    # trec_eval -c: queries in qrels with no retrieved document count as 0.
    for qid in qrels:
        theirs.setdefault(qid, {m: 0.0 for m in MEASURES})

    ours = {}
    for line in (run_dir / "per_query.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["cell"] == "c01" and row["case"] in qrels:
            ours[row["case"]] = row["metrics"]

    worst = 0.0
    print(f"{len(qrels)} queries, {len(lines)} run lines, {ties} tied scores")
    print(f"{'measure':<14}{'pytrec_eval':>12}{'ragsweep':>12}{'max |diff|':>14}")
    for measure, column in MEASURES.items():
        diffs = [abs(theirs[q][measure] - ours[q][column]) for q in qrels]
        mean_t = sum(theirs[q][measure] for q in qrels) / len(qrels)
        mean_o = sum(ours[q][column] for q in qrels) / len(qrels)
        worst = max(worst, max(diffs))
        print(f"{measure:<14}{mean_t:>12.6f}{mean_o:>12.6f}{max(diffs):>14.2e}")

    fixture_dir.mkdir(parents=True, exist_ok=True)
    (fixture_dir / "run.trec").write_text("\n".join(lines) + "\n")
    fixture = {
        "tool": f"pytrec_eval {getattr(pytrec_eval, '__version__', '')}".strip(),
        "qrels": "shared/corpora/scifact/qrels/test.tsv",
        "measures": MEASURES,
        "per_query": {q: theirs[q] for q in sorted(qrels)},
    }
    (fixture_dir / "pytrec_eval.json").write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
    if worst > 1e-6:
        print(f"FAIL: largest difference {worst:.3e} > 1e-6")
        sys.exit(1)
    print(f"OK: every per-query value agrees to {worst:.1e}")


if __name__ == "__main__":
    main()
