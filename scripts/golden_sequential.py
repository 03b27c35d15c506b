#!/usr/bin/env python3
"""Golden values for the adaptive verdict's betting test (Sources/WeheStatistics/BettingTest.swift).

Run from the package root:  python3 scripts/golden_sequential.py
Writes Tests/WeheStatisticsTests/Golden/sequential.json. The Swift tests read it and never call Python.

Independent of the Swift code:
- wealth: exact rational arithmetic (fractions.Fraction) of the mixture (1/K) * sum_k prod_i (1 + lam_k * s * x_i),
  x_i = clip((d_i - shift) / scale, -1, 1), lam_k = (2k - 1) / (2K), s = +1 ("greater") or -1 ("less"); its
  logarithm at 50 digits (mpmath). Every prefix of the sequence is stored (the wealth's path).
- interval bounds: products in floating point (no logarithms), roots of W(delta) = 2 / alpha by Brent's method
  (scipy.optimize.brentq) instead of the Swift bisection.
- fewest rounds: the smallest n with (1/K) * sum_k (1 + lam_k)^n >= 1 / level, exactly.
Values are stored as JSON numbers (repr, so they round-trip); infinities as the strings "inf" and "-inf".
"""

import json
import math
import os
from fractions import Fraction

import mpmath
import numpy as np
from scipy.optimize import brentq

OUT = os.path.join(os.path.dirname(__file__), "..", "Tests", "WeheStatisticsTests", "Golden", "sequential.json")
mpmath.mp.dps = 50


def bets(count):
    return [Fraction(2 * k - 1, 2 * count) for k in range(1, count + 1)]


def clip_exact(value):
    return max(Fraction(-1), min(Fraction(1), value))


def exact_log_wealth_path(differences, shift, scale, side, count):
    sign = 1 if side == "greater" else -1
    lams = bets(count)
    products = [Fraction(1)] * count
    path = []
    for d in differences:
        x = sign * clip_exact((Fraction(d) - Fraction(shift)) / Fraction(scale))
        products = [p * (1 + lam * x) for p, lam in zip(products, lams)]
        wealth = sum(products) / count
        value = mpmath.log(mpmath.mpf(wealth.numerator)) - mpmath.log(mpmath.mpf(wealth.denominator))
        path.append(float(value))
    return path


def float_wealth(differences, delta, scale, side, count):
    sign = 1.0 if side == "greater" else -1.0
    lams = np.array([(2 * k - 1) / (2 * count) for k in range(1, count + 1)])
    x = sign * np.clip((np.asarray(differences) - delta) / scale, -1.0, 1.0)
    return float(np.mean(np.prod(1.0 + np.outer(lams, x), axis=1)))


def interval(differences, alpha, scale, count):
    threshold = 2.0 / alpha
    bottom = min(differences) - scale
    top = max(differences) + scale
    lower = -math.inf
    if float_wealth(differences, bottom, scale, "greater", count) >= threshold:
        lower = brentq(lambda t: float_wealth(differences, t, scale, "greater", count) - threshold, bottom, top,
                       xtol=1e-15, rtol=8.9e-16, maxiter=500)
    upper = math.inf
    if float_wealth(differences, top, scale, "less", count) >= threshold:
        upper = brentq(lambda t: float_wealth(differences, t, scale, "less", count) - threshold, bottom, top,
                       xtol=1e-15, rtol=8.9e-16, maxiter=500)
    return lower, upper


def fewest(level, count):
    lams = bets(count)
    target = 1 / Fraction(level)
    n = 0
    while n < 1000:
        n += 1
        if sum((1 + lam) ** n for lam in lams) / count >= target:
            return n
    return None


def num(x):
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def main():
    rng = np.random.default_rng(2029)
    normal = lambda loc, sd, n: [float(v) for v in rng.normal(loc, sd, n)]
    sequences = {
        "concordant-slower": [-0.3] * 14,
        "concordant-faster-small": [0.004] * 12,
        "clip-edges": [0.1, -0.1, 0.0, 0.25, -0.05, 0.1, 0.2, -0.3, 0.0, 0.1],
        "unthrottled-noisy": normal(0.0, 0.2, 30),
        "slowed-10pct": normal(math.log(0.9), 0.05, 25),
        "slowed-3pct-calm": normal(math.log(0.97), 0.01, 40),
        "faster-mixed": normal(0.08, 0.15, 20),
        "tiny-bias": normal(0.0015, 0.0005, 24),
    }
    wealth_cases = []
    specs = [
        ("concordant-slower", 0.0, 0.1, "less", 50),
        ("concordant-slower", 0.0, 0.1, "greater", 50),
        ("concordant-slower", 0.0, 0.1, "less", 1),
        ("concordant-faster-small", 0.0, 0.1, "greater", 50),
        ("clip-edges", 0.0, 0.1, "greater", 50),
        ("clip-edges", -0.05, 0.1, "less", 10),
        ("unthrottled-noisy", 0.0, 0.1, "less", 50),
        ("unthrottled-noisy", 0.0, 0.5, "greater", 50),
        ("slowed-10pct", 0.0, 0.1, "less", 50),
        ("slowed-10pct", math.log(0.95), 0.1, "greater", 50),
        ("slowed-3pct-calm", math.log(0.95), 0.1, "greater", 50),
        ("slowed-3pct-calm", math.log(1.05), 0.1, "less", 50),
        ("faster-mixed", 0.0, 0.1, "greater", 20),
        ("tiny-bias", 0.0, 0.1, "greater", 50),
    ]
    for name, shift, scale, side, count in specs:
        values = sequences[name]
        wealth_cases.append({
            "kind": "wealth", "name": name, "differences": values, "shift": shift, "scale": scale, "side": side,
            "bets": count, "logWealthPath": exact_log_wealth_path(values, shift, scale, side, count),
        })
    interval_specs = [
        ("concordant-slower", 0.01, 0.1, 50),
        ("clip-edges", 0.05, 0.1, 50),
        ("unthrottled-noisy", 0.01, 0.1, 50),
        ("unthrottled-noisy", 0.05, 0.5, 50),
        ("slowed-10pct", 0.01, 0.1, 50),
        ("slowed-3pct-calm", 0.01, 0.1, 50),
        ("faster-mixed", 0.01, 0.1, 20),
        ("tiny-bias", 0.01, 0.1, 50),
    ]
    for name, alpha, scale, count in interval_specs:
        for prefix in sorted({5, 12, len(sequences[name])}):
            values = sequences[name][:prefix]
            if len(values) < prefix:
                continue
            lower, upper = interval(values, alpha, scale, count)
            wealth_cases.append({
                "kind": "interval", "name": f"{name}[:{prefix}]", "differences": values, "alpha": alpha,
                "scale": scale, "bets": count, "lower": num(lower), "upper": num(upper),
            })
    for level, count in [(0.005, 50), (0.01, 50), (0.05, 50), (0.005, 1), (0.005, 10)]:
        wealth_cases.append({"kind": "fewest", "level": level, "bets": count, "rounds": fewest(level, count)})
    payload = {"generator": "scripts/golden_sequential.py (fractions, mpmath 50 digits, scipy.optimize.brentq)",
               "cases": wealth_cases}
    with open(OUT, "w", encoding="utf-8") as handle:
        handle.write('{\n"generator": ' + json.dumps(payload["generator"]) + ',\n"cases": [\n')
        handle.write(",\n".join(json.dumps(case, separators=(",", ":")) for case in payload["cases"]))
        handle.write("\n]\n}\n")
    print(f"wrote {len(wealth_cases)} cases to {os.path.normpath(OUT)}")
    for case in wealth_cases:
        if case["kind"] == "interval":
            print(f"  interval {case['name']}: {case['lower']} .. {case['upper']}")
        elif case["kind"] == "fewest":
            print(f"  fewest rounds at level {case['level']} with {case['bets']} bets: {case['rounds']}")


if __name__ == "__main__":
    main()
