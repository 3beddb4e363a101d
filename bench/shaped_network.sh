#!/usr/bin/env bash
# Bandwidth-bound benchmark: PER_HOST ranks on each "host" -- a network namespace with its own
# host name -- and the hosts joined by one switch (a bridge in a further namespace), each host
# by a veth link shaped with tc tbf to RATE in both directions (host egress, switch-port
# egress). Open MPI runs over TCP across the links (btl tcp,self, and vader between the ranks
# of one host when PER_HOST > 1), so qcoll uses its MPI transport and the peers MPI's TCP path.
# N is the number of ranks, N / PER_HOST the number of hosts; the ranks of a host share its
# link, so the bound columns are the bytes that must leave a host over RATE (`qcoll bench
# --link-gbit RATE --ranks-per-host PER_HOST`: qcoll's exact sum cannot be pre-reduced inside
# a host, the peers' can). Addresses are in 127.0.20.0/24 (the
# loopback range; route_localnet lets it leave the lo device), like tests/mpi/two_hosts.sh.
# mpirun starts in host 0; the other hosts' daemons start through an rsh agent that enters
# their namespaces (no ssh needed).
#
#   sudo bench/shaped_network.sh                 # RATES="1gbit 10gbit" NS="2 4 8" PER_HOST=1
#   RATES=1gbit NS=4 SIZES=1024x5120 bench/shaped_network.sh --ops reduce-scatter
#   RATES=1gbit NS="4 8" PER_HOST="1 2" bench/shaped_network.sh --input quantized,bf16
#
# Environment: QCOLL (default build/tools/qcoll), OUT (default bench-results), RATES
# ("1gbit 10gbit"), NS ("2 4 8"), SIZES (1024x5120,4096x5120), REPEATS (3), WARMUP (1),
# PER_HOST ("1"; a list runs each), MTU (9000: jumbo frames, as on HPC networks; 1500 adds ~4%
# header bytes), MPIRUN, MPIRUN_ARGS, SHOW_TC (non-empty: print the bytes each link carried
# after each run), TCP_BUF (4194304: Open MPI's btl_tcp_sndbuf/rcvbuf; 0 leaves them to the
# kernel), CCL_FI (tcp: libfabric provider for the oneCCL peer), MODES (default: qcoll bench's,
# all of the contract's modes; e.g. kg-e2m1,mx-e2m1), QCOLL_CONTRACT (vendor; extended adds the
# 4-bit modes and any N in [2, 1024], contract.md §ext: passed on to every rank on every host
# with -x, so that all ranks keep the same contract).
#
#   QCOLL_CONTRACT=extended MODES=kg-int8,kg-e2m1,mx-e2m1 NS="3 16" bench/shaped_network.sh
# Extra arguments go to `qcoll bench`. Writes $OUT/shaped_<rate>_n<N>.json/.txt, then
# $OUT/shaped.json, shaped.md and shaped.png. Exit 77 when namespaces cannot be made here.
# (Files are named shaped_<rate>_n<N>[_r<PER_HOST>].)
set -uo pipefail
cd "$(dirname "$0")/.."
QCOLL=$(realpath "${QCOLL:-build/tools/qcoll}")
OUT=${OUT:-bench-results}
RATES=${RATES:-"1gbit 10gbit"}
NS=${NS:-"2 4 8"}
SIZES=${SIZES:-1024x5120,4096x5120}
REPEATS=${REPEATS:-3}
WARMUP=${WARMUP:-1}
MTU=${MTU:-9000}
PER_HOST=${PER_HOST:-1}
TCP_BUF=${TCP_BUF:-4194304}
CCL_FI=${CCL_FI:-tcp}
CONTRACT=${QCOLL_CONTRACT:-vendor}
modes=()
[ -n "${MODES:-}" ] && modes=(--modes "$MODES")
MPIRUN=$(command -v "${MPIRUN:-mpirun}")
read -r -a extra_mpirun <<< "${MPIRUN_ARGS:-}"
[ -x "$QCOLL" ] || { echo "shaped_network: $QCOLL not found" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(realpath "$OUT")

tag="qs$$"
maxn=0  # hosts
for n in $NS; do
  for r in $PER_HOST; do [ $((n % r)) -eq 0 ] && [ $((n / r)) -gt "$maxn" ] && maxn=$((n / r)); done
done
work=$(mktemp -d)
cleanup() {
  for ((i = 0; i < maxn; i++)); do ip netns del "${tag}h$i" 2>/dev/null; done
  ip netns del "${tag}sw" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

host_ip() { echo "127.0.20.$(($1 + 1))"; }

setup() {
  ip netns add "${tag}sw" || return 1
  ip -n "${tag}sw" link add br0 type bridge || return 1
  ip -n "${tag}sw" link set br0 up || return 1
  for ((i = 0; i < maxn; i++)); do
    local ns="${tag}h$i"
    ip netns add "$ns" || return 1
    ip link add eth0 netns "$ns" mtu "$MTU" type veth peer name "p$i" netns "${tag}sw" mtu "$MTU" || return 1
    ip -n "${tag}sw" link set "p$i" master br0 || return 1
    ip -n "${tag}sw" link set "p$i" up || return 1
    ip -n "$ns" link set lo up || return 1
    # Only 127.0.0.1 stays on lo, so 127.0.20.0/24 is routed over eth0.
    ip -n "$ns" addr del 127.0.0.1/8 dev lo 2>/dev/null
    ip -n "$ns" addr add 127.0.0.1/32 dev lo || return 1
    ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.route_localnet=1 || return 1
    ip netns exec "$ns" sysctl -qw net.ipv4.conf.eth0.route_localnet=1 || return 1
    ip -n "$ns" addr add "$(host_ip "$i")/24" dev eth0 || return 1
    ip -n "$ns" link set eth0 up || return 1
  done
  unshare --uts true || return 1
}

# tbf: rate, a bucket of >= one timer tick at that rate (and >= 64 KiB), 20 ms of queue.
shape() {
  local rate=$1 burst
  case "$rate" in
    *gbit) burst=$(( ${rate%gbit} * 1000000000 / 8 / 250 )) ;;
    *mbit) burst=$(( ${rate%mbit} * 1000000 / 8 / 250 )) ;;
    *) echo "shaped_network: rate '$rate' must end in gbit or mbit" >&2; return 1 ;;
  esac
  [ "$burst" -lt 65536 ] && burst=65536
  for ((i = 0; i < maxn; i++)); do
    ip netns exec "${tag}h$i" tc qdisc replace dev eth0 root tbf rate "$rate" burst "$burst" latency 20ms || return 1
    ip netns exec "${tag}sw" tc qdisc replace dev "p$i" root tbf rate "$rate" burst "$burst" latency 20ms || return 1
  done
}

if ! setup 2>"$work/setup.err"; then
  echo "shaped_network: SKIPPED: cannot create network namespaces here: $(tail -1 "$work/setup.err")"
  exit 77
fi

# Open MPI rsh agent: $1 is the host, the rest a command line for that host's shell.
{
  echo '#!/bin/sh'
  echo 'host=$1; shift'
  echo 'case "$host" in'
  for ((i = 0; i < maxn; i++)); do
    echo "  $(host_ip "$i")) exec ip netns exec ${tag}h$i unshare --uts /bin/sh -c \"hostname qcoll-host-$i; \$*\" ;;"
  done
  echo '  *) echo "agent: unknown host $host" >&2; exit 1 ;;'
  echo 'esac'
} > "$work/agent.sh"
chmod +x "$work/agent.sh"

echo "shaped_network: $maxn hosts $(host_ip 0)..$(host_ip $((maxn - 1))) on one bridge, MTU $MTU; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
jsons=()
status=0
for rate in $RATES; do
  shape "$rate" || exit 1
  gbit=$(awk -v r="$rate" 'BEGIN { if (r ~ /gbit$/) print r + 0; else print (r + 0) / 1000 }')
  for n in $NS; do
  for r in $PER_HOST; do
    hosts=$((n / r))
    if [ $((n % r)) -ne 0 ] || [ "$hosts" -lt 2 ]; then
      echo "shaped_network: skipping n=$n with $r ranks per host (needs at least 2 hosts)"
      continue
    fi
    : > "$work/hosts"
    for ((i = 0; i < hosts; i++)); do echo "$(host_ip "$i") slots=$r" >> "$work/hosts"; done
    suffix=""; btl="tcp,self"
    if [ "$r" -gt 1 ]; then
      suffix="_r$r"; btl="tcp,vader,self"
    fi
    json="$OUT/shaped_${rate}_n$n$suffix.json"
    echo "shaped_network: $rate, $n ranks on $hosts hosts (QCOLL_CONTRACT=$CONTRACT): mpirun -np $n qcoll bench --sizes $SIZES ${modes[*]} --link-gbit $gbit --ranks-per-host $r $*"
    ip netns exec "${tag}h0" unshare --uts /bin/sh -c 'hostname qcoll-host-0; exec "$@"' sh \
      timeout 3000 "$MPIRUN" --allow-run-as-root --oversubscribe --hostfile "$work/hosts" -np "$n" --map-by slot \
      --mca plm_rsh_agent "$work/agent.sh" --mca btl "$btl" --mca btl_vader_single_copy_mechanism none \
      --mca btl_tcp_if_include 127.0.20.0/24 --mca oob_tcp_if_include 127.0.20.0/24 \
      --mca btl_tcp_sndbuf "$TCP_BUF" --mca btl_tcp_rcvbuf "$TCP_BUF" \
      -x QCOLL_TRANSPORT=mpi -x QCOLL_CONTRACT="$CONTRACT" -x FI_PROVIDER="$CCL_FI" -x CCL_ATL_SHM=0 \
      -x GLOO_SOCKET_IFNAME=eth0 "${extra_mpirun[@]}" \
      "$QCOLL" bench --sizes "$SIZES" --repeats "$REPEATS" --warmup "$WARMUP" "${modes[@]}" \
      --label "shaped $rate, $r/host" --link-gbit "$gbit" --ranks-per-host "$r" --json "$json" "$@" | tee "$OUT/shaped_${rate}_n$n$suffix.txt"
    if [ "${PIPESTATUS[0]}" -ne 0 ] || [ ! -s "$json" ]; then
      echo "shaped_network: the run for $rate, n=$n, $r per host failed" >&2
      status=1
      continue
    fi
    jsons+=("$json")
    if [ -n "${SHOW_TC:-}" ]; then  # bytes the links carried, all contenders and rounds together
      for ((i = 0; i < hosts; i++)); do
        echo "host $i egress: $(ip netns exec "${tag}h$i" tc -s qdisc show dev eth0 | grep -o 'Sent [0-9]* bytes')," \
          "ingress: $(ip netns exec "${tag}sw" tc -s qdisc show dev "p$i" | grep -o 'Sent [0-9]* bytes')"
      done
    fi
  done
  done
done
if [ ${#jsons[@]} -gt 0 ]; then
  "$QCOLL" bench --from-json "${jsons[@]}" --json "$OUT/shaped.json" --table "$OUT/shaped.md" --plot "$OUT/shaped.png" -q
  echo "shaped_network: wrote $OUT/shaped.json, $OUT/shaped.md, $OUT/shaped.png"
fi
exit $status
