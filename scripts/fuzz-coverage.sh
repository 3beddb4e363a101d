#!/usr/bin/env bash
# Source coverage of the fuzz targets: which lines and branches of qcoll each fuzzer's corpus
# reaches (not part of CI; docs/hardening.md §fuzzing).
#   scripts/fuzz-coverage.sh [BUILD_DIR]     (default build-fuzz-cov)
# Builds the fuzz targets with clang's source-based coverage (-fprofile-instr-generate
# -fcoverage-mapping, no sanitizers, the fuzz build's other flags) in BUILD_DIR, replays each
# target's corpus fuzz/corpus/<target>/ once (-runs=0: every input once, no mutation), and
# reports with llvm-cov: per target, lines and branches of everything it links (total) and
# of the src/ files it targets (the FILES table below). The HTML report of each target goes
# to BUILD_DIR/coverage/<target>/ (FUZZ_COV_HTML=0 skips it).
# Needs llvm-profdata-14 and llvm-cov-14 (Debian 12: apt-get install llvm-14), clang-14.
# FUZZ_TARGETS picks targets (default: all fuzz/fuzz_*.cpp). JOBS (default 2) for the build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build-fuzz-cov}
JOBS=${JOBS:-2}
PROFDATA=${LLVM_PROFDATA:-llvm-profdata-14}
COV=${LLVM_COV:-llvm-cov-14}
for tool in "$PROFDATA" "$COV" clang++-14; do
  command -v "$tool" >/dev/null || { echo "fuzz-coverage: $tool not found (apt-get install llvm-14 clang-14)" >&2; exit 1; }
done
targets=${FUZZ_TARGETS:-$(cd fuzz && ls fuzz_*.cpp | sed 's/\.cpp$//')}

# The code each target is written for (regular expressions over paths relative to the repo).
files_of() {
  case "$1" in
    fuzz_codecs) echo 'src/formats/' ;;
    fuzz_npy) echo 'tools/npy\.cpp' ;;
    fuzz_validation) echo 'src/ops/validate\.cpp|src/ops/tensor_desc\.cpp|src/api/tensor_api\.cpp|src/api/operators_api\.cpp' ;;
    fuzz_bootstrap_root) echo 'src/comm/bootstrap_rendezvous\.hpp' ;;
    fuzz_ascend_tensors) echo 'src/ascend/' ;;
    fuzz_mpi_step) echo 'src/ops/executor\.cpp|src/ops/agreement\.cpp|src/comm/collectives\.cpp' ;;
    *) echo 'src/' ;;
  esac
}

COVFLAGS="-O1 -fprofile-instr-generate -fcoverage-mapping"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  "-DCMAKE_C_FLAGS=$COVFLAGS" "-DCMAKE_CXX_FLAGS=$COVFLAGS -DHWY_DISABLED_TARGETS=6400 -DHWY_BROKEN_EMU128=1" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fprofile-instr-generate" -DQCOLL_BUILD_FUZZ=ON -DQCOLL_BUILD_TESTS=OFF \
  -DQCOLL_BUILD_BENCH=OFF -DQCOLL_BUILD_TOOLS=OFF -DQCOLL_BUILD_EXAMPLES=OFF >/dev/null
# shellcheck disable=SC2086
nice -n 10 cmake --build "$BUILD_DIR" -j "$JOBS" --target $targets >/dev/null

out="$BUILD_DIR/coverage"
mkdir -p "$out"
# "Lines: covered/total (pct)" and the same for branches, from an llvm-cov report's TOTAL row.
totals() {  # totals REPORT_TEXT
  awk '/^TOTAL/ {
    # TOTAL regions missed cover functions missed cover lines missed cover branches missed cover
    printf "lines %d/%d (%s), branches %d/%d (%s)", $8-$9, $8, $10, $11-$12, $11, $13 }' <<<"$1"
}
printf '%-22s %-8s %-52s %s\n' target inputs "all code linked" "targeted files"
for t in $targets; do
  bin="$BUILD_DIR/fuzz/$t"
  corpus="fuzz/corpus/$t"
  rm -f "$out/$t".*.profraw
  n=$(find "$corpus" -maxdepth 1 -type f | wc -l)
  LLVM_PROFILE_FILE="$out/$t.%p.profraw" "$bin" -runs=0 "$corpus" >"$out/$t.replay.txt" 2>&1 || {
    echo "fuzz-coverage: $t: replay failed (see $out/$t.replay.txt)" >&2; exit 1; }
  "$PROFDATA" merge -sparse "$out/$t".*.profraw -o "$out/$t.profdata"
  all=$("$COV" report "$bin" -instr-profile="$out/$t.profdata" -ignore-filename-regex="^/usr/|^$PWD/(fuzz|tests)/")
  # The targeted files, by absolute path (llvm-cov report's SOURCES arguments).
  mapfile -t src_files < <(git ls-files | grep -E "^($(files_of "$t"))" | sed "s|^|$PWD/|")
  mine=$("$COV" report "$bin" -instr-profile="$out/$t.profdata" "${src_files[@]}")
  echo "$all" >"$out/$t.report-all.txt"
  echo "$mine" >"$out/$t.report-targeted.txt"
  printf '%-22s %-8s %-52s %s\n' "$t" "$n" "$(totals "$all")" "$(totals "$mine")"
  if [ "${FUZZ_COV_HTML:-1}" = "1" ]; then
    "$COV" show "$bin" -instr-profile="$out/$t.profdata" -format=html -output-dir="$out/$t" \
      -ignore-filename-regex="^/usr/|^$PWD/(fuzz|tests)/" >/dev/null 2>&1 || true
  fi
done
echo "fuzz-coverage: reports in $out/<target>.report-*.txt (and HTML in $out/<target>/)"
