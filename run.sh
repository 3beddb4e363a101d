#!/usr/bin/env bash
# qcoll's one entry point.
#   ./run.sh demo [args]   build, then run the in-process demo (qcoll demo)
#   ./run.sh test          build, then run every test suite
#   ./run.sh quick         build, then run the quick loop (scripts/test.sh --quick: ctest -L unit -LE 'slow|mpi')
#   ./run.sh build         install dependencies and build everything into build/
#   ./run.sh qcoll ARGS    build, then run the qcoll program with ARGS
set -euo pipefail
cd "$(dirname "$0")"
BUILD_DIR=${QCOLL_BUILD_DIR:-build}

timed() {  # timed NAME COMMAND...: runs it and says how long it took
  local name=$1 t0=$SECONDS; shift
  "$@"
  echo "run.sh: $name: $((SECONDS - t0)) s"
}
quiet() { "$@" >/dev/null; }
build() {  # build [TARGET...]: every target, or only these (and what they link)
  timed "install-deps" scripts/install-deps.sh
  timed "configure" quiet cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
  timed "build" cmake --build "$BUILD_DIR" ${1:+--target "$@"}
}

cmd=${1:-demo}; shift || true
case "$cmd" in
  build) build ;;
  # The demo and the program need only the qcoll program (target qcoll_cli) and what it links.
  demo) build qcoll_cli; exec "$BUILD_DIR/tools/qcoll" demo "$@" ;;
  qcoll) build qcoll_cli; exec "$BUILD_DIR/tools/qcoll" "$@" ;;
  test) build; exec scripts/test.sh "$BUILD_DIR" ;;
  quick) build; exec scripts/test.sh --quick "$BUILD_DIR" ;;
  *) echo "usage: ./run.sh demo|test|quick|build|qcoll ARGS" >&2; exit 2 ;;
esac
