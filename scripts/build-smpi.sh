#!/usr/bin/env bash
# The SMPI build (docs/scale.md): installs SimGrid (Debian's libsimgrid-dev: smpicc, smpicxx,
# smpirun) when it is missing, then configures BUILD (default build-smpi) with
# -DQCOLL_SMPI=ON (cmake/smpi.cmake) and builds the qcoll program only: BUILD/tools/qcoll,
# which runs under smpirun (bench/simulate_cluster.sh). Kept apart from the normal build and
# from scripts/install-deps.sh's list (nothing else needs SimGrid); the Debian packages the
# build needs besides (compiler, CMake, Highway, ...) come from scripts/install-deps.sh with
# QCOLL_APT_ONLY=1, so that a fresh machine builds it with this one command.
#
#   scripts/build-smpi.sh                 # BUILD=build-smpi JOBS=2
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-smpi}
JOBS=${JOBS:-2}
if ! command -v smpicxx > /dev/null || ! command -v smpirun > /dev/null; then
  echo "build-smpi: installing libsimgrid-dev (SimGrid's SMPI)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends libsimgrid-dev > /dev/null
fi
QCOLL_APT_ONLY=1 scripts/install-deps.sh
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
generator=()
# The generator of a new build folder only (cmake refuses to change it).
if [ ! -f "$BUILD/CMakeCache.txt" ] && command -v ninja > /dev/null; then generator=(-G Ninja); fi
cmake -S . -B "$BUILD" "${generator[@]}" -DQCOLL_SMPI=ON -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
cmake --build "$BUILD" --target qcoll_cli -j "$JOBS"
echo "build-smpi: $BUILD/tools/qcoll (run it under smpirun: bench/simulate_cluster.sh)"
