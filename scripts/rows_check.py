#!/usr/bin/env python3
"""One path makes a row (issue 62), checked on a real grid: a fresh run, the rescore of an
older run under the same numbers, and the merge of four shards must write the same rows
(metrics, standing, costs, engine columns), `per_query.jsonl`, `slices.csv` and `cases.jsonl`,
apart from timings. `tests/it/shards.rs` checks the same on a small fixture in CI; this runs it
on an experiment of the repository (default: the LGPD budget grid).

The older run is made before a judgment that changes no number: grade 0 for a section no cell
returned for the first question (rescore refuses to score the same judgments twice). The timed
latency pass is off (`latency_cases = 0`): timings are the only thing allowed to differ.

    scripts/rows_check.py --out /tmp/rows [--experiment experiments/lgpd-budgets.toml] [--shards 4]
"""

import argparse
import json
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIRS = ["--models", str(ROOT / "models"), "--cache", str(ROOT / "cache")]
TIMING = ("_ms", "_s")


def ragsweep(binary, *args, cwd):
    r = subprocess.run([str(binary), *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ragsweep {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def stable(value):
    """`value` without timings and run identities."""
    if isinstance(value, dict):
        return {
            k: stable(v)
            for k, v in value.items()
            if not (k.endswith(TIMING) or k in ("seconds", "wall_seconds", "run_id", "stages", "reused_texts"))
        }
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def write_experiment(source, folder):
    """`source` with its paths absolute, its judgments in `folder` and no timed pass."""
    text = source.read_text()
    for section in ("corpus", "golden"):
        match = re.search(rf'\[{section}\]\npath = "([^"]+)"', text)
        path = (source.parent / match[1]).resolve()
        text = text.replace(match[0], f'[{section}]\npath = "{path}"')
    text = text.replace("[golden]\n", '[golden]\njudgments = "judgments.jsonl"\n', 1)
    text = re.sub(r"(?m)^latency_cases = \d+\n", "", text)
    text = text.replace("\n[corpus]", "\nlatency_cases = 0\n\n[corpus]", 1)
    name = re.search(r'(?m)^name = "([^"]+)"$', text)[1]
    (folder / "experiment.toml").write_text(text)
    return name


def newest(folder):
    runs = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return max(runs, key=lambda p: p.stat().st_mtime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--experiment", type=pathlib.Path, default=ROOT / "experiments" / "lgpd-budgets.toml")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--binary", type=pathlib.Path, default=ROOT / "target" / "debug" / "ragsweep")
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    name = write_experiment(args.experiment.resolve(), args.out)
    run = lambda *extra, out: ragsweep(args.binary, "run", "experiment.toml", "-q", "--out", out, *extra, *DIRS, cwd=args.out)

    run(out="before")
    before = newest(args.out / "before" / name)
    lines = [json.loads(l) for l in (before / "per_query.jsonl").read_text().splitlines() if l.strip()]
    case = lines[0]["case"]
    # Every unit any cell placed for the case, in its top lists or its pool.
    returned = set()
    for line in (l for l in lines if l["case"] == case):
        returned.update(line.get("top", []))
        returned.update(u["id"] for u in line.get("unjudged", []))
    sections = ragsweep(args.binary, "sections", "experiment.toml", "--json", cwd=args.out)
    ids = [s["id"] for s in map(json.loads, filter(str.strip, sections.splitlines())) if "#" in s["id"]]
    unseen = next(i for i in reversed(ids) if not any(r.startswith(i) or i.startswith(r) for r in returned))
    (args.out / "judgments.jsonl").write_text(json.dumps({"case": case, "id": unseen, "grade": 0, "who": "rows-check"}) + "\n")

    run(out="fresh")
    fresh = newest(args.out / "fresh" / name)
    for i in range(1, args.shards + 1):
        run("--shard", f"{i}/{args.shards}", out="shards")
    shards = sorted(p for p in (args.out / "shards" / name).iterdir() if p.is_dir() and not p.name.startswith("."))
    ragsweep(args.binary, "merge", "experiment.toml", *shards, "--out", "merged", *DIRS, cwd=args.out)
    merged = newest(args.out / "merged" / name)
    ragsweep(args.binary, "rescore", before, *DIRS, cwd=args.out)
    rescored = newest(args.out / "before" / name)

    rows = lambda d: stable(json.loads((d / "matrix.json").read_text())["rows"])
    expected = rows(fresh)
    report = {"experiment": str(args.experiment), "rows": len(expected), "judged": unseen, "case": case, "checks": {}}
    failed = False
    for label, d in (("before (the judgment changes no number)", before), ("rescore", rescored), ("merge", merged)):
        same = rows(d) == expected
        report["checks"][f"{label}: rows"] = same
        failed |= not same
        if label.startswith("before"):
            continue
        for file in ("per_query.jsonl", "slices.csv", "cases.jsonl"):
            same = (d / file).read_bytes() == (fresh / file).read_bytes()
            report["checks"][f"{label}: {file}"] = same
            failed |= not same
    print(json.dumps(report, indent=2))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
