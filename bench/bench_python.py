"""The fused operators from C, Python and torch side by side, in one run (docs/python.md §speed).

    mpirun --allow-run-as-root --oversubscribe -np 2 -x MASTER_PORT=29611 \
        python bench/bench_python.py --sizes 4096x5120 --rounds 15
    python -m torch.distributed.run --nproc_per_node 2 bench/bench_python.py ...

Every process is one rank; the ranks share one host. Contenders, all on the shared-memory
transport, the same bf16 input, mode and bfloat16 output:

- C: the two-phase C API called as a C program calls it (tensors described once, one
  workspace kept; ``qcoll._core.CPreparedFused``, the same calls as ``qcoll bench``);
- Python: ``qcoll.reduce_scatter`` / ``qcoll.all_reduce`` over ``qcoll.init_comm``, with
  ``out=`` (a caller-owned array) and without (a new array per call);
- torch: ``qcoll.torch.reduce_scatter`` / ``all_reduce`` on the gloo world group (its shm
  path), with ``out=``, without, and in place (``out=input``; the input is restored before
  each call, outside the timing);
- gloo: torch's own ``reduce_scatter_tensor`` / ``all_reduce`` of the bf16 tensor.

For every size and operator the contenders run in interleaved rounds (in a new random
order each round, the same on every rank), each call preceded by a barrier; a call's time is the maximum over ranks; the
table gives the median of the rounds after the warm-up and each contender's speed as a
ratio of C's (C time / its time: 1.0 is as fast as C).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time

import ml_dtypes
import numpy as np
import torch
import torch.distributed as dist

import qcoll
import qcoll.torch as qt
from qcoll import _core
from qcoll._dtypes import DType

_OPS = {"reduce-scatter": "rs", "all-reduce": "ar"}
# A qcoll from before out= (to measure what changed): only the paths it has, no ratios.
HAS_OUT = hasattr(_core, "CPreparedFused")


def _sizes(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        bs, h = part.lower().split("x")
        out.append((int(bs), int(h)))
    return out


def _load() -> str:
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def _contenders(which: str, mode: str, x32: np.ndarray, group, n: int):
    """name -> (setup or None, call) for one size and operator."""
    x_np = x32.astype(ml_dtypes.bfloat16)
    x_t = torch.from_numpy(x32).to(torch.bfloat16)
    bs, h = x32.shape
    shape = (bs // n, h) if which == "rs" else (bs, h)
    xq, sq = (DType(v) for v in _core.quant_mode(mode))
    out_np = np.empty(shape, ml_dtypes.bfloat16)
    out_t = torch.empty(shape, dtype=torch.bfloat16)
    py = qcoll.reduce_scatter if which == "rs" else qcoll.all_reduce
    tq = qt.reduce_scatter if which == "rs" else qt.all_reduce
    bf16 = torch.bfloat16
    c = {}
    if HAS_OUT:
        out_c = np.empty(shape, ml_dtypes.bfloat16)
        c_call = _core.CPreparedFused(which, x_np, x_np.view(np.uint16), int(DType.BFLOAT16), int(xq), int(sq),
                                      group.name, out_c, out_c.view(np.uint16), int(DType.BFLOAT16))
        c["C (two-phase C API, buffers kept)"] = (None, c_call.run)
        c["Python, out="] = (None, lambda: py(x_np, group, mode=mode, output_dtype="bfloat16", out=out_np))
    c["Python, new output"] = (None, lambda: py(x_np, group, mode=mode, output_dtype="bfloat16"))
    if HAS_OUT:
        c["torch, out="] = (None, lambda: tq(x_t, mode=mode, output_dtype=bf16, out=out_t))
    c["torch, new output"] = (None, lambda: tq(x_t, mode=mode, output_dtype=bf16))
    if which == "ar" and HAS_OUT:
        x_ip = x_t.clone()
        c["torch, in place (out=input)"] = (lambda: x_ip.copy_(x_t),
                                            lambda: tq(x_ip, mode=mode, output_dtype=bf16, out=x_ip))
    if which == "ar":
        g_buf = x_t.clone()
        c["gloo bf16 (torch all_reduce)"] = (lambda: g_buf.copy_(x_t), lambda: dist.all_reduce(g_buf))
    else:
        g_out = torch.empty(shape, dtype=bf16)
        try:  # not every torch's gloo has it (every rank fails alike)
            dist.reduce_scatter_tensor(g_out, x_t)
            c["gloo bf16 (torch reduce_scatter_tensor)"] = (None, lambda: dist.reduce_scatter_tensor(g_out, x_t))
        except (RuntimeError, ValueError):
            pass
    return c


def _time(contenders: dict, rounds: int, warmup: int) -> dict[str, list[float]]:
    names = list(contenders)
    times: dict[str, list[float]] = {k: [] for k in names}
    for r in range(warmup + rounds):
        order = list(names)
        random.Random(r).shuffle(order)  # the same on every rank; no contender always follows the same one
        for name in order:
            setup, call = contenders[name]
            if setup is not None:
                setup()
            dist.barrier()
            t0 = time.perf_counter()
            call()
            t = time.perf_counter() - t0
            if r >= warmup:
                times[name].append(t)
    # A call's time: the slowest rank's.
    flat = torch.tensor([t for k in names for t in times[k]], dtype=torch.float64)
    dist.all_reduce(flat, op=dist.ReduceOp.MAX)
    k = 0
    for name in names:
        m = len(times[name])
        times[name] = flat[k:k + m].tolist()
        k += m
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="4096x5120", help="BSxH per rank, comma separated (default 4096x5120)")
    ap.add_argument("--ops", default="reduce-scatter,all-reduce")
    ap.add_argument("--mode", default="kg-int8", help="a fused mode (default kg-int8)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--only", default="", help="';' list: run only the contenders whose names start with one "
                    "of these (C is always run)")
    ap.add_argument("--json", default="", help="write the medians and every round's times here (rank 0)")
    args = ap.parse_args()

    qt.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    ids = torch.zeros(int(_core.unique_id_bytes), dtype=torch.uint8)
    if rank == 0:
        ids[:] = torch.frombuffer(bytearray(qcoll.UniqueId().bytes), dtype=torch.uint8)
    dist.broadcast(ids, 0)
    group = qcoll.init_comm("bench-python", n, qcoll.UniqueId(bytes(ids.tolist())), rank)
    if qt.transport() != "shm":
        raise SystemExit(f"qcoll.torch took the {qt.transport()} path, not shm: run every rank on one host")
    load_before = _load()
    report = {"ranks": n, "mode": args.mode, "input": "bfloat16", "output": "bfloat16",
              "torch_threads": torch.get_num_threads(), "results": []}
    for bs, h in _sizes(args.sizes):
        x32 = np.random.default_rng(1 + rank).standard_normal((bs, h), dtype=np.float32)
        for op in args.ops.split(","):
            which = _OPS[op.strip()]
            contenders = _contenders(which, args.mode, x32, group, n)
            if args.only:
                keep = ["C "] + [p.strip() for p in args.only.split(";")]
                contenders = {k: v for k, v in contenders.items() if any(k.startswith(p) for p in keep)}
            times = _time(contenders, args.rounds, args.warmup)
            med = {k: statistics.median(v) for k, v in times.items()}
            report["results"].append({"size": f"{bs}x{h}", "op": op.strip(), "median_s": med, "times_s": times})
    report["load"] = {"before": load_before, "after": _load()}
    if rank == 0:
        print(f"n = {n}, {args.mode} from bfloat16, bfloat16 out, shm, {args.rounds} rounds "
              f"(+{args.warmup} warm-up), medians; load average {load_before} -> {report['load']['after']}")
        for res in report["results"]:
            c = next((v for k, v in res["median_s"].items() if k.startswith("C ")), float("nan"))
            print(f"\n{res['op']} {res['size']} per rank")
            print("| path | ms | speed vs C |\n|---|---|---|")
            for k, v in res["median_s"].items():
                print(f"| {k} | {v * 1e3:.1f} | {c / v:.2f} |")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=1)
    qt.release()
    group.destroy()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("QCOLL_TRANSPORT", "auto")
    main()
