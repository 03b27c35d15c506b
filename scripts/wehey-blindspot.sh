#!/usr/bin/env bash
# wehey-blindspot.sh - data for WeHeY's blind spot, a prototype benchmark on the kernel Y testbed,
# not a CI test. Per placement, R runs of `wehe localize APP --force` (as scripts/localize-accuracy.sh), and during
# each run:
#   * scripts/wehey_probe.py in both server namespaces: in-flow copies of the replay's latest data segment with the
#     TTL of the merge point (the access router r, 2 hops from each server) and out-of-flow UDP baselines with the
#     same TTL, timed by the ICMP time-exceeded answers (where does the throttled flow queue?), and the same to the
#     client (in-flow copies answered by D-SACKs, datagrams to a closed port by port unreachable);
#   * scripts/wehey_sniff.py in the client namespace: every incoming TCP data segment (passive signals: per-flow
#     rate plateaus, retransmission epochs).
# Everything is kept in OUTDIR/<placement>/<run>/ (localization.json, probes-s.jsonl, probes-t.jsonl,
# arrivals.csv); scripts/wehey_blindspot.py analyses it offline.
#
#   OUTDIR=/tmp/yc-data R=10 scripts/wehey-blindspot.sh [placement...]
#
# Placements (default: shared-flow both-branches branch none) and the right answer:
#   shared-flow       DPI throttler on the access router, one RATE_KBIT class per flow    -> access-network
#   shared-aggregate  DPI throttler on the access router, one RATE_KBIT class for all    -> access-network
#   both-branches     the same DPI throttler on branch a and on branch b                   -> no-evidence
#   both-branches-flow  the same, one class per flow on each branch                       -> no-evidence
#   both-branches-police  a policer (MODE=police: drops above RATE_KBIT, no queue) on each branch -> no-evidence
#   branch            DPI throttler on branch a only                                       -> no-evidence
#   none              nothing throttled                                                   -> no-evidence
# Settings: R=10 APP=deezer PATTERN=dzcdn RATE_KBIT=4000 LINK_KBIT=100000 DELAY_MS=20 BIN=.build/debug
#           REPLAYS=../shared/replays TB=yc OUTDIR=<dir, kept> NOPROBE=1 (no probes: the product alone);
#           SWIFT_PROBE=1: the product's prober instead of the Python one (both servers run with
#           --merge-point-probe --merge-point-ttl 2; the verdict is localization.json's mergePointQueue);
#           the testbed's own settings pass through (e.g. QLIMIT=4500: a throttler queue of three frames)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPTS=$ROOT/scripts

if [ -z "${E2E_ISOLATED:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    exec env E2E_ISOLATED=1 "$SCRIPTS/isolated.sh" "$0" "$@"
fi

export TB=${TB:-yc}
R=${R:-10}
APP=${APP:-deezer}
PATTERN=${PATTERN:-dzcdn}
RATE_KBIT=${RATE_KBIT:-4000}
LINK_KBIT=${LINK_KBIT:-100000}
export DELAY_MS=${DELAY_MS:-20}
BIN=${BIN:-$ROOT/.build/debug}
REPLAYS=${REPLAYS:-$ROOT/../shared/replays}
LOG_PREFIX=wehey-blindspot
PLACEMENTS=("$@")
[ ${#PLACEMENTS[@]} -gt 0 ] || PLACEMENTS=(shared-flow both-branches branch none)
[[ $R =~ ^[0-9]+$ && $R -gt 0 ]] || { echo "R must be a positive integer" >&2; exit 2; }

if [ "${SWIFT_PROBE:-}" = 1 ]; then
    export SERVER_EXTRA="--merge-point-probe --merge-point-ttl 2"
    NOPROBE=1
fi

WORK=$(mktemp -d /tmp/wehey-blindspot.XXXXXX)
OUTDIR=${OUTDIR:-$WORK/data}
mkdir -p "$OUTDIR"
cleanup() {
    "$SCRIPTS/testbed.sh" down || true
    rm -rf "$WORK/client" "$WORK/server-s" "$WORK/server-t"
    echo "wehey-blindspot: data in $OUTDIR, logs in $WORK" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=scripts/localize-lib.sh
. "$SCRIPTS/localize-lib.sh"
localize_prerequisites
git -C "$ROOT" rev-parse --short HEAD >"$OUTDIR/commit" 2>/dev/null || true

for placement in "${PLACEMENTS[@]}"; do
    case "$placement" in
        shared-flow) bed=(shared flow dpi) ;;
        shared-aggregate) bed=(shared aggregate dpi) ;;
        both-branches) bed=(ab aggregate dpi) ;;
        both-branches-flow) bed=(ab flow dpi) ;;
        both-branches-police) bed=(ab aggregate police) ;;
        branch) bed=(a aggregate dpi) ;;
        none) bed=(shared aggregate none) ;;
        *) log "unknown placement $placement"; exit 2 ;;
    esac
    ybed "${bed[@]}" || { log "the servers did not start for $placement"; exit 1; }
    for run in $(seq "$R"); do
        dir=$OUTDIR/$placement/$run
        mkdir -p "$dir"
        pids=()
        if [ "${NOPROBE:-}" != 1 ]; then
            "$SCRIPTS/testbed.sh" exec s python3 "$SCRIPTS/wehey_probe.py" --out "$dir/probes-s.jsonl" --iface s0 \
                --server "$SERVER1" 2>>"$WORK/probe.log" &
            pids+=($!)
            "$SCRIPTS/testbed.sh" exec t python3 "$SCRIPTS/wehey_probe.py" --out "$dir/probes-t.jsonl" --iface t0 \
                --server "$SERVER2" 2>>"$WORK/probe.log" &
            pids+=($!)
        fi
        "$SCRIPTS/testbed.sh" exec c python3 "$SCRIPTS/wehey_sniff.py" --out "$dir/arrivals.csv" --iface c0 \
            2>>"$WORK/probe.log" &
        pids+=($!)
        result=$(localize_run --force)
        for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
        for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
        echo "$result" >"$dir/localization.json"
        echo "$(cat "$WORK/last-status") $(cat "$WORK/last-seconds")" >"$dir/status"
        log "$placement $run/$R: $(field "$result" localization) merge-point $(python3 -c 'import json, sys
v = json.loads(sys.argv[1]).get("mergePointQueue") if sys.argv[1] else None
print(v["verdict"] if v else "-")' "$result") (exit $(cat "$WORK/last-status"), $(cat "$WORK/last-seconds") s)"
    done
done
