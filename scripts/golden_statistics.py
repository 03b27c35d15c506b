#!/usr/bin/env python3
"""Golden values for Tests/WeheStatisticsTests, computed with SciPy/NumPy.

Run from the package root:  python3 scripts/golden_statistics.py
Writes Tests/WeheStatisticsTests/Golden/*.json. The Swift tests read these files and never call Python.

Sample lists are stored either literally ({"values": [...]}) or as a generator description that the Swift tests
replay bit for bit. Every generator draws 64-bit words from splitmix64 started at `seed` and uses only IEEE
+, -, * (correctly rounded everywhere), so Python and Swift produce identical doubles:

  u(w)      = (w >> 11) * 2**-53                      a double in [0, 1)
  uniform   : lo + (hi - lo) * u(w)
  grid      : lo + step * (w % levels)                 (ties)
  irwinhall : loc + scale * (u1 + u2 + u3 + u4 - 2)    (bell-shaped, evaluated left to right)

Each generated list also stores `first`, `last` and `fsum` (math.fsum) so the tests can check the replay.
Non-finite numbers are written as the strings "nan", "inf", "-inf".
"""

import json
import math
import os
import sys
import warnings
from fractions import Fraction

import numpy as np
import scipy
import scipy.special as sc
import scipy.stats as st

OUT = os.path.join(os.path.dirname(__file__), "..", "Tests", "WeheStatisticsTests", "Golden")
MASK = (1 << 64) - 1


# ---------------------------------------------------------------------------------------------------------------
# deterministic generators (mirrored in Tests/WeheStatisticsTests/GoldenData.swift)

def splitmix_stream(seed):
    state = seed & MASK
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def unit(word):
    return float(word >> 11) * 2.0 ** -53


def generate(spec):
    if "values" in spec:
        return [float(v) for v in spec["values"]]
    stream = splitmix_stream(spec["seed"])
    n = spec["n"]
    kind = spec["gen"]
    out = []
    for _ in range(n):
        if kind == "uniform":
            lo, hi = float(spec["lo"]), float(spec["hi"])
            out.append(lo + (hi - lo) * unit(next(stream)))
        elif kind == "grid":
            out.append(float(spec["lo"]) + float(spec["step"]) * float(next(stream) % spec["levels"]))
        elif kind == "irwinhall":
            u1, u2, u3, u4 = (unit(next(stream)) for _ in range(4))
            out.append(float(spec["loc"]) + float(spec["scale"]) * (u1 + u2 + u3 + u4 - 2.0))
        else:
            raise ValueError(kind)
    return out


def sample(spec):
    """The spec as stored in JSON, with replay checks for generated lists."""
    values = generate(spec)
    if "values" in spec:
        return {"values": [num(v) for v in values]}, values
    stored = dict(spec)
    stored.update({"first": values[0], "last": values[-1], "fsum": math.fsum(values)})
    return stored, values


def uniform(seed, n, lo, hi):
    return {"gen": "uniform", "seed": seed, "n": n, "lo": lo, "hi": hi}


def grid(seed, n, lo, step, levels):
    return {"gen": "grid", "seed": seed, "n": n, "lo": lo, "step": step, "levels": levels}


def bell(seed, n, loc, scale):
    return {"gen": "irwinhall", "seed": seed, "n": n, "loc": loc, "scale": scale}


def lit(values):
    return {"values": list(values)}


def num(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def cyc(b, s, n=100, m=10):
    """analysis.md section 8 input generator."""
    return [b + s * (((7 * k) % m) - (m - 1) / 2) for k in range(n)]


def write(name, payload):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name)
    with open(path, "w") as handle:
        handle.write('{\n"generator": ' + json.dumps(payload["generator"]) + ',\n"cases": [\n')
        handle.write(",\n".join(json.dumps(case, separators=(",", ":")) for case in payload["cases"]))
        handle.write("\n]\n}\n")
    print(f"{name}: {len(payload['cases'])} cases, {os.path.getsize(path)} bytes")


HEADER = f"scripts/golden_statistics.py, scipy {scipy.__version__}, numpy {np.__version__}"


# ---------------------------------------------------------------------------------------------------------------
# Kolmogorov-Smirnov

def ks_cases():
    pairs = []  # (id, spec a, spec b, method)
    hand = [
        ([1, 2, 3], [4, 5, 6]),
        (list(range(1, 9)), [9, 10]),
        ([1, 2, 3, 4], [2.5, 5, 6]),
        ([1, 1, 2, 2, 3], [1, 2, 2, 3, 3, 3]),
        (list(range(1, 11)), [k + 0.5 for k in range(3, 13)]),
        ([5.0], [5.0]),
        ([1.0], [2.0]),
        ([1.0], [0.5, 1.5, 2.5, 3.5, 4.5]),
        ([3.0], [0.5, 1.5, 2.5, 3.5, 4.5]),
        ([2.0, 2.0, 2.0], [2.0, 2.0]),
        ([0.0] * 4 + [1.0] * 3, [0.0] * 2 + [1.0] * 6),
        (cyc(1.5, 0.0625), cyc(8, 0.25)),
        (cyc(8, 0.25), cyc(8, 0.25, m=11)),
        ([0.5] * 6 + [10.0] * 4, [10.0] * 10),
        ([1.0] * 10 + [5.0] * 6, [5.0] * 16),
        (cyc(7.5, 0.25, n=60), cyc(8, 0.25, n=60, m=11)),
    ]
    for index, (a, b) in enumerate(hand):
        pairs.append((f"hand-{index}", lit(a), lit(b), "auto"))
    # identical samples, n = 1 against many, complete separation at several sizes
    pairs.append(("identical-200", uniform(1, 200, 0, 10), uniform(1, 200, 0, 10), "auto"))
    pairs.append(("one-vs-300", lit([4.25]), uniform(2, 300, 0, 10), "auto"))
    for n1, n2 in [(10, 10), (100, 100), (40, 60), (200, 300), (350, 420), (500, 501), (600, 650)]:
        pairs.append((f"separated-{n1}-{n2}", uniform(3, n1, 0, 1), uniform(4, n2, 2, 3), "auto"))
    # random pairs: same distribution, shifted, ties, zeros, unequal sizes
    seed = 100
    for n1, n2 in [(5, 7), (12, 9), (30, 30), (50, 80), (100, 100), (97, 103), (250, 100), (400, 399), (1000, 700)]:
        for shift in [0.0, 0.05, 0.2, 0.5]:
            pairs.append((f"bell-{n1}-{n2}-{shift}", bell(seed, n1, 5.0, 1.0), bell(seed + 1, n2, 5.0 + shift, 1.0),
                          "auto"))
            seed += 2
    for n1, n2, levels in [(20, 30, 3), (100, 100, 5), (150, 90, 12), (300, 500, 40), (64, 48, 2)]:
        pairs.append((f"grid-{n1}-{n2}-{levels}", grid(seed, n1, 0.0, 0.5, levels),
                      grid(seed + 1, n2, 0.25, 0.5, levels), "auto"))
        seed += 2
    pairs.append(("zeros-mixed", lit([0.0] * 30 + [2.5] * 20 + [3.0] * 10), lit([0.0] * 5 + [3.0] * 40), "auto"))
    # near-boundary tails between 1e-10 and 1e-200
    for n1, n2, shift in [(100, 120, 1.0), (150, 150, 1.6), (300, 250, 2.0), (400, 400, 3.0), (800, 600, 2.5)]:
        pairs.append((f"tail-{n1}-{n2}-{shift}", bell(seed, n1, 0.0, 1.0), bell(seed + 1, n2, shift, 1.0), "auto"))
        seed += 2
    # large exact (auto) and asymptotic
    pairs.append(("large-5000-7000-same", bell(901, 5000, 3.0, 1.0), bell(902, 7000, 3.0, 1.0), "auto"))
    pairs.append(("large-5000-7000-shift", bell(903, 5000, 3.0, 1.0), bell(904, 7000, 3.06, 1.0), "auto"))
    pairs.append(("large-10000-10000", bell(905, 10000, 3.0, 1.0), bell(906, 10000, 3.03, 1.0), "auto"))
    pairs.append(("large-10000-9999", bell(921, 10000, 3.0, 1.0), bell(922, 9999, 3.04, 1.0), "auto"))
    pairs.append(("asymp-10001-8000", bell(907, 10001, 3.0, 1.0), bell(908, 8000, 3.03, 1.0), "auto"))
    pairs.append(("asymp-20000-15000", bell(909, 20000, 3.0, 1.0), bell(910, 15000, 3.02, 1.0), "auto"))
    pairs.append(("asymp-20000-15000-far", bell(911, 20000, 3.0, 1.0), bell(912, 15000, 3.3, 1.0), "auto"))
    pairs.append(("asymp-12000-30", bell(913, 12000, 3.0, 1.0), bell(914, 30, 3.4, 1.0), "auto"))
    pairs.append(("asymp-12000-300", bell(923, 12000, 3.0, 1.0), bell(924, 300, 3.1, 1.0), "auto"))
    pairs.append(("asymp-50000-49999-exact-fallback", bell(915, 50000, 3.0, 1.0), bell(916, 49999, 3.01, 1.0),
                  "exact"))
    pairs.append(("exact-forced-12000-11000", bell(917, 12000, 3.0, 1.0), bell(918, 11000, 3.02, 1.0), "exact"))
    # forced asymptotic on small and medium samples: every branch of the Kolmogorov distribution
    for n1, n2, shift in [(3, 4, 0.0), (10, 10, 0.3), (20, 25, 1.0), (60, 90, 0.4), (200, 220, 0.1),
                          (200, 220, 0.7), (300, 300, 2.5), (1000, 1500, 0.05), (2000, 2000, 0.2)]:
        pairs.append((f"asymp-forced-{n1}-{n2}-{shift}", bell(seed, n1, 0.0, 1.0), bell(seed + 1, n2, shift, 1.0),
                      "asymptotic"))
        seed += 2
    pairs.append(("asymp-forced-separated-30-40", uniform(5, 30, 0, 1), uniform(6, 40, 2, 3), "asymptotic"))
    pairs.append(("exact-forced-small", bell(930, 40, 0.0, 1.0), bell(931, 50, 0.5, 1.0), "exact"))
    # equal sizes (the O(n) reflection sum): small, separated (2/C(1000, 500) ~ 7e-300), ties, large forced exact
    pairs.append(("equal-2-2", lit([1.0, 4.0]), lit([2.0, 3.0]), "auto"))
    pairs.append(("equal-separated-500-500", uniform(7, 500, 0, 1), uniform(8, 500, 2, 3), "auto"))
    for shift in [0.0, 0.1, 0.3]:
        pairs.append((f"equal-bell-1000-1000-{shift}", bell(seed, 1000, 0.0, 1.0), bell(seed + 1, 1000, shift, 1.0),
                      "auto"))
        seed += 2
    pairs.append(("equal-grid-2000-2000-9", grid(seed, 2000, 0.0, 0.5, 9), grid(seed + 1, 2000, 0.0, 0.5, 9),
                  "auto"))
    seed += 2
    pairs.append(("equal-auto-10000-10000-0.2", bell(941, 10000, 3.0, 1.0), bell(942, 10000, 3.2, 1.0), "auto"))
    for n, shift in [(20000, 0.03), (50000, 0.02), (50000, 0.1), (100000, 0.01)]:
        pairs.append((f"equal-forced-{n}-{n}-{shift}", bell(seed, n, 3.0, 1.0), bell(seed + 1, n, 3.0 + shift, 1.0),
                      "exact"))
        seed += 2

    cases = []
    for case_id, spec_a, spec_b, method in pairs:
        stored_a, a = sample(spec_a)
        stored_b, b = sample(spec_b)
        mode = {"auto": "auto", "exact": "exact", "asymptotic": "asymp"}[method]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = st.ks_2samp(a, b, method=mode)
        n1, n2 = len(a), len(b)
        g = math.gcd(n1, n2)
        if method == "auto":
            used = "exact" if max(n1, n2) <= 10000 else "asymptotic"
        elif method == "exact":
            used = "asymptotic" if (n1 // g) >= np.iinfo(np.int32).max / (n2 // g) else "exact"
        else:
            used = "asymptotic"
        if any("Switching" in str(w.message) for w in caught):
            used = "asymptotic"
        case = {"id": case_id, "a": stored_a, "b": stored_b, "method": method, "usedMethod": used,
                "statistic": num(result.statistic), "pValue": num(result.pvalue)}
        if n1 == n2 and used == "exact":
            case["exactPValue"] = num(equal_size_exact(n1, equal_size_distance(a, b)))
        cases.append(case)
    return cases


def equal_size_distance(a, b):
    """D·n for two samples of the same size n, an exact integer: max |i − j| over the pooled values."""
    a, b = np.sort(np.asarray(a)), np.sort(np.asarray(b))
    pooled = np.concatenate([a, b])
    i = np.searchsorted(a, pooled, side="right")
    j = np.searchsorted(b, pooled, side="right")
    return int(np.max(np.abs(i - j)))


def equal_size_exact(n, h):
    """P(D >= h/n) for two samples of size n as an exact rational, rounded once to a double:
    2 * sum_{k >= 1} (-1)^(k-1) C(2n, n - k h) / C(2n, n) (reflection principle), in integer arithmetic."""
    if h <= 0:
        return 1.0
    total = 0
    k = 1
    while k * h <= n:
        total += (-1) ** (k - 1) * math.comb(2 * n, n - k * h)
        k += 1
    return float(Fraction(2 * total, math.comb(2 * n, n)))


def kolmogorov_cases():
    from scipy.stats import kstwo
    cases = []
    sizes = [1, 2, 3, 5, 10, 37, 100, 140, 141, 500, 2000, 5000, 20000, 100000, 100001, 400000, 1000001]
    for n in sizes:
        ds = sorted(set([0.5 / n, 0.7 / n, 1.0 / n, 1.5 / n, 0.3 / math.sqrt(n), 0.6 / math.sqrt(n),
                         0.87 / math.sqrt(n), 1.2 / math.sqrt(n), 1.45 / math.sqrt(n), 1.8 / math.sqrt(n),
                         2.5 / math.sqrt(n), 5.0 / math.sqrt(n), 9.0 / math.sqrt(n), 13.0 / math.sqrt(n),
                         0.2, 0.45, 0.5, 0.75, 1.0 - 1.0 / n, 0.999]))
        for d in ds:
            if not (0 < d < 1.5):
                continue
            cases.append({"kind": "kolmogorov", "n": n, "d": d, "value": num(kstwo.sf(d, n))})
    for n in [1, 2, 7, 50, 300, 5000, 999999, 1000001]:
        for d in [0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 0.95]:
            cases.append({"kind": "smirnov", "n": n, "d": d, "value": num(sc.smirnov(n, d))})
    return cases


# ---------------------------------------------------------------------------------------------------------------
# Mann-Whitney U

T_DIFF = [
    2.4366978112996147, 2.6316889792652307, 7.021798248112352, 11.749219341067423, 17.974639019130663,
    24.12620022118686, 41.485727243346425, 16.0837101760852, 2.504179749737556, 19.07435353307769,
    3.3771722560922828, 4.2105263157894885, 6.0609799545379, 4.227098400605939, 29.7020599897561,
    6.003965993723825, 0.0345254646387867, 6.097560975609758, 4.925126995852869, 3.970845051454762,
    18.087188150172707, 29.629629629629623, 34.07919624033304, 1.560386226503917, 18.492865532471384,
    5.000000000000003, 1.408450704225355, 48.83720930232558, 7.527063384878896, 34.14634146341463,
    19.147774458553897, 58.554580689858106, 7.8893950901943715, 8.433734939759036, 7.564803529847579,
    10.714285714285728, 30.76923076923076, 1.3444648448840386, 4.4444444444444695, 3.5287349500082312,
    16.01873627836116, 0.0329867146723312, 9.70921238021156, 14.326004619194672, 47.315667011672055,
    16.000000000000032, 46.85153120046125, 20.26331535008398, 9.400975537888074, 25.02930425489704,
    19.20408641858571, 1.3623893666786158, 23.163871918632815, 12.614644485677612, 8.7766976634616,
    55.94405594405594, 4.972387152330587, 6.89655172413794, 7.193750106302812, 8.62498354041001,
    6.952248105835286, 31.85996959421561, 34.615384615384606, 52.35602094240837, 2.904276589359697,
    45.98578477516633, 8.07757192481785, 1.351351351351337, 5.92547680396365, 1.3444648448840386,
    15.884630604146311, 3.799074423244432, 6.23914643156962, 1.1902712614142192, 6.25000000000001,
    10.192938004389116, 50.26178010471203, 0.0, 9.111113711072564, 6.25000000000001,
]


def mwu_cases():
    pairs = []
    alternatives = ["two-sided", "less", "greater"]
    seed = 2000
    # small samples without ties: auto picks exact
    for n1, n2, shift in [(1, 1, 0.0), (1, 5, 0.3), (3, 4, 0.0), (5, 5, 1.0), (8, 8, 0.2), (8, 30, 0.5),
                          (6, 200, 0.4), (2, 9, 2.0)]:
        pairs.append((f"small-{n1}-{n2}", uniform(seed, n1, 0, 1), uniform(seed + 1, n2, shift, 1 + shift),
                      "auto", True))
        seed += 2
    # forced exact, including complete separation (tiny p) and ties (truncated U)
    pairs.append(("exact-separated-20-25", uniform(seed, 20, 0, 1), uniform(seed + 1, 25, 2, 3), "exact", True))
    pairs.append(("exact-separated-40-40", uniform(seed + 2, 40, 0, 1), uniform(seed + 3, 40, 2, 3), "exact", True))
    pairs.append(("exact-30-35", bell(seed + 4, 30, 0, 1), bell(seed + 5, 35, 0.3, 1), "exact", True))
    pairs.append(("exact-ties-10-12", grid(seed + 6, 10, 0, 1, 4), grid(seed + 7, 12, 0, 1, 4), "exact", True))
    seed += 8
    # ties at small n: auto switches to asymptotic
    pairs.append(("small-ties", lit([1, 2, 2, 3]), lit([2, 3, 3, 4, 5]), "auto", True))
    pairs.append(("all-equal", lit([4.0] * 5), lit([4.0] * 7), "auto", True))
    pairs.append(("all-equal-no-continuity", lit([4.0] * 5), lit([4.0] * 7), "asymptotic", False))
    # asymptotic: random, ties, zeros, large, separation down to very small p
    for n1, n2, shift in [(9, 9, 0.0), (20, 30, 0.5), (80, 80, 0.1), (500, 700, 0.05), (5000, 7000, 0.03)]:
        for continuity in [True, False]:
            pairs.append((f"asymp-{n1}-{n2}-{continuity}", bell(seed, n1, 0, 1), bell(seed + 1, n2, shift, 1),
                          "auto", continuity))
            seed += 2
    pairs.append(("asymp-grid", grid(seed, 60, 0, 0.5, 6), grid(seed + 1, 90, 0.5, 0.5, 6), "auto", True))
    pairs.append(("asymp-zeros", lit([0.0] * 40 + [1.0] * 40), lit([0.0] * 10 + [2.0] * 70), "auto", True))
    pairs.append(("asymp-separated-200-300", uniform(seed + 2, 200, 0, 1), uniform(seed + 3, 300, 2, 3), "auto",
                  True))
    pairs.append(("asymp-separated-1000-1000", uniform(seed + 4, 1000, 0, 1), uniform(seed + 5, 1000, 2, 3), "auto",
                  True))
    pairs.append(("asymp-forced-small", uniform(seed + 6, 5, 0, 1), uniform(seed + 7, 6, 0.5, 1.5), "asymptotic",
                  True))
    seed += 8
    # analysis.md 8.2 (WeHeY: O_diff against T_diff)
    wehey = {
        "tdiff": T_DIFF,
        "half-tdiff": [0.5 * v for v in T_DIFF],
        "const-2": [2.0] * 80,
        "const-8.5": [8.5] * 80,
        "const-25": [25.0] * 80,
        "const-0": [0.0] * 80,
        "const-50": [50.0] * 80,
    }
    for name, values in wehey.items():
        pairs.append((f"wehey-{name}", lit(values), lit(T_DIFF), "auto", True))

    cases = []
    for case_id, spec_x, spec_y, method, continuity in pairs:
        stored_x, x = sample(spec_x)
        stored_y, y = sample(spec_y)
        for alternative in alternatives:
            if case_id.startswith("wehey") and alternative != "less":
                continue
            result = st.mannwhitneyu(x, y, alternative=alternative, method=method, use_continuity=continuity)
            cases.append({"id": case_id, "x": stored_x, "y": stored_y, "alternative": alternative,
                          "method": method, "continuity": continuity,
                          "u1": num(result.statistic), "pValue": num(result.pvalue)})
    return cases


# ---------------------------------------------------------------------------------------------------------------
# Spearman

def spearman_cases():
    pairs = []
    seed = 3000
    for n in [3, 4, 5, 10, 14, 20, 50, 200, 1000, 5000]:
        for strength in [0.0, 0.3, 1.0, 3.0]:
            pairs.append((f"random-{n}-{strength}", n, seed, strength))
            seed += 2
    cases = []

    def add(case_id, x, y):
        for alternative in ["two-sided", "less", "greater"]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = st.spearmanr(x, y, alternative=alternative)
            cases.append({"id": case_id, "x": x_store, "y": y_store, "alternative": alternative,
                          "rho": num(result.statistic), "pValue": num(result.pvalue)})

    for case_id, n, case_seed, strength in pairs:
        # y = strength * x + noise, evaluated exactly: both lists generated, y combined in Python and stored
        # as a generated noise list plus the mixing rule would need more replay code, so store x and noise
        # generators and the mixed y literally only for small n.
        x_spec = bell(case_seed, n, 0, 1)
        noise_spec = bell(case_seed + 1, n, 0, 1)
        x_store, x = sample(x_spec)
        _, noise = sample(noise_spec)
        y = [strength * a + b for a, b in zip(x, noise)]
        x_store = x_store
        y_store = {"mix": {"x": x_spec, "noise": noise_spec, "strength": strength}, "fsum": math.fsum(y)}
        add(case_id, x, y)

    literal = {
        "perfect-10": (list(range(10)), [2.0 * v + 1 for v in range(10)]),
        "perfect-anti-12": (list(range(12)), [-3.0 * v for v in range(12)]),
        "perfect-37": (list(range(37)), [v ** 3 for v in range(37)]),
        "two": ([1.0, 2.0], [3.0, 1.0]),
        "three": ([1.0, 2.0, 3.0], [1.0, 3.0, 2.0]),
        "constant-x": ([2.0] * 6, [1.0, 2, 3, 4, 5, 6]),
        "single": ([1.0], [2.0]),
        "ties": ([1, 1, 2, 2, 3, 3, 3, 4], [2, 1, 2, 2, 5, 4, 4, 4]),
        "spec-8.3-B": ([0, .03, 0, 0, .02, 0, 0, .01, 0, 0, .04, 0, 0, .02, 0, 0, .05, 0, 0, .01],
                       [.02, 0, 0, .03, 0, 0, .01, 0, 0, .02, 0, 0, .04, 0, 0, .03, 0, 0, .01, 0]),
    }
    for case_id, (x, y) in literal.items():
        x = [float(v) for v in x]
        y = [float(v) for v in y]
        x_store = {"values": x}
        y_store = {"values": y}
        add(case_id, x, y)
    return cases


# ---------------------------------------------------------------------------------------------------------------
# Kernel density

def kde_cases():
    cases = []
    specs = [
        ("uniform-50", uniform(4000, 50, 0, 5)),
        ("bell-300", bell(4001, 300, 2.0, 1.5)),
        ("grid-40", grid(4002, 40, 0.5, 0.25, 6)),
        ("two-points", lit([1.0, 1.3])),
        ("single", lit([2.0])),
    ]
    for case_id, spec in specs:
        stored, data = sample(spec)
        x = np.asarray(data)
        lo, hi = min(data) - 1.0, max(data) + 1.0
        points = [lo + (hi - lo) * k / 40 for k in range(41)]
        pts = np.asarray(points)
        for bandwidth in [0.1, 0.5]:
            # the formula of analysis.md 4.6 step 2, evaluated directly
            dens = np.exp(-((pts[:, None] - x[None, :]) ** 2) / (2 * bandwidth ** 2)).sum(axis=1)
            dens /= len(data) * bandwidth * math.sqrt(2 * math.pi)
            cases.append({"id": case_id, "samples": stored, "rule": "fixed", "bandwidth": bandwidth,
                          "points": points, "densities": [num(v) for v in dens]})
        if len(data) >= 2:
            for rule in ["scott", "silverman"]:
                kde = st.gaussian_kde(x, bw_method=rule)
                bandwidth = math.sqrt(kde.covariance[0, 0])
                cases.append({"id": case_id, "samples": stored, "rule": rule, "bandwidth": bandwidth,
                              "points": points, "densities": [num(v) for v in kde(pts)]})
    return cases


# ---------------------------------------------------------------------------------------------------------------
# Descriptive statistics, area, distributions, generator

def descriptive_cases():
    cases = []
    specs = [
        ("single", lit([3.5])),
        ("pair", lit([2.0, 1.0])),
        ("five", lit([5, 1, 4, 2, 3])),
        ("ties", lit([1, 2, 2, 2, 3, 3, 10, 0, 0])),
        ("uniform-101", uniform(5000, 101, -3, 7)),
        ("bell-1000", bell(5001, 1000, 10, 2)),
        ("grid-64", grid(5002, 64, 0, 0.125, 9)),
        ("cyc-V1", lit(cyc(1.5, 0.0625))),
    ]
    qs = [0, 0.1, 1, 5, 10, 25, 33.3, 50, 66.7, 75, 90, 95, 99, 99.9, 100]
    for case_id, spec in specs:
        stored, data = sample(spec)
        x = np.asarray(data)
        cases.append({"id": case_id, "values": stored, "qs": qs,
                      "percentiles": [num(np.percentile(x, q)) for q in qs],
                      "median": num(np.median(x)), "mean": num(np.mean(x)), "std": num(np.std(x)),
                      "ranks": [num(v) for v in st.rankdata(x)] if len(data) <= 200 else None})
    return cases


def legacy_area_exact(original, control):
    def integral(values):
        xs = sorted(Fraction(v) for v in values if v > 0)
        n = len(xs)
        c = Fraction(1, 1000)
        total = Fraction(0)
        prev = Fraction(0)
        for k, value in enumerate(xs):
            p0, p1 = Fraction(k, n), Fraction(k + 1, n)
            if p1 > c:
                lower, y0 = p0, prev
                if p0 < c:
                    lower = c
                    y0 = prev + (value - prev) * (c - p0) * n
                total += (p1 - lower) * (y0 + value) / 2
            prev = value
        return total
    o = [v for v in original if v > 0]
    r = [v for v in control if v > 0]
    return float((integral(r) - integral(o)) / min(Fraction(max(o)), Fraction(max(r))))


def area_cases():
    cases = []
    pairs = [
        ("V1", lit(cyc(1.5, 0.0625)), lit(cyc(8, 0.25))),
        ("V2", lit(cyc(8, 0.25)), lit(cyc(8, 0.25, m=11))),
        ("V3", lit(cyc(5, 0.125)), lit(cyc(8, 0.125))),
        ("V6", lit([0.5] * 6 + [10.0] * 4), lit([10.0] * 10)),
        ("V8", lit([0.0] * 50 + [8.0] * 50), lit([8.0] * 100)),
        ("one-each", lit([2.0]), lit([3.0])),
        ("zeros", lit([0.0, 0.0, 1.5, 2.5, 0.0, 3.0]), lit([0.0, 4.0, 4.5])),
        ("uniform-300-200", uniform(6000, 300, 0, 5), uniform(6001, 200, 0, 9)),
        ("bell-1500-1500", bell(6002, 1500, 6, 2), bell(6003, 1500, 5, 1)),
    ]
    for case_id, spec_o, spec_r in pairs:
        stored_o, o = sample(spec_o)
        stored_r, r = sample(spec_r)
        mo, mr = np.mean(o), np.mean(r)
        cases.append({"id": case_id, "original": stored_o, "control": stored_r,
                      "current": num((mr - mo) / max(mo, mr)), "legacy": num(legacy_area_exact(o, r))})
    return cases


def distribution_cases():
    """SciPy's values plus 40-digit mpmath references (SciPy's stdtr is off by 6e-10 near t = 0 and underflows
    to 0 for |t| ~ 1e160, so the tests check against mpmath and report the distance to SciPy)."""
    import mpmath as mp
    mp.mp.dps = 40

    def regularized_beta(a, b, x):
        # I_x(a, b) by its continued fraction (DLMF 8.17.22) in 40-digit arithmetic, for x below the mean of
        # Beta(a, b) where it converges fast. (mpmath's betainc fails to converge for a ~ 5e5.)
        front = mp.exp(a * mp.log(x) + b * mp.log1p(-x) - mp.log(a) - mp.log(mp.beta(a, b)))
        tiny = mp.mpf(10) ** -300
        f, c, d = mp.mpf(1), mp.mpf(1), mp.mpf(0)
        for step in range(1, 10 ** 6):
            m = step // 2
            if step % 2:
                coefficient = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
            else:
                coefficient = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
            d = 1 + coefficient * d
            d = tiny if d == 0 else d
            c = 1 + coefficient / c
            c = tiny if c == 0 else c
            d = 1 / d
            f *= c * d
            if abs(c * d - 1) < mp.mpf(10) ** -38:
                return front / f
        raise RuntimeError("continued fraction did not converge")

    def t_upper(t, df):
        t, df = mp.mpf(t), mp.mpf(df)
        a, b = df / 2, mp.mpf(1) / 2
        x, y = df / (df + t * t), t * t / (df + t * t)
        if x <= (a + 1) / (a + b + 2):
            half = regularized_beta(a, b, x) / 2
        else:
            half = (1 - regularized_beta(b, a, y)) / 2
        if df <= 100:  # independent check where mpmath's own betainc converges
            assert abs(half - mp.betainc(a, b, 0, x, regularized=True) / 2) <= mp.mpf(10) ** -30 * half
        return half if t > 0 else 1 - half

    cases = []
    for z in [-40, -38.5, -30, -20, -10, -8, -5, -3, -1.5, -1, -0.5, -1e-3, 0, 1e-8, 0.3, 1, 2, 3.7, 6, 9, 15, 25,
              37.5, 38.5]:
        cases.append({"kind": "normal", "x": float(z), "cdf": num(sc.ndtr(z)), "survival": num(sc.ndtr(-z)),
                      "referenceCdf": num(mp.ncdf(z)), "referenceSurvival": num(mp.ncdf(-z))})
    for df in [1, 2, 3, 4.5, 7, 10, 12, 28, 78, 100, 1000, 20000, 1e6]:
        for t in [-50.0, -3.0, -0.7, 1e-9, 0.01, 0.5, 1.0, 1.96, 3.0, 6.0, 10.0, 30.0, 100.0, 1e3, 1e5, 1e12, 1e160]:
            cases.append({"kind": "studentT", "df": float(df), "t": t, "uppertail": num(sc.stdtr(df, -t)),
                          "reference": num(t_upper(t, df))})
    return cases


def generator_cases():
    def xoshiro(seed):
        mix = splitmix_stream(seed)
        s = [next(mix) for _ in range(4)]

        def rotl(x, k):
            return ((x << k) | (x >> (64 - k))) & MASK
        while True:
            result = (rotl((s[1] * 5) & MASK, 7) * 9) & MASK
            t = (s[1] << 17) & MASK
            s[2] ^= s[0]
            s[3] ^= s[1]
            s[1] ^= s[2]
            s[0] ^= s[3]
            s[2] ^= t
            s[3] = rotl(s[3], 45)
            yield result

    def bounded(gen, bound):
        m = next(gen) * bound
        low = m & MASK
        if low < bound:
            threshold = ((1 << 64) - bound) % bound
            while low < threshold:
                m = next(gen) * bound
                low = m & MASK
        return m >> 64

    def without_replacement(values, count, seed):
        gen = xoshiro(seed)
        pool = list(values)
        take = min(max(count, 0), len(pool))
        for position in range(take):
            chosen = position + bounded(gen, len(pool) - position)
            pool[position], pool[chosen] = pool[chosen], pool[position]
        return pool[:take]

    cases = []
    for seed in [0, 1, 42, 12345, MASK]:
        gen = xoshiro(seed)
        cases.append({"kind": "xoshiro", "seed": str(seed), "outputs": [str(next(gen)) for _ in range(6)]})
    for seed, n, count in [(0, 20, 7), (7, 100, 50), (99, 10, 10), (3, 5, 0), (2024, 1000, 3)]:
        cases.append({"kind": "sample", "seed": str(seed), "n": n, "count": count,
                      "indices": without_replacement(range(n), count, seed)})
    return cases


# ---------------------------------------------------------------------------------------------------------------
# Paired sign-flip (randomization) test and its shift interval (WeheStatistics SignFlipTest)

def sign_flip_half_sums(values):
    """The 2^m signed sums, mask bit k set = value k negated, each evaluated left to right (as the Swift code)."""
    sums = []
    for mask in range(1 << len(values)):
        total = 0.0
        for index, value in enumerate(values):
            total += -value if (mask >> index) & 1 else value
        sums.append(total)
    return sums


def sign_flip_count(values, alternative):
    """Meet-in-the-middle count of the Swift implementation, mirrored operation for operation."""
    split = len(values) // 2
    first = sign_flip_half_sums(values[:split])
    unsorted = sign_flip_half_sums(values[split:])
    second = np.array(sorted(unsorted))
    observed = first[0] + unsorted[0]
    magnitude = 0.0
    for value in values:
        magnitude += abs(value)
    tolerance = 1e-9 * magnitude
    count = 0
    if alternative == "greater":
        threshold = observed - tolerance
        for a in first:
            count += len(second) - int(np.searchsorted(second, threshold - a, side="left"))
    elif alternative == "less":
        threshold = observed + tolerance
        for a in first:
            count += int(np.searchsorted(second, threshold - a, side="right"))
    else:
        threshold = abs(observed) - tolerance
        if threshold <= 0:
            return len(first) * len(second), observed
        for a in first:
            count += len(second) - int(np.searchsorted(second, threshold - a, side="left"))
            count += int(np.searchsorted(second, -threshold - a, side="right"))
    return count, observed


def sign_flip_exact_count(values, alternative):
    """Independent reference: every sign vector, exact rational arithmetic (no tolerance)."""
    exact = [Fraction(v) for v in values]
    observed = sum(exact)
    count = 0
    for mask in range(1 << len(values)):
        t = sum(-v if (mask >> i) & 1 else v for i, v in enumerate(exact))
        if alternative == "greater":
            count += t >= observed
        elif alternative == "less":
            count += t <= observed
        else:
            count += abs(t) >= abs(observed)
    return count


def sign_flip_interval(values, level):
    """The shift interval in closed form, independent of the Swift bisection: with A a set of flipped signs,
    sum(s_i (d_i - delta)) >= sum(d_i - delta) exactly when A is empty or mean(d_A) <= delta, so the one-sided
    p-value of the shift delta is (1 + #{non-empty A: mean(d_A) <= delta}) / 2^n. The test keeps delta when that is
    above the tail: the lower bound is the k-th smallest of the 2^n - 1 subset means, k = floor(tail 2^n - 1) + 1,
    and minus infinity when k < 1 (every shift kept); the upper bound the k-th largest."""
    tail = (1 - level) / 2
    n = len(values)
    total = float(1 << n)
    k = math.floor(tail * total - 1) + 1
    if k < 1:
        return -math.inf, math.inf
    sums = np.zeros(1, dtype=np.float64)
    sizes = np.zeros(1, dtype=np.int64)
    for value in values:
        sums = np.concatenate([sums, sums + value])
        sizes = np.concatenate([sizes, sizes + 1])
    means = np.sort(sums[1:] / sizes[1:])
    return float(means[k - 1]), float(means[-k])


def sign_flip_cases():
    specs = [
        ("three", lit([1, 2, 3])),
        ("mixed-ties", lit([1, -1, 2, -2, 3, 0.5, 0.5])),
        ("one", lit([0.7])),
        ("zeros", lit([0, 0, 0, 0])),
        ("eight-positive", lit([0.2, 0.25, 0.3, 0.22, 0.28, 0.26, 0.21, 0.24])),
        ("ten-one-against", lit([-0.31, -0.25, -0.28, -0.2, 0.05, -0.33, -0.27, -0.24, -0.3, -0.29])),
    ]
    for seed, n, lo, hi in [(1, 6, -1, 1), (2, 9, -1, 1), (3, 10, -0.5, 0.2), (4, 12, -0.4, 0.1), (5, 14, -1, 1),
                            (6, 16, -0.3, 0.25), (7, 11, 0.0, 0.5), (8, 13, -0.2, 0.2), (9, 15, -0.35, 0.05)]:
        specs.append((f"uniform-{seed}", uniform(seed, n, lo, hi)))
    for seed, n, loc, scale in [(11, 8, -0.1, 0.2), (12, 10, -0.22, 0.1), (13, 12, 0.0, 0.3), (14, 20, -0.05, 0.2),
                                (15, 18, 0.02, 0.1)]:
        specs.append((f"bell-{seed}", bell(seed, n, loc, scale)))
    specs.append(("grid-ties", grid(21, 12, -0.375, 0.125, 7)))
    # Equal up to rounding: an unthrottled UDP test's rounds (0.3850 against 0.3848 Mbit/s); the interval must be
    # closed (it was open-ended before the bounds at the extreme differences were kept).
    specs.append(("near-equal-8", lit([-0.0005198, -0.0005198000000001, -0.0005198, -0.0005198000000002,
                                       -0.0005198, -0.0005197999999999, -0.0005198, -0.0005198])))
    cases = []
    for case_id, spec in specs:
        stored, values = sample(spec)
        case = {"id": case_id, "d": stored, "n": len(values)}
        for alternative in ["two-sided", "greater", "less"]:
            count, observed = sign_flip_count(values, alternative)
            if len(values) <= 16:
                exact = sign_flip_exact_count(values, alternative)
                assert exact == count, (case_id, alternative, exact, count)
            p = count / float(1 << len(values))
            # SciPy's exact paired permutation test (swapping the members of a pair = flipping the sign).
            if 2 <= len(values) <= 16 and any(v != 0 for v in values):
                ref = st.permutation_test(
                    (np.array(values), np.zeros(len(values))), lambda x, y, axis: np.sum(x - y, axis=axis),
                    permutation_type="samples", alternative=alternative, n_resamples=np.inf, vectorized=True)
                assert abs(ref.pvalue - min(1.0, p)) <= 1e-12 or (alternative == "two-sided" and abs(ref.pvalue - p) <= 1e-12), \
                    (case_id, alternative, ref.pvalue, p)
            case[{"two-sided": "pTwoSided", "greater": "pGreater", "less": "pLess"}[alternative]] = p
            case["sum"] = observed
        for level, key in [(0.95, "ci95"), (0.99, "ci99")]:
            lower, upper = sign_flip_interval(values, level)
            case[key] = [num(lower), num(upper)]
        cases.append(case)
    return cases


# ---------------------------------------------------------------------------------------------------------------
# change in time within a test: byte grid + max-over-splits sign-flip test

def change_replay(rng, base, total_mb, throttle, dt=0.01, ramp=0.06, noise=0.08):
    """A synthetic replay: samples every dt of min(path rate, throttle) with a slow-start ramp and noise; the last
    sample is partial. throttle(mb_received) -> factor of the path rate."""
    mbps, times, got, t = [], [], 0.0, 0.0
    while True:
        rate = base * min(1.0, (t + dt) / ramp) * throttle(got) * (1 + noise * rng.standard_normal())
        rate = round(max(rate, 0.5), 6)
        add = rate * dt / 8
        t += dt
        times.append(round(t, 10))
        if got + add >= total_mb:
            mbps.append(round((total_mb - got) * 8 / dt, 6))
            break
        mbps.append(rate)
        got += add
    return mbps, times


def change_cumulative(mbps, times):
    out, total, previous = [], 0.0, 0.0
    for rate, time in zip(mbps, times):
        total += rate * (time - previous) / 8
        previous = time
        out.append(total)
    return out


def change_reach(b, cumulative, times):
    if b <= 0:
        return 0.0
    before, start = 0.0, 0.0
    for total, time in zip(cumulative, times):
        if total >= b:
            return start + (b - before) / (total - before) * (time - start)
        before, start = total, time
    return None


def change_durations(mbps, times, megabytes, bins):
    cumulative = change_cumulative(mbps, times)
    edges = [megabytes * k / bins if k < bins else megabytes for k in range(1, bins + 1)]
    reach = [change_reach(e, cumulative, times) for e in edges]
    return list(np.diff([0.0] + reach))


def change_analysis(rounds, alpha=0.008, margin=0.05):
    """Independent of the Swift code: numpy means per split and every sign vector as a matrix product."""
    total = min(min(change_cumulative(*o)[-1], change_cumulative(*c)[-1]) for o, c in rounds)
    bins = min(50, min(min(len(o[0]), len(c[0])) for o, c in rounds))
    seg = max(5, math.ceil(0.1 * bins))
    dur_o = np.array([change_durations(o[0], o[1], total, bins) for o, _ in rounds])
    dur_c = np.array([change_durations(c[0], c[1], total, bins) for _, c in rounds])
    x = np.log(dur_c / dur_o)
    splits = list(range(seg, bins - seg + 1))
    d = np.array([[np.mean(row[:s]) - np.mean(row[s:]) for s in splits] for row in x])
    r = len(rounds)
    weight = np.array([math.sqrt(s * (bins - s)) / bins for s in splits])
    signs = np.array([[-1.0 if (m >> i) & 1 else 1.0 for i in range(r)] for m in range(1 << r)])
    t = np.abs(signs @ d) * weight / r
    stats = t.max(axis=1)
    observed = stats[0]
    count = int(np.sum(stats >= observed - 1e-9))
    if r <= 8:  # brute force, one sign vector at a time
        brute = 0
        for m in range(1 << r):
            best = max(abs(sum((-1 if (m >> i) & 1 else 1) * d[i, j] for i in range(r))) * weight[j] / r
                       for j in range(len(splits)))
            brute += best >= observed - 1e-9
        assert brute == count, (brute, count)
    j = int(np.argmax(t[0]))
    split = splits[j]
    p = count / float(1 << r)

    # The bins that share a sample interval with the change in any replay: each replay's sample whose cumulative
    # bytes first reach the change, widened to whole bins (down at its start, up at its end).
    change_mb = total * split / bins
    width = total / bins
    starts, ends = [], []
    for o, c in rounds:
        for mbps, times in (o, c):
            cumulative = np.array(change_cumulative(mbps, times))
            hits = np.nonzero(cumulative >= change_mb)[0]
            if len(hits) == 0:
                continue
            k = int(hits[0])
            starts.append(math.floor((cumulative[k - 1] if k > 0 else 0.0) / width))
            ends.append(math.ceil(cumulative[k] / width))
    blur_lo = min(starts + [split])
    blur_hi = max(min(max(ends + [0]), bins), split)

    def part(lo, hi, keep_lo, keep_hi):
        full_so = dur_o[:, lo:hi].sum(axis=1)
        # The verdict leaves the blurred bins out, unless nothing of the part would be left.
        if keep_hi > keep_lo:
            lo, hi = keep_lo, keep_hi
        mb = total * (hi - lo) / bins
        so, sc = dur_o[:, lo:hi].sum(axis=1), dur_c[:, lo:hi].sum(axis=1)
        ratio = [float(v) for v in np.log((8 * mb / so + 0.001) / (8 * mb / sc + 0.001))]
        # The sensitive rule on the part: two one-sided exact sign-flip tests against the 5 % margin.
        n = float(1 << r)
        p_less = sign_flip_exact_count([v - math.log(1 - margin) for v in ratio], "less") / n
        p_greater = sign_flip_exact_count([v - math.log(1 + margin) for v in ratio], "greater") / n
        p_part = min(1.0, 2 * min(p_less, p_greater))
        return {"slowdown": 1 - math.exp(np.mean(ratio)), "originalSeconds": float(np.median(full_so)),
                "pValue": p_part,
                "differentiation": bool(r >= 8 and p_part <= alpha)}

    before = part(0, split, 0, min(split, blur_lo))
    after = part(split, bins, max(split, blur_hi), bins)
    differ = abs(math.log((1 - before["slowdown"]) / (1 - after["slowdown"]))) > -math.log(1 - margin)
    return {
        "bins": bins, "minimumSegment": seg, "split": split, "statistic": float(observed), "pValue": p,
        "contrast": float(np.mean(d[:, j])), "totalMegabytes": total, "changeMegabytes": total * split / bins,
        "changeSeconds": float(np.median(dur_o[:, :split].sum(axis=1))), "before": before, "after": after,
        "kind": "stops" if before["slowdown"] > after["slowdown"] else "starts",
        # A change between a throttled part and one treated like the control (a constant throttle whose effect
        # grows through slow start is no change).
        "found": bool(r >= 8 and p <= alpha and differ
                      and not (after if before["slowdown"] > after["slowdown"] else before)["differentiation"]),
    }


def change_point_cases():
    def first(mb, factor):
        return lambda got: factor if got < mb else 1.0

    def after(mb, factor):
        return lambda got: 1.0 if got < mb else factor

    def flat(factor):
        return lambda got: factor

    specs = [
        ("first-3mb-half", 101, 10, 6.0, first(3.0, 0.5)),
        ("after-3mb-70", 102, 10, 6.0, after(3.0, 0.7)),
        ("none", 103, 10, 6.0, flat(1.0)),
        ("constant-70", 104, 10, 6.0, flat(0.7)),
        ("first-1mb-fifth-12-rounds", 105, 12, 5.0, first(1.0, 0.2)),
        ("first-3mb-three-rounds", 106, 3, 6.0, first(3.0, 0.5)),
        ("none-eight-rounds", 107, 8, 4.0, flat(1.0)),
    ]
    cases = []
    for case_id, seed, count, total_mb, throttle in specs:
        rng = np.random.default_rng(seed)
        rounds = []
        for _ in range(count):
            base = 80 * math.exp(0.15 * rng.standard_normal())
            original = change_replay(rng, base, total_mb, throttle)
            control = change_replay(rng, base * math.exp(0.05 * rng.standard_normal()), total_mb, flat(1.0))
            rounds.append((original, control))
        expected = change_analysis(rounds)
        cases.append({
            "id": case_id,
            "rounds": [{"original": {"mbps": o[0], "times": o[1]}, "control": {"mbps": c[0], "times": c[1]}}
                       for o, c in rounds],
            **expected,
        })
    return cases


def main():
    assert scipy.__version__ == "1.17.1", scipy.__version__
    families = {
        "ks.json": ks_cases,
        "kolmogorov.json": kolmogorov_cases,
        "mannwhitney.json": mwu_cases,
        "spearman.json": spearman_cases,
        "kde.json": kde_cases,
        "descriptive.json": descriptive_cases,
        "area.json": area_cases,
        "distributions.json": distribution_cases,
        "generator.json": generator_cases,
        "signflip.json": sign_flip_cases,
        "changepoint.json": change_point_cases,
    }
    only = set(sys.argv[1:])
    for name, build in families.items():
        if only and name not in only:
            continue
        write(name, {"generator": HEADER, "cases": build()})


if __name__ == "__main__":
    main()
