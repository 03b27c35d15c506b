#!/usr/bin/env bash
# Browser check of the dashboard (ARCHITECTURE.md section 7: web = router tests, one live test and a headless
# browser check). Starts Examples/dashboard-demo (seeded in-memory store) on a free loopback port, then with
# Debian's headless Chromium:
#   * takes screenshots of the history page, a test page and the operator page (PNG files in $OUT);
#   * dumps each page's DOM after scripts ran and checks the expected elements (table rows, chart SVG paths, the
#     KS-gap marker, the verdict sentence, the operator matrix);
#   * measures the laid-out pages at 1400 and 390 px wide (scripts/browser_measure.py drives Chromium over the
#     DevTools protocol: getBoundingClientRect after layout) and saves full-page screenshots *-1400.png and
#     *-390.png: no sideways scrolling at 390 px, every history verdict inside the viewport, every mini-bar drawn
#     with a non-zero width, the test page's headline, verdict and explanation inside the viewport, chart labels
#     at least 9 px high on the phone, the average-speed bars drawn, operator tables not wider than their boxes;
#   * fails on any console error (see the self-test below for how errors are seen). Older method: Chromium runs
#     with `--enable-logging=stderr --v=0`, which writes every console message and uncaught exception as a `CONSOLE` log line, and Content-Security-Policy refusals as
#     "Refused to …" lines; the script greps those. A self-test first loads a page with a deliberate error and
#     checks that the grep sees it, so a silent logging change cannot make the check pass vacuously.
# Needs: chromium (`apt-get install -y chromium`). Usage: scripts/browser-check.sh [out-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-.build/browser-check}"
mkdir -p "$OUT"
command -v swift >/dev/null 2>&1 || { [ -r /etc/profile.d/swift.sh ] && . /etc/profile.d/swift.sh; }

CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$CHROMIUM" ]; then
    echo "browser-check: chromium is not installed (apt-get install -y chromium)" >&2
    exit 1
fi

FAILURES=0
fail() { echo "browser-check: FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }
pass() { echo "browser-check: ok: $*"; }

PROFILE="$(mktemp -d)"
chrome() {
    # Each run gets the same fresh profile directory; output of the page goes to stdout, logs to stderr.
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
        --disable-extensions --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$PROFILE" --enable-logging=stderr --v=0 --virtual-time-budget=4000 "$@"
}

console_errors() {
    # Console errors, uncaught exceptions and CSP refusals in a Chromium log.
    grep -E 'CONSOLE|Uncaught|Refused to' "$1" | grep -Ev 'CONSOLE\([0-9]+\)\] "\[?(info|debug)' || true
}

# Self-test of the console-error detection. Chromium 156's headless mode no longer writes console messages to its
# log, so the errors are read from the DevTools protocol (scripts/browser_measure.py no-console-errors: uncaught
# exceptions, console.error, CSP refusals, failed loads); both probes must be seen, so the check cannot pass
# vacuously. The log grep of page() below is kept for Chromium versions that still log.
PROBE_HTML="$OUT/probe.html"
printf '<!doctype html><title>probe</title><script>window.undefinedFunctionForProbe();</script>\n' > "$PROBE_HTML"
CSP_HTML="$OUT/probe-csp.html"
printf '<!doctype html><meta http-equiv="Content-Security-Policy" content="script-src %s"><title>csp</title><script>var probe = 1;</script>\n' "'none'" > "$CSP_HTML"
PROBE_OUT="$(python3 scripts/browser_measure.py "$CHROMIUM" "file://$(realpath "$PROBE_HTML")" 800 600 "$OUT/probe.png" \
    no-console-errors 2>&1 || true)"
if grep -q "undefinedFunctionForProbe" <<< "$PROBE_OUT"; then
    pass "console-error detection sees a deliberate error"
else
    fail "console-error detection did not see the deliberate error"
fi
PROBE_OUT="$(python3 scripts/browser_measure.py "$CHROMIUM" "file://$(realpath "$CSP_HTML")" 800 600 "$OUT/probe-csp.png" \
    no-console-errors 2>&1 || true)"
if grep -q "Content Security Policy" <<< "$PROBE_OUT"; then
    pass "console-error detection sees a Content-Security-Policy refusal"
else
    fail "console-error detection did not see the Content-Security-Policy refusal"
fi

echo "== building dashboard-demo"
swift build --product dashboard-demo > "$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
BIN="$(swift build --product dashboard-demo --show-bin-path)/dashboard-demo"
"$BIN" --port 0 --tests 1500 > "$OUT/demo.log" 2>&1 &
DEMO=$!
cleanup() { kill "$DEMO" 2>/dev/null || true; wait "$DEMO" 2>/dev/null || true; rm -rf "$PROFILE"; }
trap cleanup EXIT
BASE=""
for _ in $(seq 1 600); do
    BASE="$(grep -o 'http://127.0.0.1:[0-9]*' "$OUT/demo.log" | head -1 || true)"
    [ -n "$BASE" ] && break
    kill -0 "$DEMO" 2>/dev/null || { cat "$OUT/demo.log"; echo "browser-check: demo exited" >&2; exit 1; }
    sleep 0.2
done
[ -n "$BASE" ] || { echo "browser-check: demo did not start" >&2; exit 1; }
echo "== demo at $BASE"

# page NAME PATH WIDTHxHEIGHT: screenshot + DOM + console check; sets $DOM to the dumped DOM file.
page() {
    local name="$1" path="$2" size="$3"
    chrome --hide-scrollbars --window-size="${size/x/,}" --screenshot="$OUT/$name.png" "$BASE$path" \
        > /dev/null 2> "$OUT/$name.screenshot.log" || fail "$name: screenshot command failed"
    [ -s "$OUT/$name.png" ] && pass "$name: screenshot $OUT/$name.png" || fail "$name: no screenshot"
    DOM="$OUT/$name.html"
    chrome --dump-dom "$BASE$path" > "$DOM" 2> "$OUT/$name.log" || fail "$name: dump-dom failed"
    local errors
    errors="$(console_errors "$OUT/$name.log"; console_errors "$OUT/$name.screenshot.log")"
    if [ -n "$errors" ]; then fail "$name: console errors:"; echo "$errors" >&2; else pass "$name: no console errors"; fi
}

expect() { # expect NAME DESCRIPTION PATTERN [MIN_COUNT]
    local name="$1" what="$2" pattern="$3" min="${4:-1}" count
    count="$(grep -oE -- "$pattern" "$DOM" | wc -l)"
    if [ "$count" -ge "$min" ]; then pass "$name: $what ($count)"; else fail "$name: $what: found $count, expected >= $min"; fi
}

page history "/" 1280x900
expect history "history table" '<table class="history">'
expect history "test rows with links" 'href="/tests/demo-user/[0-9]+\?lang=en"' 30
expect history "verdict badges" 'class="badge badge-(diff|none|inconclusive|blocked|pending)"' 30
expect history "throughput mini bars" 'class="mini-bars"' 30

page test "/tests/demo-user/2" 1280x2300
expect test "throughput line chart" 'id="throughput-chart"'
expect test "chart SVG paths" '<path d="M[0-9.]+ [0-9.]+L' 2
expect test "CDF chart" 'id="cdf-chart"'
expect test "CDF step paths" 'class="series series-(original|control) step"' 2
expect test "KS gap marker" 'class="ks-gap"'
expect test "verdict badge" 'class="badge badge-(diff|none|inconclusive|blocked)"'
expect test "verdict sentence" 'class="explanation">[^<]*(looks throttled|looks prioritized|No differentiation|Inconclusive|looks blocked)'

expect test "DPI rule with the matched bytes marked" '<mark>[0-9a-f][0-9a-f]</mark>' 8

page dpi "/operator/dpi" 1280x900
expect dpi "found DPI rules" '<code class="dpi-text">' 2

page test-fr "/tests/demo-user/2?lang=fr" 1280x900
expect test-fr "French verdict sentence" 'class="explanation">[^<]*(semble ralenti|semble favorisé|Pas de différenciation|Non concluant|semble bloqué)'

page operator "/operator/" 1280x2600
expect operator "tests-per-day bars" '<rect x=' 10
expect operator "provider x app matrix" 'id="matrix-table"'
expect operator "per-app table" 'id="apps-table"'
expect operator "health panel" 'class="stats health-list"'

page run "/run" 1280x900
expect run "start form" '<form method="post" action="/run"'

# measure NAME PATH WIDTH HEIGHT CHECK...: layout measurements and a full-page screenshot $OUT/NAME.png.
measure() {
    local name="$1" path="$2" width="$3" height="$4"
    shift 4
    local output
    if output="$(python3 scripts/browser_measure.py "$CHROMIUM" "$BASE$path" "$width" "$height" "$OUT/$name.png" \
        no-console-errors "$@" 2>&1)"; then
        echo "$output" | sed "s/^ok: /browser-check: ok: $name: /"
    else
        echo "$output" | sed "s/^/browser-check: $name: /" >&2
        fail "$name: layout measurement ($output)"
    fi
}

# The newest test of the demo is the one with too few measurements; the one before has a spiky control.
NEWEST="$(grep -oE 'href="/tests/demo-user/[0-9]+\?lang=en"' "$OUT/history.html" | head -1 | grep -oE '[0-9]+' | head -1)"
[ -n "$NEWEST" ] || fail "history: no test link found"
SPIKY=$((NEWEST - 1))
measure history-390 "/" 390 844 no-sideways-scroll verdicts-visible minibars-visible
measure history-1400 "/" 1400 900 no-sideways-scroll verdicts-visible minibars-visible tables-fit
measure test-390 "/tests/demo-user/2" 390 844 no-sideways-scroll verdict-visible chart-text-readable averages-visible
measure test-1400 "/tests/demo-user/2" 1400 900 no-sideways-scroll verdict-visible chart-text-readable averages-visible
measure test-spiky-390 "/tests/demo-user/$SPIKY" 390 844 no-sideways-scroll verdict-visible chart-text-readable
measure test-few-390 "/tests/demo-user/$NEWEST" 390 844 no-sideways-scroll verdict-visible
measure operator-1400 "/operator/" 1400 900 no-sideways-scroll tables-fit
measure operator-fr-1400 "/operator/?lang=fr" 1400 900 no-sideways-scroll tables-fit
measure history-fr-390 "/?lang=fr" 390 844 no-sideways-scroll verdicts-visible minibars-visible
measure operator-390 "/operator/" 390 844 no-sideways-scroll
measure operator-dpi-390 "/operator/dpi" 390 844 no-sideways-scroll
measure operator-dpi-1400 "/operator/dpi" 1400 900 no-sideways-scroll tables-fit
measure run-390 "/run" 390 844 no-sideways-scroll
measure run-1400 "/run" 1400 900 no-sideways-scroll
measure test-fr-390 "/tests/demo-user/2?lang=fr" 390 844 no-sideways-scroll verdict-visible chart-text-readable
# The timeline over the demo's history on two providers (with a month of daily tests): legend, "since when" and the day-by-day
# charts inside the viewport, on a phone and a desktop, in English and French, and the page to print.
measure timeline-390 "/timeline" 390 844 no-sideways-scroll timeline-visible
measure timeline-1400 "/timeline" 1400 900 no-sideways-scroll timeline-visible tables-fit
measure timeline-fr-390 "/timeline?lang=fr" 390 844 no-sideways-scroll timeline-visible
measure timeline-print-1400 "/timeline/print" 1400 900 no-sideways-scroll timeline-visible
measure operator-timeline-390 "/operator/timeline" 390 844 no-sideways-scroll
measure operator-timeline-1400 "/operator/timeline" 1400 900 no-sideways-scroll

page test-spiky "/tests/demo-user/$SPIKY" 1280x1400
expect test-spiky "axis cut said on the chart" 'id="throughput-chart-clip"'
page test-few "/tests/demo-user/$NEWEST" 1280x900
expect test-few "headline says too few measurements" '<h1>.*Too few measurements to judge'
expect test-few "badge says too few measurements" 'Inconclusive \(too few measurements\)</span>'

# Readable results: each test page's bar caption follows its verdict (English and French), the live chart of a run
# with a confirmation run breaks between the runs, the operator page at 390 px (no sideways scrolling, no chart labels
# overlapping, breakdown tables fit and the matrix scrolls inside its box), and the settings page (fits a phone; a
# change submitted from its form in the browser is saved and said).
readable_results_checks() {
    local verdict_tests style id want
    # One test of each verdict in the history, from the history page's rows (link, then badge).
    verdict_tests="$(python3 - "$OUT/history.html" <<'PY'
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
seen = {}
for row in re.findall(r"<tr.*?</tr>", html, re.S):
    link = re.search(r'href="/tests/demo-user/([0-9]+)\?lang=en"', row)
    badge = re.search(r'class="badge badge-(diff|none|inconclusive|blocked)"', row)
    if link and badge and badge.group(1) not in seen:
        seen[badge.group(1)] = link.group(1)
for style, test in seen.items():
    print(style, test)
PY
)"
    [ "$(wc -l <<< "$verdict_tests")" -ge 3 ] || fail "captions: fewer than three verdicts found in the history"
    while read -r style id; do
        [ -n "$id" ] || continue
        for lang in en fr; do
            page "caption-$style-$lang" "/tests/demo-user/$id?lang=$lang" 1280x1400
            case "$style-$lang" in
                diff-en) want="found the two speeds different" ;;
                none-en) want="no sign of differentiation" ;;
                inconclusive-en) want="cannot tell from these measurements" ;;
                blocked-en) want="could not get through" ;;
                diff-fr) want="différents au-delà du hasard" ;;
                none-fr) want="aucun signe de différenciation" ;;
                inconclusive-fr) want="ne peut pas dire" ;;
                blocked-fr) want="n'a pas pu passer" ;;
            esac
            # The first caption after the average bars (python: the DOM is one long line for grep).
            if python3 -c 'import re, sys; t = open(sys.argv[1], encoding="utf-8").read(); i = t.find("averages-figure"); m = re.search(r"<figcaption>([^<]*)", t[i:]) if i >= 0 else None; print(m.group(1) if m else "")' "$DOM" \
                | grep -qF "$want"; then
                pass "caption-$style-$lang: the bars' caption says \"$want\""
            else
                fail "caption-$style-$lang: the bars' caption does not say \"$want\""
            fi
            if [ "$style" != none ] && grep -qE 'no sign of differentiation|aucun signe de différenciation' "$DOM"; then
                fail "caption-$style-$lang: a $style test page says 'no sign of differentiation'"
            fi
        done
    done <<< "$verdict_tests"

    # A run of Netflix, which the demo's provider throttles: its first result asks for a confirmation run.
    local location run_id state
    location="$(curl -s -o /dev/null -w '%{redirect_url}' -X POST -H "Origin: $BASE" \
        --data 'test=netflix&consent=yes&lang=en' "$BASE/run")"
    run_id="$(grep -oE 'run-[0-9]+' <<< "$location" | head -1 || true)"
    if [ -z "$run_id" ]; then
        fail "live chart: the run could not be started ($location)"
    else
        for _ in $(seq 1 300); do
            state="$(curl -s "$BASE/api/runs/$run_id" | grep -oE '"state" : "[a-z]+"' | head -1 || true)"
            case "$state" in *finished* | *failed*) break ;; esac
            sleep 0.2
        done
        [[ "$state" == *finished* ]] && pass "live chart: run $run_id finished" || fail "live chart: run $run_id: $state"
        measure run-confirmed-390 "/run/$run_id?lang=en" 390 844 no-sideways-scroll live-chart-break
        measure run-confirmed-fr-1400 "/run/$run_id?lang=fr" 1400 900 no-sideways-scroll live-chart-break
        page run-confirmed "/run/$run_id?lang=en" 1280x1200
        expect run-confirmed "break labelled 'Confirmation run'" 'class="run-break-label"[^>]*>Confirmation run<'
        expect run-confirmed "log in plain words" '<li>Replaying Netflix \((original|control)\)</li>' 4
    fi

    measure operator-readable-390 "/operator/" 390 844 no-sideways-scroll labels-apart tables-scroll
    measure operator-readable-fr-390 "/operator/?lang=fr" 390 844 no-sideways-scroll labels-apart tables-scroll
    measure operator-readable-1400 "/operator/" 1400 900 no-sideways-scroll labels-apart tables-fit

    page settings "/settings" 1280x1400
    expect settings "settings form with its token" '<input type="hidden" name="token" value="[^"]+">'
    expect settings "one input per setting" '<input type="text" id="setting-[a-z-]+" name="value\.[a-z-]+"' 5
    expect settings "navigation links the settings page" 'href="/settings\?lang=en" aria-current="page"'
    measure settings-390 "/settings" 390 844 no-sideways-scroll settings-submit
    measure settings-fr-1400 "/settings?lang=fr" 1400 900 no-sideways-scroll
    # Posts that do not come from the page's own form are refused: no token, or another site's origin.
    local status
    status="$(curl -s -o /dev/null -w '%{http_code}' -X POST --data 'value.rules=ios&shown.rules=android' "$BASE/settings")"
    [ "$status" = 403 ] && pass "settings: a post without the form's token is refused (403)" \
        || fail "settings: a post without the form's token answered $status"
    status="$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Origin: http://elsewhere.example' \
        --data 'value.rules=ios&shown.rules=android' "$BASE/settings")"
    [ "$status" = 403 ] && pass "settings: a post from another origin is refused (403)" \
        || fail "settings: a post from another origin answered $status"
}
readable_results_checks

if [ "$FAILURES" -gt 0 ]; then
    echo "browser-check: $FAILURES check(s) failed; screenshots and DOM dumps in $OUT" >&2
    exit 1
fi
echo "browser-check: all checks passed; screenshots in $OUT (history, test, test-fr, operator, run at 1280 px;"
echo "  history-390/-1400, test-390/-1400, test-spiky-390, test-few-390, operator-390/-1400, run-390,"
echo "  timeline-390/-1400, timeline-fr-390, timeline-print-1400 full pages)"
