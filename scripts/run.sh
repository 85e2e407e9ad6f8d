#!/usr/bin/env bash
# README's main-job command: installs what is missing, builds the `basp` executable alone, runs
# `basp simulate` on its default scenario (the BASP paper's cluster and setting). Extra arguments go
# to `basp simulate`, e.g. scripts/run.sh --model qwen1.5-1.8b --links
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh basp >/dev/null
exec build/cli/basp simulate "$@"
