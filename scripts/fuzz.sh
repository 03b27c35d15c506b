#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser that reads bytes from the network or from files (Fuzz/README.md).
# Builds WeheCore + WeheWire + the harness (Fuzz/Harness) with `swiftc -sanitize=fuzzer,address` into .build-fuzz/,
# then runs each libFuzzer target for a bounded time with Fuzz/dictionaries/<target>.dict (the format's key words),
# seeded with Fuzz/corpus/<target> (plus, read at run time, the project's Fixtures/replays and the small published
# traces in ../shared/replays). Prints per target: executions,
# exec/s, coverage (cov/ft), corpus size, crashes. Exits non-zero on a crash, invariant violation, leak, timeout or
# out-of-memory report; the input is kept in .build-fuzz/artifacts/<target>/ and printed (hex) in the log.
#
#   scripts/fuzz.sh                      every target, FUZZ_SECONDS (default 20) each
#   scripts/fuzz.sh json client-trace    only these targets
#   FUZZ_SECONDS=600 nice -n 19 scripts/fuzz.sh client-trace     a long run
#   FUZZ_BUILD_ONLY=1 scripts/fuzz.sh    build only;  FUZZ_SKIP_BUILD=1 reuses the last build
#   scripts/fuzz.sh --reproduce FILE TARGET   runs one input (a kept crash) through a target once
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swiftc >/dev/null 2>&1 || { [ -r /etc/profile.d/swift.sh ] && . /etc/profile.d/swift.sh; }
# Swift's own crash backtracer does not finish under the address sanitizer (seen here: it waited for minutes);
# libFuzzer's deadly-signal handler prints the stack and keeps the input instead.
export SWIFT_BACKTRACE=enable=no

out=.build-fuzz
binary="$out/wehe-fuzz"
seconds="${FUZZ_SECONDS:-20}"
targets_all=(side-channel-framer side-channel-messages analyzer-form udp-loss-report client-trace server-trace json
    capture-frames as-table)
# Largest input per target: traces get room for a few packets; the rest are side-channel or form sized.
max_len() { case "$1" in client-trace | server-trace | capture-frames) echo 16384 ;; *) echo 4096 ;; esac; }

# Runs swiftc; ld.gold warns about every address-sanitizer helper symbol it cannot export, those lines are noise.
compile() {
    local output status
    output="$(swiftc "$@" 2>&1)" && status=0 || status=$?
    [ -z "$output" ] || grep -v 'Cannot export' <<<"$output" || true
    return "$status"
}

# The committed Swift files of a folder (others' untracked work in progress stays out); every file outside git.
swift_sources() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files "$1/*.swift" | sort
    else
        find "$1" -name '*.swift' | sort
    fi
}

build() {
    local flags=(-swift-version 6 -package-name wehe_swift -enable-upcoming-feature InternalImportsByDefault
        -parse-as-library -O -sanitize=fuzzer,address -I "$out/obj")
    mkdir -p "$out/obj"
    local start=$SECONDS sources module
    for module in WeheCore WeheWire WehePcap; do
        mapfile -t sources < <(swift_sources "Sources/$module")
        rm -f "$out/obj/lib$module.a"
        compile "${flags[@]}" -module-name "$module" -emit-module -emit-module-path "$out/obj/$module.swiftmodule" \
            -emit-library -static -o "$out/obj/lib$module.a" "${sources[@]}" \
            || { echo "fuzz: building $module failed" >&2; exit 1; }
    done
    mapfile -t sources < <(find Fuzz/Harness -name '*.swift' | sort)  # new harness files count before a commit
    # wehe record's frame decoding needs only WehePcap (libpcap's frame type): its files are compiled into the
    # harness itself.
    sources+=(Sources/WeheRecord/{PacketDecoder,FlowTable,PayloadInspector,LibPcap,WeheRecordError}.swift)
    rm -f "$binary"
    compile "${flags[@]}" -module-name WeheFuzz -o "$binary" "${sources[@]}" "$out/obj/libWeheWire.a" \
        "$out/obj/libWeheCore.a" "$out/obj/libWehePcap.a" || { echo "fuzz: building the harness failed" >&2; exit 1; }
    echo "fuzz: built $binary in $((SECONDS - start)) s"
}

if [ "${1:-}" = "--reproduce" ]; then
    [ -x "$binary" ] || build
    WEHE_FUZZ_TARGET="$3" "$binary" "$2" </dev/null
    exit $?
fi

[ "${FUZZ_SKIP_BUILD:-0}" = 1 ] && [ -x "$binary" ] || build
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${targets_all[@]}")

# Run-time seeds that are not committed: the project's fixture traces and catalogs, and the published traces and
# catalog of ../shared/replays that fit the trace targets' input size (the large ones would only be truncated).
seeds_for() {
    local target="$1" dir="$out/seeds/$1"
    rm -rf "$dir"
    mkdir -p "$dir"
    case "$target" in
        client-trace)
            for file in Fixtures/replays/*.pcap_client_all.json ../shared/replays/*.pcap_client_all.json; do
                [ -f "$file" ] && [ "$(stat -c %s "$file")" -le "$(max_len client-trace)" ] && cp "$file" "$dir/" || true
            done ;;
        json)
            for file in Fixtures/replays/apps_list.json Fixtures/ios/app_list.json ../shared/replays/apps_list.json; do
                [ -f "$file" ] && [ "$(stat -c %s "$file")" -le "$(max_len json)" ] && cp "$file" "$dir/$(echo "$file" | tr / _)" || true
            done ;;
    esac
    echo "$dir"
}

status=0
summary=()
for target in "${targets[@]}"; do
    corpus="$out/corpus/$target"
    artifacts="$out/artifacts/$target"
    mkdir -p "$corpus" "$artifacts" "Fuzz/corpus/$target"
    seeds="$(seeds_for "$target")"
    log="$out/logs/$target.log"
    mkdir -p "$out/logs"
    echo "== fuzz $target: ${seconds} s"
    touch "$log.start"
    set +e
    dictionary=()
    [ -f "Fuzz/dictionaries/$target.dict" ] && dictionary=(-dict="Fuzz/dictionaries/$target.dict")
    WEHE_FUZZ_TARGET="$target" ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}" "$binary" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$target")" "${dictionary[@]}" \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "Fuzz/corpus/$target" "$seeds" \
        </dev/null >"$log" 2>&1
    code=$?
    set -e
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n1 || true)
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p')
    # Reports (crash, leak, timeout, out of memory) are the inputs libFuzzer kept during this run.
    mapfile -t kept < <(find "$artifacts" -type f -newer "$log.start" | sort)
    crashes=${#kept[@]}
    line=$(printf '%-22s runs %-10s exec/s %-7s cov %-5s ft %-6s corpus %-10s peak-rss %-5s MB  crashes %s' \
        "$target" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${rss:-?}" "$crashes")
    echo "$line"
    summary+=("$line")
    if [ "$code" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        status=1
        echo "fuzz: $target FAILED (exit $code); the end of its log:"
        grep -vE '^#[0-9]+|^INFO:|^\s*$' "$log" | tail -n 40
        for file in "${kept[@]}"; do
            echo "fuzz: kept input $file ($(stat -c %s "$file") bytes), first 512 bytes as hex:"
            head -c 512 "$file" | od -An -tx1 | head -n 32
        done
    fi
done
echo "== fuzz summary (${seconds} s per target)"
printf '%s\n' "${summary[@]}"
exit "$status"
