#!/usr/bin/env bash
# Runs every test suite: the C++ suites (ctest) against the build in $1 (default build/),
# the exhaustive format tests, then the Python package's tests (pytest) after installing it
# with pip (incremental build in build/python-*; QCOLL_SKIP_PYTHON=1 skips this part), then
# the sanitizer builds and short fuzz runs (QCOLL_SANITIZERS=0 skips them). Before the tests:
# the function-size check (scripts/lizard.sh) and the layout check (scripts/format.sh --check).
#
#   scripts/test.sh [BUILD_DIR]           everything (./run.sh test)
#   scripts/test.sh --quick [BUILD_DIR]   the developer loop: the ctest label `unit` without
#                                         `slow` or `mpi` (cmake/test_labels.cmake), built tree;
#                                         nothing else (./run.sh quick builds, then runs it)
#
# What the caller's environment cannot change: every QCOLL_* / HCCL_* setting and the
# launcher variables of torchrun and mpirun are cleared first (the knobs of these scripts,
# listed in KEEP, are kept). A suite that skips a test not listed in tests/allowed_skips.txt
# fails the run, and so does a suite that cannot run at all (no MPI, no torch) unless the
# caller opted out of it. Prints the time of each stage at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=0
if [ "${1:-}" = "--quick" ]; then QUICK=1; shift; fi
BUILD_DIR=${1:-build}
export PYTHON=${PYTHON:-python3}

# ---- a clean environment ---------------------------------------------------------------------
KEEP=" QCOLL_SKIP_PYTHON QCOLL_SKIP_TORCH QCOLL_SKIP_WHEEL QCOLL_SANITIZERS QCOLL_BUILD_DIR QCOLL_TSAN_SOAK_CALLS "
for var in $(compgen -e); do
  case "$var" in
    QCOLL_* | HCCL_*) [[ "$KEEP" == *" $var "* ]] || unset "$var" ;;
    RANK | WORLD_SIZE | LOCAL_RANK | LOCAL_WORLD_SIZE | GROUP_RANK | ROLE_RANK | MASTER_ADDR | MASTER_PORT | \
      TORCHELASTIC_* | OMPI_COMM_WORLD_* | PMI_RANK | PMI_SIZE | MPI_LOCALRANKID) unset "$var" ;;
  esac
done
# The C++ tests that compare with ml_dtypes (tests/ml_dtypes_child.hpp) run it in this Python.
export QCOLL_TEST_PYTHON="$PYTHON"

STAGE_PREFIX=test.sh
. scripts/stages.sh  # step NAME COMMAND...: a timed stage
trap print_timings EXIT

# ---- every suite can run -----------------------------------------------------------------------
requirements() {
  local missing=()
  ctest --test-dir "$BUILD_DIR" -N -R '^mpi\.transport\.np2$' | grep -q 'Total Tests: 1' ||
    missing+=("MPI: the mpi.* tests are not registered (libopenmpi-dev and openmpi-bin, then a new configure)")
  if [ "${QCOLL_SKIP_PYTHON:-0}" != 1 ]; then
    "$PYTHON" -c 'import mpi4py' 2>/dev/null || missing+=("mpi4py")
    if [ "${QCOLL_SKIP_TORCH:-0}" != 1 ]; then
      "$PYTHON" -c 'import torch.distributed as d; assert d.is_available() and d.is_gloo_available()' 2>/dev/null ||
        missing+=("torch with gloo (QCOLL_SKIP_TORCH=1 runs without the torch tests)")
    fi
    local stale
    stale=$("$PYTHON" scripts/pins.py check requirements/python.lock)
    [ -z "$stale" ] || missing+=("the pinned Python packages (scripts/install-deps.sh installs them): $stale")
  fi
  if ((${#missing[@]})); then
    printf 'test.sh: cannot run every suite; missing:\n' >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
  fi
}

# ---- the quick loop ----------------------------------------------------------------------------
if [ "$QUICK" = 1 ]; then
  step "lizard" scripts/lizard.sh
  step "clang-format" scripts/format.sh --check
  step "ctest -L unit -LE 'slow|mpi'" ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 300 \
    -L unit -LE '^(slow|mpi)$'
  exit 0
fi

step "requirements" requirements
# ---- source rules: function size and complexity (src/, tools/: lizard -C 20 -L 80) and the
# layout of every C/C++ file (.clang-format); cheap, so first ---------------------------------
step "lizard" scripts/lizard.sh
step "clang-format" scripts/format.sh --check

# ---- C++ -------------------------------------------------------------------------------------
mkdir -p "$BUILD_DIR/test-reports"
step "ctest" ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 900 \
  --output-junit "$PWD/$BUILD_DIR/test-reports/ctest.xml"
# Every bit pattern of every codec (2^32 fp32 inputs; about a minute on 2 cores).
step "exhaustive formats" env QCOLL_EXHAUSTIVE=1 "$BUILD_DIR/tests/test_formats_exhaustive" --gtest_brief=1

# ---- Python ------------------------------------------------------------------------------------
# A build folder of an earlier install can point at a Python or a nanobind that is gone (a
# pip build env, a deleted venv): CMake then fails to configure. Such a folder is removed.
fresh_python_build() {
  local nb_dir py_exe cache
  nb_dir=$("$PYTHON" -c 'import nanobind, os; print(os.path.realpath(nanobind.cmake_dir()))')
  py_exe=$("$PYTHON" -c 'import sys, os; print(os.path.realpath(sys.executable))')
  for cache in build/python-*/CMakeCache.txt; do
    [ -f "$cache" ] || continue
    local cached_nb cached_py
    cached_nb=$(sed -n 's/^nanobind_DIR:[A-Z]*=//p' "$cache")
    cached_py=$(sed -n 's/^Python_EXECUTABLE:[A-Z]*=//p' "$cache")
    if [ -n "$cached_nb" ] && [ "$(realpath -m "$cached_nb")" != "$nb_dir" ] ||
       [ -n "$cached_py" ] && [ "$(realpath -m "$cached_py")" != "$py_exe" ]; then
      echo "test.sh: $(dirname "$cache") was made with ${cached_py:-?} / ${cached_nb:-?}: removing it"
      rm -rf "$(dirname "$cache")"
    fi
  done
}
if [ "${QCOLL_SKIP_PYTHON:-0}" != 1 ]; then
  fresh_python_build
  # --no-build-isolation: the pinned build tools that install-deps.sh installed (checked above).
  step "pip install ." env PIP_BREAK_SYSTEM_PACKAGES=1 "$PYTHON" -m pip install -q --no-build-isolation \
    --disable-pip-version-check --root-user-action=ignore .
  # -rs prints every skip with its reason; exit status 5 (no test collected) fails too.
  # (QCOLL_BUILD_DIR: where the docs test finds the qcoll program.)
  step "pytest" env QCOLL_BUILD_DIR="$BUILD_DIR" "$PYTHON" -m pytest -q -rs -p no:cacheprovider python/tests \
    --junitxml="$BUILD_DIR/test-reports/pytest.xml"
  # The wheel as a new user gets it: built from the sdist, repaired, installed into an empty
  # venv outside the repository (docs/python.md §Wheels). QCOLL_SKIP_WHEEL=1 skips it.
  [ "${QCOLL_SKIP_WHEEL:-0}" = 1 ] || step "wheel" scripts/test-wheel.sh
fi

# ---- skips -----------------------------------------------------------------------------------------
reports=("$BUILD_DIR/test-reports/ctest.xml")
[ "${QCOLL_SKIP_PYTHON:-0}" = 1 ] || reports+=("$BUILD_DIR/test-reports/pytest.xml")
step "skips" "$PYTHON" scripts/check_skips.py tests/allowed_skips.txt "${reports[@]}"

# ---- sanitizers and fuzzing --------------------------------------------------------------------
step "sanitizers" scripts/test-sanitizers.sh
