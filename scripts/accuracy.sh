#!/usr/bin/env bash
# accuracy.sh - how often does Wehe for Swift get the verdict right? R tests per condition on the kernel testbed
# (scripts/testbed.sh), each a full Wehe test (both replays, confirmation off) by the real client against the real
# server, then a table with our verdicts beside the analysis.md reference verdicts on the same samples
# (scripts/accuracy_report.py). Root only; not part of the normal test run. Takes hours at R=50.
#
#   scripts/accuracy.sh                         all conditions, R=50
#   R=5 CONDITIONS="none app4" scripts/accuracy.sh
#
# Conditions (path = an access link of PATH_KBIT shared by all traffic; "throttle" = the DPI class rate):
#   none      nothing throttled                                               truth: no differentiation
#   app1.5    the app's flows (TLS server name PATTERN) throttled to 1.5 Mbit/s  truth: differentiation
#   app4      … to 4 Mbit/s                                                   truth: differentiation
#   app10     … to 10 Mbit/s                                                  truth: differentiation
#   port      every flow of server port 443 throttled to PORT_KBIT (both replays of the app test)
#                                                                             truth: no differentiation (app test)
#   porttest  the same bed, the port test PORT_TEST (port X vs 443)           truth: differentiation
#   delayed   app throttled to DELAYED_KBIT after DELAYED_BYTES per connection  truth: differentiation
#   loss1     1 % random loss towards the client, nothing throttled           truth: no differentiation
#
# Settings: R=50 APP=deezer PATTERN=dzcdn PORT_TEST=port80s PATH_KBIT=100000 PORT_KBIT=10000 DELAYED_KBIT=4000
#           DELAYED_BYTES=1500000 DELAY_MS=0 (extra one-way delay on every condition) BIN=.build/release
#           (built unless SKIP_BUILD=1) REPLAYS=../shared/replays OUT=accuracy-<time>.jsonl TB=acc
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPTS=$ROOT/scripts
if [ -z "${ACCURACY_ISOLATED:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    exec env ACCURACY_ISOLATED=1 "$SCRIPTS/isolated.sh" "$0" "$@"
fi

export TB=${TB:-acc}
R=${R:-50}
APP=${APP:-deezer}
PATTERN=${PATTERN:-dzcdn}
PORT_TEST=${PORT_TEST:-port80s}
PATH_KBIT=${PATH_KBIT:-100000}
PORT_KBIT=${PORT_KBIT:-10000}
DELAYED_KBIT=${DELAYED_KBIT:-4000}
DELAYED_BYTES=${DELAYED_BYTES:-1500000}
DELAY_MS=${DELAY_MS:-0}
CONDITIONS=${CONDITIONS:-none app1.5 app4 app10 port porttest delayed loss1}
BIN=${BIN:-$ROOT/.build/release}
REPLAYS=${REPLAYS:-$ROOT/../shared/replays}
OUT=${OUT:-$ROOT/accuracy-$(date +%Y%m%d-%H%M%S).jsonl}

log() { echo "accuracy: $*" >&2; }

if ! reason=$("$SCRIPTS/testbed.sh" check 2>&1); then
    log "cannot run: $reason"
    exit 77
fi
if [ "${SKIP_BUILD:-}" != 1 ]; then
    (cd "$ROOT" && swift build -c release --product wehe >&2 && swift build -c release --product wehe-server >&2)
fi

WORK=$(mktemp -d /tmp/wehe-accuracy.XXXXXX)
trap '"$SCRIPTS/testbed.sh" down || true; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# condition -> "bed settings|test|truth|throttle kbit"
spec() {
    case "$1" in
        none) echo "MODE=none|$APP|negative|0" ;;
        app1.5) echo "MODE=dpi RATE_KBIT=1500|$APP|positive|1500" ;;
        app4) echo "MODE=dpi RATE_KBIT=4000|$APP|positive|4000" ;;
        app10) echo "MODE=dpi RATE_KBIT=10000|$APP|positive|10000" ;;
        port) echo "MODE=port PORTS=443 RATE_KBIT=$PORT_KBIT|$APP|negative|$PORT_KBIT" ;;
        porttest) echo "MODE=port PORTS=443 RATE_KBIT=$PORT_KBIT|$PORT_TEST|positive|$PORT_KBIT" ;;
        delayed) echo "MODE=dpi RATE_KBIT=$DELAYED_KBIT DELAYED_BYTES=$DELAYED_BYTES|$APP|positive|$DELAYED_KBIT" ;;
        loss1) echo "MODE=none LOSS_PM=10|$APP|negative|0" ;;
        *) return 1 ;;
    esac
}

start_server() {
    mkdir -p "$WORK/server"
    "$SCRIPTS/testbed.sh" exec s "$BIN/wehe-server" serve --replays "$REPLAYS" --data "$WORK/server" --bind "::" \
        --log-level error >>"$WORK/server.log" 2>&1 &
    for _ in $(seq 600); do
        [ "$("$SCRIPTS/testbed.sh" exec s ss -Hltn 'sport = :55556 or sport = :56566' | grep -c .)" = 2 ] && return 0
        sleep 0.1
    done
    log "the server did not start:"
    tail -20 "$WORK/server.log" >&2
    exit 1
}

STARTED=$(date +%s)
log "writing $OUT (R=$R, conditions: $CONDITIONS)"
for condition in $CONDITIONS; do
    IFS='|' read -r settings test truth throttle <<<"$(spec "$condition")" || { log "unknown condition $condition"; exit 2; }
    # shellcheck disable=SC2086  # settings are separate NAME=value words
    env $settings PATTERN="$PATTERN" LINK_KBIT="$PATH_KBIT" DELAY_MS="$DELAY_MS" "$SCRIPTS/testbed.sh" up
    start_server
    condition_started=$(date +%s)
    for run in $(seq "$R"); do
        if line=$("$SCRIPTS/testbed.sh" exec c "$BIN/wehe" testbed probe "$test" --label "$condition" \
            --cert "$WORK/server/certs/ca.crt" --replays "$REPLAYS" 2>>"$WORK/client.log"); then
            :
        else
            line='{"verdict": "error", "error": "wehe testbed probe exited '$?'"}'
        fi
        python3 -c '
import json, sys
record = json.loads(sys.argv[1])
record.update(condition=sys.argv[2], run=int(sys.argv[3]), truth=sys.argv[4], throttleKbit=int(sys.argv[5]),
              pathKbit=int(sys.argv[6]), delayMs=int(sys.argv[7]), settings=sys.argv[8], test=sys.argv[9])
print(json.dumps(record))' "$line" "$condition" "$run" "$truth" "$throttle" "$PATH_KBIT" "$DELAY_MS" "$settings" \
            "$test" >>"$OUT"
        log "$condition $run/$R: $(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("verdict"))' "$line")"
    done
    log "$condition: $R runs in $(($(date +%s) - condition_started)) s"
done
log "all conditions in $(($(date +%s) - STARTED)) s"
python3 "$SCRIPTS/accuracy_report.py" "$OUT"
