#!/usr/bin/env python3
"""accuracy_report.py - the accuracy table of a scripts/accuracy.sh run.

    accuracy_report.py accuracy-YYYYmmdd-HHMMSS.jsonl [--markdown] [--disagreements]
    accuracy_report.py accuracy-….jsonl --change [--markdown]
        the change in time within each test (`changePoint` of ROUNDS > 1 runs): found, direction,
        median position (MB of the original replay, vs the bed's byte threshold) and time, the parts' slowdowns
    accuracy_report.py accuracy-….jsonl --adaptive [--markdown]
        the adaptive verdict (ADAPTIVE=1 runs): verdicts, detection or false-positive rate, inconclusive share, why
        each run stopped, median rounds, median and largest bytes as a multiple of the app's published test, time
    accuracy_report.py accuracy-….jsonl --sensitive [--markdown] [--margin-rule]
        both verdicts side by side (ROUNDS > 1); --margin-rule adds the sensitive verdict recomputed from the rounds'
        means with the 5 % margin rule of SensitiveAnalysis (for runs of binaries before commit 636d965)

Per condition: runs, our verdicts (differentiation / none / inconclusive / error), the true-positive rate
(conditions where the app or port is throttled: share of runs we call differentiation) or the false-positive rate
(conditions without content- or port-specific throttling: share we call differentiation), median test time and
bytes, and the analysis.md reference verdicts computed with SciPy on the same samples (reference_verdict.py) with
the number of runs where both agree. Then the goals of the issue: TPR >= 0.99 where throttling is <= 50 % of the
path rate, FPR <= 0.01 without throttling.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_verdict import analyse  # noqa: E402

ORDER = ["none", "app1.5", "app4", "app10", "port", "porttest", "delayed", "loss1", "cap60", "cap70", "cap75", "cap80",
         "cap90", "police50", "police70", "police85", "first1mb", "first3mb", "after3mb", "first300ms", "after300ms",
         "rtt50", "rtt150", "crossconst", "crossonoff", "crossheavy", "loss2"]
SHORT = {"differentiation": "diff", "no-differentiation": "none", "inconclusive": "inc", "blocked": "blocked"}


def print_table(header, rows, markdown):
    """Prints `rows` under `header`: a Markdown table, or columns padded to their widest cell."""
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    else:
        widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header))]
        render = lambda row: "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()  # noqa: E731
        lines = [render(header), render(["-" * w for w in widths])] + [render(row) for row in rows]
    print("\n".join(lines))


def load(path):
    records = []
    with open(path) as handle:
        for line in handle:
            if line.strip():
                records.append(json.loads(line))
    for record in records:
        if record.get("verdict") != "error" and "original" in record:
            record["reference"] = analyse(record["original"], record["control"])
        else:
            record["reference"] = {"verdict": "error"}
    return records


def rate_text(kbit):
    return f"{kbit / 1000:g}" if kbit else "-"


def table(records, markdown):
    groups = {}
    for record in records:
        groups.setdefault(record["condition"], []).append(record)
    names = sorted(groups, key=lambda name: (ORDER.index(name) if name in ORDER else len(ORDER), name))
    header = ["condition", "test", "throttle/path Mbit/s", "truth", "runs", "diff", "none", "inc", "err",
              "TPR", "FPR", "ref diff/none/inc", "agree", "median s", "median MB"]
    rows = []
    totals = {"positive": [0, 0], "negative": [0, 0]}
    for name in names:
        group = groups[name]
        first = group[0]
        ours = [r["verdict"] for r in group]
        ref = [r["reference"]["verdict"] for r in group]
        count = lambda values, verdict: sum(1 for v in values if v == verdict)  # noqa: E731
        diff, none, inc = (count(ours, v) for v in ("differentiation", "no-differentiation", "inconclusive"))
        errors = len(group) - diff - none - inc - count(ours, "blocked")
        valid = [r for r in group if r["verdict"] != "error"]
        agree = sum(1 for r in valid if r["verdict"] == r["reference"]["verdict"])
        positive = first["truth"] == "positive"
        detected = diff + count(ours, "blocked")
        totals[first["truth"]][0] += detected
        totals[first["truth"]][1] += len(group)
        rate = f"{detected / len(group):.2f}" if group else "-"
        times = [r["durationSeconds"] for r in valid if r.get("durationSeconds") is not None]
        sizes = [r["bytes"] / 1e6 for r in valid if r.get("bytes") is not None]
        rows.append([
            name, first.get("test", "?"),
            f"{rate_text(first.get('throttleKbit', 0))} / {rate_text(first.get('pathKbit', 0))}",
            "diff" if positive else "none", str(len(group)), str(diff), str(none), str(inc), str(errors),
            rate if positive else "-", "-" if positive else rate,
            f"{count(ref, 'differentiation')}/{count(ref, 'no-differentiation')}/{count(ref, 'inconclusive')}",
            f"{agree}/{len(valid)}",
            f"{statistics.median(times):.1f}" if times else "-",
            f"{statistics.median(sizes):.1f}" if sizes else "-",
        ])
    print_table(header, rows, markdown)
    tp, tn = totals["positive"], totals["negative"]
    if tp[1]:
        print(f"\nTrue-positive rate, all throttled conditions: {tp[0]}/{tp[1]} = {tp[0] / tp[1]:.3f} (goal >= 0.99)")
    if tn[1]:
        print(f"False-positive rate, all unthrottled conditions: {tn[0]}/{tn[1]} = {tn[0] / tn[1]:.3f} (goal <= 0.01)")
    valid = [r for r in records if r["verdict"] != "error"]
    agree = sum(1 for r in valid if r["verdict"] == r["reference"]["verdict"])
    print(f"Our verdict equals the reference verdict in {agree}/{len(valid)} tests")


def sign_flip_p(originals, controls, floor=0.001):
    """Independent recomputation of the plain sensitive p-value (binaries before the margin rule): every sign vector
    of the rounds' log ratios, exact rational sums, two-sided, sums within 1e-9 of the summed magnitudes counted as
    tied (as the Swift code does: replays of equal bytes give means equal up to rounding)."""
    import math
    from fractions import Fraction
    d = [Fraction(math.log((o + floor) / (c + floor))) for o, c in zip(originals, controls)
         if o >= 0 and c >= 0 and (o > 0 or c > 0)]
    if not d:
        return 1.0
    observed = abs(sum(d)) - Fraction(1e-9) * sum(abs(v) for v in d)
    count = 0
    for mask in range(1 << len(d)):
        count += abs(sum(-v if (mask >> i) & 1 else v for i, v in enumerate(d))) >= observed
    return count / (1 << len(d))


def margin_rule(originals, controls, floor=0.001, margin=0.05, alpha=0.008):
    """The sensitive verdict of SensitiveAnalysis recomputed from the rounds' means (independent Python): two exact
    one-sided sign-flip tests of the log ratios shifted by ln(1 -/+ margin), every sign vector enumerated, ties
    within 1e-9 of the summed magnitudes counted as in the Swift code; p = min(1, 2 min(p_less, p_greater))."""
    import math
    d = [math.log((o + floor) / (c + floor)) for o, c in zip(originals, controls)
         if o >= 0 and c >= 0 and (o > 0 or c > 0)][:24]
    if len(d) < 8:
        return "inconclusive", 1.0

    def count(values, less):
        tolerance = 1e-9 * sum(abs(v) for v in values)
        observed = sum(values)
        hits = 0
        for mask in range(1 << len(values)):
            t = sum(-v if (mask >> i) & 1 else v for i, v in enumerate(values))
            hits += (t <= observed + tolerance) if less else (t >= observed - tolerance)
        return hits / (1 << len(values))
    p_less = count([v - math.log(1 - margin) for v in d], True)
    p_greater = count([v - math.log(1 + margin) for v in d], False)
    p = min(1.0, 2 * min(p_less, p_greater))
    return ("differentiation" if p <= alpha else "no-differentiation"), p


def adaptive_table(records, markdown):
    """The adaptive verdict per condition, its cost against the published test of the same app (`publishedBytes`:
    original and control once), and the goals: detection >= 0.95, false positives <= 0.01, inconclusive <= 0.05,
    median bytes <= 1 published test, largest <= 2."""
    groups = {}
    for record in records:
        groups.setdefault(record["condition"], []).append(record)
    names = sorted(groups, key=lambda name: (ORDER.index(name) if name in ORDER else len(ORDER), name))

    def median(values, digits=1):
        values = [v for v in values if v is not None]
        return f"{statistics.median(values):.{digits}f}" if values else "-"
    header = ["condition", "test", "truth", "runs", "diff/none/inc/err", "rate", "inconclusive", "stops",
              "median rounds", "median MB (x published)", "largest x published", "median s", "median slowdown"]
    rows = []
    totals = {"positive": [0, 0], "negative": [0, 0], "inconclusive": [0, 0]}
    ratios = []
    for name in names:
        group = groups[name]
        first = group[0]
        valid = [r for r in group if r.get("verdict") != "error" and r.get("stopReason")]
        verdicts = [r["sensitiveVerdict"] for r in valid]
        diff = verdicts.count("differentiation")
        none = verdicts.count("no-differentiation")
        inc = verdicts.count("inconclusive")
        errors = len(group) - len(valid)
        positive = first["truth"] == "positive"
        totals[first["truth"]][0] += diff
        totals[first["truth"]][1] += len(group)
        totals["inconclusive"][0] += inc + errors
        totals["inconclusive"][1] += len(group)
        stops = {}
        for r in valid:
            stops[r["stopReason"]] = stops.get(r["stopReason"], 0) + 1
        run_ratios = [r["sensitiveBytes"] / r["publishedBytes"] for r in valid
                      if r.get("sensitiveBytes") and r.get("publishedBytes")]
        ratios += run_ratios
        rows.append([
            name, first.get("test", "?"), first["truth"], str(len(group)), f"{diff}/{none}/{inc}/{errors}",
            f"{diff / len(group):.2f}", f"{(inc + errors) / len(group):.2f}",
            " ".join(f"{k} {v}" for k, v in sorted(stops.items())),
            str(median([r["sensitiveRounds"] for r in valid], 0)),
            f"{median([r['sensitiveBytes'] / 1e6 for r in valid])} ({median(run_ratios, 2)})",
            f"{max(run_ratios):.2f}" if run_ratios else "-",
            str(median([r["sensitiveDurationSeconds"] for r in valid])),
            f"{median([100 * r['slowdown'] for r in valid if r.get('slowdown') is not None], 0)} %",
        ])
    print_table(header, rows, markdown)
    print("\n(rate: detection rate where truth is positive, false-positive rate where truth is negative)")
    for key, goal, label in (("positive", ">= 0.95", "detection"), ("negative", "<= 0.01", "false positives"),
                             ("inconclusive", "<= 0.05", "inconclusive or error")):
        hits, runs = totals[key]
        if runs:
            print(f"adaptive: {label} {hits}/{runs} = {hits / runs:.3f} (goal {goal})")
    if ratios:
        print(f"adaptive: bytes per verdict, median {statistics.median(ratios):.2f} and largest {max(ratios):.2f} "
              f"published tests (goals <= 1 and <= 2)")


def sensitive_table(records, markdown, rule=False):
    """Both verdicts per condition: the published one (first round) and the sensitive one (all rounds). With
    `rule`, also the sensitive verdict recomputed with the 5 % margin rule (for runs of binaries without it)."""
    groups = {}
    for record in records:
        groups.setdefault(record["condition"], []).append(record)
    names = sorted(groups, key=lambda name: (ORDER.index(name) if name in ORDER else len(ORDER), name))
    header = ["condition", "throttle/path Mbit/s", "truth", "runs", "rounds", "published diff/none/inc",
              "published rate", "sensitive diff/none/inc", "sensitive rate", "median slowdown (CI)",
              "published median s / MB", "sensitive median s / MB", "p recomputed"]
    if rule:
        header[7:9] = ["sensitive as run diff/none/inc", "as-run rate", "5 % margin rule diff/none/inc",
                       "margin rule rate"]
    rows = []
    totals = {}
    for name in names:
        group = groups[name]
        first = group[0]
        valid = [r for r in group if r["verdict"] != "error" and "sensitiveVerdict" in r]
        count = lambda values, verdict: sum(1 for v in values if v == verdict)  # noqa: E731
        ours = [r["verdict"] for r in valid]
        sens = [r["sensitiveVerdict"] for r in valid]
        positive = first["truth"] == "positive"
        published_hits = count(ours, "differentiation") + count(ours, "blocked")
        sensitive_hits = count(sens, "differentiation")
        ruled = [margin_rule(r["roundOriginalMeansMbps"], r["roundControlMeansMbps"])[0] for r in valid]
        ruled_hits = count(ruled, "differentiation")
        for key, hits in (("published", published_hits), ("sensitive", sensitive_hits), ("margin rule", ruled_hits)):
            slot = totals.setdefault((key, first["truth"]), [0, 0])
            slot[0] += hits
            slot[1] += len(group)
        errors = len(group) - len(valid)

        def median(values, digits=1):
            return f"{statistics.median(values):.{digits}f}" if values else "-"
        slow = [r["slowdown"] for r in valid if r.get("slowdown") is not None]
        lows = [r["slowdownLower"] for r in valid if r.get("slowdownLower") is not None]
        highs = [r["slowdownUpper"] for r in valid if r.get("slowdownUpper") is not None]
        agree = sum(1 for r in valid if r.get("roundOriginalMeansMbps") and min(
            abs(sign_flip_p(r["roundOriginalMeansMbps"], r["roundControlMeansMbps"]) - r["sensitivePValue"]),
            abs(margin_rule(r["roundOriginalMeansMbps"], r["roundControlMeansMbps"])[1] - r["sensitivePValue"]))
            <= 1e-12)
        rows.append([
            name, f"{rate_text(first.get('throttleKbit', 0))} / {rate_text(first.get('pathKbit', 0))}",
            "diff" if positive else "none", f"{len(group)}" + (f" ({errors} err)" if errors else ""),
            str(first.get("rounds", "?")),
            f"{count(ours, 'differentiation')}/{count(ours, 'no-differentiation')}/{count(ours, 'inconclusive')}",
            f"{published_hits / len(group):.2f}",
            f"{count(sens, 'differentiation')}/{count(sens, 'no-differentiation')}/{count(sens, 'inconclusive')}",
            f"{sensitive_hits / len(group):.2f}",
        ] + ([
            f"{count(ruled, 'differentiation')}/{count(ruled, 'no-differentiation')}/{count(ruled, 'inconclusive')}",
            f"{ruled_hits / len(group):.2f}",
        ] if rule else []) + [
            f"{median([100 * x for x in slow], 0)} % ({median([100 * x for x in lows], 0)}-"
            f"{median([100 * x for x in highs], 0)})",
            f"{median([r['durationSeconds'] for r in valid])} / {median([r['bytes'] / 1e6 for r in valid])}",
            f"{median([r['sensitiveDurationSeconds'] for r in valid if r.get('sensitiveDurationSeconds')])} / "
            f"{median([r['sensitiveBytes'] / 1e6 for r in valid if r.get('sensitiveBytes')])}",
            f"{agree}/{len(valid)}",
        ])
    print_table(header, rows, markdown)
    print("\n(rate: detection rate where truth is diff, false-positive rate where truth is none)")
    for key in ("published", "sensitive") + (("margin rule",) if rule else ()):
        tp = totals.get((key, "positive"), [0, 0])
        tn = totals.get((key, "negative"), [0, 0])
        if tp[1]:
            print(f"{key}: detection over all throttled conditions {tp[0]}/{tp[1]} = {tp[0] / tp[1]:.3f}")
        if tn[1]:
            print(f"{key}: false positives over all unthrottled conditions {tn[0]}/{tn[1]} = {tn[0] / tn[1]:.3f}")


# The change each condition should show: (kind, bed byte threshold in MB counted by connbytes on the wire, or None).
CHANGE_TRUTH = {"first1mb": ("stops", 1.0), "first3mb": ("stops", 3.0), "after3mb": ("starts", 3.0)}


def change_truth(name):
    """CHANGE_TRUTH, plus the time-limited conditions first<N>ms / after<N>ms (kind, None: a time, not bytes, and
    the time as text)."""
    if name in CHANGE_TRUTH:
        kind, megabytes = CHANGE_TRUTH[name]
        return kind, megabytes, f"{megabytes:g} MB"
    for prefix, kind in (("first", "stops"), ("after", "starts")):
        if name.startswith(prefix) and name.endswith("ms") and name[len(prefix):-2].isdigit():
            return kind, None, f"{int(name[len(prefix):-2]) / 1000:g} s"
    return None


def raw_jump(record, kind):
    """Independent of the Swift code: the MB of the published round's original replay where its raw samples change
    level (5 samples in a row above 75 % of the control's median rate when the throttle stops, below 85 % when it
    starts); None when they never do. Samples are 10 ms apart (Deezer)."""
    original, control = record.get("original") or [], record.get("control") or []
    if len(control) < 8:
        return None
    level = statistics.median(control[5:-1])
    interval = record.get("sampleInterval", 0.01)
    received = 0.0
    for i, rate in enumerate(original):
        window = original[i:i + 5]
        if i >= 5 and len(window) == 5:
            if kind == "stops" and min(window) > 0.75 * level:
                return received
            if kind == "starts" and max(window) < 0.85 * level:
                return received
        received += rate * interval / 8
    return None


def change_table(records, markdown):
    """Per condition: runs with a change-point summary, changes found (right direction / wrong), false changes
    where there is none to find, and for the found ones the median position, time and parts' slowdowns."""
    groups = {}
    for record in records:
        if record.get("verdict") != "error" and record.get("changePoint"):
            groups.setdefault(record["condition"], []).append(record)
    names = sorted(groups, key=lambda name: (ORDER.index(name) if name in ORDER else len(ORDER), name))
    header = ["condition", "truth", "runs", "rounds", "change found", "right direction", "p ≤ α", "median p",
              "median position MB (IQR)", "bed threshold MB", "raw jump MB (published round)", "median time s",
              "throttled part slowdown", "other part slowdown"]
    rows = []
    totals = {"expected": [0, 0], "none": [0, 0]}

    def median(values, digits=2):
        return f"{statistics.median(values):.{digits}f}" if values else "-"

    def quartiles(values):
        if len(values) < 4:
            return "-"
        q = statistics.quantiles(values, n=4)
        return f"{q[0]:.2f}-{q[2]:.2f}"
    for name in names:
        group = groups[name]
        changes = [r["changePoint"] for r in group]
        truth = change_truth(name)
        found = [c for c in changes if c["found"]]
        right = [c for c in found if truth and c["kind"] == truth[0]]
        slot = totals["expected" if truth else "none"]
        slot[0] += len(right) if truth else len(found)
        slot[1] += len(changes)
        throttled = [(c["before"] if c["kind"] == "stops" else c["after"])["slowdown"] for c in found]
        other = [(c["after"] if c["kind"] == "stops" else c["before"])["slowdown"] for c in found]
        positions = [c["changeMegabytes"] for c in found]
        rows.append([
            name, f"{truth[0]} at {truth[2]}" if truth else "no change", str(len(changes)),
            str(statistics.median(c["rounds"] for c in changes)), f"{len(found)}/{len(changes)}",
            f"{len(right)}/{len(changes)}" if truth else "-",
            f"{sum(1 for c in changes if c['pValue'] <= c['alpha'])}/{len(changes)}",
            median([c["pValue"] for c in changes], 4),
            f"{median(positions)} ({quartiles(positions)})", f"{truth[1]:g}" if truth and truth[1] else "-",
            median([j for j in (raw_jump(r, truth[0]) for r in group) if j is not None]) if truth else "-",
            median([c["changeSeconds"] for c in found]),
            f"{median([100 * x for x in throttled], 0)} %" if found else "-",
            f"{median([100 * x for x in other], 0)} %" if found else "-",
        ])
    print_table(header, rows, markdown)
    hit, runs = totals["expected"]
    if runs:
        print(f"\nchanges found in the right direction where the bed has one: {hit}/{runs} = {hit / runs:.3f}")
    hit, runs = totals["none"]
    if runs:
        print(f"changes reported where the bed has none (unthrottled, or a constant cap): {hit}/{runs} = "
              f"{hit / runs:.3f}")


def disagreements(records):
    for r in records:
        if r["verdict"] != "error" and r["verdict"] != r["reference"]["verdict"]:
            ref = r["reference"]
            print(f"{r['condition']} run {r.get('run')}: ours {r['verdict']} (area {r.get('area')}, "
                  f"p {r.get('ksPValue')}), reference {ref['verdict']} (area {ref.get('area')}, p {ref.get('ksPValue')})")


def misses(records):
    """The runs whose verdict differs from the ground truth, with the numbers that decided it."""
    for r in records:
        expected = "differentiation" if r["truth"] == "positive" else "no-differentiation"
        if r["verdict"] != expected:
            print(f"{r['condition']} run {r.get('run')}: {r['verdict']} area {r.get('area')} p {r.get('ksPValue')} "
                  f"orig {r.get('originalMeanMbps')} ctrl {r.get('controlMeanMbps')} Mbit/s, "
                  f"n {len(r.get('original', []))}/{len(r.get('control', []))}, {r.get('durationSeconds')} s")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    records = load(args[0])
    if not records:
        sys.exit("no records")
    if "--change" in sys.argv:
        change_table(records, "--markdown" in sys.argv)
        return
    if "--adaptive" in sys.argv:
        adaptive_table(records, "--markdown" in sys.argv)
        return
    if "--sensitive" in sys.argv:
        sensitive_table(records, "--markdown" in sys.argv, rule="--margin-rule" in sys.argv)
        return
    table(records, "--markdown" in sys.argv)
    if "--disagreements" in sys.argv:
        print("\nDisagreements with the reference:")
        disagreements(records)
    if "--misses" in sys.argv:
        print("\nRuns whose verdict differs from the ground truth:")
        misses(records)


if __name__ == "__main__":
    main()
