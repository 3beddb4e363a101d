#!/usr/bin/env bash
# Runs a ctest selection N times in a row and counts, per test, how often it failed: the
# way to find a flaky test (the sanitizer ctest has no retry, so one failure fails CI).
#   scripts/repeat-tests.sh BUILD_DIR N [ctest arguments...]
#   e.g. scripts/repeat-tests.sh build-asan 20 -E '^mpi\.|^CliBench\.Mpi'
# Under a sanitizer build (BUILD_DIR/CMakeCache.txt has QCOLL_SANITIZE) the options of
# scripts/test-sanitizers.sh are set. Each run's JUnit report and log go to
# BUILD_DIR/repeat-reports/run-K.xml / .log; the summary (runs, time of each, failures per
# test) is printed at the end and written to BUILD_DIR/repeat-reports/summary.txt.
# Exits 1 when any run had a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/repeat-tests.sh BUILD_DIR N [ctest arguments...]" >&2
  exit 2
fi
BUILD_DIR=$1
N=$2
shift 2
case "$N" in '' | *[!0-9]*) echo "repeat-tests: N must be a whole number, got '$N'" >&2; exit 2 ;; esac
[ -f "$BUILD_DIR/CTestTestfile.cmake" ] || { echo "repeat-tests: $BUILD_DIR is not a built tree" >&2; exit 2; }
if grep -q '^QCOLL_SANITIZE:[A-Z]*=..*' "$BUILD_DIR/CMakeCache.txt"; then
  . scripts/sanitizers/asan-options.sh
fi
OUT="$BUILD_DIR/repeat-reports"
mkdir -p "$OUT"
rm -f "$OUT"/run-*.xml "$OUT"/run-*.log
failed_runs=0
for k in $(seq 1 "$N"); do
  t0=$SECONDS
  rc=0
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 900 "$@" \
    --output-junit "$PWD/$OUT/run-$k.xml" >"$OUT/run-$k.log" 2>&1 || rc=$?
  result=$(grep -E 'tests passed|tests failed out of' "$OUT/run-$k.log" | tail -n 1 || true)
  echo "repeat-tests: run $k of $N ($((SECONDS - t0)) s, load $(cut -d' ' -f1 /proc/loadavg)): ${result:-no ctest summary (rc $rc)}"
  [ "$rc" = 0 ] || failed_runs=$((failed_runs + 1))
done
"${PYTHON:-python3}" - "$OUT" "$N" "$failed_runs" <<'PY' | tee "$OUT/summary.txt"
import collections, glob, os, sys
import xml.etree.ElementTree as ET
out, n, failed_runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fails = collections.Counter()
tests = 0
for path in sorted(glob.glob(os.path.join(out, "run-*.xml"))):
    root = ET.parse(path).getroot()
    cases = root.iter("testcase")
    for case in cases:
        tests += 1
        if case.find("failure") is not None or case.get("status") == "fail":
            fails[case.get("name")] += 1
print(f"repeat-tests: {n} runs, {tests} test runs in all, {failed_runs} runs with a failure")
for name, count in fails.most_common():
    print(f"  {name}: failed {count} of {n}")
PY
[ "$failed_runs" = 0 ]
