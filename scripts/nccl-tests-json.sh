#!/usr/bin/env bash
# Turns an nccl-tests log (the text all_gather_perf & co. print) into a basp-measurements file
# that `basp calibrate` fits links to: one row per size of each test, its out-of-place time.
set -euo pipefail
usage() {
  cat >&2 <<'EOF'
usage: scripts/nccl-tests-json.sh LOG RANKS "PROVENANCE" "HARDWARE" [TESTS [MIN_BYTES]] > out.json
  LOG         nccl-tests output (one or more tests, e.g. all_gather_perf then alltoall_perf)
  RANKS       ranks of the run (nodes x GPUs per node): the topology's first RANKS GPUs stand for them
  PROVENANCE  where the log comes from (repository, path, commit; or who ran it, when, versions)
  HARDWARE    the cluster in words (GPU, nodes, NICs)
  TESTS       comma-separated tests to keep (default alltoall,all_gather,reduce_scatter); a log of
              older nccl-tests without "Collective test starting" lines is one test: name it alone
  MIN_BYTES   leave out smaller sizes (default 1)
EOF
  exit 2
}
[[ $# -ge 4 && $# -le 6 ]] || usage
log=$1 ranks=$2 provenance=$3 hardware=$4 tests=${5:-alltoall,all_gather,reduce_scatter} min_bytes=${6:-1}
[[ -r $log ]] || { echo "nccl-tests-json: cannot read $log" >&2; exit 2; }
[[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "nccl-tests-json: RANKS must be a whole number >= 1, got '$ranks'" >&2; exit 2; }
[[ $min_bytes =~ ^[0-9]+$ ]] || { echo "nccl-tests-json: MIN_BYTES must be a whole number, got '$min_bytes'" >&2; exit 2; }
json_text() { printf '%s' "$1" | tr '\n\t\r' '   ' | sed 's/\\/\\\\/g; s/"/\\"/g'; }
version=$(grep -m1 '^# nccl-tests version' "$log" | sed 's/^# //' || true)
# Data rows: size count type [redop root] then time algbw busbw #wrong out-of-place and the same
# in-place: the out-of-place time is the 8th field from the end, whichever columns the version
# prints (older ones have no root column and leave redop blank for all-to-all).
# Made first, so that a log without the tests asked for writes nothing on stdout.
# A log that lists its ranks ("#  Rank  3 ...") must list RANKS of them before its first row.
num='^[0-9]+([.][0-9]+)?$'
rows=$(awk -v keep="$tests" -v min="$min_bytes" -v ranks="$ranks" -v num="$num" '
  BEGIN { n = split(keep, k, ","); for (i = 1; i <= n; ++i) want[k[i]] = 1; if (n == 1) test = k[1] }
  /Collective test starting:/ { test = $NF; sub(/_perf$/, "", test); next }
  /^#[ \t]+Rank[ \t]+[0-9]+/ && !seen_row { listed[$3] = 1; next }
  /^#/ || NF < 10 { next }
  $1 ~ /^[0-9]+$/ && !seen_row {
    seen_row = 1
    count = 0; for (r in listed) ++count
    if (count > 0 && count != ranks + 0) {
      printf "nccl-tests-json: the log lists %d ranks, RANKS says %d\n", count, ranks > "/dev/stderr"; failed = 1; exit 2
    }
  }
  $1 ~ /^[0-9]+$/ && (NF < 11 || NF > 13 || $(NF - 7) !~ num || $(NF - 6) !~ num || $(NF - 5) !~ num) {
    printf "nccl-tests-json: line %d is not a row nccl-tests prints (size count type [redop root] time algbw busbw #wrong, out-of-place then in-place): %s\n", NR, $0 > "/dev/stderr"; failed = 1; exit 2
  }
  test in want && $1 ~ /^[0-9]+$/ && $1 + 0 >= min + 0 && $1 + 0 > 0 {
    printf "%s  {\"op\": \"%s\", \"size_bytes\": %s, \"time_s\": %.9g, \"algbw_GBps\": %s, \"busbw_GBps\": %s}",
           (rows++ ? ",\n" : ""), test, $1, $(NF - 7) * 1e-6, $(NF - 6), $(NF - 5)
  }
  END { if (failed) exit 2; if (!rows) { print "nccl-tests-json: no rows of the tests asked for (" keep ")" > "/dev/stderr"; exit 2 } }
' "$log") || exit 2
printf '{\n "schema": "basp-measurements",\n "schema_version": 1,\n "command": "nccl-tests",\n'
printf ' "provenance": "%s",\n' "$(json_text "$provenance${version:+ ($version)}")"
printf ' "hardware": {"description": "%s"},\n' "$(json_text "$hardware")"
printf ' "config": {"ranks": %s},\n "results": [\n%s\n ]\n}\n' "$ranks" "$rows"
