#!/usr/bin/env bash
# What CI checks, runnable locally: formatting, a build with explicit target-dependency import checks, the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== format lint"
scripts/lint.sh
echo "== build (explicit target dependency import check)"
swift build --build-tests --explicit-target-dependency-import-check error
echo "== tests"
swift test --skip-build "$@"
