#!/usr/bin/env bash
# Configures and builds basp into build/ (or build-sanitize/ with --sanitize).
# CUDA parts are built only when nvcc is found; the message says which.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build; extra=()
if [[ "${1:-}" == "--sanitize" ]]; then dir=build-sanitize; extra=(-DBASP_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug); fi
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "${extra[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"
