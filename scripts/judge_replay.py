#!/usr/bin/env python3
"""Replays a complete judgment set in decision order and in most-returned order (issue 45).

Two corpora with complete judgments:

- `lexical` and `mixed` (NFCorpus, decided on nDCG@10). NFCorpus's test qrels judge many
  documents per question (graded 1/2). The golden set given to ragsweep keeps one label per
  question (its first highest-graded document), as a BEIR import or a first labelling pass
  would; the rest of the qrels are the oracle (a pooled document they do not name is 0).
- `budgets` (the LGPD statute, `experiments/lgpd-budgets.toml`: three chunkers × BM25, e5 and
  their hybrid, decided on `recall@1024t`, an equal-context cut). The oracle is
  `experiments/lgpd/oracle.jsonl`: each answerable question graded against all 80 articles of
  the statute once (2 answers it, 1 helps, an article not named is 0). The seed draws the
  reserved split; the golden set keeps its one label per question.

The whole pool of the run is exported once and graded from the oracle. Then `ragsweep judge
--replay` answers from it, once in decision order and once in the pool's most-returned order,
each writing a trace of the decision after every answer.

Reported per grid and seed: the pool's size; after how many judgments each order reaches, for
good, the full pool's decision (the pick when every other cell is shown worse, else the set of
cells not shown worse), its pick, and both; where the stop rule speaks in decision order,
whether what it says holds for the full pool, whether the decision then is the full pool's, and
whether each cell's standing then (worse or not) is the full pool's, but for the cells whose
standing the rule says is still open.

    scripts/judge_replay.py --out /tmp/replay [--seeds 7 11 23] [--grids lexical mixed budgets] [--rejudge]

`--rejudge` keeps the runs and oracles of an earlier call in `--out` and replays the judging
only (after a change to the judging order or the stop rule).
"""

import argparse
import csv
import json
import random
import re
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
NFCORPUS = (ROOT / ".." / "shared" / "corpora" / "nfcorpus").resolve()
LGPD = ROOT / "experiments" / "lgpd-budgets.toml"
LGPD_ORACLE = ROOT / "experiments" / "lgpd" / "oracle.jsonl"
BINARY = ROOT / "target" / "release" / "ragsweep"

GRIDS = {
    # Near neighbours: BM25 settings that rarely separate.
    "lexical": """
[[retrievers]]
kind = "bm25"
k1 = [0.9, 1.2, 2.0]
b = [0.4, 0.75]
""",
    # Different families: lexical, two dense models, a hybrid.
    "mixed": """
[[retrievers]]
kind = "bm25"

[[retrievers]]
kind = "dense"
model = ["minilm-l6", "e5-small"]

[[retrievers]]
kind = "hybrid"
model = "minilm-l6"
fusion = "rrf"
""",
}


def qrels():
    out = {}
    with open(NFCORPUS / "qrels" / "test.tsv") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            out.setdefault(row["query-id"], []).append((row["corpus-id"], int(row["score"])))
    return out


def questions():
    out = {}
    with open(NFCORPUS / "queries.jsonl") as f:
        for line in f:
            q = json.loads(line)
            out[q["_id"]] = q["text"]
    return out


def lgpd_oracle():
    out = {}
    with open(LGPD_ORACLE) as f:
        for line in f:
            case = json.loads(line)
            out[case["id"]] = list(case["grades"].items())
    return out


def write_lgpd_experiment(folder, seed):
    """The budget grid as the repository declares it, with its paths made absolute and the seed replaced."""
    folder.mkdir(parents=True, exist_ok=True)
    text = LGPD.read_text()
    corpus = (LGPD.parent / re.search(r'\[corpus\]\npath = "([^"]+)"', text)[1]).resolve()
    golden = (LGPD.parent / re.search(r'\[golden\]\npath = "([^"]+)"', text)[1]).resolve()
    # Judgments are written beside the golden set: a copy keeps them out of the repository.
    shutil.copy(golden, folder / "golden.jsonl")
    text = re.sub(r'(\[corpus\]\npath = )"[^"]+"', lambda m: f'{m[1]}"{corpus}"', text)
    text = re.sub(r'(\[golden\]\npath = )"[^"]+"', r'\1"golden.jsonl"', text)
    text = re.sub(r"(?m)^seed = \d+$", f"seed = {seed}", text)
    text = re.sub(r'(?m)^name = "[^"]+"$', f'name = "replay-budgets-{seed}"', text)
    (folder / "experiment.toml").write_text(text)


def write_experiment(folder, grid, seed, labels, texts, questions):
    if grid == "budgets":
        return write_lgpd_experiment(folder, seed)
    folder.mkdir(parents=True, exist_ok=True)
    chosen = sorted(random.Random(seed).sample(sorted(labels), questions))
    with open(folder / "golden.jsonl", "w") as f:
        for qid in chosen:
            docs = labels[qid]
            best = max(g for _, g in docs)
            first = next(d for d, g in docs if g == best)
            f.write(json.dumps({"id": qid, "question": texts[qid], "relevant": [{"id": first, "grade": best}]}) + "\n")
    (folder / "experiment.toml").write_text(
        f"""name = "replay-{grid}-{seed}"
unit = "doc"
k = [10]
metrics = ["ndcg", "hit"]
seed = {seed}
reserved_fraction = 0.3

[corpus]
path = "{NFCORPUS}"

[golden]
path = "golden.jsonl"

[[chunkers]]
kind = "none"
title = true
"""
        + GRIDS[grid]
    )


def ragsweep(*args, cwd):
    r = subprocess.run([str(BINARY), *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ragsweep {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}")
    return r


def trace(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def decision(line):
    return (line["pick"], tuple(sorted(line["not_worse"])))


def cells(lines):
    """Every cell a trace names."""
    return sorted({c for line in lines for c in line["not_worse"] + [line["pick"]] if c})


def outcome(line):
    """What is decided: the pick when every other cell is shown worse, else which cells are not."""
    return line["pick"] if len(line["not_worse"]) == 1 else tuple(sorted(line["not_worse"]))


def reached(lines, final, of=decision):
    """Judgments after which `of` the decision equals `final` and stays so."""
    at = None
    for line in lines:
        if of(line) == final:
            at = line["judged"] if at is None else at
        else:
            at = None
    return at


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[7, 11, 23])
    ap.add_argument("--grids", nargs="+", default=[*GRIDS, "budgets"])
    ap.add_argument("--questions", type=int, default=100, help="questions drawn (by seed) from the 323")
    ap.add_argument("--rejudge", action="store_true", help="reuse the runs and oracles already in --out")
    args = ap.parse_args()
    nfcorpus = (qrels(), questions())
    lgpd = (lgpd_oracle(), {})
    env_dirs = ["--models", ROOT / "models", "--cache", ROOT / "cache"]
    report = []
    for grid in args.grids:
        for seed in args.seeds:
            labels, texts = lgpd if grid == "budgets" else nfcorpus
            folder = args.out / f"{grid}-{seed}"
            run = folder / "results" / f"replay-{grid}-{seed}" / "latest"
            if not args.rejudge:
                shutil.rmtree(folder, ignore_errors=True)
                write_experiment(folder, grid, seed, labels, texts, args.questions)
                ragsweep("run", "experiment.toml", "--out", "results", "-q", *env_dirs, cwd=folder)
                ragsweep("judge", run, "--order", "returned", "--export", "pool.jsonl", *env_dirs, cwd=folder)
                with open(folder / "pool.jsonl") as f, open(folder / "oracle.jsonl", "w") as out:
                    for line in f:
                        item = json.loads(line)
                        item["grade"] = dict(labels.get(item["case"], [])).get(item["id"], 0)
                        out.write(json.dumps(item) + "\n")
            traces = {}
            for order in ["decision", "returned"]:
                (folder / "judgments.jsonl").unlink(missing_ok=True)
                ragsweep(
                    "judge", run, "--order", order, "--replay", "oracle.jsonl", "--whole-pool",
                    "--trace", f"trace-{order}.jsonl", "--who", "oracle", *env_dirs, cwd=folder,
                )
                traces[order] = trace(folder / f"trace-{order}.jsonl")
            pool = traces["returned"][0]["left"]
            final = decision(traces["returned"][-1])
            assert decision(traces["decision"][-1]) == final, "both orders end on the same labels"
            decided = outcome(traces["returned"][-1])
            spoke = next((line for line in traces["decision"] if line["verdict"] not in ("open", None)), None)
            holds = None
            if spoke is not None:
                if spoke["verdict"] in ("settled", "confident"):
                    holds = spoke["pick"] == final[0]
                else:
                    holds = all(c in final[1] for c in spoke["between"])
            row = {
                "grid": grid,
                "seed": seed,
                "pool": pool,
                "final_pick": final[0],
                "final_not_worse": list(final[1]),
                "decision_order_decides": reached(traces["decision"], decided, outcome),
                "returned_order_decides": reached(traces["returned"], decided, outcome),
                "decision_order_reaches": reached(traces["decision"], final),
                "decision_order_pick": reached(traces["decision"], final[0], lambda line: line["pick"]),
                "returned_order_reaches": reached(traces["returned"], final),
                "returned_order_pick": reached(traces["returned"], final[0], lambda line: line["pick"]),
                "stop_rule": spoke and spoke["verdict"],
                "stop_after": spoke and spoke["judged"],
                "stop_pick": spoke and spoke["pick"],
                "stop_holds": holds,
                "decided_when_spoken": spoke is not None and outcome(spoke) == decided,
                # The cells whose standing the rule left open, and whether every other cell's
                # standing when it spoke (worse or not) is the full pool's.
                "stop_open": spoke and spoke.get("open", []),
                "standing_holds": spoke is not None
                and all(
                    (c in spoke["not_worse"]) == (c in final[1])
                    for c in cells(traces["returned"])
                    if c not in spoke.get("open", [])
                ),
            }
            report.append(row)
            print(json.dumps(row), flush=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
