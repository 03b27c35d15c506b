#!/usr/bin/env python3
"""wehey_blindspot.py - offline analysis of scripts/wehey-blindspot.sh data: WeHeY's blind spot.

    python3 scripts/wehey_blindspot.py /tmp/yc-data [--csv runs.csv]

For every run (OUTDIR/<placement>/<run>/) it prints the published verdict and three candidate signals that could tell
a per-flow shaper on the shared segment from throttlers on the branches:

1. merge-point queue (active, wehey_probe.py; design 1, printed as "probe", rejected): in-flow copies of the replay's data with the TTL of the merge point,
   against out-of-flow probes with the same TTL. A branch throttler queues (or drops) the in-flow copies before the
   merge point; a throttler on the shared segment does not. Per branch: one-sided Mann-Whitney U of the in-flow
   delays against the baseline delays, an unanswered probe counting as the timeout (2 s, longer than
   any answer); the branch "queues" when
   p < ALPHA and the in-flow median exceeds the baseline median by at least MIN_EXTRA_MS.
   Signal verdict: both servers' replays differentiated (the published gate) and neither branch queues, with at least
   MIN_PROBES in-flow probes per branch -> "access network"; a branch that queues -> "no evidence"; else inconclusive.
2. rate plateau equality (passive, client arrivals): the two simultaneous originals' sustained rates (median of 1 s
   bins over their common stretch), |r1 - r2| / max(r1, r2). A shared per-flow policy gives both the same rate.
4. (printed as "v2", the design kept in Docs/testbed.md) positive evidence: per branch, the full-path in-flow copies
   (answered by the client's D-SACK; unanswered left out) against datagrams to a closed client port, p < ALPHA and
   >= MIN_EXTRA_MS ("queue on the path"), and the merge-point comparison of 1. with MERGE_EXTRA_MS (1 ms) as a veto.
   "access network" needs the gate and, on both branches, a queue on the path and none before the merge point; a
   pre-merge queue -> "no evidence"; else inconclusive ("not-measured" for runs of the design-1 prober).
3. retransmission epochs (passive): per flow, 100 ms bins in which a retransmitted segment arrived at the client;
   the Jaccard overlap of the two flows' bins over their common stretch, against the mean overlap when one flow's
   bins are shifted by 1-5 s (a shared queue would synchronise drop epochs beyond chance).
"""
import argparse
import csv
import json
import math
import os
import statistics
import sys

ALPHA = 0.01
MIN_EXTRA_MS = 5.0
MIN_PROBES = 5
MERGE_EXTRA_MS = 1.0  # v2: a pre-merge queue counts from 1 ms (the safe direction: it vetoes "access network")
# An unanswered probe counts as a delay of the prober's timeout (2 s): every answer came earlier, so in ranks this is
# an infinite delay, and a finite number keeps the test identical in Swift (whose Mann-Whitney refuses infinities).
LOST_MS = 2000.0


def mann_whitney_greater(x, y):
    """One-sided Mann-Whitney U (x stochastically greater than y), normal approximation with tie and continuity
    corrections (scipy's mannwhitneyu(x, y, alternative='greater', method='asymptotic')). Infinite values rank
    highest (ties among them)."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return None, None
    pooled = sorted([(v, 0) for v in x] + [(v, 1) for v in y], key=lambda p: p[0])
    ranks = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        avg = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[k] = avg
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, p in zip(ranks, pooled) if p[1] == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    if sigma == 0:
        return u1, 1.0
    z = (u1 - n1 * n2 / 2 - 0.5) / sigma
    return u1, 0.5 * math.erfc(z / math.sqrt(2))


def load_probes(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    flow = [LOST_MS if r["rtt_ms"] is None else r["rtt_ms"] for r in rows if r["kind"] == "flow"]
    base = [LOST_MS if r["rtt_ms"] is None else r["rtt_ms"] for r in rows if r["kind"] == "base"]
    return flow, base


def load_path_probes(path):
    """The full-path probes (prober v2): in-flow copies answered by the client's D-SACK and out-of-flow datagrams
    answered by port unreachable, answered ones only (an unanswered full-path copy was dropped somewhere; counting it
    as a long delay would count as evidence of a queue, the direction that accuses the access network)."""
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    flow = [r["rtt_ms"] for r in rows if r["kind"] == "flowpath" and r["rtt_ms"] is not None]
    base = [r["rtt_ms"] for r in rows if r["kind"] == "basepath" and r["rtt_ms"] is not None]
    return flow, base, sum(1 for r in rows if r["kind"] == "flowpath")


def delayed_test(flow, base, p_threshold, min_extra):
    """(significant?, p, extra ms): one-sided Mann-Whitney of flow > base and the difference of medians."""
    _, p = mann_whitney_greater(flow, base)
    if p is None:
        return False, None, None
    extra = statistics.median(flow) - statistics.median(base)
    return p < p_threshold and extra >= min_extra, p, extra


def branch_queue(flow, base):
    """(queues?, p, in-flow median ms, baseline median ms, in-flow lost, n in-flow)."""
    _, p = mann_whitney_greater(flow, base)
    mf = statistics.median(flow) if flow else None
    mb = statistics.median(base) if base else None
    extra = (mf - mb) if (mf is not None and mb is not None) else None
    queues = p is not None and p < ALPHA and extra is not None and extra >= MIN_EXTRA_MS
    return queues, p, mf, mb, sum(1 for v in flow if v >= LOST_MS), len(flow)


def load_arrivals(path):
    flows = {}
    if not os.path.exists(path):
        return flows
    with open(path) as f:
        reader = csv.reader(f)
        next(reader, None)
        for row in reader:
            try:
                t, src, sport, dport, seq, length = float(row[0]), row[1], int(row[2]), int(row[3]), int(row[4]), int(row[5])
            except (ValueError, IndexError):
                continue
            flows.setdefault((src, sport, dport), []).append((t, seq, length))
    return flows


def simultaneous_pair(flows):
    """The two longest-overlapping big flows from the two different servers (the simultaneous originals)."""
    big = {k: v for k, v in flows.items() if sum(p[2] for p in v) > 1_000_000}
    best = None
    keys = list(big)
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            a, b = keys[i], keys[j]
            if a[0] == b[0]:
                continue
            start = max(big[a][0][0], big[b][0][0])
            end = min(big[a][-1][0], big[b][-1][0])
            if end - start > 1 and (best is None or end - start > best[2] - best[1]):
                best = ((a, b), start, end)
    return best, big


def rates(packets, start, end, width=1.0):
    bins = {}
    for t, _, length in packets:
        if start <= t < end:
            bins[int((t - start) / width)] = bins.get(int((t - start) / width), 0) + length
    count = int((end - start) / width)
    return [bins.get(i, 0) * 8 / width / 1e6 for i in range(count)]


def retransmission_bins(packets, start, end, width=0.1):
    highest = None
    out = set()
    for t, seq, length in packets:
        if highest is not None and ((seq - highest) & 0xFFFFFFFF) > 0x7FFFFFFF:
            if start <= t < end:
                out.add(int((t - start) / width))
        else:
            top = (seq + length) & 0xFFFFFFFF
            if highest is None or ((top - highest) & 0xFFFFFFFF) < 0x7FFFFFFF:
                highest = top
    return out


def jaccard(a, b):
    return len(a & b) / len(a | b) if (a or b) else None


def analyse_run(directory):
    loc = {}
    path = os.path.join(directory, "localization.json")
    if os.path.exists(path):
        text = open(path).read().strip()
        if text:
            loc = json.loads(text)
    result = {
        "published": loc.get("localization") or "none",
        "mwu_p": loc.get("mwuPValue"),
        "server_verdicts": "/".join(loc.get("serverVerdicts") or []),
        "corr": "%d/%d" % (sum(1 for p in (loc.get("correlationPValues") or []) if p is not None and p < 0.05),
                           len(loc.get("correlationPValues") or [])),
    }
    gate = loc.get("serverVerdicts") == ["differentiation", "differentiation"]
    queues = []
    for name in ("s", "t"):
        flow, base = load_probes(os.path.join(directory, f"probes-{name}.jsonl"))
        q, p, mf, mb, lost, n = branch_queue(flow, base)
        result[f"{name}_queue"] = q
        result[f"{name}_p"] = p
        result[f"{name}_flow_median_ms"] = mf
        result[f"{name}_base_median_ms"] = mb
        result[f"{name}_flow_lost"] = lost
        result[f"{name}_flow_n"] = n
        queues.append((q, n))
    if not gate:
        signal = "no-evidence"
    elif any(q for q, _ in queues):
        signal = "no-evidence"
    elif all(n >= MIN_PROBES for _, n in queues):
        signal = "access-network"
    else:
        signal = "inconclusive"
    result["probe_signal"] = signal
    # v2: positive evidence. The classified flow queues somewhere on its path (full-path copies slower than the
    # full-path baseline by >= MIN_EXTRA_MS) but not before the merge point (merge-point copies, unanswered at the
    # timeout, not slower than the baseline by >= MERGE_EXTRA_MS). A queue before the merge point on either branch
    # -> no evidence; no flow-specific queue anywhere (e.g. policers) -> inconclusive.
    v2 = []
    for name in ("s", "t"):
        flow, base = load_probes(os.path.join(directory, f"probes-{name}.jsonl"))
        mq, mp, mextra = delayed_test(flow, base, ALPHA, MERGE_EXTRA_MS)
        pf, pb, pn = load_path_probes(os.path.join(directory, f"probes-{name}.jsonl"))
        pq, pp, pextra = delayed_test(pf, pb, ALPHA, MIN_EXTRA_MS)
        result[f"{name}_merge_extra_ms"] = mextra
        result[f"{name}_path_extra_ms"] = pextra
        result[f"{name}_path_p"] = pp
        result[f"{name}_path_answered"] = f"{len(pf)}/{pn}"
        v2.append((mq, pq, len(flow), pn))
    if not gate or any(mq for mq, _, _, _ in v2):
        v2_signal = "no-evidence"
    elif all(pq and n >= MIN_PROBES for _, pq, n, _ in v2):
        v2_signal = "access-network"
    else:
        v2_signal = "inconclusive"
    result["v2_signal"] = v2_signal
    if all(pn == 0 for _, _, _, pn in v2):
        result["v2_signal"] = "not-measured"
    result["published_or_v2"] = "access-network" if "access-network" in (result["published"], v2_signal) \
        else result["published"]
    # Combined: the published verdict, or the probe signal when the published verdict is not "access network".
    result["combined"] = "access-network" if result["published"] == "access-network" or signal == "access-network" \
        else result["published"]

    flows = load_arrivals(os.path.join(directory, "arrivals.csv"))
    pair, _ = simultaneous_pair(flows)
    if pair:
        (a, b), start, end = pair
        ra, rb = rates(flows[a], start, end), rates(flows[b], start, end)
        if ra and rb:
            ma, mb_ = statistics.median(ra), statistics.median(rb)
            result["rate_a"], result["rate_b"] = ma, mb_
            result["rate_diff"] = abs(ma - mb_) / max(ma, mb_) if max(ma, mb_) > 0 else None
        ea, eb = retransmission_bins(flows[a], start, end), retransmission_bins(flows[b], start, end)
        result["retx_bins"] = f"{len(ea)}/{len(eb)}"
        j = jaccard(ea, eb)
        shifted = [jaccard({x + s for x in ea}, eb) for s in (10, 20, 30, 40, 50, -10, -20, -30, -40, -50)]
        shifted = [v for v in shifted if v is not None]
        result["retx_jaccard"] = j
        result["retx_jaccard_shifted"] = statistics.mean(shifted) if shifted else None
        result["overlap_s"] = end - start
    return result


EXPECTED = {
    "shared-flow": "access-network", "shared-aggregate": "access-network", "both-branches": "no-evidence",
    "both-branches-flow": "no-evidence", "both-branches-police": "no-evidence", "branch": "no-evidence", "none": "no-evidence",
}


def fmt(v, spec=".3g"):
    if v is None:
        return "-"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def golden(data, cases):
    """Reference values for Tests/WeheAnalysisTests/MergePointQueueTests.swift, computed with SciPy (not with this
    script's own Mann-Whitney): for each PLACEMENT/RUN/SERVER, the probe delays in seconds (None = unanswered) and
    the expected p-values, extra delays and decisions of both comparisons (v2 rule)."""
    from scipy.stats import mannwhitneyu

    def test(flow, base, minimum):
        if not flow or not base:
            return None, None, False
        p = float(mannwhitneyu(flow, base, alternative="greater", method="asymptotic", use_continuity=True).pvalue)
        extra = statistics.median(flow) - statistics.median(base)
        return p, extra, p < ALPHA and extra >= minimum

    def swift(xs):
        return "[" + ", ".join("nil" if v is None else repr(v) for v in xs) + "]"

    for case in cases:
        placement, run, server = case.split("/")
        path = os.path.join(data, placement, run, f"probes-{server}.jsonl")
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        lists = {k: [None if r["rtt_ms"] is None else round(r["rtt_ms"] / 1000, 6) for r in rows if r["kind"] == k]
                 for k in ("flow", "base", "flowpath", "basepath")}
        timeout = LOST_MS / 1000
        mp, mextra, mq = test([timeout if v is None else v for v in lists["flow"]],
                              [timeout if v is None else v for v in lists["base"]], MERGE_EXTRA_MS / 1000)
        pp, pextra, pq = test([v for v in lists["flowpath"] if v is not None],
                              [v for v in lists["basepath"] if v is not None], MIN_EXTRA_MS / 1000)
        print(f"// {case}")
        print(f"(flowToMergePoint: {swift(lists['flow'])},")
        print(f" baselineToMergePoint: {swift(lists['base'])},")
        print(f" flowToClient: {swift(lists['flowpath'])},")
        print(f" baselineToClient: {swift(lists['basepath'])},")
        print(f" mergePValue: {mp!r}, mergeExtra: {mextra!r}, queuesBeforeMergePoint: {str(mq).lower()},")
        print(f" pathPValue: {pp!r}, pathExtra: {pextra!r}, queuesOnPath: {str(pq).lower()}),")


def product(data):
    """The product's verdicts (wehey-blindspot.sh SWIFT_PROBE=1): the published `localization` and the merge-point
    signal `mergePointQueue.verdict` of each run's `wehe localize --json`. Without `mergePointQueue` the client
    stopped at the gate (not both servers differentiated): the signal is "no-evidence (gate)", as the published one."""
    print("placement run published merge-point | per branch: merge point extra ms (p), client extra ms (p), probes")
    table = {}
    for placement in sorted(os.listdir(data)):
        pdir = os.path.join(data, placement)
        if not os.path.isdir(pdir):
            continue
        for run in sorted(os.listdir(pdir), key=lambda r: int(r) if r.isdigit() else 0):
            path = os.path.join(pdir, run, "localization.json")
            if not os.path.exists(os.path.join(pdir, run, "status")) or not os.path.exists(path):
                continue
            text = open(path).read().strip()
            result = json.loads(text) if text else {}
            published = result.get("localization", "failed")
            queue = result.get("mergePointQueue")
            signal = queue["verdict"] if queue else ("no-evidence" if published == "no-evidence" else "absent")
            gated = queue is None
            detail = []
            for b in (queue or {}).get("branches", []):
                if not b:
                    detail.append("not measured")
                    continue
                m, c = b["mergePoint"], b.get("path")
                detail.append(f"{m['extraDelayMs']:+.2f} ({m['pValue']:.2g}), "
                              + (f"{c['extraDelayMs']:+.1f} ({c['pValue']:.2g})" if c else "no answers")
                              + f", {b['flowProbes']}/{b['flowUnanswered']} unanswered")
            print(f"{placement:<22} {run:>2} {published:<14} {signal}{' (gate)' if gated else ''}"
                  f" | {' | '.join(detail)}" + (f" | note {queue['note']}" if queue and queue.get("note") else ""))
            table.setdefault(placement, []).append((published, signal, gated, queue))
    print()
    print("placement              expected        R  published right/wrong/inconcl  merge-point right/wrong/inconcl"
          "  (gated)  client extra ms (median per run, min-max)  merge-point extra ms (min-max)")
    for placement, runs in table.items():
        exp = EXPECTED.get(placement, "?")

        def count(index):
            right = sum(1 for r in runs if r[index] == exp)
            wrong = sum(1 for r in runs if r[index] in ("access-network", "no-evidence") and r[index] != exp)
            return f"{right}/{wrong}/{len(runs) - right - wrong}"

        client = [b["path"]["extraDelayMs"] for r in runs if r[3] for b in r[3]["branches"] if b and b.get("path")]
        merge = [b["mergePoint"]["extraDelayMs"] for r in runs if r[3] for b in r[3]["branches"] if b]
        span = (lambda v: f"{min(v):+.1f}…{max(v):+.1f}" if v else "-")
        print(f"{placement:<22} {exp:<15} {len(runs):>2}  {count(0):>31}  {count(1):>31}  {sum(r[2] for r in runs):>7}"
              f"  {span(client):>20}  {span(merge):>20}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--csv")
    ap.add_argument("--golden", nargs="*", metavar="PLACEMENT/RUN/SERVER",
                    help="print reference values for the Swift tests (SciPy) instead of the table")
    ap.add_argument("--product", action="store_true",
                    help="runs of SWIFT_PROBE=1: the product's merge-point verdict from localization.json")
    args = ap.parse_args()
    if args.golden:
        return golden(args.data, args.golden)
    if args.product:
        return product(args.data)
    rows = []
    for placement in sorted(os.listdir(args.data)):
        pdir = os.path.join(args.data, placement)
        if not os.path.isdir(pdir):
            continue
        for run in sorted(os.listdir(pdir), key=lambda r: int(r) if r.isdigit() else 0):
            if not os.path.exists(os.path.join(pdir, run, "status")):
                continue  # a run still going (or killed)
            r = analyse_run(os.path.join(pdir, run))
            r["placement"], r["run"] = placement, run
            rows.append(r)
    print("placement run published probe combined | s: queue p flow/base ms lost/n | t: ... | rate a/b diff | "
          "retx bins jaccard (shifted)")
    for r in rows:
        print(f"{r['placement']:<18} {r['run']:>2} {r['published']:<14} {r['probe_signal']:<14} {r['combined']:<14} | "
              f"s {str(r['s_queue'])[0]} {fmt(r['s_p'])} {fmt(r['s_flow_median_ms'])}/{fmt(r['s_base_median_ms'])} "
              f"{r['s_flow_lost']}/{r['s_flow_n']} | t {str(r['t_queue'])[0]} {fmt(r['t_p'])} "
              f"{fmt(r['t_flow_median_ms'])}/{fmt(r['t_base_median_ms'])} {r['t_flow_lost']}/{r['t_flow_n']} | "
              f"{fmt(r.get('rate_a'))}/{fmt(r.get('rate_b'))} {fmt(r.get('rate_diff'))} | {r.get('retx_bins', '-')} "
              f"{fmt(r.get('retx_jaccard'))} ({fmt(r.get('retx_jaccard_shifted'))}) || v2 {r['v2_signal']} "
              f"merge +{fmt(r['s_merge_extra_ms'])}/+{fmt(r['t_merge_extra_ms'])} ms, path "
              f"+{fmt(r['s_path_extra_ms'])}/+{fmt(r['t_path_extra_ms'])} ms (p {fmt(r['s_path_p'])}/"
              f"{fmt(r['t_path_p'])}, answered {r['s_path_answered']}/{r['t_path_answered']})")
    print()
    print("placement           expected        R  published: right wrong inconcl | probe signal: right wrong inconcl | "
          "combined: right wrong inconcl")
    for placement in sorted({r["placement"] for r in rows}):
        sub = [r for r in rows if r["placement"] == placement]
        exp = EXPECTED.get(placement, "?")

        def count(key):
            right = sum(1 for r in sub if r[key] == exp)
            wrong = sum(1 for r in sub if r[key] in ("access-network", "no-evidence") and r[key] != exp)
            return right, wrong, len(sub) - right - wrong

        p, s, c = count("published"), count("probe_signal"), count("combined")
        measured = [r for r in sub if r["v2_signal"] != "not-measured"]
        v2 = (sum(1 for r in measured if r["v2_signal"] == exp),
              sum(1 for r in measured if r["v2_signal"] in ("access-network", "no-evidence") and r["v2_signal"] != exp))
        po = (sum(1 for r in measured if r["published_or_v2"] == exp),
              sum(1 for r in measured if r["published_or_v2"] in ("access-network", "no-evidence")
                  and r["published_or_v2"] != exp))
        print(f"{placement:<19} {exp:<15} {len(sub):>2}  {p[0]:>15} {p[1]:>5} {p[2]:>7} | {s[0]:>18} {s[1]:>5} "
              f"{s[2]:>7} | {c[0]:>14} {c[1]:>5} {c[2]:>7} || v2 R={len(measured)}: right {v2[0]} wrong {v2[1]} "
              f"inconcl {len(measured) - v2[0] - v2[1]}; published-or-v2 right {po[0]} wrong {po[1]}")
    if args.csv:
        keys = sorted({k for r in rows for k in r})
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
