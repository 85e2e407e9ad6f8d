#!/usr/bin/env bash
# Runs every fuzz target (tests/fuzz) for SECONDS each (default 60) under ASan+UBSan, built with
# clang's libFuzzer into build-fuzz/. Corpora grow in build-fuzz/corpus/TARGET (seeded from the
# shipped files); an input that breaks a property is copied to tests/data/fuzz/TARGET, where the
# ordinary test suite replays it, and the script fails.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   as long as asked, a new exploration each time
#        scripts/fuzz.sh --runs N [TARGET...]   N inputs per target from a fixed seed (what CI runs:
#                                      bounded; the seed files' directory order may still vary by clone)
# Without TARGETs, every target: topology model calibration measurements units cli.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/fuzz.sh [SECONDS per target | --runs N] [TARGET...]" >&2; exit 2; }
if [[ "${1:-}" == "--runs" ]]; then
  [[ "${2:-}" =~ ^[0-9]+$ ]] || usage
  limit=(-runs="$2" -seed=1); what="$2 runs"
  shift 2
else
  seconds=60
  if [[ "${1:-}" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi  # else the first word is a target
  limit=(-max_total_time="$seconds"); what="$seconds s"
fi
scripts/deps.sh
scripts/deps.sh --fuzz
targets=(topology model calibration measurements units cli)
if (( $# > 0 )); then
  for t in "$@"; do [[ " ${targets[*]} " == *" $t "* ]] || { echo "fuzz: no target '$t' (${targets[*]})" >&2; exit 2; }; done
  targets=("$@")
fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBASP_SANITIZE=ON \
  -DBASP_FUZZ=ON -DBASP_WITH_CUDA=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/basp_fuzz_}"

export BASP_DATA_DIR="$PWD"
seeds() {  # the shipped inputs each target starts from
  case "$1" in
    topology) echo topologies tests/data tests/fuzz/seeds/topology ;;
    model) echo models ;;
    calibration) echo calibrations tests/fuzz/seeds/calibration ;;
    measurements) echo tests/data tests/fuzz/seeds/measurements ;;
    units) echo tests/fuzz/seeds/units ;;
    cli) echo tests/fuzz/seeds/cli ;;
  esac
}
failed=0
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus" "build-fuzz/findings/$t"
  log=build-fuzz/fuzz-$t.log
  # Each target's dictionary: its input's words and the values beyond and at the ends of the
  # physical ranges (1e308, 1e-320, 2^64, inf, nan, 2^24, ...), so that mutations reach the checks.
  if ! build-fuzz/tests/fuzz/basp_fuzz_"$t" "${limit[@]}" -dict="tests/fuzz/dictionaries/$t.dict" -timeout=10 -rss_limit_mb=4096 \
       -max_len=16384 -artifact_prefix="build-fuzz/findings/$t/" -print_final_stats=1 \
       "$corpus" $(seeds "$t") >"$log" 2>&1; then
    failed=1
    mkdir -p "tests/data/fuzz/$t"
    cp build-fuzz/findings/"$t"/* "tests/data/fuzz/$t/" 2>/dev/null || true
    echo "fuzz $t: FINDING (log: $log; inputs copied to tests/data/fuzz/$t)"
    grep -m3 -E "basp fuzz finding|ERROR: |runtime error" "$log" || true
  fi
  execs=$(grep -m1 -E "stat::number_of_executed_units" "$log" | awk '{print $2}')
  cov=$(grep -E "^#[0-9]+" "$log" | tail -1 | grep -oE "cov: [0-9]+" || true)
  echo "fuzz $t: ${execs:-?} executions ($what), ${cov:-cov: ?}, corpus $(ls "$corpus" | wc -l) inputs"
done
exit $failed
