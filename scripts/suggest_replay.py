#!/usr/bin/env python3
"""How many people's grades decision order needs with a chat model's suggestions (issue 63).

The LGPD budget grid and its complete oracle, set up as `judge_replay.py` does (seeds draw the
reserved split). Per seed: the full pool's decision (every unit graded by the oracle); decision
order replayed from the oracle without suggestions, then with a simulated model's suggestions
(the oracle's grade of each pooled unit replaced at random with probability p, p calibrated to a
target weighted κ; `ppi_replay.py`'s model) in suggestions.jsonl, which classes the units left.
Reported: after how many grades the stop rule speaks, and whether what it says holds for the
full pool.

    scripts/suggest_replay.py --out /tmp/suggest [--seeds 7 11 23] [--kappas 0.4 0.6 0.8] [--draws 5]
"""

import argparse
import json
import pathlib
import random
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import judge_replay  # noqa: E402
from ppi_replay import DIRS, calibrate, flipped, kappa, oracle_pool, write_suggestions  # noqa: E402
from ppi_replay import ragsweep as run_ragsweep  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[7, 11, 23])
    ap.add_argument("--kappas", type=float, nargs="+", default=[0.4, 0.6, 0.8])
    ap.add_argument("--draws", type=int, default=5, help="simulated models per κ and seed")
    ap.add_argument("--binary", type=pathlib.Path, default=ROOT / "target" / "debug" / "ragsweep")
    args = ap.parse_args()
    dirs = DIRS

    def ragsweep(*a, cwd):
        run_ragsweep(args.binary, *a, cwd=cwd)

    for seed in args.seeds:
        folder = args.out / f"lgpd-{seed}"
        run, items = oracle_pool(args.binary, folder, seed)
        grades = [i["grade"] for i in items]

        def replay(order, suggestions):
            (folder / "judgments.jsonl").unlink(missing_ok=True)
            (folder / "suggestions.jsonl").unlink(missing_ok=True)
            if suggestions is not None:
                write_suggestions(folder, items, suggestions)
            ragsweep("judge", run, "--order", order, "--replay", "oracle.jsonl", "--trace", "trace.jsonl",
                     "--who", "oracle", *dirs, cwd=folder)
            return judge_replay.trace(folder / "trace.jsonl")

        full = replay("returned", None)
        final = judge_replay.decision(full[-1])

        def spoke(lines):
            line = next((l for l in lines if l["verdict"] not in ("open", None)), None)
            if line is None:
                return None, None
            if line["verdict"] in ("settled", "confident"):
                holds = line["pick"] == final[0]
            else:
                holds = all(c in final[1] for c in line["between"])
            return line["judged"], holds

        base = spoke(replay("decision", None))
        print(json.dumps({"seed": seed, "pool": len(items), "final": final, "without": base}), flush=True)
        for target in args.kappas:
            p = calibrate(grades, target)
            results = []
            for draw in range(args.draws):
                model = flipped(grades, p, random.Random(100 * seed + draw))
                results.append((kappa(list(zip(grades, model))), *spoke(replay("decision", model))))
            print(json.dumps({"seed": seed, "kappa_target": target, "runs": results}), flush=True)


if __name__ == "__main__":
    main()
