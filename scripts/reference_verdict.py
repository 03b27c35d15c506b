#!/usr/bin/env python3
"""reference_verdict.py - the per-test verdict of analysis.md, computed independently with SciPy.

For each test (a pair of throughput sample lists, Mbit/s, as stored by the server: the last sample of each replay
already dropped) it computes what the current Wehe analysis server computes (analysis.md 2.1: means with zeros,
signed area_test = (mean(R) - mean(O)) / max(mean(O), mean(R)), two-sample KS on the positive samples with
scipy.stats.ks_2samp defaults) and applies the Android / command-line client rule (analysis.md 2.4: area threshold
0.5, or 0.3 when either mean is strictly above 10 Mbit/s with default thresholds; KS p threshold 0.01;
|area| >= threshold and p < threshold -> differentiation, |area| >= threshold alone -> inconclusive, else none).

Used by the accuracy benchmark to put the reference verdict beside ours on the same samples.

    reference_verdict.py < tests.jsonl     one JSON object per line with "original" and "control" lists
                                           (other keys are copied through); prints one JSON object per line
    reference_verdict.py --selftest        checks the analysis.md 8.1 vectors
"""
import json
import sys

from scipy import stats


def analyse(original, control, area_threshold=0.5, p_threshold=0.01, default_thresholds=True):
    """The server statistics and the Android/cmdline verdict of one test."""
    o = list(original) or [0.0] * 10
    r = list(control) or [0.0] * 10
    o_pos = [x for x in o if x > 0]
    r_pos = [x for x in r if x > 0]
    if not o_pos or not r_pos:
        # The reference server cannot answer (scipy refuses empty input): no verdict.
        return {"verdict": "noResult", "area": None, "ksPValue": None, "originalMean": None, "controlMean": None}
    m_o = sum(o) / len(o)
    m_r = sum(r) / len(r)
    biggest = max(m_o, m_r)
    area = (m_r - m_o) / biggest if biggest > 0 else 0.0
    ks = stats.ks_2samp(o_pos, r_pos)
    threshold = area_threshold
    if default_thresholds and (m_o > 10 or m_r > 10):
        threshold = 0.3
    above_area = abs(area) >= threshold
    below_p = ks.pvalue < p_threshold
    if above_area and below_p:
        verdict = "differentiation"
    elif above_area:
        verdict = "inconclusive"
    else:
        verdict = "no-differentiation"
    return {
        "verdict": verdict,
        "area": area,
        "ksPValue": float(ks.pvalue),
        "ksStatistic": float(ks.statistic),
        "originalMean": m_o,
        "controlMean": m_r,
        "areaThreshold": threshold,
    }


def cyc(b, s, n=100, m=10):
    return [b + s * (((7 * k) % m) - (m - 1) / 2) for k in range(n)]


VECTORS = [  # analysis.md 8.1: original, control, area_test, ks2pVal, Android/cmdline verdict
    ("V1", cyc(1.5, 0.0625), cyc(8, 0.25), 0.8125, 2.20876e-59, "differentiation"),
    ("V2", cyc(8, 0.25), cyc(8, 0.25, m=11), -0.001563, 0.702057, "no-differentiation"),
    ("V3", cyc(5, 0.125), cyc(8, 0.125), 0.375, 2.20876e-59, "no-differentiation"),
    ("V4", cyc(12, 0.25), cyc(20, 0.25), 0.4, 2.20876e-59, "differentiation"),
    ("V5", cyc(8, 0.125), cyc(2, 0.0625), -0.75, 2.20876e-59, "differentiation"),
    ("V6", [0.5] * 6 + [10] * 4, [10] * 10, 0.57, 0.0524476, "inconclusive"),
    ("V7", [5.75, 6.25] * 50, [9.75, 10.25] * 50, 0.4, 2.20876e-59, "no-differentiation"),
    ("V8", [0] * 50 + [8] * 50, [8] * 100, 0.5, 1.0, "inconclusive"),
    ("V9", [1] * 10 + [5] * 6, [5] * 16, 0.5, 0.00301521, "differentiation"),
    ("V10", cyc(7.5, 0.25, n=60), cyc(8, 0.25, n=60, m=11), 0.062988, 0.0276283, "no-differentiation"),
]


def selftest():
    failures = 0
    for name, original, control, area, p, verdict in VECTORS:
        result = analyse(original, control)
        ok = (abs(result["area"] - area) < 1e-5 and abs(result["ksPValue"] - p) <= 1e-5 * max(p, 1e-300)
              and result["verdict"] == verdict)
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: area {result['area']:.6f} p {result['ksPValue']:.6g} "
              f"{result['verdict']} (expected {area} {p} {verdict})")
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ["--selftest"]:
        sys.exit(selftest())
    for line in sys.stdin:
        if not line.strip():
            continue
        record = json.loads(line)
        record["reference"] = analyse(record["original"], record["control"])
        print(json.dumps(record))


if __name__ == "__main__":
    main()
