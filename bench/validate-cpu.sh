#!/usr/bin/env bash
# Times the measured attention layer on CPUs: basp-validate layer on 8 MPI ranks (oversubscribed
# on small machines), Llama-3.2-1B's attention shape, checked against the reference. Prints the table.
# Usage: bench/validate-cpu.sh [BUILD_DIR] [extra basp-validate layer flags]
set -euo pipefail
build=${1:-build}
shift || true
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec mpirun --oversubscribe -np 8 "$build/validate/basp-validate" layer --model llama-3.2-1b --seq 1K --batch 2 \
  -w 1 -n 3 "$@"
