#!/usr/bin/env bash
# Configures and builds basp into build/ (or build-sanitize/ with --sanitize): everything, or only
# the targets named (scripts/build.sh basp). CUDA parts are built only when nvcc is found.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build; extra=()
if [[ "${1:-}" == "--sanitize" ]]; then dir=build-sanitize; extra=(-DBASP_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug); shift; fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "${extra[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
