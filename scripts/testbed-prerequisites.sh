# testbed-prerequisites.sh - the common start of the kernel-testbed scripts (sourced, not run): can the testbed run
# here, are the replay traces there, are the binaries built. Needs ROOT, SCRIPTS, REPLAYS, BIN and a `log` function.

# testbed_prerequisites PREFIX REQUIRED_VARIABLE: when the kernel testbed cannot run, prints why and exits 0
# (skipped), or 1 when the variable named REQUIRED_VARIABLE is 1 (CI sets it, so losing the testbed cannot pass);
# exits 1 without traces; builds wehe and wehe-server unless SKIP_BUILD=1 and checks that both are in BIN.
testbed_prerequisites() {
    local prefix=$1 required=$2 reason binary
    if ! reason=$("$SCRIPTS/testbed.sh" check 2>&1); then
        echo "$reason" | sed "s/^/$prefix:   /" >&2
        if [ "${!required:-}" = 1 ]; then log "FAILED: the kernel testbed cannot run here ($required=1)"; exit 1; fi
        log "SKIPPED: the kernel testbed cannot run here"
        exit 0
    fi
    [ -r "$REPLAYS/apps_list.json" ] || { log "FAILED: no replay traces in $REPLAYS"; exit 1; }
    if [ "${SKIP_BUILD:-}" != 1 ]; then
        log "building wehe and wehe-server"
        (cd "$ROOT" && swift build --product wehe >&2 && swift build --product wehe-server >&2)
    fi
    for binary in wehe wehe-server; do
        [ -x "$BIN/$binary" ] || { log "FAILED: $BIN/$binary is missing (build it, or set BIN)"; exit 1; }
    done
}
