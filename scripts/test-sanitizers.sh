#!/usr/bin/env bash
# Sanitizer builds and short fuzz runs (called by scripts/test.sh; QCOLL_SANITIZERS=0 skips).
#   build-asan: clang, -O1, AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer),
#               every test, example and the libFuzzer targets; runs ctest, then scripts/fuzz.sh
#               (FUZZ_SECONDS each, default 60).
#   build-tsan: clang, -O1, ThreadSanitizer; only the tests of code that runs on several
#               threads (thread transport, operators, worker pool, faults, soak).
# Both builds skip the benchmarks. Timings of each step are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${QCOLL_SANITIZERS:-1}" = "0" ]; then echo "sanitizers: skipped (QCOLL_SANITIZERS=0)"; exit 0; fi
CC_BIN=${SANITIZER_CC:-clang-14}
CXX_BIN=${SANITIZER_CXX:-clang++-14}
JOBS=${SANITIZER_JOBS:-2}
# Highway compiles every SIMD translation unit once per target. Its EMU128 fallback (the
# one clang picks; gcc 12.2 picks HWY_SCALAR, see HWY_BROKEN_EMU128 in hwy/detect_targets.h)
# takes clang with sanitizers over 10 minutes per SIMD file, against about 20 s for a real
# target. The sanitizer builds therefore use HWY_SCALAR as the fallback, as the Release
# build does, and compile fewer targets: ASan+UBSan keeps AVX3_DL, AVX2 and scalar (drops
# AVX3 = 1<<8, SSE4 = 1<<11, SSSE3 = 1<<12: 6400), TSan, which looks for races rather than
# SIMD bugs, keeps AVX3_DL and scalar (also drops AVX2 = 1<<9: 6912). The Release build's
# tests cover every target the CPU runs.
ASAN_HWY=${SANITIZER_HWY_DISABLED_ASAN:-6400}
TSAN_HWY=${SANITIZER_HWY_DISABLED_TSAN:-6912}
lean() {  # lean HWY_DISABLED_TARGETS: the common configure arguments
  LEAN=(-G Ninja -DCMAKE_BUILD_TYPE=None "-DCMAKE_C_FLAGS=-O1 -gline-tables-only"
        "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only -DHWY_DISABLED_TARGETS=$1 -DHWY_BROKEN_EMU128=1" -DCMAKE_C_COMPILER="$CC_BIN"
        -DCMAKE_CXX_COMPILER="$CXX_BIN" -DQCOLL_BUILD_BENCH=OFF)
}
STAGE_PREFIX=sanitizers
. scripts/stages.sh  # step NAME COMMAND...: a timed stage

# --- ASan + UBSan ------------------------------------------------------------------------
# The options the checks rely on come last, whatever the caller's own *SAN_OPTIONS say.
. scripts/sanitizers/asan-options.sh
lean "$ASAN_HWY"
step "asan configure" cmake -S . -B build-asan "${LEAN[@]}" -DQCOLL_SANITIZE=address,undefined \
  -DQCOLL_BUILD_FUZZ=ON >/dev/null
step "asan build" nice cmake --build build-asan -j "$JOBS"
# Programs that run Open MPI (under mpirun) are checked with leak detection off: Open MPI 4.1
# leaks what MPI_Init allocates, from components it dlopen()s and unloads, so the leak
# stacks end in "<unknown module>" and no suppression can name them. ASan (use-after-free,
# overflows) and UBSan stay on for them; every other test runs with LeakSanitizer.
# (Tests that start mpirun are named mpi.* or CliBench.Mpi*.)
MPI_TESTS='^mpi\.|^CliBench\.Mpi'
# No retry: a test that fails once fails the run (a flaky test is a bug to fix, not to rerun).
mkdir -p build-asan/test-reports
step "asan ctest" ctest --test-dir build-asan --output-on-failure -j2 --timeout 900 -E "$MPI_TESTS" \
  --output-junit "$PWD/build-asan/test-reports/ctest.xml"
# The largest MPI runs (16 ranks of the 4-bit tests, 90 ranks) run in the Release ctest only:
# under ASan they take minutes and reach no code that their 8-rank twins do not.
MPI_ASAN_SKIP='^mpi\.(transport\.np90\.many|(transport|fused)\.np16\.fp4)$'
step "asan ctest (MPI, no leak check)" env ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
  ctest --test-dir build-asan --output-on-failure -j2 --timeout 900 -R "$MPI_TESTS" -E "$MPI_ASAN_SKIP" \
  --output-junit "$PWD/build-asan/test-reports/ctest-mpi.xml"
# A skip that tests/allowed_skips.txt does not list fails here too.
step "asan skips" "${PYTHON:-python3}" scripts/check_skips.py tests/allowed_skips.txt \
  build-asan/test-reports/ctest.xml build-asan/test-reports/ctest-mpi.xml
step "fuzz" scripts/fuzz.sh build-asan

# --- TSan --------------------------------------------------------------------------------
tsan_tests=()
for t in test_kernels test_ops_safety test_faults_threads test_soak test_streams; do
  [ -f "tests/$t.cpp" ] && tsan_tests+=("$t")
done
lean "$TSAN_HWY"
step "tsan configure" cmake -S . -B build-tsan "${LEAN[@]}" -DQCOLL_SANITIZE=thread \
  -DQCOLL_BUILD_EXAMPLES=OFF -DQCOLL_WITH_MPI=OFF >/dev/null
step "tsan build" nice cmake --build build-tsan -j "$JOBS" --target "${tsan_tests[@]}"
run_tsan() {
  local t
  for t in "${tsan_tests[@]}"; do
    echo "-- tsan: $t"
    TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/sanitizers/tsan.supp" \
      QCOLL_SOAK_CALLS=${QCOLL_TSAN_SOAK_CALLS:-3000} QCOLL_SOURCE_DIR="$PWD" "build-tsan/tests/$t" --gtest_brief=1
  done
}
step "tsan tests" run_tsan

echo "sanitizers: all passed"
print_timings
