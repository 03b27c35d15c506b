#!/usr/bin/env bash
# e2e-sensitive.sh - the kernel testbed's check of the sensitive verdict, bounded for CI (about 1-2 min):
# one test of 10 interleaved rounds (wehe testbed probe deezer --rounds 10, real wehe-server) in each of
#   cap70       Deezer shaped to 70 % of its need (a mild cap the published rule misses)
#               expected: sensitiveVerdict differentiation, throttled, slowdown interval above 0
#   crossonoff  nothing throttled, one full-speed cross-traffic flow 1.5 s on / 1.5 s off on the shared link
#               expected: not blamed: sensitiveVerdict no-differentiation, or inconclusive because the interval lay
#               past the 5 % margin without p reaching alpha (under no differentiation a 95 % interval does that at
#               most 5 % of the time; 0.3-2 % in the synthetic calibration), never differentiation
# The published verdict is printed beside it, not checked (it is the accuracy benchmark's subject). A false alarm
# in crossonoff happens with probability at most 0.8 % (the test's exact level), a miss in cap70 was not seen in the
# benchmark (Docs/testbed.md).
#
# Settings: BIN=.build/debug (built unless SKIP_BUILD=1) REPLAYS=../shared/replays TB=sens
# Without root or the kernel features it prints why and exits 0 (skipped), or 1 when E2E_REQUIRED=1.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/.build/debug}
if ! reason=$("$ROOT/scripts/testbed.sh" check 2>&1); then
    echo "e2e-sensitive: skipped: $reason" >&2
    [ "${E2E_REQUIRED:-}" = 1 ] && exit 1
    exit 0
fi
if [ "${SKIP_BUILD:-}" != 1 ]; then
    (cd "$ROOT" && swift build --product wehe >&2 && swift build --product wehe-server >&2)
fi
OUT=$(mktemp /tmp/wehe-sensitive.XXXXXX.jsonl)
trap 'rm -f "$OUT"' EXIT
started=$(date +%s)
R=1 ROUNDS=10 CONDITIONS="cap70 crossonoff" BIN="$BIN" SKIP_BUILD=1 OUT="$OUT" TB="${TB:-sens}" \
    REPLAYS="${REPLAYS:-$ROOT/../shared/replays}" "$ROOT/scripts/accuracy.sh" >/dev/null
python3 - "$OUT" <<'PY'
import json, sys
records = {}
for line in open(sys.argv[1]):
    if line.strip():
        record = json.loads(line)
        records[record["condition"]] = record
failures = []
for condition, expected in (("cap70", "differentiation"), ("crossonoff", "no-differentiation")):
    record = records.get(condition)
    if record is None or "sensitiveVerdict" not in record:
        failures.append(f"{condition}: no result ({record})")
        continue
    print(f"e2e-sensitive: {condition}: sensitive {record['sensitiveVerdict']} {record.get('sensitiveDirection')} "
          f"{record.get('sensitiveEffect')} p {record.get('sensitivePValue')} over {record.get('sensitiveRounds')} "
          f"rounds; published {record['verdict']} (area {record.get('area')}, KS p {record.get('ksPValue')})")
    verdict = record["sensitiveVerdict"]
    past_margin = verdict == "inconclusive" and "by more than 5 % across" in (record.get("sensitiveNote") or "")
    if verdict != expected and not (condition == "crossonoff" and past_margin):
        failures.append(f"{condition}: sensitive verdict {verdict} ({record.get('sensitiveNote')}), "
                        f"expected {expected}")
    if record.get("sensitiveRounds") != 10:
        failures.append(f"{condition}: {record.get('sensitiveRounds')} rounds, expected 10")
    if condition == "cap70" and not (record.get("sensitiveDirection") == "throttled"
                                     and (record.get("slowdownLower") or 0) > 0):
        failures.append(f"{condition}: not throttled with a slowdown interval above 0")
for failure in failures:
    print("e2e-sensitive: FAIL " + failure)
sys.exit(1 if failures else 0)
PY
echo "e2e-sensitive: passed in $(($(date +%s) - started)) s"
