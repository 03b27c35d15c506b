#!/usr/bin/env python3
"""The fewest rounds the adaptive rule could need for "no differentiation", from a run's own rounds.

Reads accuracy-bench records (`scripts/accuracy.sh` with ADAPTIVE=1 writes one JSON object per run, with the rounds'
mean rates in `roundOriginalMeansMbps` and `roundControlMeansMbps`) and prints, per condition and run, how many
rounds like that run's the client's equivalence rule would need at the least, beside what the run did.

Why it is a floor: each margin wealth of the rule (`AdaptiveAnalysis`, Docs/testbed.md "Adaptive verdict") is an
average of constant bets on the clipped rounds, x = clip((d - ln 0.95) / 0.05, -1, 1) for the lower margin and
x = clip((ln 1.05 - d) / 0.05, -1, 1) for the upper one, with d = ln(original / control) and 0.05 the client's
clipping scale. An average never exceeds its largest term, so no margin wealth exceeds the best constant bet chosen
in hindsight. If the rounds kept coming as they came, that bet's wealth would grow by g per round on average (its
mean log growth), and reaching 40 (= 2 / 0.05, the client's equivalence level) on both margins takes ln 40 / g
rounds for the worse margin. A run whose rounds give g <= 0 on a margin never gets there ("never").

Usage: scripts/equivalence_floor.py RESULTS.jsonl [...]
"""
import json
import math
import sys
from collections import defaultdict

LOWER, UPPER = math.log(0.95), math.log(1.05)
SCALE = 0.05
LEVEL = 40.0


def best_growth(values):
    """The largest mean log growth of a constant stake in (0, 1) on `values` (a grid of 999 stakes)."""
    best = 0.0
    for step in range(1, 1000):
        stake = step / 1000
        growth = sum(math.log1p(stake * value) for value in values) / len(values)
        best = max(best, growth)
    return best


def floor_rounds(differences):
    clip = lambda value: max(-1.0, min(1.0, value))
    lower = [clip((d - LOWER) / SCALE) for d in differences]
    upper = [clip((UPPER - d) / SCALE) for d in differences]
    growth = min(best_growth(lower), best_growth(upper))
    return math.ceil(math.log(LEVEL) / growth) if growth > 0 else None


def main(paths):
    if not paths:
        sys.exit(__doc__)
    by_condition = defaultdict(list)
    for path in paths:
        with open(path) as handle:
            for line in handle:
                if not line.strip():
                    continue
                record = json.loads(line)
                originals = record.get("roundOriginalMeansMbps") or []
                controls = record.get("roundControlMeansMbps") or []
                differences = [math.log(o / c) for o, c in zip(originals, controls) if o > 0 and c > 0]
                if len(differences) < 3:
                    continue
                by_condition[record.get("condition", "?")].append(
                    (floor_rounds(differences), record.get("stopReason"), len(differences)))
    for condition, runs in sorted(by_condition.items()):
        runs.sort(key=lambda run: math.inf if run[0] is None else run[0])
        print(f"{condition}: {len(runs)} runs (floor / rounds run / stop)")
        for floor, stop, rounds in runs:
            print(f"  {'never' if floor is None else floor:>6} / {rounds:>3} / {stop}")


if __name__ == "__main__":
    main(sys.argv[1:])
