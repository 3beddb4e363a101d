#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a bounded time on its seed corpus.
#   scripts/fuzz.sh [BUILD_DIR]      (default build-asan; configured with QCOLL_BUILD_FUZZ=ON)
# FUZZ_SECONDS (default 60) per target; FUZZ_TARGETS to pick targets (default: all built).
# New inputs go to a scratch corpus (FUZZ_WORK, default $BUILD_DIR/fuzz-work), never into
# fuzz/corpus/; crashes are written there too and make the script fail. Prints one summary
# line per target: executions, exec/s, coverage (cov: edges, ft: features).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build-asan}
SECONDS_EACH=${FUZZ_SECONDS:-60}
WORK=${FUZZ_WORK:-$BUILD_DIR/fuzz-work}
targets=${FUZZ_TARGETS:-$(cd fuzz && ls fuzz_*.cpp | sed 's/\.cpp$//')}
# Sanitizer reports abort the run; leaks are checked at the end of each run (and per input
# by libFuzzer when -detect_leaks=1, its default under ASan).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in $targets; do
  bin="$BUILD_DIR/fuzz/$t"
  if [ ! -x "$bin" ]; then echo "fuzz: $t not built in $BUILD_DIR" >&2; status=1; continue; fi
  mkdir -p "$WORK/$t/corpus" "$WORK/$t/artifacts"
  log="$WORK/$t/log.txt"
  # -malloc_limit_mb: an input that makes the code allocate more than this is a finding
  # (e.g. a header's claimed size allocated before it is checked against the file).
  # -timeout: one input taking longer than this is a hang.
  if "$bin" -max_total_time="$SECONDS_EACH" -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=512 \
      -print_final_stats=1 -artifact_prefix="$WORK/$t/artifacts/" \
      "$WORK/$t/corpus" "fuzz/corpus/$t" >"$log" 2>&1; then
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(echo "$last" | grep -o 'cov: [0-9]*'); ft=$(echo "$last" | grep -o 'ft: [0-9]*')
    echo "fuzz: $t OK ${SECONDS_EACH}s: $execs executions, $rate exec/s, $cov, $ft"
  else
    echo "fuzz: $t FAILED (log $log, artifacts in $WORK/$t/artifacts):" >&2
    grep -v '^#' "$log" | tail -40 >&2
    status=1
  fi
done
exit $status
