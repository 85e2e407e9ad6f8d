#!/usr/bin/env bash
# The rules of ARCHITECTURE.md that a compiler cannot see: no quoted include from sim/net or
# sim/common names a header of a library above it, the solver and engine headers include no
# routing, and no kernel file exceeds 400 lines. Usage: layout_rules.sh SOURCE_DIR
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
((bad == 0)) && echo "layout rules hold: net and common include nothing above them, solver and engine no routing, kernel files <= 400 lines"
exit $bad
