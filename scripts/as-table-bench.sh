#!/usr/bin/env bash
# Load time of the IP-to-AS table (WeheWire's ASTable) for a generated RouteViews-sized file, optimised (-O), without
# a release build of the whole package: the table's sources and the benchmark are compiled alone with swiftc.
# Prints figures only; nothing is asserted.   Usage: scripts/as-table-bench.sh [lines, default 1000000]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$root"/Sources/WeheWire/Network/*.swift "$root"/Sources/WeheWire/WeheWireError.swift \
    "$root"/Sources/WeheWire/Trace/ReplayFileReader.swift "$root"/Benchmarks/wehe-bench/Timing.swift "$work/"
grep -v '^internal import WeheWire' "$root"/Benchmarks/wehe-bench/ASTableBenchmarks.swift >"$work/Bench.swift"
printf 'runASTableBenchmark(lines: CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 1_000_000)\n' \
    >"$work/main.swift"
swiftc -O -module-name ASTableBench -o "$work/as-table-bench" "$work"/*.swift 2>&1 |
    grep -v 'warning:' || true
"$work/as-table-bench" "${1:-1000000}"
