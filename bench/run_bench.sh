#!/usr/bin/env bash
# End-to-end benchmark of qcoll against its peers (MPI, and oneCCL / torch gloo where
# bench/install_peers.sh installed them) for n in {2, 4, 8} ranks: one
# `mpirun -np N qcoll bench` per n (every rank one process, qcoll and the peers on the same
# ranks and cores), then the runs merged into one JSON, one markdown table and one PNG plot.
#
#   bench/run_bench.sh                       # defaults below
#   SIZES=1024x5120 REPEATS=5 bench/run_bench.sh --ops reduce-scatter   # extra args go to qcoll bench
#
# Environment: QCOLL (the qcoll binary, default build/tools/qcoll), OUT (results folder,
# default bench-results), NS ("2 4 8"), SIZES (1024x5120,4096x5120,8192x8192), REPEATS (3),
# WARMUP (1), MPIRUN (mpirun), MPIRUN_ARGS (extra mpirun options), QCOLL_CONTRACT (vendor;
# extended adds the 4-bit modes and any n in [2, 1024], contract.md §ext: passed on to every
# rank with -x).
# Writes $OUT/bench_n<N>.json and .txt per n, and $OUT/bench.json, bench.md, speedup.png.
set -euo pipefail
cd "$(dirname "$0")/.."
QCOLL=${QCOLL:-build/tools/qcoll}
OUT=${OUT:-bench-results}
NS=${NS:-"2 4 8"}
SIZES=${SIZES:-1024x5120,4096x5120,8192x8192}
REPEATS=${REPEATS:-3}
WARMUP=${WARMUP:-1}
MPIRUN=${MPIRUN:-mpirun}
CONTRACT=${QCOLL_CONTRACT:-vendor}  # every rank keeps the same contract (contract.md §ext-agreement)
# As root in containers; more ranks than cores is expected on small machines.
read -r -a extra_mpirun <<< "${MPIRUN_ARGS:-}"
[ -x "$QCOLL" ] || { echo "run_bench: $QCOLL not found (build it: cmake --build build --target qcoll_cli)" >&2; exit 2; }
mkdir -p "$OUT"
echo "run_bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), sizes $SIZES, n in {$NS}, repeats $REPEATS"
jsons=()
for n in $NS; do
  echo "run_bench: mpirun -np $n $QCOLL bench --sizes $SIZES --repeats $REPEATS --warmup $WARMUP $*"
  "$MPIRUN" --allow-run-as-root --oversubscribe -x QCOLL_CONTRACT="$CONTRACT" "${extra_mpirun[@]}" -np "$n" \
    "$QCOLL" bench --sizes "$SIZES" --repeats "$REPEATS" --warmup "$WARMUP" --json "$OUT/bench_n$n.json" "$@" \
    | tee "$OUT/bench_n$n.txt"
  jsons+=("$OUT/bench_n$n.json")
done
"$QCOLL" bench --from-json "${jsons[@]}" --json "$OUT/bench.json" --table "$OUT/bench.md" --plot "$OUT/speedup.png" -q
echo "run_bench: wrote $OUT/bench.json, $OUT/bench.md, $OUT/speedup.png"
