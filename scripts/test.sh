#!/usr/bin/env bash
# Runs every test suite against the build in $1 (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 900
