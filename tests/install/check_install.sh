#!/usr/bin/env bash
# Installs the build in $1 into a fresh prefix, then builds qcoll's examples as an outside
# project with find_package(qcoll) and with pkg-config, and runs them (the Ascend samples of
# examples/ascend/ linked with qcoll::ascend, for 2, 4 and 8 devices); then from a project
# of LANGUAGES C (the C examples) and one of LANGUAGES CXX (the C++ example), both
# configured with find_package(MPI) disabled (a project that never uses MPI needs none of
# it), and, given MPIRUN and a qcoll built with MPI, the CXX project with the component mpi
# (qcoll::mpi) running a program under mpirun -np 2.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR [MPIRUN]
set -euo pipefail
build=$1 src=$2 mpirun=${3:-}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
config=$(find "$work/prefix" -name qcollConfig.cmake)
test -n "$config" && test -f "$(dirname "$config")/qcollConfigVersion.cmake"
pcdir=$(dirname "$(find "$work/prefix" -name qcoll.pc)")

# run_examples DIR MIN: runs the example programs (c_*, cpp_*) built in DIR; at least MIN.
run_examples() {
  local ran=0 exe
  for exe in "$1"/c_* "$1"/cpp_*; do
    [ -x "$exe" ] || continue
    echo "check_install: running $(basename "$exe")"
    "$exe" >/dev/null
    ran=$((ran + 1))
  done
  [ "$ran" -ge "$2" ] || { echo "check_install: expected at least $2 example programs in $1, ran $ran"; exit 1; }
}

echo "check_install: find_package(qcoll) from an outside project"
cmake -S "$src/tests/install" -B "$work/user" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DQCOLL_EXAMPLES_DIR="$src/examples" >/dev/null
cmake --build "$work/user" >/dev/null
run_examples "$work/user" 2
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

# configure_user DIR NAME ARGS...: an outside project, its output shown only when it fails.
configure_user() {
  local dir=$1 name=$2; shift 2
  if ! cmake -S "$src/tests/install/$dir" -B "$work/$name" -G Ninja -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_PREFIX_PATH="$work/prefix" -DQCOLL_EXAMPLES_DIR="$src/examples" "$@" >"$work/$name.log" 2>&1 ||
     ! cmake --build "$work/$name" >>"$work/$name.log" 2>&1; then
    cat "$work/$name.log"
    echo "check_install: $name failed"
    exit 1
  fi
}
passed=4
for lang in c cxx; do
  echo "check_install: find_package(qcoll) from a LANGUAGES $lang project, without MPI"
  configure_user "$lang" "user-$lang" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
  run_examples "$work/user-$lang" 1
  passed=$((passed + 1))
done
if [ -n "$mpirun" ] && [ -n "$(find "$work/prefix" -name qcollMpiTargets.cmake)" ]; then
  echo "check_install: find_package(qcoll COMPONENTS mpi) from a LANGUAGES CXX project"
  configure_user cxx user-cxx-mpi -DQCOLL_USER_MPI=ON
  "$mpirun" --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -np 2 \
    "$work/user-cxx-mpi/cpp_mpi_world"
  passed=$((passed + 1))
fi
echo "check_install: $passed passed, 0 failed"
