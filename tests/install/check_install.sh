#!/usr/bin/env bash
# Installs the build in $1 into a fresh prefix, then builds qcoll's examples as an outside
# project with find_package(qcoll) and with pkg-config, and runs them (the Ascend samples of
# examples/ascend/ linked with qcoll::ascend, for 2, 4 and 8 devices).
# Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
config=$(find "$work/prefix" -name qcollConfig.cmake)
test -n "$config" && test -f "$(dirname "$config")/qcollConfigVersion.cmake"
pcdir=$(dirname "$(find "$work/prefix" -name qcoll.pc)")

echo "check_install: find_package(qcoll) from an outside project"
cmake -S "$src/tests/install" -B "$work/user" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DQCOLL_EXAMPLES_DIR="$src/examples" >/dev/null
cmake --build "$work/user" >/dev/null
ran=0
for exe in "$work"/user/c_* "$work"/user/cpp_*; do
  [ -x "$exe" ] || continue
  echo "check_install: running $(basename "$exe")"
  "$exe" >/dev/null
  ran=$((ran + 1))
done
[ "$ran" -ge 2 ] || { echo "check_install: expected at least 2 example programs, ran $ran"; exit 1; }
ascend=0
for exe in "$work"/user/ascend_*; do
  [ -x "$exe" ] || continue
  for n in 2 4 8; do
    echo "check_install: running $(basename "$exe") $n"
    "$exe" "$n" >/dev/null
  done
  ascend=$((ascend + 1))
done
[ "$ascend" -ge 3 ] || { echo "check_install: expected 3 Ascend sample programs, ran $ascend"; exit 1; }

echo "check_install: pkg-config --cflags --libs qcoll"
export PKG_CONFIG_PATH="$pcdir"
flags=$(pkg-config --cflags --libs --static qcoll)
cc -std=c11 -o "$work/c_pc" "$src/examples/c_reduce_scatter.c" $flags
# A shared libqcoll is found through the .pc file's libdir (nothing sets an rpath here).
LD_LIBRARY_PATH="$(pkg-config --variable=libdir qcoll)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/c_pc" >/dev/null
echo "check_install: 4 passed, 0 failed"
