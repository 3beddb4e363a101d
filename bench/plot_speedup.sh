#!/usr/bin/env bash
# Merges `qcoll bench --json` result files and plots qcoll's speedup over the MPI peers
# against the message size (gnuplot; the .gp script and .dat data are left beside the PNG).
#
#   bench/plot_speedup.sh speedup.png bench-results/bench_n2.json bench-results/bench_n4.json ...
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OUT.png RESULT.json..." >&2; exit 2; }
QCOLL=${QCOLL:-$(dirname "$0")/../build/tools/qcoll}
png=$1; shift
"$QCOLL" bench --from-json "$@" --plot "$png"
