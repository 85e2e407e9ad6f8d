#!/usr/bin/env bash
# README's main-job command: installs what is missing, builds, runs the default scenario.
# Extra arguments go to the command as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh >/dev/null
exec build/cli/basp collective --topology paper-a100-2x4 --op alltoall -b 1MiB -e 256MiB -f 4 --groups 1,2 "$@"
