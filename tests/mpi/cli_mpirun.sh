#!/usr/bin/env bash
# `qcoll reduce-scatter` / `all-reduce` / `demo` under mpirun (one rank per process, {rank} = the
# process's rank) write the same files, byte for byte, as the same commands with ranks as
# threads; on both one-process transports (shm, and mpi forced with QCOLL_TRANSPORT). Under the
# extended contract (contract.md §ext), passed on with -x QCOLL_CONTRACT: packed 4-bit x on 3
# processes (a rank count only it allows), the demo's 4-bit rows on 3 processes, and the refusal when
# the ranks' contracts differ.
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
# The extended contract: 4-bit x (packed uint8 files, last dimension H/2) quantized by qcoll on 3
# ranks, the operators as 3 threads and as 3 processes (shm, mpi): the same bytes.
check env QCOLL_CONTRACT=extended "$QCOLL" generate --ranks 3 --bs 48 --hidden 1024 --seed 5 --out 'fa{rank}.npy'
for mode in "kg float4_e2m1 float" "mx e1m2 float8_e8m0"; do
  set -- $mode; p=f$1; xd=$2; sd=$3
  check env QCOLL_CONTRACT=extended "$QCOLL" quantize --ranks 3 --in 'fa{rank}.npy' --x-dtype "$xd" --scales-dtype "$sd" \
    --x "${p}x{rank}.npy" --scales "${p}s{rank}.npy"
  for op in reduce-scatter all-reduce; do
    args=(--x-dtype "$xd" --x "${p}x{rank}.npy" --scales "${p}s{rank}.npy" --out-dtype float -q)
    check env QCOLL_CONTRACT=extended "$QCOLL" "$op" --ranks 3 "${args[@]}" --out "t-$op-$p{rank}.npy"
    check "${MPI[@]}" -x QCOLL_CONTRACT=extended -np 3 "$QCOLL" "$op" "${args[@]}" --out "s-$op-$p{rank}.npy"
    check "${MPI[@]}" -x QCOLL_CONTRACT=extended -x QCOLL_TRANSPORT=mpi -np 3 "$QCOLL" "$op" "${args[@]}" \
      --out "m-$op-$p{rank}.npy"
    for r in 0 1 2; do
      check cmp "t-$op-$p$r.npy" "s-$op-$p$r.npy"
      check cmp "t-$op-$p$r.npy" "m-$op-$p$r.npy"
    done
  done
done
# Without it every process keeps vendor: the 4-bit x dtype is an argument error on every rank.
out=$("${MPI[@]}" -np 2 "$QCOLL" all-reduce --x-dtype float4_e2m1 --x 'fkgx{rank}.npy' --scales 'fkgs{rank}.npy' \
      --out 'bad{rank}.npy' 2>&1)
check grep -q "float4_e2m1 needs QCOLL_CONTRACT=extended" <<<"$out"
check test ! -e bad0.npy
# Ranks whose contracts differ (one process extended, the other vendor) fail the call on every
# rank, the message naming both contracts, and write nothing: why the launchers pass it on.
# (An -x option holds for its own app context only: the second one repeats HCCL_BUFFSIZE.)
out=$("${MPI[@]}" -np 1 env QCOLL_CONTRACT=extended "$QCOLL" all-reduce --x-dtype int8 --x 'kx{rank}.npy' \
      --scales 'ks{rank}.npy' --out 'mixed{rank}.npy' : -x HCCL_BUFFSIZE=16 -np 1 "$QCOLL" all-reduce --x-dtype int8 --x 'kx{rank}.npy' \
      --scales 'ks{rank}.npy' --out 'mixed{rank}.npy' 2>&1)
check grep -q "RUNTIME_ERROR" <<<"$out"
check grep -q "QCOLL_CONTRACT: vendor (rank 1) vs extended (rank 0)" <<<"$out"
check test ! -e mixed0.npy
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
# The same under the extended contract: 3 ranks (threads, then 3 processes), 4-bit modes.
ext=(--bs 48 --hidden 1024 --reps 1 --modes int8,e2m1,mx-e1m2 --json)
check env QCOLL_CONTRACT=extended "$QCOLL" demo --ranks 3 "${ext[@]}" > demo4-threads.json
check "${MPI[@]}" -x QCOLL_CONTRACT=extended -np 3 "$QCOLL" demo "${ext[@]}" > demo4-mpi.json
check python3 - <<'PY'
import json
t, m = json.load(open("demo4-threads.json")), json.load(open("demo4-mpi.json"))
assert t["contract"] == m["contract"] == "extended" and m["ranks"] == 3, (t["contract"], m["contract"], m["ranks"])
assert [r["mode"] for r in m["rows"]] == ["bf16-ring", "int8", "e2m1", "mx-e1m2"], m["rows"]
for a, b in zip(t["rows"], m["rows"]):
    assert a["mode"] == b["mode"] and a["rel_rms_error"] == b["rel_rms_error"] and a["max_abs_error_rel"] == b["max_abs_error_rel"], (a, b)
PY
if [ $fail -eq 0 ]; then echo "cli_mpirun: PASS"; else echo "cli_mpirun: FAIL"; fi
exit $fail
