#!/usr/bin/env bash
# The rules of ARCHITECTURE.md that a compiler cannot see: no quoted include from sim/net or
# sim/common names a header of a library above it, the solver and engine headers include no
# routing, no kernel file exceeds 400 lines and no simulator file 500, every source file opens with
# a comment saying what it models, and every speed figure README cites from bench/README.md is in
# a table there. Usage: layout_rules.sh SOURCE_DIR
set -euo pipefail
cd "$1"
bad=0
fail() { echo "layout rule broken: $*"; bad=1; }

headers_of() { (cd "$1" && ls ./*.hpp | sed 's|^\./||'); }
for lower in sim/common:sim/net sim/common:sim/step sim/net:sim/step; do
  from=${lower%%:*} above=${lower##*:}
  for h in $(headers_of "$above"); do
    if grep -n "#include \"\(.*/\)\?$h\"" "$from"/*.hpp "$from"/*.cpp; then fail "$from includes $above/$h"; fi
  done
done
for h in sim/net/maxmin.hpp sim/net/engine.hpp; do
  if grep -n '#include "\(routing\|topology\)\.hpp"' "$h"; then fail "$h includes routing or topology"; fi
done
for f in kernels/*; do
  lines=$(wc -l < "$f")
  if ((lines > 400)); then fail "$f has $lines lines (at most 400: one operation per file)"; fi
done
for f in sim/*/*.hpp sim/*/*.cpp; do
  lines=$(wc -l < "$f")
  if ((lines > 500)); then fail "$f has $lines lines (at most 500: split it by concern)"; fi
done
for f in sim/*/*.hpp sim/*/*.cpp cli/*.hpp cli/*.cpp kernels/*.hpp kernels/*.cpp kernels/*.cu kernels/*.cuh \
         validate/*.hpp validate/*.cpp validate/fitting/*.hpp validate/fitting/*.cpp; do
  if ! head -n 2 "$f" | grep -q '^//'; then fail "$f does not open with a comment saying what it models"; fi
done
# README's speed figures name their source: each figure ("1.15 s", "2.1 GB") on a line that cites
# bench/README.md must stand, with its unit, in a row of one of bench/README.md's tables.
while IFS= read -r line; do
  for figure in $(grep -oE '[0-9]+(\.[0-9]+)? (s|min|GB|GiB|MiB)\b' <<< "$line" | tr ' ' '_'); do
    number=${figure%_*} unit=${figure#*_}
    if ! grep '^|' bench/README.md | grep -E "(^|[^0-9.])${number//./\\.}([^0-9]|$)" | grep -qE "[0-9] ${unit}\b"; then
      fail "README.md cites ${number} ${unit} from bench/README.md, whose tables do not have it: $line"
    fi
  done
done < <(grep 'bench/README.md' README.md)
((bad == 0)) && echo "layout rules hold: net and common include nothing above them, solver and engine no routing, kernel files <= 400 lines, sim files <= 500, every file opens with its comment, README's bench figures are in bench/README.md's tables"
exit $bad
