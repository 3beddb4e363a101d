#!/usr/bin/env bash
# A simulated cluster: `qcoll bench` over qcoll's MPI transport under SimGrid's smpirun, on a
# platform of bench/platforms/ (hosts of 8 cores joined by simulated links; docs/scale.md).
# Every rank is an actor of one simulator process: the communication is SimGrid's flow
# model of the platform's links, the computation is the real code, timed as it runs and
# replayed at the platform's core speed (--cfg=smpi/host-speed:1Gf against speed="1Gf": one
# simulated second per measured second). `qcoll bench` reads the simulated clock (the SMPI
# build's steady clock: cmake/smpi.cmake), so every time in the rows is SIMULATED.
#
#   scripts/build-smpi.sh                                   # once: build-smpi/tools/qcoll
#   bench/simulate_cluster.sh                               # NS="8 16 32 64", cluster_100g
#   PLATFORMS="cluster_100g cluster_25g" NS="16 32" SIZES=1024x5120 bench/simulate_cluster.sh --ops reduce-scatter
#   PLATFORMS=$PWD/my_cluster.xml NS=64 bench/simulate_cluster.sh       # your own platform file
#
# Environment: QCOLL (default build-smpi/tools/qcoll: the SMPI build), OUT (bench-results),
# PLATFORMS (cluster_100g: names in bench/platforms/ or paths to platform files), NS ("8 16
# 32 64"), PER_HOST (8: ranks per simulated host; fewer when n would fit on one host: every
# run has at least 2 hosts), SIZES (1024x5120), REPEATS (3), WARMUP (1), CONTRACT (auto:
# QCOLL_CONTRACT=extended for n outside {2, 4, 8}, the vendor's contract otherwise; or
# vendor / extended for every n), SMPIRUN (smpirun), SMPI_CFG (more --cfg=... options,
# e.g. "--cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1" for links without SMPI's
# calibrated TCP factors), LINK_GBIT (the links' rate for the bound columns; default: the
# bw="..Gbps" of the platform's cluster), SIM_TIMEOUT (3000 s of wall time a run),
# QCOLL_TIMEOUT_S (10: simulated seconds before a call gives up, where the SMPI build still
# measures a deadline: its MPI waits block in the simulator without one, and a stuck call
# ends in SimGrid's deadlock report instead, docs/scale.md),
# QCOLL_MPI_SCHEDULE (hosts, qcoll's default; p2p or alltoall), PEERS (mpi: SMPI's own
# collectives; none: qcoll only), GLIBC_TUNABLES (default: the simulator's shared heap never
# trimmed, below).
# Extra arguments go to `qcoll bench`.
# (smpirun passes the arguments on split at spaces: none of them may hold one.)
# Writes $OUT/sim_<platform>_n<N>.json/.txt (rows as bench/shaped_network.sh's, with
# qcoll_over_wire_bound for the simulated links), $OUT/sim_times.txt (the simulated seconds
# and the wall seconds each simulation took), then $OUT/sim.json, sim.md and sim.png.
# Hostfiles are made here: host-0:R .. host-(H-1):R (the platforms' host names).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
QCOLL=$(realpath "${QCOLL:-build-smpi/tools/qcoll}")
OUT=${OUT:-bench-results}
PLATFORMS=${PLATFORMS:-cluster_100g}
NS=${NS:-"8 16 32 64"}
PER_HOST=${PER_HOST:-8}
SIZES=${SIZES:-1024x5120}
REPEATS=${REPEATS:-3}
WARMUP=${WARMUP:-1}
CONTRACT=${CONTRACT:-auto}
SIM_TIMEOUT=${SIM_TIMEOUT:-3000}
PEERS=${PEERS:-mpi}
export QCOLL_TIMEOUT_S=${QCOLL_TIMEOUT_S:-10} QCOLL_MPI_SCHEDULE=${QCOLL_MPI_SCHEDULE:-hosts}
# Every simulated rank allocates from the one heap of the simulator process. With glibc's
# defaults, a free() of any rank may hand the top of that shared heap back to the kernel (and
# large blocks come and go as mmaps), so that another rank's next allocations fault their pages
# in again, and that kernel time is timed as the computation of whichever rank ran into it:
# simulated calls of 1.5 to 3.5x the usual time at random (docs/scale.md, "Slow calls"). Real
# ranks have heaps of their own. Hence: no trimming and no mmap below 32 MiB (glibc's most).
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.trim_threshold=17179869184:glibc.malloc.mmap_threshold=33554432}
SMPIRUN=$(command -v "${SMPIRUN:-smpirun}") || { echo "simulate_cluster: smpirun not found (apt-get install libsimgrid-dev; scripts/build-smpi.sh)" >&2; exit 2; }
read -r -a smpi_cfg <<< "${SMPI_CFG:-}"
[ -f "$QCOLL" ] || { echo "simulate_cluster: $QCOLL not found (scripts/build-smpi.sh builds it)" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

platform_file() {
  if [ -f "$1" ]; then realpath "$1"; elif [ -f "bench/platforms/$1.xml" ]; then realpath "bench/platforms/$1.xml"; else return 1; fi
}
# The first bw="<x>Gbps" (or Mbps) of the platform: the hosts' links.
platform_gbit() {
  local bw
  bw=$(grep -o ' bw="[0-9.]*[GM]bps"' "$1" | head -1 | sed 's/ bw="//; s/"//')
  case "$bw" in
    *Gbps) echo "${bw%Gbps}" ;;
    *Mbps) awk -v m="${bw%Mbps}" 'BEGIN { print m / 1000 }' ;;
    *) return 1 ;;
  esac
}

# The options every simulation gets: core speed 1:1 with this machine's measured time, the
# simulated and wall times at the end, SimGrid's INFO lines off; qcoll's per-call agreement
# (a blocking MPI_Allgather of small records in the SMPI build) by Bruck's algorithm, n log2 n
# messages instead of SMPI's default n (n - 1) (docs/scale.md, n = 256).
base_cfg=(--cfg=smpi/host-speed:1Gf --cfg=smpi/test:0 --cfg=smpi/iprobe:0 --cfg=smpi/allgather:bruck --cfg=smpi/display-timing:yes --log=root.thres:warning --log=smpi_utils.thres:info)

echo "simulate_cluster: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$SMPIRUN" -version 2>/dev/null | head -1)"
times="$OUT/sim_times.txt"
[ -s "$times" ] || echo "# platform n ranks_per_host hosts simulated_s wall_s status" > "$times"
jsons=()
status=0
for p in $PLATFORMS; do
  pf=$(platform_file "$p") || { echo "simulate_cluster: no platform '$p' (bench/platforms/$p.xml or a path)" >&2; status=1; continue; }
  pname=$(basename "$pf" .xml)
  gbit=${LINK_GBIT:-$(platform_gbit "$pf")} || { echo "simulate_cluster: no bw=\"..Gbps\" in $pf: set LINK_GBIT" >&2; status=1; continue; }
  for n in $NS; do
    r=$PER_HOST
    [ $((n / r)) -lt 2 ] && r=$((n / 2))
    if [ "$r" -lt 1 ] || [ $((n % r)) -ne 0 ]; then
      echo "simulate_cluster: skipping n=$n ($PER_HOST ranks per host do not make 2 or more equal hosts)"
      continue
    fi
    hosts=$((n / r))
    : > "$work/hosts"
    for ((i = 0; i < hosts; i++)); do echo "host-$i:$r" >> "$work/hosts"; done
    contract=$CONTRACT
    if [ "$contract" = auto ]; then
      case "$n" in 2|4|8) contract=vendor ;; *) contract=extended ;; esac
    fi
    json="$OUT/sim_${pname}_n$n.json"
    txt="$OUT/sim_${pname}_n$n.txt"
    echo "simulate_cluster: $pname ($gbit Gbit/s links), $n ranks on $hosts hosts of $r, contract $contract, schedule $QCOLL_MPI_SCHEDULE: smpirun -np $n qcoll bench --sizes $SIZES $*"
    rm -f "$json"
    t0=$(date +%s.%N)
    # From $work: smpirun leaves its unrolled hostfile in the current folder when a run fails.
    (cd "$work" && QCOLL_TRANSPORT=mpi QCOLL_CONTRACT=$contract timeout "$SIM_TIMEOUT" "$SMPIRUN" -np "$n" -platform "$pf" -hostfile "$work/hosts" \
      "${base_cfg[@]}" "${smpi_cfg[@]}" \
      "$QCOLL" bench --sizes "$SIZES" --repeats "$REPEATS" --warmup "$WARMUP" --peers "$PEERS" \
      --label "simulated:$pname:$r/host" --link-gbit "$gbit" --ranks-per-host "$r" --json "$json" "$@") > "$txt" 2>&1
    rc=$?
    # smpirun exits 0 when SimGrid finds the simulation deadlocked (the SMPI build's waits
    # block in the simulator): that is a failed run too (rc 99).
    if grep -q 'Deadlock detected' "$txt"; then rc=99; fi
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    grep -v '^\[' "$txt"
    # SMPI's closing line: "Simulated time: X seconds." (smpi/display-timing)
    sim=$(grep -o 'Simulated time: [0-9.e+-]*' "$txt" | tail -1 | awk '{ print $3 }')
    echo "simulate_cluster: $pname n=$n: the simulation took $wall s of wall time for ${sim:-?} simulated seconds (rc $rc)"
    echo "$pname $n $r $hosts ${sim:-nan} $wall $rc" >> "$times"
    if [ "$rc" -ne 0 ] || [ ! -s "$json" ]; then
      echo "simulate_cluster: the run for $pname, n=$n failed (rc $rc): see $txt" >&2
      status=1
      continue
    fi
    jsons+=("$json")
  done
done
if [ ${#jsons[@]} -gt 0 ]; then
  # The merge runs the SMPI program too, as one simulated rank on the first platform.
  printf 'host-0:1\n' > "$work/one"
  (cd "$work" && "$SMPIRUN" -np 1 -platform "$pf" -hostfile "$work/one" --log=root.thres:critical \
    "$QCOLL" bench --from-json "${jsons[@]}" --json "$OUT/sim.json" --table "$OUT/sim.md" --plot "$OUT/sim.png" -q) ||
    status=1
  echo "simulate_cluster: wrote $OUT/sim.json, $OUT/sim.md, $OUT/sim.png; simulation times in $times"
fi
exit $status
