#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build on its corpus fuzz/corpus/<target>/.
#   scripts/fuzz.sh [--long] [BUILD_DIR]   (default build-asan; configured with QCOLL_BUILD_FUZZ=ON)
#
# Short mode (the default; the CI step of scripts/test-sanitizers.sh): FUZZ_SECONDS (default
# 60) per target. New inputs go to a scratch corpus (FUZZ_WORK, default $BUILD_DIR/fuzz-work),
# never into fuzz/corpus/ (read-only here); crashes are written there too and make the script
# fail.
#
# Long mode (--long or FUZZ_LONG=1; a campaign, not part of CI): each target until FUZZ_RUNS
# executions (default 10^7) or FUZZ_SECONDS (default 1800), whichever comes first, one target
# at a time, one process (-jobs=1), under `nice -n FUZZ_NICE` (default 19). Afterwards the
# committed corpus and the campaign's new inputs are merged and minimised (libFuzzer
# -merge=1: the fewest inputs that keep every feature, i.e. every edge and hit-count bucket;
# when that is more than FUZZ_MAX_CORPUS files (default 300), merged again keeping every edge
# only, -use_counters=0) and fuzz/corpus/<target>/ is replaced by the result; inputs named
# regress-* (regression inputs of fixed findings) are always kept. A corpus still over
# FUZZ_MAX_CORPUS is reported. FUZZ_RUNS=0 only merges (every input is run once). The corpus is merged even when the run found a crash (the crash input is not in
# it: it stays in the artifacts folder), and the script then fails.
#
# Both modes: FUZZ_TARGETS picks targets (default: all fuzz/fuzz_*.cpp). One summary line per
# target: executions, exec/s, time, coverage (cov: edges, ft: features), corpus size; also
# appended to $FUZZ_WORK/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
LONG=${FUZZ_LONG:-0}
if [ "${1:-}" = "--long" ]; then LONG=1; shift; fi
BUILD_DIR=${1:-build-asan}
WORK=${FUZZ_WORK:-$BUILD_DIR/fuzz-work}
targets=${FUZZ_TARGETS:-$(cd fuzz && ls fuzz_*.cpp | sed 's/\.cpp$//')}
if [ "$LONG" = "1" ]; then
  SECONDS_EACH=${FUZZ_SECONDS:-1800}
  RUNS=${FUZZ_RUNS:-10000000}
  NICE=(nice -n "${FUZZ_NICE:-19}")
  MAX_CORPUS=${FUZZ_MAX_CORPUS:-300}
else
  SECONDS_EACH=${FUZZ_SECONDS:-60}
  RUNS=-1  # libFuzzer: no limit on executions
  NICE=()
fi
# Sanitizer reports abort the run; leaks are checked at the end of each run (and per input
# by libFuzzer when -detect_leaks=1, its default under ASan).
# (After the caller's own options, so that these hold: later entries win.)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"
mkdir -p "$WORK"
status=0
for t in $targets; do
  bin="$BUILD_DIR/fuzz/$t"
  if [ ! -x "$bin" ]; then echo "fuzz: $t not built in $BUILD_DIR" >&2; status=1; continue; fi
  seeds="fuzz/corpus/$t"
  mkdir -p "$WORK/$t/corpus" "$WORK/$t/artifacts" "$seeds"
  log="$WORK/$t/log.txt"
  t0=$SECONDS
  # -malloc_limit_mb: an input that makes the code allocate more than this is a finding
  # (e.g. a header's claimed size allocated before it is checked against the file).
  # -timeout: one input taking longer than this is a hang.
  ok=1
  "${NICE[@]}" "$bin" -max_total_time="$SECONDS_EACH" -runs="$RUNS" -timeout=25 -rss_limit_mb=2048 \
    -malloc_limit_mb=512 -print_final_stats=1 -artifact_prefix="$WORK/$t/artifacts/" \
    "$WORK/$t/corpus" "$seeds" >"$log" 2>&1 || ok=0
  took=$((SECONDS - t0))
  corpus_note=""
  if [ "$LONG" = "1" ]; then
    # Minimise: merge the committed corpus and the new inputs into an empty folder.
    merged="$WORK/$t/merged"
    merge() {  # merge EXTRA_FLAGS...: the committed and the new inputs into an empty $merged
      rm -rf "$merged" && mkdir -p "$merged"
      "${NICE[@]}" "$bin" -merge=1 "$@" -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=512 \
        "$merged" "$seeds" "$WORK/$t/corpus" >"$WORK/$t/merge.txt" 2>&1
    }
    merge_ok=1
    merge || merge_ok=0
    how="features"
    if [ "$merge_ok" = "1" ] && [ "$(find "$merged" -maxdepth 1 -type f | wc -l)" -gt "$MAX_CORPUS" ]; then
      # Too many: keep every edge, not every hit-count bucket of every edge (-use_counters=0).
      merge -use_counters=0 || merge_ok=0
      how="edges"
    fi
    if [ "$merge_ok" = "1" ]; then
      find "$seeds" -maxdepth 1 -type f -name 'regress-*' -exec cp {} "$merged/" \;
      find "$seeds" -maxdepth 1 -type f -delete
      cp "$merged"/* "$seeds/" 2>/dev/null || true
      n=$(find "$seeds" -maxdepth 1 -type f | wc -l)
      corpus_note=", corpus $n files ($(du -sk "$seeds" | cut -f1) KiB, minimised by $how)"
      if [ "$n" -gt "$MAX_CORPUS" ]; then
        echo "fuzz: $t: minimised corpus has $n files (> FUZZ_MAX_CORPUS=$MAX_CORPUS); review before committing" >&2
      fi
    else
      echo "fuzz: $t: corpus merge failed (log $WORK/$t/merge.txt); fuzz/corpus/$t left as it was" >&2
      status=1
    fi
  fi
  if [ "$ok" = "1" ]; then
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(echo "$last" | grep -o 'cov: [0-9]*' || true); ft=$(echo "$last" | grep -o 'ft: [0-9]*' || true)
    line="fuzz: $t OK ${took}s: $execs executions, $rate exec/s, $cov, $ft$corpus_note"
    echo "$line"
    echo "$(date -u +%FT%TZ) $line" >>"$WORK/summary.txt"
  else
    echo "fuzz: $t FAILED after ${took}s (log $log, artifacts in $WORK/$t/artifacts)$corpus_note:" >&2
    echo "$(date -u +%FT%TZ) fuzz: $t FAILED after ${took}s" >>"$WORK/summary.txt"
    grep -v '^#' "$log" | tail -40 >&2
    status=1
  fi
done
exit $status
