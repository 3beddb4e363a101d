#!/usr/bin/env bash
# `qcoll reduce-scatter` / `all-reduce` / `demo` under mpirun (one rank per process, {rank} = the
# process's rank) write the same files, byte for byte, as the same commands with ranks as
# threads; on both one-process transports (shm, and mpi forced with QCOLL_TRANSPORT).
# Usage: cli_mpirun.sh MPIRUN QCOLL     (exit 77 = skipped: no numpy to write the inputs)
set -uo pipefail
MPIRUN=$1; QCOLL=$(realpath "$2")
# A 16 MB window (4 ranks: 64 MB of /dev/shm at most, not the default 800 MB).
MPI=("$MPIRUN" --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -x HCCL_BUFFSIZE=16)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; cd "$work"
python3 -c "import numpy" 2>/dev/null || { echo "cli_mpirun: SKIPPED: python3 numpy not available"; exit 77; }
python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(7)
for r in range(4):
    np.save(f"kx{r}.npy", rng.integers(-127, 128, size=(2, 32, 1024), dtype=np.int8))    # 3-D x
    np.save(f"ks{r}.npy", (rng.random((2, 32, 8)) * 0.01).astype(np.float32))
    np.save(f"mx{r}.npy", rng.integers(0, 256, size=(64, 2048), dtype=np.uint8))        # E4M3 bytes
    np.save(f"ms{r}.npy", rng.integers(118, 134, size=(64, 32, 2), dtype=np.uint8))    # E8M0 bytes
PY
fail=0
check() { if "$@"; then :; else echo "FAIL: $*"; fail=1; fi; }
for op in reduce-scatter all-reduce; do
  for mode in "k int8" "m float8_e4m3fn"; do
    set -- $mode; p=$1; xd=$2
    args=(--x-dtype "$xd" --x "${p}x{rank}.npy" --scales "${p}s{rank}.npy" --out-dtype float16 -q)
    check "$QCOLL" "$op" --ranks 4 "${args[@]}" --out "t-$op-$p{rank}.npy"
    check "${MPI[@]}" -np 4 "$QCOLL" "$op" "${args[@]}" --out "s-$op-$p{rank}.npy"
    check "${MPI[@]}" -x QCOLL_TRANSPORT=mpi -np 4 "$QCOLL" "$op" --ranks 4 "${args[@]}" --out "m-$op-$p{rank}.npy"
    for r in 0 1 2 3; do
      check cmp "t-$op-$p$r.npy" "s-$op-$p$r.npy"
      check cmp "t-$op-$p$r.npy" "m-$op-$p$r.npy"
    done
  done
done
# --ranks that differs from the number of processes: an argument error (exit 2) on every rank.
out=$("${MPI[@]}" -np 2 "$QCOLL" all-reduce --ranks 4 --x-dtype int8 --x 'kx{rank}.npy' --scales 'ks{rank}.npy' \
      --out 'bad{rank}.npy' 2>&1)
check grep -q "does not match the 2 processes" <<<"$out"
check test ! -e bad0.npy
# qcoll demo: the same errors (the outputs are the same bits) with one rank per process.
check "$QCOLL" demo --ranks 4 --bs 128 --hidden 1024 --reps 1 --json > demo-threads.json
check "${MPI[@]}" -np 4 "$QCOLL" demo --bs 128 --hidden 1024 --reps 1 --json > demo-mpi.json
check python3 - <<'PY'
import json, sys
t, m = json.load(open("demo-threads.json")), json.load(open("demo-mpi.json"))
assert t["transport"] == "threads" and m["transport"] in ("shm", "mpi"), (t["transport"], m["transport"])
assert m["ranks"] == 4 and len(t["rows"]) == len(m["rows"]) == 7
for a, b in zip(t["rows"], m["rows"]):
    assert a["mode"] == b["mode"] and a["rel_rms_error"] == b["rel_rms_error"] and a["max_abs_error_rel"] == b["max_abs_error_rel"], (a, b)
PY
if [ $fail -eq 0 ]; then echo "cli_mpirun: PASS"; else echo "cli_mpirun: FAIL"; fi
exit $fail
