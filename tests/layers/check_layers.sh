#!/usr/bin/env bash
# Checks that the build enforces the layer graph (src/CMakeLists.txt, docs/architecture.md):
# for every pair of layers (L, M), a file of L that includes a header of M preprocesses
# with L's include root exactly when L may use M, and otherwise fails with "No such file" (gcc) or "file not found" (clang).
# Usage: check_layers.sh CXX SRC_DIR LAYER_ROOT INCLUDE_DIR   (the vendor headers of
# qcoll::ascend, INCLUDE_DIR/qcoll/ascend, are public like the rest of INCLUDE_DIR)
set -u
export LC_ALL=C  # the compiler messages matched below are the untranslated ones
cxx=$1 src=$2 root=$3 inc=$4
# The graph as documented: each layer and the layers it may include (besides itself).
declare -A allowed=(
  [core]=""
  [formats]="core"
  [quant]="core formats"
  [kernels]="core formats"
  [comm]="core"
  [ops]="core formats quant kernels comm"
  [api]="core formats quant kernels comm ops"
  [ascend]=""
)
# ascend (src/ascend, the library qcoll::ascend) is over the public C API only: no private
# layer below it, and no layer may include it.
layers="core formats quant kernels comm ops api ascend"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for L in $layers; do
  [ -d "$root/$L" ] || { echo "FAIL: no include root for layer $L in $root"; fail=$((fail + 1)); continue; }
  for M in $layers; do
    header=$(cd "$src" && ls "$M"/*.hpp 2>/dev/null | head -n 1)
    [ -n "$header" ] || continue  # a layer without headers yet
    printf '#include "%s"\n' "$header" > "$tmp/t.cpp"
    expect=fail
    if [ "$L" = "$M" ] || [[ " ${allowed[$L]} " == *" $M "* ]]; then expect=ok; fi
    if out=$("$cxx" -std=c++20 -E -o /dev/null -I"$root/$L" -I"$inc" -I"$inc/qcoll/ascend" "$tmp/t.cpp" 2>&1); then got=ok; else got=fail; fi
    if [ "$got" = "$expect" ] && { [ "$got" = ok ] || grep -qE "No such file|file not found" <<<"$out"; }; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL: layer $L including $header: expected $expect, got $got"
      echo "$out" | head -n 5
    fi
  done
done
echo "layers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
