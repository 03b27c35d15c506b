#!/usr/bin/env bash
# Checks formatting of every Swift file against .swift-format (4 spaces, 120 columns, ordered imports).
#   scripts/lint.sh          report problems (exit 1 if any)
#   scripts/lint.sh --fix    rewrite files in place
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.swift' 'Package.swift' | sort -u)
if [ "${1:-}" = "--fix" ]; then
    swift format format --in-place --parallel "${files[@]}"
else
    swift format lint --strict --parallel "${files[@]}"
fi
