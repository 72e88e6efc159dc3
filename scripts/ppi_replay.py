#!/usr/bin/env python3
"""Measures `ragsweep ppi` against a complete judgment set (issue 63).

The LGPD budget grid (`experiments/lgpd-budgets.toml`) and its oracle
(`experiments/lgpd/oracle.jsonl`: every answerable question graded against all 80 articles) as
`judge_replay.py` sets them up. The whole pool graded by the oracle gives each cell's true mean
(the people-only mean once everything is judged). Then, per target agreement κ and seed:

- a simulated chat model: the oracle's grade of each pooled unit, replaced with probability p by
  another grade drawn at random (p calibrated on the pool to the target quadratically weighted
  κ), written to suggestions.jsonl as `model:sim`;
- people: `judge --order sample --seed S --replay` answers a share of the pool from the oracle,
  case by case in a random order;
- `ragsweep ppi`: each cell's PPI interval, checked against the true mean.

Reported per κ and share: how often the 95 % intervals cover the true means (over cells and
seeds), their mean width, and the people-only mean's error for comparison.

    scripts/ppi_replay.py --out /tmp/ppi [--kappas 0.4 0.6 0.8] [--seeds 20] [--shares 0.25 0.5]
"""

import argparse
import json
import pathlib
import random
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import judge_replay  # noqa: E402


def ragsweep(binary, *args, cwd):
    r = subprocess.run([str(binary), *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ragsweep {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


DIRS = ["--models", ROOT / "models", "--cache", ROOT / "cache"]


def oracle_pool(binary, folder, seed):
    """The LGPD budget grid run with `seed` in `folder`, its whole pool exported and graded by
    the oracle into oracle.jsonl: the run directory and the graded pool items."""
    shutil.rmtree(folder, ignore_errors=True)
    judge_replay.write_lgpd_experiment(folder, seed)
    ragsweep(binary, "run", "experiment.toml", "--out", "results", "-q", *DIRS, cwd=folder)
    run = folder / "results" / f"replay-budgets-{seed}" / "latest"
    ragsweep(binary, "judge", run, "--order", "returned", "--export", "pool.jsonl", *DIRS, cwd=folder)
    oracle = judge_replay.lgpd_oracle()
    items = [json.loads(line) for line in open(folder / "pool.jsonl")]
    for item in items:
        item["grade"] = dict(oracle.get(item["case"], [])).get(item["id"], 0)
    with open(folder / "oracle.jsonl", "w") as f:
        f.writelines(json.dumps(i) + "\n" for i in items)
    return run, items


def write_suggestions(folder, items, grades):
    """A simulated chat model's grades of the pool items, as `judge --suggest` stores them."""
    with open(folder / "suggestions.jsonl", "w") as f:
        for item, g in zip(items, grades):
            f.write(json.dumps({"case": item["case"], "id": item["id"], "grade": g, "note": "sim",
                                "who": "model:sim", "when": "20261205T000000Z"}) + "\n")


def kappa(pairs):
    """Quadratically weighted Cohen's κ over (a, b) grades 0..2."""
    n = len(pairs)
    rows = [sum(1 for a, _ in pairs if a == g) for g in range(3)]
    cols = [sum(1 for _, b in pairs if b == g) for g in range(3)]
    w = lambda i, j: ((i - j) / 2) ** 2
    observed = sum(w(a, b) for a, b in pairs)
    expected = sum(w(i, j) * rows[i] * cols[j] / n for i in range(3) for j in range(3))
    return 1 - observed / expected if expected else None


def flipped(grades, p, rng):
    return [rng.choice([x for x in range(3) if x != g]) if rng.random() < p else g for g in grades]


def calibrate(grades, target):
    """The flip probability whose expected κ against `grades` is `target` (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        ks = [kappa(list(zip(grades, flipped(grades, mid, random.Random(s))))) for s in range(20)]
        if sum(ks) / len(ks) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def ppi_rows(text):
    rows = {}
    for line in text.splitlines():
        if not re.match(r"^\| c\d+ \|", line):
            continue
        cols = [c.strip() for c in line.split("|")]
        m = re.match(r"([-\d.]+) \[([-\d.]+), ([-\d.]+)\]", cols[4])
        rows[cols[1]] = {"people": float(cols[2]), "model": float(cols[3]),
                         "ppi": tuple(map(float, m.groups())) if m else None}
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--kappas", type=float, nargs="+", default=[0.4, 0.6, 0.8])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--shares", type=float, nargs="+", default=[0.25, 0.5])
    ap.add_argument("--binary", type=pathlib.Path, default=ROOT / "target" / "debug" / "ragsweep")
    args = ap.parse_args()
    dirs = DIRS
    folder = args.out / "lgpd"
    run, items = oracle_pool(args.binary, folder, 7)
    grades = [i["grade"] for i in items]

    def suggest(values):
        write_suggestions(folder, items, values)

    def judge(*extra):
        (folder / "judgments.jsonl").unlink(missing_ok=True)
        ragsweep(args.binary, "judge", run, "--replay", "oracle.jsonl", "--who", "oracle", *extra, *dirs, cwd=folder)

    # The truth: every pooled unit graded by the oracle.
    suggest(grades)
    judge("--order", "returned", "--whole-pool")
    truth = {c: r["people"] for c, r in ppi_rows(ragsweep(args.binary, "ppi", run, *dirs, cwd=folder)).items()}
    (folder / "judgments.jsonl").unlink(missing_ok=True)
    # The people-only means with no judging: what a run reports.
    suggest(grades)
    judge("--order", "returned", "--limit", "0")
    untouched = {c: r["people"] for c, r in ppi_rows(ragsweep(args.binary, "ppi", run, *dirs, cwd=folder)).items()}
    report = {"pool": len(items), "truth": truth, "unjudged_people_only": untouched, "runs": []}
    print(json.dumps({"pool": len(items), "truth": truth, "people_only_before_judging": untouched}), flush=True)
    for target in args.kappas:
        p = calibrate(grades, target)
        for share in args.shares:
            limit = int(share * len(items))
            covered, total, widths, kappas, people_err, ppi_err = 0, 0, [], [], [], []
            for seed in range(1, args.seeds + 1):
                model = flipped(grades, p, random.Random(1000 + seed))
                kappas.append(kappa(list(zip(grades, model))))
                suggest(model)
                judge("--order", "sample", "--seed", seed, "--limit", limit)
                rows = ppi_rows(ragsweep(args.binary, "ppi", run, *dirs, cwd=folder))
                for cell, row in rows.items():
                    if row["ppi"] is None:
                        continue
                    mean, lo, hi = row["ppi"]
                    total += 1
                    covered += lo <= truth[cell] <= hi
                    widths.append(hi - lo)
                    people_err.append(abs(row["people"] - truth[cell]))
                    ppi_err.append(abs(mean - truth[cell]))
            line = {"kappa_target": target, "kappa": sum(kappas) / len(kappas), "share": share,
                    "judged": limit, "coverage": covered / max(total, 1), "intervals": total,
                    "mean_width": sum(widths) / max(len(widths), 1),
                    "people_only_mean_error": sum(people_err) / max(len(people_err), 1),
                    "ppi_mean_error": sum(ppi_err) / max(len(ppi_err), 1)}
            report["runs"].append(line)
            print(json.dumps(line), flush=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
