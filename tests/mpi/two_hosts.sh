#!/usr/bin/env bash
# Two "hosts" on one machine: two network namespaces joined by a veth pair with loopback-range
# addresses (127.0.10.1 and 127.0.10.2; route_localnet lets 127/8 leave the loopback device),
# each with its own host name (UTS namespace). mpirun runs in the first; Open MPI starts its
# daemon in the second through an "rsh agent" that enters that namespace, and MPI talks TCP
# over the veth pair. So the ranks are on two hosts as far as MPI and qcoll can tell, and the
# cross-host (MPI) transport is exercised for real.
#
# Usage: two_hosts.sh MPIRUN PROGRAM [ARGS...]   (runs PROGRAM with 4 ranks, 2 per host)
# Exit 77 (skipped) when namespaces cannot be made here (needs root / CAP_SYS_ADMIN + CAP_NET_ADMIN).
# The ranks get TWO_HOSTS_LINK_B, the name of host b's end of the link (a test that takes
# host b off the network sets it down from there).
# TWO_HOSTS_TIMEOUT (seconds, default 300): mpirun is killed after that long. (After a rank
# died under --enable-recovery, Open MPI 4.1's mpirun and the second host's orted stay up
# once every process has exited; a test of that judges by the program's output instead.)
set -uo pipefail
MPIRUN=$1; shift
tag="qc$$"
nsa="${tag}a"; nsb="${tag}b"
work=$(mktemp -d)
cleanup() {
  # Whatever this run left in its namespaces (an orted that outlived mpirun) goes with them.
  for ns in "$nsa" "$nsb"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null; done
  ip netns del "$nsa" 2>/dev/null; ip netns del "$nsb" 2>/dev/null; rm -rf "$work"
}
trap cleanup EXIT

setup() {
  ip netns add "$nsa" && ip netns add "$nsb" || return 1
  ip link add "${tag}va" netns "$nsa" type veth peer name "${tag}vb" netns "$nsb" || return 1
  for ns in "$nsa" "$nsb"; do
    ip -n "$ns" link set lo up || return 1
    # Only 127.0.0.1 itself stays local, so 127.0.10.0/24 is routed over the veth pair.
    ip -n "$ns" addr del 127.0.0.1/8 dev lo 2>/dev/null
    ip -n "$ns" addr add 127.0.0.1/32 dev lo || return 1
    ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.route_localnet=1 || return 1
  done
  ip netns exec "$nsa" sysctl -qw "net.ipv4.conf.${tag}va.route_localnet=1" || return 1
  ip netns exec "$nsb" sysctl -qw "net.ipv4.conf.${tag}vb.route_localnet=1" || return 1
  ip -n "$nsa" addr add 127.0.10.1/24 dev "${tag}va" && ip -n "$nsa" link set "${tag}va" up || return 1
  ip -n "$nsb" addr add 127.0.10.2/24 dev "${tag}vb" && ip -n "$nsb" link set "${tag}vb" up || return 1
  unshare --uts true || return 1
}
if ! setup 2>"$work/setup.err"; then
  echo "two_hosts: SKIPPED: cannot create network namespaces here: $(tail -1 "$work/setup.err")"
  exit 77
fi

cat > "$work/agent.sh" <<AGENT
#!/bin/sh
# Open MPI rsh agent: \$1 is the host, the rest a command line for that host's shell.
host=\$1; shift
case "\$host" in
  127.0.10.2) exec ip netns exec "$nsb" unshare --uts /bin/sh -c "hostname qcoll-host-b; \$*" ;;
  *)          exec ip netns exec "$nsa" /bin/sh -c "\$*" ;;
esac
AGENT
chmod +x "$work/agent.sh"
printf '127.0.10.1 slots=2\n127.0.10.2 slots=2\n' > "$work/hosts"

# The first host keeps this machine's name; make the namespaces' view explicit in the log.
echo "two_hosts: host a = 127.0.10.1 ($nsa), host b = 127.0.10.2 ($nsb, hostname qcoll-host-b)"
ip netns exec "$nsa" unshare --uts /bin/sh -c 'hostname qcoll-host-a; exec "$@"' sh \
  timeout -k 5 "${TWO_HOSTS_TIMEOUT:-300}" "$MPIRUN" --allow-run-as-root --oversubscribe --hostfile "$work/hosts" -np 4 --map-by node \
  --mca plm_rsh_agent "$work/agent.sh" --mca btl tcp,self \
  --mca btl_tcp_if_include 127.0.10.0/24 --mca oob_tcp_if_include 127.0.10.0/24 \
  --mca btl_vader_single_copy_mechanism none -x TWO_HOSTS_LINK_B="${tag}vb" "$@"
