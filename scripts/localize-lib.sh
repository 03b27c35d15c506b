# shellcheck shell=bash
# localize-lib.sh - shared by e2e-localize.sh and localize-accuracy.sh (sourced, not run): a WeHeY pair of real
# wehe-server processes on the Y testbed (scripts/testbed.sh, TOPO=y) and the real `wehe localize` client.
#
# Needs: ROOT, SCRIPTS, BIN, REPLAYS, WORK set by the caller; TB exported. Uses APP, PATTERN, RATE_KBIT, LINK_KBIT.

SERVER1=198.18.2.2
SERVER2=198.18.5.2

log() { echo "${LOG_PREFIX:-localize}: $*" >&2; }

# Skips (exit 0) or fails (exit 1 with E2E_REQUIRED=1) when the kernel testbed cannot run; builds the binaries.
localize_prerequisites() {
    # shellcheck source=scripts/testbed-prerequisites.sh
    . "$SCRIPTS/testbed-prerequisites.sh"
    testbed_prerequisites "${LOG_PREFIX:-localize}" E2E_REQUIRED
    # One CA for both servers: the client trusts it, and each server checks its peer's certificate with it.
    "$BIN/wehe-server" certs --out "$WORK/certs" --host "$SERVER1" --host "$SERVER2" >/dev/null
    # One fleet secret for both servers: server 1 signs its getMeasurements requests to server 2 with it.
    head -c 48 /dev/urandom | base64 >"$WORK/fleet.secret"
    chmod 600 "$WORK/fleet.secret"
}

# Waits until namespace $1 listens on the TLS side channel and the HTTPS analyzer.
wait_server() {
    local waited=0
    until "$SCRIPTS/testbed.sh" exec "$1" ss -Hltn 'sport = :55556 or sport = :56566' 2>/dev/null | grep -c . |
        grep -qx 2; do
        sleep 0.2
        waited=$((waited + 1))
        if [ "$waited" -ge 300 ]; then log "server $1 did not start; its log:"; tail -20 "$WORK/server-$1.log" >&2; return 1; fi
    done
}

# ybed PLACE SCOPE MODE: the Y bed with the throttler on PLACE (shared, a, b) and both servers running; SERVER_EXTRA
# adds options to both servers (e.g. "--merge-point-probe --merge-point-ttl 2").
ybed() {
    local ns
    env TOPO=y PLACE="$1" SCOPE="$2" MODE="$3" PATTERN="$PATTERN" RATE_KBIT="$RATE_KBIT" LINK_KBIT="$LINK_KBIT" \
        DELAY_MS="${DELAY_MS:-0}" "$SCRIPTS/testbed.sh" up
    for ns in s t; do
        mkdir -p "$WORK/server-$ns"
        "$SCRIPTS/testbed.sh" exec "$ns" "$BIN/wehe-server" serve --replays "$REPLAYS" --data "$WORK/server-$ns" \
            --bind "::" --tls-cert "$WORK/certs/server.crt" --tls-key "$WORK/certs/server.key" \
            --peer-ca "$WORK/certs/ca.crt" --localization-pair "$SERVER1,$SERVER2,testbed access network" \
            --fleet-secret-file "$WORK/fleet.secret" ${SERVER_EXTRA:-} \
            --log-level "${SERVER_LOG_LEVEL:-warning}" >>"$WORK/server-$ns.log" 2>&1 &
    done
    wait_server s && wait_server t
}

# localize_run [--force]: one `wehe localize APP` from the client namespace against server 1. Prints the
# localization JSON line (empty when the localization was skipped or the command failed); the exit status and the
# wall time go to $WORK/last-status and $WORK/last-seconds.
localize_run() {
    local started output status
    started=$(date +%s%N)
    set +e
    output=$("$SCRIPTS/testbed.sh" exec c "$BIN/wehe" localize "$APP" "$@" --server "$SERVER1" --json \
        --accept-consent --no-confirmation --data-dir "$WORK/client" --cert "$WORK/certs/ca.crt" \
        --replays "$REPLAYS" 2>>"$WORK/client.log")
    status=$?
    set -e
    echo "$status" >"$WORK/last-status"
    awk -v a="$started" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f\n", (b - a) / 1e9 }' >"$WORK/last-seconds"
    echo "$output" | grep -E '"kind": ?"localization"' || true
}

# field JSON KEY: a top-level value of a JSON object ("" when absent or null).
field() {
    python3 -c 'import json, sys
v = json.loads(sys.argv[1]).get(sys.argv[2]) if sys.argv[1] else None
print("" if v is None else (v.get("code", "") if isinstance(v, dict) else v))' "$1" "$2"
}
