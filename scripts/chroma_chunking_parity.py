"""ragsweep's tok_iou@k, tok_precision@k and tok_recall@k against Chroma's own metric code.

    python scripts/chroma_chunking_parity.py RUN_DIR DOCUMENTS.jsonl QUESTIONS.csv \
        --chunking-evaluation REPO [--table]

RUN_DIR is a ragsweep run over Chroma's chunking evaluation (`[golden] path =
".../questions_df.csv"`, `unit = "evidence"`, the token measures in `metrics`), DOCUMENTS.jsonl
is `ragsweep chunks EXP --documents`, REPO a checkout of brandonstarxel/chunking_evaluation
(not on PyPI; read, never vendored). For every cell, k and question, the chunks ragsweep ranked
(per_query.jsonl `top`, their byte offsets turned into characters) go through
`BaseEvaluation._scores_from_dataset_and_retrievals` from the checkout's base_evaluation.py,
unchanged (chromadb, pandas and its OpenAI helpers are stubbed: the function does not use
them), and its IoU, precision and recall are compared with ragsweep's values. Prints one JSON
line per cell and k (largest absolute difference, questions compared) and, with --table, the
means per cell as a Markdown table. Exits 1 on a difference above 1e-9.
"""

import argparse
import bisect
import csv
import importlib.util
import json
import os
import sys
import types
from collections import defaultdict


def chroma_scores(repo):
    """`_scores_from_dataset_and_retrievals` from the checkout, its module's imports stubbed."""
    for name in ("chromadb", "chromadb.utils", "chromadb.utils.embedding_functions", "pandas"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["chromadb.utils"].embedding_functions = sys.modules["chromadb.utils.embedding_functions"]
    utils = types.ModuleType("chunking_evaluation.utils")
    utils.rigorous_document_search = utils.get_openai_embedding_function = None
    sys.modules["chunking_evaluation"] = types.ModuleType("chunking_evaluation")
    sys.modules["chunking_evaluation.utils"] = utils
    path = os.path.join(repo, "chunking_evaluation", "evaluation_framework", "base_evaluation.py")
    spec = importlib.util.spec_from_file_location("chunking_evaluation_base_evaluation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BaseEvaluation


class Questions:
    """The little of a DataFrame the function reads: `iterrows()` over question rows."""

    def __init__(self, rows):
        self.rows = rows

    def iterrows(self):
        return enumerate(self.rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run")
    parser.add_argument("documents")
    parser.add_argument("questions")
    parser.add_argument("--chunking-evaluation", required=True)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    base = chroma_scores(args.chunking_evaluation)
    evaluation = base.__new__(base)

    with open(args.questions, newline="", encoding="utf-8") as f:
        rows = [dict(r, references=json.loads(r["references"])) for r in csv.DictReader(f)]
    evaluation.questions_df = Questions(rows)
    with open(args.documents, encoding="utf-8") as f:
        docs = {d["doc"]: d["text"] for d in map(json.loads, f)}
    # Per document, the byte offset where each character starts, then its end: a byte offset's
    # character index is its position among them.
    starts = {}
    for doc, text in docs.items():
        at, offsets = 0, []
        for c in text:
            offsets.append(at)
            at += len(c.encode("utf-8"))
        starts[doc] = offsets + [at]

    def chars(doc, byte):
        return bisect.bisect_left(starts[doc], byte)

    def metadata(chunk_id):
        doc, span = chunk_id.rsplit("@", 1)
        start, end = (int(x) for x in span.split("-"))
        return {"start_index": chars(doc, start), "end_index": chars(doc, end), "corpus_id": doc}

    ours = defaultdict(dict)  # cell -> case -> line
    with open(os.path.join(args.run, "per_query.jsonl"), encoding="utf-8") as f:
        for line in map(json.loads, f):
            ours[line["cell"]][line["case"]] = line
    with open(os.path.join(args.run, "matrix.json"), encoding="utf-8") as f:
        matrix = json.load(f)
    labels = {row["cell"]: row["label"] for row in matrix["rows"]}
    ks = sorted({int(m.split("@")[1]) for line in next(iter(ours.values())).values() for m in line["metrics"] if m.startswith("tok_iou@") and not m.endswith("t")})

    worst = 0.0
    table = []
    for cell, cases in sorted(ours.items()):
        for k in ks:
            retrieved = [[metadata(c) for c in cases[f"q{i}"]["top"][:k]] for i in range(len(rows))]
            iou, recall, precision = evaluation._scores_from_dataset_and_retrievals(retrieved, [k] * len(rows))
            diff = 0.0
            for i in range(len(rows)):
                m = cases[f"q{i}"]["metrics"]
                for name, theirs in (("tok_iou", iou[i]), ("tok_recall", recall[i]), ("tok_precision", precision[i])):
                    diff = max(diff, abs(m[f"{name}@{k}"] - theirs))
            worst = max(worst, diff)
            mean = lambda v: sum(v) / len(v)
            table.append((labels.get(cell, cell), k, mean(iou), mean(precision), mean(recall)))
            print(json.dumps({"cell": cell, "k": k, "questions": len(rows), "largest_difference": diff}))
    if args.table:
        print("\n| configuration | k | IoU | precision | recall |\n|---|---:|---:|---:|---:|")
        for label, k, i, p, r in table:
            print(f"| {label} | {k} | {i:.4f} | {p:.4f} | {r:.4f} |")
    sys.exit(1 if worst > 1e-9 else 0)


if __name__ == "__main__":
    main()
