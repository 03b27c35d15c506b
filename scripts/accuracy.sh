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
#   portafter3mb  the port test PORT_TEST with port 443 at full speed for 3 MB of each flow, then 70 % of NEED_KBIT
#                 (use a large port test, e.g. PORT_TEST=port80l)                 truth: differentiation
#   delayed   app throttled to DELAYED_KBIT after DELAYED_BYTES per connection  truth: differentiation
#   loss1     1 % random loss towards the client, nothing throttled           truth: no differentiation
#
# Mild and partial throttling, and harder unthrottled paths (CONDITIONS=sensitive runs them all). NEED_KBIT
# is the app's unthrottled mean on this path (Deezer: 89 Mbit/s measured); a cap at fraction f sets the htb rate to
# f·NEED_KBIT/0.956 (htb counts Ethernet frames, goodput is 95.6 % of its rate):
#   cap60 cap70 cap75 cap80 cap90   the app shaped to 60-90 % of its need            truth: differentiation
#   police50 police70 police85      the app policed (dropped above the rate) at 50-85 %  truth: differentiation
#   first1mb      only the first 1 MB of each app connection at 10 Mbit/s, then full speed  truth: differentiation
#   first3mb      only the first 3 MB at 50 % of the need, then full speed                   truth: differentiation
#   after3mb      full speed for 3 MB, then 70 % of the need                                 truth: differentiation
#   first<N>ms    each app flow throttled to 50 % of the need during its first N ms (clock from the packet the
#                 DPI matched; testbed.sh FIRST_MS), then full speed; e.g. first300ms   truth: differentiation
#   after<N>ms    full speed for the first N ms of each app flow, then 70 % of the need (AFTER_MS); e.g. after300ms
#                                                                                             truth: differentiation
#   rtt50 rtt150  50 / 150 ms more round-trip time, ± 10 / 30 ms jitter (FIFO), nothing throttled   truth: none
#   crossconst crossonoff crossheavy  cross traffic from the server side to the client on the shared access link:
#                 one flow paced at 30 Mbit/s; one full-speed flow 1.5 s on / 1.5 s off; 4 full-speed flows  truth: none
#   loss2         2 % random loss towards the client                                  truth: no differentiation
#   cap60onoff cap70onoff cap80onoff  the cap of cap60-cap80 with crossonoff's cross traffic on the shared link:
#                 a mild throttle on a busy path                                      truth: differentiation
#
# Settings: R=50 APP=deezer PATTERN=dzcdn PORT_TEST=port80s PATH_KBIT=100000 PORT_KBIT=10000 DELAYED_KBIT=4000
#           DELAYED_BYTES=1500000 DELAY_MS=0 (extra one-way delay on every condition) BIN=.build/release
#           (built unless SKIP_BUILD=1) REPLAYS=../shared/replays OUT=accuracy-<time>.jsonl TB=acc
#           ROUNDS=1 (wehe testbed probe --rounds: 10 gives the sensitive verdict of the interleaved mode)
#           ADAPTIVE=1 (wehe testbed probe --adaptive: the adaptive verdict instead; ROUNDS is then ignored)
#           NEED_KBIT=89000
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
SENSITIVE_CONDITIONS="cap70 cap80 crossonoff none cap60 cap75 cap90 police50 police70 police85 first1mb first3mb after3mb
    first300ms after300ms rtt50 rtt150 crossconst crossheavy loss1 loss2"
[ "$CONDITIONS" != sensitive ] || CONDITIONS=$SENSITIVE_CONDITIONS
ROUNDS=${ROUNDS:-1}
ADAPTIVE=${ADAPTIVE:-}
if [ "$ADAPTIVE" = 1 ]; then MODE_ARGS=(--adaptive); else MODE_ARGS=(--rounds "$ROUNDS"); fi
NEED_KBIT=${NEED_KBIT:-89000}
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

# The htb rate whose goodput is the fraction $1 of the app's need.
need_rate() { python3 -c 'import sys; print(round(float(sys.argv[1]) * int(sys.argv[2]) / 0.956))' "$1" "$NEED_KBIT"; }

# condition -> "bed settings|test|truth|throttle kbit|hook" (hook: what to add after `up`, see run_hook)
spec() {
    case "$1" in
        cap60 | cap70 | cap75 | cap80 | cap90)
            echo "MODE=dpi RATE_KBIT=$(need_rate "0.${1#cap}")|$APP|positive|$(need_rate "0.${1#cap}")|" ;;
        cap60onoff | cap70onoff | cap80onoff)
            local capped; capped=$(need_rate "0.${1:3:2}")
            echo "MODE=dpi RATE_KBIT=$capped|$APP|positive|$capped|cross:--pattern onoff --on 1.5 --off 1.5" ;;
        police50 | police70 | police85)
            echo "MODE=police RATE_KBIT=$(need_rate "0.${1#police}")|$APP|positive|$(need_rate "0.${1#police}")|" ;;
        first1mb) echo "MODE=dpi RATE_KBIT=10000|$APP|positive|10000|first:1000000" ;;
        first3mb) echo "MODE=dpi RATE_KBIT=$(need_rate 0.5)|$APP|positive|$(need_rate 0.5)|first:3000000" ;;
        after3mb) echo "MODE=dpi RATE_KBIT=$(need_rate 0.7) DELAYED_BYTES=3000000|$APP|positive|$(need_rate 0.7)|" ;;
        first*ms | after*ms)
            local ms=${1#first} fraction=0.5 knob=FIRST_MS
            [ "$ms" != "$1" ] || ms=${1#after} fraction=0.7 knob=AFTER_MS
            ms=${ms%ms}
            [[ $ms =~ ^[0-9]+$ && $ms -gt 0 ]] || return 1
            echo "MODE=dpi RATE_KBIT=$(need_rate $fraction) $knob=$ms|$APP|positive|$(need_rate $fraction)|" ;;
        rtt50) echo "MODE=none DELAY_MS=50 JITTER_MS=10|$APP|negative|0|" ;;
        rtt150) echo "MODE=none DELAY_MS=150 JITTER_MS=30|$APP|negative|0|" ;;
        crossconst) echo "MODE=none|$APP|negative|0|cross:--pattern constant --rate-mbit 30" ;;
        crossonoff) echo "MODE=none|$APP|negative|0|cross:--pattern onoff --on 1.5 --off 1.5" ;;
        crossheavy) echo "MODE=none|$APP|negative|0|cross:--pattern heavy --flows 4" ;;
        loss2) echo "MODE=none LOSS_PM=20|$APP|negative|0|" ;;
        none) echo "MODE=none|$APP|negative|0" ;;
        app1.5) echo "MODE=dpi RATE_KBIT=1500|$APP|positive|1500" ;;
        app4) echo "MODE=dpi RATE_KBIT=4000|$APP|positive|4000" ;;
        app10) echo "MODE=dpi RATE_KBIT=10000|$APP|positive|10000" ;;
        port) echo "MODE=port PORTS=443 RATE_KBIT=$PORT_KBIT|$APP|negative|$PORT_KBIT" ;;
        porttest) echo "MODE=port PORTS=443 RATE_KBIT=$PORT_KBIT|$PORT_TEST|positive|$PORT_KBIT" ;;
        portafter3mb)
            echo "MODE=port PORTS=443 RATE_KBIT=$(need_rate 0.7) DELAYED_BYTES=3000000|$PORT_TEST|positive|$(need_rate 0.7)|" ;;
        delayed) echo "MODE=dpi RATE_KBIT=$DELAYED_KBIT DELAYED_BYTES=$DELAYED_BYTES|$APP|positive|$DELAYED_KBIT" ;;
        loss1) echo "MODE=none LOSS_PM=10|$APP|negative|0" ;;
        *) return 1 ;;
    esac
}

# After `up`: first:N lets a marked connection's packets towards the client skip the throttled class once it has
# carried N bytes that way (an ACCEPT ahead of the CLASSIFY rule); cross:ARGS starts cross_traffic.py (sink in the
# client namespace, source in the server namespace); `testbed.sh down` stops both with the namespaces.
run_hook() {
    case "$1" in
        "") ;;
        first:*)
            for ipt in iptables ip6tables; do
                "$SCRIPTS/testbed.sh" exec r "$ipt" -t mangle -I POSTROUTING 1 -o rc -m connmark --mark 0x1/0x1 \
                    -m connbytes --connbytes "${1#first:}:" --connbytes-dir reply --connbytes-mode bytes -j ACCEPT
            done
            ;;
        cross:*)
            "$SCRIPTS/testbed.sh" exec c python3 "$SCRIPTS/cross_traffic.py" sink --port 5201 >/dev/null 2>&1 &
            sleep 0.3
            # shellcheck disable=SC2086  # the pattern's arguments are separate words
            "$SCRIPTS/testbed.sh" exec s python3 "$SCRIPTS/cross_traffic.py" source --host 198.18.1.2 --port 5201 \
                ${1#cross:} >/dev/null 2>&1 &
            sleep 1
            ;;
        *) log "unknown hook $1"; exit 2 ;;
    esac
}

start_server() {
    mkdir -p "$WORK/server"
    # One client runs hundreds of tests here: the per-network quota of stored replays (400 a day, for a public
    # server) would refuse the adaptive verdict's rounds after about ten tests of a condition (exit 17).
    "$SCRIPTS/testbed.sh" exec s "$BIN/wehe-server" serve --replays "$REPLAYS" --data "$WORK/server" --bind "::" \
        --stored-replays-per-network 1000000 --log-level error >>"$WORK/server.log" 2>&1 &
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
    IFS='|' read -r settings test truth throttle hook <<<"$(spec "$condition")" || {
        log "unknown condition $condition"
        exit 2
    }
    # shellcheck disable=SC2086  # settings are separate NAME=value words
    env DELAY_MS="$DELAY_MS" $settings PATTERN="$PATTERN" LINK_KBIT="$PATH_KBIT" "$SCRIPTS/testbed.sh" up
    run_hook "$hook"
    start_server
    condition_started=$(date +%s)
    for run in $(seq "$R"); do
        if line=$("$SCRIPTS/testbed.sh" exec c "$BIN/wehe" testbed probe "$test" --label "$condition" \
            "${MODE_ARGS[@]}" --cert "$WORK/server/certs/ca.crt" --replays "$REPLAYS" 2>>"$WORK/client.log"); then
            :
        else
            line='{"verdict": "error", "error": "wehe testbed probe exited '$?'"}'
        fi
        python3 -c '
import json, sys
record = json.loads(sys.argv[1])
record.update(condition=sys.argv[2], run=int(sys.argv[3]), truth=sys.argv[4], throttleKbit=int(sys.argv[5]),
              pathKbit=int(sys.argv[6]), delayMs=int(sys.argv[7]), settings=sys.argv[8], test=sys.argv[9],
              hook=sys.argv[10], rounds=int(sys.argv[11]))
print(json.dumps(record))' "$line" "$condition" "$run" "$truth" "$throttle" "$PATH_KBIT" "$DELAY_MS" "$settings" \
            "$test" "$hook" "$ROUNDS" >>"$OUT"
        log "$condition $run/$R: $(python3 -c 'import json,sys; r = json.loads(sys.argv[1])
print(r.get("verdict"), "| sensitive:", r.get("sensitiveVerdict"), r.get("sensitiveEffect"), "p", r.get("sensitivePValue"))' \
            "$line")"
    done
    log "$condition: $R runs in $(($(date +%s) - condition_started)) s; throttled class 1:20: $("$SCRIPTS/testbed.sh" counters)"
done
log "all conditions in $(($(date +%s) - STARTED)) s"
python3 "$SCRIPTS/accuracy_report.py" "$OUT"
if [ "$ADAPTIVE" = 1 ]; then
    python3 "$SCRIPTS/accuracy_report.py" "$OUT" --adaptive
elif [ "$ROUNDS" != 1 ]; then
    python3 "$SCRIPTS/accuracy_report.py" "$OUT" --sensitive
fi
