#!/usr/bin/env bash
# Chaos campaign (issue 18): tests/chaos/chaos.cpp's trials, TRIALS per transport (default
# 100; the signals alternate SIGKILL / SIGSTOP), one transport at a time, at the lowest CPU
# priority. Prints every trial's line and the table of outcomes; the log goes to
# build/chaos-<transport>.log. Exit status 0 when every trial passed.
# Usage: scripts/chaos.sh [BUILD_DIR] [TRANSPORT...]   (transports: threads shm mpi-shm mpi;
#        default all four; env TRIALS, SEED, WINDOW_MS, TIMEOUT_S (QCOLL_TIMEOUT_S, default 3),
#        BTL (Open MPI's, default self,vader; self,tcp shows Open MPI 4.1 aborting survivors))
set -uo pipefail
BUILD=${1:-build}
shift || true
TRANSPORTS=("$@")
[ ${#TRANSPORTS[@]} -eq 0 ] && TRANSPORTS=(threads shm mpi-shm mpi)
cmake --build "$BUILD" --target qcoll_chaos >/dev/null || exit 1
status=0
for t in "${TRANSPORTS[@]}"; do
  log="$BUILD/chaos-$t.log"
  nice -n 19 "$BUILD/tests/qcoll_chaos" "$t" --trials "${TRIALS:-100}" --seed "${SEED:-1}" \
    --window-ms "${WINDOW_MS:-1500}" --timeout "${TIMEOUT_S:-3}" --btl "${BTL:-self,vader}" 2>&1 | tee "$log" | grep -v '^CHAOS | .* | pass: ' || true
  grep -q 'failed -> PASS' "$log" || status=1
done
exit $status
