#!/usr/bin/env python3
"""Reference timing for the crowd-sourced fixed-rate analysis (analysis.md sections 4.2-4.6) with NumPy/SciPy.

Runs the same computation as `runCrowdBenchmark(records:)` in Benchmarks/wehe-bench/AnalysisBenchmarks.swift on
the same synthetic records: both sides implement the same counter-based generator (see the comment at the top of
AnalysisBenchmarks.swift), so the data are identical without a data file. The "checksum" line (the sum of every
record's first original sample, added in record order) must match the Swift output.

Per test: means and maxima (zeros included), scipy.stats.ks_2samp on the full lists, and the jackknife ratio
(100 rounds of half-size random.sample subsets) only for tests that can still be positive. Per group: Bonferroni
positives, the size rule, the population KS test and jackknife on the per-test means, and the Gaussian-KDE rate
search (bandwidth 0.1, threshold from a simulated 2 % spike at (right-left)/2).

Usage: python3 scripts/crowd_reference.py [--records 1000000] [--seed 20250101] [--limit N]
--limit analyses only the first N records (the per-record cost is linear, so the full time can be extrapolated).
"""
import argparse
import random
import time

import numpy as np
from scipy import stats

SLOTS = 512
SAMPLES = 50
PROVIDERS = 20
REPLAYS = 5
GAMMA = np.uint64(0x9E3779B97F4A7C15)
SQRT3 = 1.7320508075688772
CHUNK = 5000


def mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def generate(seed, first, last):
    """Records first..<last as (provider, replay, original[R,50], control[R,50])."""
    with np.errstate(over="ignore"):
        records = np.arange(first, last, dtype=np.uint64)
        counters = records[:, None] * np.uint64(SLOTS) + np.arange(408, dtype=np.uint64)[None, :]
        z = mix(np.uint64(seed) + (counters + np.uint64(1)) * GAMMA)
    u = (z >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def normal(slots):
        return (((u[:, slots] + u[:, slots + 1]) + u[:, slots + 2]) + u[:, slots + 3] - 2.0) * SQRT3

    provider = (u[:, 0] * float(PROVIDERS)).astype(np.int64)
    replay = (u[:, 1] * float(REPLAYS)).astype(np.int64)
    cap = (4.0 + 16.0 * u[:, 2])[:, None]
    throttled = ((provider < 4) & (replay == 0) & (u[:, 3] < 0.6))[:, None]
    rate = (1.5 + 0.5 * provider.astype(np.float64))[:, None]
    steps = 4 * np.arange(SAMPLES)
    n_original = normal(8 + steps)
    n_control = normal(208 + steps)
    original = np.maximum(0.0, np.where(throttled, rate + 0.08 * n_original, cap + 0.2 * cap * n_original))
    control = np.maximum(0.0, cap + 0.2 * cap * n_control)
    return provider, replay, original, control


def jackknife_ratio(a, b, full_p, rng, rounds=100, fraction=0.5, threshold=0.05):
    ka, kb = int(len(a) * fraction), int(len(b) * fraction)
    if ka == 0 or kb == 0:
        return None
    same = full_p >= threshold
    a_list, b_list = list(a), list(b)
    agree = 0
    for _ in range(rounds):
        p = stats.ks_2samp(rng.sample(a_list, ka), rng.sample(b_list, kb)).pvalue
        if (p > threshold) if same else (p < threshold):
            agree += 1
    return agree / rounds


def round2(x):
    return round(x * 100) / 100


def sampling_range(values):
    v = np.sort(np.asarray(values, dtype=np.float64))
    dropped = int(len(v) * 0.01)
    kept = v[: max(1, len(v) - dropped)]
    low, high = kept[0], kept[-1]
    centre = (high + low) / 2
    half = 1.5 * (high - centre)
    left, right = centre - half, centre + half
    if right - left < 1:
        left, right = left - 1, right + 1
    left = max(left, -1.0)
    return round2(left), round2(right)


def density(values, left, right, bandwidth=0.1, step=0.1):
    width = right - left
    if width / step > 20000:
        step = width / 20000
    count = 0
    while left + count * step < right:
        count += 1
    grid = left + np.arange(count) * step
    values = np.asarray(values, dtype=np.float64)
    dens = np.empty(count)
    for start in range(0, count, 256):
        block = grid[start:start + 256]
        dens[start:start + 256] = np.exp(-0.5 * ((block[:, None] - values[None, :]) / bandwidth) ** 2).sum(axis=1)
    return grid, dens / (len(values) * bandwidth * np.sqrt(2 * np.pi))


def interior_maxima(d):
    if len(d) < 3:
        return np.array([], dtype=np.int64)
    inner = np.arange(1, len(d) - 1)
    return inner[(d[inner] > d[inner - 1]) & (d[inner] > d[inner + 1])]


def simulated_threshold(count, left, right, rng):
    total = max(count, 1)
    spike = int(total * 0.02)
    synthetic = [(right - left) / 2] * spike + [rng.uniform(left, right) for _ in range(total - spike)]
    sl, sr = sampling_range(synthetic)
    _, d = density(synthetic, sl, sr)
    level = 1 / (sr - sl) if sr > sl else 0
    peaks = [d[i] for i in interior_maxima(d) if d[i] > level]
    return round2(max(peaks) if peaks else (d.max() if len(d) else 0))


def peaks(values, threshold):
    left, right = sampling_range(values)
    grid, d = density(values, left, right)
    found = []
    for i in interior_maxima(d):
        if d[i] <= threshold:
            continue
        lo = i
        while lo > 0 and d[lo - 1] > threshold:
            lo -= 1
        hi = i
        while hi < len(d) - 1 and d[hi + 1] > threshold:
            hi += 1
        found.append([round2(grid[i]), d[i], round2(grid[lo]), round2(grid[hi])])
    merged = []
    for peak in sorted(found, key=lambda p: p[2]):
        if merged and peak[2] <= merged[-1][3]:
            last = merged[-1]
            last[3] = max(last[3], peak[3])
            if peak[1] > last[1]:
                last[0], last[1] = peak[0], peak[1]
        else:
            merged.append(peak)
    for peak in merged:
        if peak[3] - peak[2] < 0.5:
            centre = (peak[2] + peak[3]) / 2
            peak[2], peak[3] = round2(centre - 0.25), round2(centre + 0.25)
    return merged


def search(original_means, control_means, rng):
    if len(original_means) == 0:
        return None
    left, right = sampling_range(original_means)
    threshold = simulated_threshold(len(original_means), left, right, rng)
    originals = peaks(original_means, threshold)
    controls = peaks(control_means, threshold)
    unique = [p for p in originals if not any(c[2] < p[0] < c[3] for c in controls)]
    return threshold, unique


def analyse_group(key, group, rng):
    om, cm, ps, eligible = (np.array(group[0]), np.array(group[1]), np.array(group[2]), np.array(group[3]))
    total = len(ps)
    positive = eligible & (ps < 0.05 / max(total, 1))
    count = int(positive.sum())
    report = {"group": key, "tests": total, "positives": count, "rates": [], "population_p": None, "true": 0}
    if total < 100 and count < 10:
        return report
    if count <= 10:
        return report
    p = stats.ks_2samp(om, cm).pvalue
    ratio = jackknife_ratio(om, cm, p, rng) or 0
    report["population_p"] = p
    if not (p < 0.05 and ratio > 0.95):
        return report
    everything = search(om, cm, rng)
    positive_search = search(om[positive], cm[positive], rng)
    rates = []
    for peak in everything[1] if everything else []:
        for candidate in positive_search[1] if positive_search else []:
            if candidate[2] < peak[0] < candidate[3]:
                rates.append((peak[0], candidate[2], candidate[3]))
                break
    report["rates"] = rates
    report["true"] = int(sum(1 for m in om[positive] if any(lo <= m <= hi for _, lo, hi in rates)))
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--limit", type=int, default=None, help="analyse only the first N records")
    args = parser.parse_args()
    records = args.records if args.limit is None else min(args.limit, args.records)

    started = time.perf_counter()
    cpu_started = time.process_time()
    checksum = 0.0
    for first in range(0, records, CHUNK):
        _, _, original, _ = generate(args.seed, first, min(first + CHUNK, records))
        for value in original[:, 0].tolist():
            checksum += value
    generation = time.perf_counter() - started
    cpu_generation = time.process_time() - cpu_started

    rng = random.Random(args.seed)
    groups = {}
    started = time.perf_counter()
    for first in range(0, records, CHUNK):
        provider, replay, original, control = generate(args.seed, first, min(first + CHUNK, records))
        for index in range(original.shape[0]):
            o, c = original[index], control[index]
            om, cm = o.mean(), c.mean()
            with np.errstate(divide="ignore", invalid="ignore"):
                difference = abs((cm - om) / min(o.max(), c.max()))
            p = stats.ks_2samp(o, c).pvalue
            ratio = None
            if difference > 0.1 and p < 0.05:
                ratio = jackknife_ratio(o, c, p, rng)
            key = ("P%d" % provider[index], "R%d" % replay[index])
            group = groups.setdefault(key, ([], [], [], []))
            group[0].append(om)
            group[1].append(cm)
            group[2].append(p)
            group[3].append(difference > 0.1 and (ratio or 0) > 0.95)
    group_started = time.process_time()
    reports = [analyse_group(key, groups[key], rng) for key in sorted(groups)]
    group_phase = time.process_time() - group_started
    total = time.perf_counter() - started + generation
    cpu_total = time.process_time() - cpu_started

    print("crowd analysis (numpy/scipy): %d records, %d groups, seed %d" % (records, len(reports), args.seed))
    print("  generation only:        %8.2f s wall, %8.2f s CPU (checksum %.6f)"
          % (generation, cpu_generation, checksum))
    print("  generation + analysis:  %8.2f s wall, %8.2f s CPU" % (total, cpu_total))
    analysis = total - generation
    cpu_analysis = cpu_total - cpu_generation
    print("  analysis (difference):  %8.2f s wall, %8.2f s CPU, %.1f µs CPU per record"
          % (analysis, cpu_analysis, cpu_analysis / max(records, 1) * 1e6))
    print("  of which group phase (finish): %8.2f s CPU" % group_phase)
    print("  positive tests: %d" % sum(r["positives"] for r in reports))
    for r in reports:
        if r["positives"] > 0 or r["rates"]:
            rates = ", ".join("%.2f (%.2f-%.2f)" % rate for rate in r["rates"])
            population = "-" if r["population_p"] is None else "%.3g" % r["population_p"]
            print("  %s/%s: tests %d, positives %d, population p %s, rates [%s], true positives %d"
                  % (r["group"][0], r["group"][1], r["tests"], r["positives"], population, rates, r["true"]))


if __name__ == "__main__":
    main()
