#!/usr/bin/env bash
# Runs every test suite: the C++ suites (ctest) against the build in $1 (default build/),
# then the Python package's tests (pytest) after installing it with pip (incremental build
# in build/python-*; QCOLL_SKIP_PYTHON=1 skips this part).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 900

if [ "${QCOLL_SKIP_PYTHON:-0}" != 1 ]; then
  PYTHON=${PYTHON:-python3}
  echo "test.sh: pip install . (the qcoll Python package)"
  PIP_BREAK_SYSTEM_PACKAGES=1 "$PYTHON" -m pip install -q --no-build-isolation \
    --disable-pip-version-check --root-user-action=ignore .
  # Exit status 5 (no test collected) fails too, like every other non-zero status.
  "$PYTHON" -m pytest -q -p no:cacheprovider python/tests
fi

# Sanitizer builds (ASan+UBSan, TSan) and short fuzz runs; QCOLL_SANITIZERS=0 skips them.
scripts/test-sanitizers.sh
