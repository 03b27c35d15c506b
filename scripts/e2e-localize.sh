#!/usr/bin/env bash
# e2e-localize.sh - WeHeY end to end on the kernel Y testbed: two real wehe-server processes as a pair (server 1 in
# ${TB}s behind branch a, server 2 in ${TB}t behind branch b), the real `wehe localize` client in ${TB}c, and a DPI
# throttler (scripts/testbed.sh TOPO=y) placed on the shared access segment or on one branch. Root only.
#
#   scripts/e2e-localize.sh [case...]      cases: shared branch shared-flow (default: shared branch)
#
#   shared   throttler (aggregate, per-plan) on the access router, towards the client
#            -> single test: differentiation; localization: "the throttling is in your access network"
#   branch   throttler on branch a only (server 1's path)
#            -> single test: differentiation; localization: anything but "access network" (the replay through
#               branch b is not throttled, so the pair cannot both show differentiation)
#   shared-flow  throttler on the access router with one class per flow (WeHeY's blind spot), both
#            servers with --merge-point-probe --merge-point-ttl 2 -> the merge-point signal (`mergePointQueue` of
#            --json, our extension): "access network"; the published verdict is reported, not checked (it says
#            "no evidence" in most runs: the blind spot). Not in the default list (CI): on the bed 28 of 30 such
#            localizations said "access network", 2 inconclusive on a loaded machine (Docs/testbed.md); about 40 s.
# Each case also checks the throttler's own counters, so a pass cannot come from a throttler that did nothing, and
# the shared case checks that the loss-correlation test ran on both servers' TCP_INFO loss timelines (it needs a
# minimum RTT of about 11 ms for its 10 ms sampling: DELAY_MS=20 adds 20 ms towards the client).
#
# Settings: APP=deezer PATTERN=dzcdn RATE_KBIT=4000 LINK_KBIT=100000 DELAY_MS=20 BIN=.build/debug (built unless
#           SKIP_BUILD=1)
#           REPLAYS=../shared/replays TB=yl KEEP=1 (keep logs)
# Without root or the kernel features it prints why and exits 0 (skipped), or 1 when E2E_REQUIRED=1; a failed
# case exits 1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPTS=$ROOT/scripts

# Run inside a private mount+PID namespace: whatever happens (even SIGKILL), nothing outlives the run.
if [ -z "${E2E_ISOLATED:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    exec env E2E_ISOLATED=1 "$SCRIPTS/isolated.sh" "$0" "$@"
fi

export TB=${TB:-yl}
APP=${APP:-deezer}
PATTERN=${PATTERN:-dzcdn}
RATE_KBIT=${RATE_KBIT:-4000}
LINK_KBIT=${LINK_KBIT:-100000}
export DELAY_MS=${DELAY_MS:-20}
BIN=${BIN:-$ROOT/.build/debug}
REPLAYS=${REPLAYS:-$ROOT/../shared/replays}
LOG_PREFIX=e2e-localize
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(shared branch)

WORK=$(mktemp -d /tmp/wehe-e2e-localize.XXXXXX)
cleanup() {
    "$SCRIPTS/testbed.sh" down || true
    if [ "${KEEP:-}" = 1 ]; then echo "e2e-localize: logs kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=scripts/localize-lib.sh
. "$SCRIPTS/localize-lib.sh"
localize_prerequisites

FAILURES=0
fail_case() { log "FAIL $1: $2"; FAILURES=$((FAILURES + 1)); }

class_bytes() { # class_bytes PLACE: bytes sent in the throttled class of that placement
    TOPO=y PLACE=$1 "$SCRIPTS/testbed.sh" counters | tr ' ' '\n' | sed -n 's/^[a-z]*_bytes=//p' | head -1
}

run_case() {
    local place result verdict reason started bytes scope=aggregate
    started=$(date +%s)
    SERVER_EXTRA=
    case "$1" in
        shared) place=shared ;;
        branch) place=a ;;
        shared-flow) place=shared scope=flow SERVER_EXTRA="--merge-point-probe --merge-point-ttl 2" ;;
        *) log "unknown case $1 (shared, branch, shared-flow)"; exit 2 ;;
    esac
    ybed "$place" "$scope" dpi || { fail_case "$1" "the servers did not start"; return; }
    result=$(localize_run)
    verdict=$(field "$result" localization)
    reason=$(field "$result" reason)
    local summary
    summary="exit $(cat "$WORK/last-status"), $(printf %.0f "$(cat "$WORK/last-seconds")") s, servers' verdicts \
$(field "$result" serverVerdicts), mwu p $(field "$result" mwuPValue), means $(field "$result" simultaneousMeansMbps) \
vs single $(field "$result" singleMeanMbps)${reason:+, reason $reason}"
    if [ -z "$result" ]; then
        fail_case "$1" "no localization ran (exit $(cat "$WORK/last-status")); client log:"
        tail -5 "$WORK/client.log" >&2
    elif [ "$1" = shared-flow ]; then
        local merge
        merge=$(python3 -c 'import json, sys
v = json.loads(sys.argv[1]).get("mergePointQueue")
print("absent" if not v else v["verdict"] + " (" + "; ".join(
    "merge point %+.1f ms p %.2g, client %s" % (b["mergePoint"]["extraDelayMs"], b["mergePoint"]["pValue"],
    "%+.1f ms p %.2g" % (b["path"]["extraDelayMs"], b["path"]["pValue"]) if b.get("path") else "no answers")
    if b else "not measured" for b in v["branches"]) + ")")' "$result")
        if [ "${merge%% *}" = access-network ]; then
            log "PASS $1: merge-point signal $merge; published localization $verdict ($summary)"
        else
            fail_case "$1" "merge-point signal $merge, expected access-network (published $verdict; $summary)"
        fi
    elif [ "$1" = shared ] && [ "$verdict" != access-network ]; then
        fail_case "$1" "localization $verdict, expected access-network ($summary)"
    elif [ "$1" = branch ] && [ "$verdict" = access-network ]; then
        fail_case "$1" "localization accused the access network with the throttler on one branch ($summary)"
    else
        log "PASS $1: localization $verdict ($summary)"
    fi
    if [ "$1" = shared ] && [ -n "$result" ] && [ "$DELAY_MS" -ge 11 ]; then
        local pvalues
        pvalues=$(field "$result" correlationPValues)
        if [ -n "$pvalues" ] && [ "$pvalues" != "[]" ]; then
            log "PASS $1: loss correlation ran on both servers' loss timelines (p-values $pvalues)"
        else
            fail_case "$1" "no loss-correlation p-values (reason: ${reason:-none}); the loss test did not run"
        fi
    fi
    bytes=$(class_bytes "$place")
    if [ "${bytes:-0}" -gt 500000 ]; then
        log "PASS $1: the throttled class on $place carried $bytes bytes towards the client"
    else
        fail_case "$1" "the throttled class on $place carried ${bytes:-0} bytes (expected > 500000)"
    fi
    log "case $1 took $(($(date +%s) - started)) s"
}

START=$(date +%s)
for name in "${CASES[@]}"; do run_case "$name"; done
log "finished in $(($(date +%s) - START)) s with $FAILURES failure(s)"
if [ "$FAILURES" -gt 0 ]; then
    for ns in s t; do log "server $ns log (last lines):"; tail -10 "$WORK/server-$ns.log" >&2 || true; done
    log "client log (last lines):"
    tail -20 "$WORK/client.log" >&2 || true
    exit 1
fi
