#!/usr/bin/env bash
# README's test command: installs what is missing, builds, runs the whole test suite with CTest.
# --sanitize builds with ASan+UBSan into build-sanitize/ and runs the same suite there.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --tests
dir=build; [[ "${1:-}" == "--sanitize" ]] && dir=build-sanitize
scripts/build.sh "$@"
cd "$dir"
ctest --output-on-failure -j "$(nproc)"
