#!/usr/bin/env bash
# catalog-cost.sh - what the adaptive verdict costs across the catalog, beside the published test, on one calm bed:
# for every test of the catalog that has traces (apps and port tests), one adaptive test and one published test
# (`wehe testbed probe`, a real wehe-server, nothing throttled, no cross traffic), both through scripts/accuracy.sh,
# then one table: the adaptive stop, rounds, bytes and seconds, each also as a multiple of the published test's
# (its bytes: original and control once; its seconds: that test's wall time on the same bed), and the published
# test's own verdict (on a fast path a short trace or a port test can be "inconclusive (too few measurements)").
#
# Usage: scripts/catalog-cost.sh              run, then print the table (Markdown) and the medians
#        scripts/catalog-cost.sh --report F   print the table of an earlier run's file F
# Settings: TESTS="<ids>" (default: every test with traces, `wehe replays list --json`) PATH_KBIT=50000
#           BIN=.build/debug SKIP_BUILD=1 (as scripts/accuracy.sh) REPLAYS=../shared/replays TB=cat
#           OUT=catalog-cost-<time>.jsonl
# Needs root and the kernel testbed's features, as scripts/accuracy.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

report() {
    python3 - "$1" <<'PY'
import json, statistics, sys

adaptive, published = {}, {}
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    record = json.loads(line)
    (adaptive if record.get("mode") == "adaptive" else published)[record.get("test")] = record

rows, byte_ratios, time_ratios = [], [], []
for test in sorted(set(adaptive) | set(published)):
    a, p = adaptive.get(test), published.get(test)
    if a is None:
        rows.append(f"| {test} | (no adaptive result) | | | | | | {p.get('verdict') if p else ''} |")
        continue
    if a.get("verdict") == "error":
        rows.append(f"| {test} | error: {a.get('error')} | | | | | | | {p.get('verdict') if p else ''} |")
        continue
    moved = a.get("sensitiveBytes") or 0
    seconds = a.get("sensitiveDurationSeconds") or 0
    byte_ratio = moved / a["publishedBytes"] if a.get("publishedBytes") else None
    published_seconds = p.get("durationSeconds") if p else None
    time_ratio = seconds / published_seconds if published_seconds else None
    if byte_ratio is not None:
        byte_ratios.append(byte_ratio)
    if time_ratio is not None:
        time_ratios.append(time_ratio)
    verdict = a.get("sensitiveVerdict") or a.get("verdict")
    rows.append(
        f"| {test} | {verdict} ({a['stopReason']}) | {a.get('sensitiveRounds')} | {moved / 1e6:.1f} | "
        + (f"{byte_ratio:.2f}" if byte_ratio is not None else "") + f" | {seconds:.1f} | "
        + (f"{published_seconds:.1f}" if published_seconds else "") + " | "
        + (f"{time_ratio:.2f}" if time_ratio is not None else "") + " | "
        + (p.get("verdict", "") if p else "(not run)") + " |")
print("| test | adaptive verdict (stop) | rounds | MB | × published bytes | s | published s | × published time "
      "| published verdict |")
print("|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
verdicts = [a.get("sensitiveVerdict") for a in adaptive.values()]
print()
print(f"adaptive: {len(adaptive)} tests: " + ", ".join(
    f"{v} {verdicts.count(v)}" for v in sorted(set(verdicts), key=str)))
if byte_ratios:
    print(f"bytes per verdict: median {statistics.median(byte_ratios):.2f}, largest {max(byte_ratios):.2f} "
          "published tests (goals: at most 1 and 2)")
if time_ratios:
    print(f"time per verdict: median {statistics.median(time_ratios):.2f}, largest {max(time_ratios):.2f} "
          "published tests (goals: at most 1 and 2)")
inconclusive = [t for t, p in published.items() if p.get("verdict") not in ("no-differentiation", "differentiation")]
print(f"published test: {len(published)} tests, without a verdict: {len(inconclusive)}"
      + (f" ({', '.join(sorted(inconclusive))})" if inconclusive else ""))
PY
}

if [ "${1:-}" = --report ]; then
    report "$2"
    exit 0
fi

BIN=${BIN:-$ROOT/.build/debug}
REPLAYS=${REPLAYS:-$ROOT/../shared/replays}
OUT=${OUT:-$ROOT/catalog-cost-$(date +%Y%m%d-%H%M%S).jsonl}
if [ "${SKIP_BUILD:-}" != 1 ]; then
    (cd "$ROOT" && swift build --product wehe >&2 && swift build --product wehe-server >&2)
fi
TESTS=${TESTS:-$("$BIN/wehe" replays list --replays "$REPLAYS" --json |
    python3 -c 'import json, sys; print(" ".join(t["id"] for t in json.load(sys.stdin) if t.get("available")))')}
: >"$OUT"
for test in $TESTS; do
    for adaptive in 1 ""; do
        part=$(mktemp /tmp/wehe-catalog-cost.XXXXXX.jsonl)
        if ADAPTIVE=$adaptive R=1 CONDITIONS=none APP="$test" PATH_KBIT="${PATH_KBIT:-50000}" BIN="$BIN" \
            SKIP_BUILD=1 REPLAYS="$REPLAYS" TB="${TB:-cat}" OUT="$part" "$ROOT/scripts/accuracy.sh" >/dev/null 2>&1
        then
            python3 -c 'import json, sys
for line in open(sys.argv[1]):
    if line.strip():
        record = json.loads(line)
        record["mode"] = sys.argv[2]
        print(json.dumps(record))' "$part" "$([ -n "$adaptive" ] && echo adaptive || echo published)" >>"$OUT"
        else
            echo "catalog-cost: $test ($([ -n "$adaptive" ] && echo adaptive || echo published)) failed" >&2
        fi
        rm -f "$part"
    done
    echo "catalog-cost: $test done" >&2
done
report "$OUT"
