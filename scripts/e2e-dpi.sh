#!/usr/bin/env bash
# e2e-dpi.sh - the DPI search (`wehe dpi`) against classifiers whose rule we know, on the kernel testbed
# (scripts/testbed.sh): the real wehe-server in the server namespace, the real wehe client in the client namespace,
# iptables string matching (xt_string, per packet, first INSPECT packets of a connection) and an htb shaper in the
# middlebox. Root only.
#
#   scripts/e2e-dpi.sh [case...]      cases: keyword port none two budget (default: all five)
#
# The app is Pandora (one 368-byte HTTP request on port 80, C_1, then 1.9 MB); its request carries
# "Host: mediaserver-cont-sv5-2-v4v6.pandora.com" and "GET /public/ads/…/movie.mp4".
#   keyword  matched flows: "pandora.com" in a packet        -> rule C_1 [101,112) = "pandora.com", exactly
#   port     every flow to server port 80 throttled            -> the test finds no differentiation (both replays
#                                                                 use port 80), and our server refuses even a
#                                                                 forced search: a DPI search follows a test that
#                                                                 found differentiation here (a hostile client's
#                                                                 made-up rules are refused so)
#   none     nothing throttled                                 -> no differentiation, no search
#   two      one rule needing both "movie.mp4" and "pandora.com" in the same packet
#                                                              -> matching bytes exactly the runs [47,56) and
#                                                                 [101,112); the rule (longest run) "pandora.com"
#   budget   as keyword, through `wehe run --dpi --budget 8`    -> the search stops before a probe that could take it
#                                                                 past 8 MB: result "budget", at most 8 MB used
# Each case prints probes used, bytes transferred and time next to the estimate 2·log2(L/4) + 2k of analysis.md 5.3
# (L = 358 probed bytes of C_1, k = keyword bytes).
#
# Settings: METHOD=server (server, local or binary) EARLY_STOP=0 (1: --early-stop) RATE_KBIT=2000 LINK_KBIT=10000
#           BIN=.build/debug (built unless SKIP_BUILD=1) REPLAYS=../shared/replays TB=dpi KEEP=1 (keep logs)
# Without root or the kernel features it prints why and exits 0 (skipped), or 1 when E2E_REQUIRED=1; a failed case
# exits 1. Network only inside the namespaces testbed.sh creates (198.18.0.0/15, 2001:2::/48); everything runs in a
# private mount+PID namespace (scripts/isolated.sh), so nothing outlives a killed run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPTS=$ROOT/scripts

if [ -z "${E2E_ISOLATED:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    exec env E2E_ISOLATED=1 "$SCRIPTS/isolated.sh" "$0" "$@"
fi

export TB=${TB:-dpi}
METHOD=${METHOD:-server}
EARLY_STOP=${EARLY_STOP:-0}
RATE_KBIT=${RATE_KBIT:-2000}
LINK_KBIT=${LINK_KBIT:-10000}
BIN=${BIN:-$ROOT/.build/debug}
REPLAYS=${REPLAYS:-$ROOT/../shared/replays}
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(keyword port none two budget)
APP=pandora

log() { echo "e2e-dpi: $*" >&2; }

# shellcheck source=scripts/testbed-prerequisites.sh
. "$SCRIPTS/testbed-prerequisites.sh"
testbed_prerequisites e2e-dpi E2E_REQUIRED

WORK=$(mktemp -d /tmp/wehe-e2e-dpi.XXXXXX)
cleanup() {
    "$SCRIPTS/testbed.sh" down || true
    if [ "${KEEP:-}" = 1 ]; then log "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

SERVER_ADDRESS=198.18.2.2

# bed SETTINGS...: brings the bed up and starts the server in it.
bed() {
    env RATE_KBIT="$RATE_KBIT" LINK_KBIT="$LINK_KBIT" "$@" "$SCRIPTS/testbed.sh" up
    mkdir -p "$WORK/server"
    "$SCRIPTS/testbed.sh" exec s "$BIN/wehe-server" serve --replays "$REPLAYS" --data "$WORK/server" --bind "::" \
        --log-level warning >>"$WORK/server.log" 2>&1 &
    local waited=0
    until "$SCRIPTS/testbed.sh" exec s ss -Hltn 'sport = :55556 or sport = :56566' 2>/dev/null | grep -c . |
        grep -qx 2; do
        sleep 0.2
        waited=$((waited + 1))
        if [ "$waited" -ge 300 ]; then log "the server did not start; its log:"; tail -20 "$WORK/server.log" >&2; return 1; fi
    done
}

# A classifier matching every given string in one packet (one iptables rule, so all must be present), on a bed
# brought up with MODE=port PORTS=1 (the shaper without a classifier of its own).
strings_classifier() {
    local ipt args=() word
    for word in "$@"; do args+=(-m string --algo bm --string "$word"); done
    for ipt in iptables ip6tables; do
        "$SCRIPTS/testbed.sh" exec r "$ipt" -t mangle -A FORWARD -m connbytes --connbytes 0:10 --connbytes-dir both \
            --connbytes-mode packets "${args[@]}" -j CONNMARK --set-mark 0x1/0x1
        for dev in rc rs; do
            "$SCRIPTS/testbed.sh" exec r "$ipt" -t mangle -A POSTROUTING -o "$dev" -m connmark --mark 0x1/0x1 \
                -j CLASSIFY --set-class 1:20
        done
    done
}

# wehe_dpi EXTRA...: one `wehe dpi pandora` from the client namespace; prints its JSON lines (test, then search).
wehe_dpi() {
    local early=()
    [ "$EARLY_STOP" = 1 ] && early=(--early-stop)
    "$SCRIPTS/testbed.sh" exec c "$BIN/wehe" dpi "$APP" --server "$SERVER_ADDRESS" --json --accept-consent \
        --data-dir "$WORK/client" --cert "$WORK/server/certs/ca.crt" --replays "$REPLAYS" --method "$METHOD" \
        "${early[@]}" "$@" 2>>"$WORK/client.log"
}

FAILURES=0
fail() { log "FAIL $*"; FAILURES=$((FAILURES + 1)); }

# check CASE OUTPUT EXPECTATION KEYWORD_BYTES: compares the search's JSON line with the expectation and prints the
# cost next to analysis.md 5.3's estimate.
check() {
    python3 - "$@" <<'PY'
import json, math, sys
case, output, expectation, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
test = next((line for line in lines if "verdict" in line and "dpi" not in line), None)
search = next((line for line in lines if "dpi" in line), None)
verdict = test["verdict"] if test else "none"
if search is None:
    print(f"FAIL {case}: no DPI output (test verdict {verdict})"); sys.exit(1)
got = search["result"]
estimate = 2 * math.log2(358 / 4) + 2 * k if k else None
cost = (f"{search.get('probeCount', 0)} probes, {search.get('bytes', 0) / 1e6:.1f} MB, "
        f"{search.get('durationSeconds', 0):.0f} s")
if estimate:
    cost += f" (estimate 2*log2(L/4)+2k = {estimate:.0f} probes for L=358, k={k})"
rules = search.get("rules", [])
found = "; ".join(f"{r['packet']}[{r['left']},{r['right']}) {r['text']!r} runs {r['runs']}" for r in rules) or search.get("message") or got
ok = False
if expectation == "rule:pandora.com":
    ok = got == "rule" and len(rules) == 1 and (rules[0]["packet"], rules[0]["left"], rules[0]["right"]) == ("C_1", 101, 112) \
        and rules[0]["text"] == "pandora.com" and rules[0]["runs"] == [[101, 112]]
elif expectation == "rule:two":
    ok = got == "rule" and len(rules) == 1 and rules[0]["packet"] == "C_1" and rules[0]["runs"] == [[47, 56], [101, 112]] \
        and rules[0]["text"] == "pandora.com"
elif expectation == "no-content-rule":
    ok = got == "no-content-rule" and not rules
elif expectation == "budget":
    ok = got == "budget" and not rules and 0 < search.get("bytes", 0) <= 8_000_000 and search.get("probeCount", 0) >= 1
elif expectation == "not-searched":
    ok = got == "not-searched" and verdict != "differentiation"
print(f"{'PASS' if ok else 'FAIL'} {case}: test {verdict}; search {got}: {found}; {cost}")
sys.exit(0 if ok else 1)
PY
}

run_case() {
    local started output
    started=$(date +%s)
    case "$1" in
        keyword)
            bed MODE=port PORTS=1
            strings_classifier pandora.com
            output=$(wehe_dpi --no-confirmation) || { fail "keyword: wehe dpi failed"; return; }
            check keyword "$output" rule:pandora.com 11 >&2 || FAILURES=$((FAILURES + 1))
            ;;
        two)
            bed MODE=port PORTS=1
            strings_classifier movie.mp4 pandora.com
            output=$(wehe_dpi --no-confirmation) || { fail "two: wehe dpi failed"; return; }
            check two "$output" rule:two 20 >&2 || FAILURES=$((FAILURES + 1))
            ;;
        port)
            bed MODE=port PORTS=80
            if output=$(wehe_dpi --no-confirmation --force-dpi); then
                fail "port: the server ran a search after a test without differentiation: $output"
            elif grep -q "refused the DPI search: test .* found no differentiation" "$WORK/client.log"; then
                log "PASS port: no differentiation, and the forced search was refused by the server"
            else
                fail "port: wehe dpi failed without the server's refusal (client log above)"
            fi
            ;;
        none)
            bed MODE=none
            output=$(wehe_dpi) || { fail "none: wehe dpi failed"; return; }
            check none "$output" not-searched 0 >&2 || FAILURES=$((FAILURES + 1))
            ;;
        budget)
            bed MODE=port PORTS=1
            strings_classifier pandora.com
            local early=()
            [ "$EARLY_STOP" = 1 ] && early=(--early-stop)
            output=$("$SCRIPTS/testbed.sh" exec c "$BIN/wehe" run "$APP" --dpi --budget 8 --no-confirmation \
                --server "$SERVER_ADDRESS" --json --accept-consent --data-dir "$WORK/client" \
                --cert "$WORK/server/certs/ca.crt" --replays "$REPLAYS" --method "$METHOD" "${early[@]}" \
                2>>"$WORK/client.log") || { fail "budget: wehe run --dpi failed"; return; }
            check budget "$output" budget 0 >&2 || FAILURES=$((FAILURES + 1))
            ;;
        *) log "unknown case $1 (keyword, port, none, two, budget)"; exit 2 ;;
    esac
    log "case $1 took $(($(date +%s) - started)) s (method $METHOD, early stop $EARLY_STOP)"
}

START=$(date +%s)
for name in "${CASES[@]}"; do run_case "$name"; done
log "finished in $(($(date +%s) - START)) s with $FAILURES failure(s)"
if [ "$FAILURES" -gt 0 ]; then
    log "server log (last lines):"
    tail -20 "$WORK/server.log" >&2 || true
    log "client log (last lines):"
    tail -30 "$WORK/client.log" >&2 || true
    exit 1
fi
