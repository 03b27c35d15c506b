#!/usr/bin/env bash
# e2e-adaptive.sh - the kernel testbed's check of the adaptive verdict, bounded for CI (about 2 min):
# one adaptive test (wehe testbed probe deezer --adaptive, real wehe-server) in each of
#   cap70       Deezer shaped to 70 % of its need (a mild cap the published rule misses)
#               expected: differentiation, throttled, stopped for differentiation, with at most the bytes of the
#               published test (original and control once)
#   crossonoff  nothing throttled, one full-speed cross-traffic flow 1.5 s on / 1.5 s off on the shared link
#               expected: not differentiation (no differentiation, or inconclusive at the cap), within the cap of
#               twice the published test's bytes
# and one adaptive test of a call (wehe testbed probe skype --adaptive) in
#   skypecap75  Skype's flows (the STUN magic cookie) shaped to 75 % of the call's mean rate, a cap that bites only
#               at the call's full rate: the short rounds are slices of its busiest second
#               expected: differentiation, throttled, with at most the bytes of the published test
# A false alarm in crossonoff has probability at most 1 % (the rule's level under optional stopping).
#
# Settings: BIN=.build/debug (built unless SKIP_BUILD=1) REPLAYS=../shared/replays TB=adap
# Without root or the kernel features it prints why and exits 0 (skipped), or 1 when E2E_REQUIRED=1.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/.build/debug}
if ! reason=$("$ROOT/scripts/testbed.sh" check 2>&1); then
    echo "e2e-adaptive: skipped: $reason" >&2
    [ "${E2E_REQUIRED:-}" = 1 ] && exit 1
    exit 0
fi
if [ "${SKIP_BUILD:-}" != 1 ]; then
    (cd "$ROOT" && swift build --product wehe >&2 && swift build --product wehe-server >&2)
fi
OUT=$(mktemp /tmp/wehe-adaptive.XXXXXX.jsonl)
trap 'rm -f "$OUT" "$OUT.udp"' EXIT
started=$(date +%s)
R=1 ADAPTIVE=1 CONDITIONS="cap70 crossonoff" BIN="$BIN" SKIP_BUILD=1 OUT="$OUT" TB="${TB:-adap}" \
    REPLAYS="${REPLAYS:-$ROOT/../shared/replays}" "$ROOT/scripts/accuracy.sh" >/dev/null
R=1 ADAPTIVE=1 CONDITIONS="cap75" APP=skype PATTERN_HEX=2112a442 NEED_KBIT=377 BIN="$BIN" SKIP_BUILD=1 \
    OUT="$OUT.udp" TB="${TB:-adap}" REPLAYS="${REPLAYS:-$ROOT/../shared/replays}" "$ROOT/scripts/accuracy.sh" >/dev/null
python3 - "$OUT" "$OUT.udp" <<'PY'
import json, sys
records = {}
for path, prefix in ((sys.argv[1], ""), (sys.argv[2], "skype")):
    for line in open(path):
        if line.strip():
            record = json.loads(line)
            records[prefix + record["condition"]] = record
failures = []
for condition in ("cap70", "crossonoff", "skypecap75"):
    record = records.get(condition)
    if record is None or not record.get("stopReason"):
        failures.append(f"{condition}: no adaptive result ({record})")
        continue
    published = record.get("publishedBytes") or 0
    moved = record.get("sensitiveBytes") or 0
    print(f"e2e-adaptive: {condition}: {record['sensitiveVerdict']} {record.get('sensitiveDirection')} "
          f"{record.get('sensitiveEffect')}, stopped for {record['stopReason']} after {record.get('sensitiveRounds')} "
          f"rounds, {moved / 1e6:.1f} MB ({moved / max(published, 1):.2f} published tests), "
          f"{record.get('sensitiveDurationSeconds')} s")
    if condition in ("cap70", "skypecap75"):
        if record["sensitiveVerdict"] != "differentiation" or record.get("sensitiveDirection") != "throttled":
            failures.append(f"{condition}: {record['sensitiveVerdict']}, expected differentiation (throttled)")
        if moved > published:
            failures.append(f"{condition}: {moved} bytes, more than the published test's {published}")
    else:
        if record["sensitiveVerdict"] == "differentiation":
            failures.append(f"{condition}: differentiation without any throttling")
        if moved > 2 * published:
            failures.append(f"{condition}: {moved} bytes, more than the cap of twice {published}")
for failure in failures:
    print("e2e-adaptive: FAIL " + failure)
sys.exit(1 if failures else 0)
PY
echo "e2e-adaptive: passed in $(($(date +%s) - started)) s"
