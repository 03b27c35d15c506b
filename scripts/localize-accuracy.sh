#!/usr/bin/env bash
# localize-accuracy.sh - WeHeY localization accuracy on the kernel Y testbed (a benchmark, not a CI test): R runs
# of `wehe localize APP --force` per throttler placement, each counted as correct, wrong or inconclusive.
#
#   R=10 scripts/localize-accuracy.sh [placement...]
#
# Placements (default: all four) and the right answer:
#   shared-flow       DPI throttler on the access router, one RATE_KBIT class per flow    -> access-network
#   shared-aggregate  DPI throttler on the access router, one RATE_KBIT class for all    -> access-network
#   branch            DPI throttler on branch a only (server 1's path)                     -> no-evidence
#   none              nothing throttled                                                   -> no-evidence
#   both-branches     the same DPI throttler on branch a and on branch b (not in the access network: both servers
#                     see throttling, so the statistics decide; not in the default list)  -> no-evidence
# "wrong" is the other conclusive verdict; "inconclusive" also counts runs whose localization did not run or whose
# command failed. --force makes every run localize, whatever the single-server test found. One bed per placement
# (both servers keep running across its R runs). Prints one line per run, then the table (correct / wrong /
# inconclusive, median wall time of a whole `wehe localize`: single test + pair + localization).
#
# CSV columns (OUT): placement, run, verdict, expected, outcome, reason, exit, seconds, MWU p, the servers' own
# verdicts, which test found sharing (throughput_similar, loss_correlated) and corr_significant: loss-correlation
# interval sizes with p < 0.05 / sizes tested. A UDP app works too (its loss timeline comes from the client's
# report), e.g. APP=skype PATTERN_HEX=2112a442 (the STUN magic cookie) RATE_KBIT=150.
# Settings: R=10 APP=deezer PATTERN=dzcdn RATE_KBIT=4000 LINK_KBIT=100000 BIN=.build/debug (built unless
#           SKIP_BUILD=1) REPLAYS=../shared/replays TB=ya OUT=<file> (one CSV line per run) KEEP=1 (keep logs)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPTS=$ROOT/scripts

if [ -z "${E2E_ISOLATED:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    exec env E2E_ISOLATED=1 "$SCRIPTS/isolated.sh" "$0" "$@"
fi

export TB=${TB:-ya}
R=${R:-10}
APP=${APP:-deezer}
PATTERN=${PATTERN:-dzcdn}
RATE_KBIT=${RATE_KBIT:-4000}
LINK_KBIT=${LINK_KBIT:-100000}
BIN=${BIN:-$ROOT/.build/debug}
REPLAYS=${REPLAYS:-$ROOT/../shared/replays}
LOG_PREFIX=localize-accuracy
PLACEMENTS=("$@")
[ ${#PLACEMENTS[@]} -gt 0 ] || PLACEMENTS=(shared-flow shared-aggregate branch none)
[[ $R =~ ^[0-9]+$ && $R -gt 0 ]] || { echo "R must be a positive integer" >&2; exit 2; }

WORK=$(mktemp -d /tmp/wehe-localize-accuracy.XXXXXX)
OUT=${OUT:-$WORK/runs.csv}
cleanup() {
    "$SCRIPTS/testbed.sh" down || true
    if [ "${KEEP:-}" = 1 ]; then echo "localize-accuracy: logs kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=scripts/localize-lib.sh
. "$SCRIPTS/localize-lib.sh"
localize_prerequisites

# The commit the run is made from (HEAD may move while it runs), and the binaries used.
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "placement,run,verdict,expected,outcome,reason,exit,seconds,mwu_p,server_verdicts,throughput_similar,loss_correlated,corr_significant" >"$OUT"
declare -A CORRECT WRONG INCONCLUSIVE
TABLE=()
for placement in "${PLACEMENTS[@]}"; do
    case "$placement" in
        shared-flow) bed=(shared flow dpi) expected=access-network ;;
        shared-aggregate) bed=(shared aggregate dpi) expected=access-network ;;
        branch) bed=(a aggregate dpi) expected=no-evidence ;;
        none) bed=(shared aggregate none) expected=no-evidence ;;
        both-branches) bed=(ab aggregate dpi) expected=no-evidence ;;
        *) log "unknown placement $placement (shared-flow, shared-aggregate, branch, none, both-branches)"; exit 2 ;;
    esac
    ybed "${bed[@]}" || { log "the servers did not start for $placement"; exit 1; }
    CORRECT[$placement]=0 WRONG[$placement]=0 INCONCLUSIVE[$placement]=0
    seconds=()
    for run in $(seq "$R"); do
        result=$(localize_run --force)
        verdict=$(field "$result" localization)
        reason=$(field "$result" reason)
        if [ "$verdict" = "$expected" ]; then
            outcome=correct CORRECT[$placement]=$((CORRECT[$placement] + 1))
        elif [ "$verdict" = access-network ] || [ "$verdict" = no-evidence ]; then
            outcome=wrong WRONG[$placement]=$((WRONG[$placement] + 1))
        else
            outcome=inconclusive INCONCLUSIVE[$placement]=$((INCONCLUSIVE[$placement] + 1))
            [ -n "$verdict" ] || reason="no localization (exit $(cat "$WORK/last-status"))"
        fi
        elapsed=$(cat "$WORK/last-seconds")
        seconds+=("$elapsed")
        verdicts=$(field "$result" serverVerdicts | tr -d "[]' " | tr ',' '/')
        # Which test spoke: the throughput sum, the loss correlation (interval sizes with p < 0.05 / sizes tested).
        significant=$(python3 -c 'import json, sys
p = (json.loads(sys.argv[1]) if sys.argv[1] else {}).get("correlationPValues") or []
print(f"{sum(1 for x in p if x is not None and x < 0.05)}/{len(p)}")' "$result")
        echo "$placement,$run,${verdict:-none},$expected,$outcome,$reason,$(cat "$WORK/last-status"),$elapsed,$(field "$result" mwuPValue),$verdicts,$(field "$result" throughputSimilar),$(field "$result" lossCorrelated),$significant" >>"$OUT"
        log "$placement $run/$R: ${verdict:-none} ($outcome${reason:+, $reason}) in $elapsed s"
    done
    median=$(printf '%s\n' "${seconds[@]}" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    TABLE+=("$(printf '%-18s %4s %8s %6s %13s %9s' "$placement" "$R" "${CORRECT[$placement]}" "${WRONG[$placement]}" "${INCONCLUSIVE[$placement]}" "$median")")
done

echo
echo "WeHeY localization accuracy: app $APP, DPI pattern $PATTERN, rate ${RATE_KBIT} kbit/s, link ${LINK_KBIT} kbit/s"
echo "scripts at commit $COMMIT, binaries $BIN"
printf '%-18s %4s %8s %6s %13s %9s\n' placement R correct wrong inconclusive "median s"
printf '%s\n' "${TABLE[@]}"
echo "runs: $OUT"
