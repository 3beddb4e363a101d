"""One rank of the FP4 qcoll.torch tests (contract.md §ext-fp4), run by test_torch_dist.py under
torchrun with QCOLL_CONTRACT=extended (2 processes, and 3: a rank count only the extended
contract takes). On the group path (QCOLL_TRANSPORT=torch) and the default path (shm on one
host), every result is bit-identical to the thread transport in this process on the same data:
the pre-quantized operators with torch.float4_e2m1fn_x2 x (and packed uint8 with x_dtype),
the fused operators from float tensors in the four 4-bit modes, the DDP hook in an FP4 mode
(with and without error feedback) and FSDP1's sharded hook. Prints "rank R: all N checks ok
on PATHS" at the end; any failure raises."""

from __future__ import annotations

import sys

import numpy as np
import torch
import torch.distributed as dist

import qcoll
import qcoll.torch as qt
from torch_dist_worker import both_paths, bucket_average, floats, same_bits, scales, spied_ddp

H = 1024
checks = []


def ok(name: str) -> None:
    checks.append(name)
    print(f"rank {dist.get_rank()}: {name} ok", flush=True)


def packed(k: int, sd: str, shape):
    """Rank k's packed FP4 x (uint8, (..., H/2): every byte two valid codes) and its scales."""
    g = np.random.default_rng(4000 + 31 * k + len(sd))
    x = torch.from_numpy(g.integers(0, 256, size=tuple(shape[:-1]) + (shape[-1] // 2,), dtype=np.uint8))
    return x, scales(g, sd, shape)


def check_bits(group, path: str) -> None:
    n = dist.get_world_size(group)
    me = dist.get_rank(group)
    shape = (2 * n, H)
    for sd in ("float", "float8_e8m0"):
        ins = [packed(k, sd, shape) for k in range(n)]
        for name, fn, tfn in (("quant_reduce_scatter", qt.quant_reduce_scatter, qcoll.quant_reduce_scatter),
                              ("quant_all_reduce", qt.quant_all_reduce, qcoll.quant_all_reduce)):
            # torch's packed E2M1 type names x's dtype; raw uint8 needs x_dtype (here E1M2).
            x, s = ins[me]
            got = fn(x.view(torch.float4_e2m1fn_x2), s, group, output_dtype=torch.float32)
            want = qcoll.run_ranks(n, lambda k, g: tfn(ins[k][0], ins[k][1], g, output_dtype=torch.float32,
                                                       x_dtype="float4_e2m1"))[me]
            same_bits(got, want, f"{path} {name} float4_e2m1fn_x2/{sd}")
            got = fn(x, s, group, x_dtype="float4_e1m2")
            want = qcoll.run_ranks(n, lambda k, g: tfn(ins[k][0], ins[k][1], g, x_dtype="e1m2"))[me]
            same_bits(got, want, f"{path} {name} uint8 e1m2/{sd}")
    ok(f"{path}: pre-quantized FP4 x (float4_e2m1fn_x2, uint8 + x_dtype), KG and MX, bit-identical to threads")
    calls = 0
    for mode in ("kg-e2m1", "kg-e1m2", "mx-e2m1", "mx-e1m2"):
        for in_dtype in (torch.float32, torch.bfloat16):
            xs = [floats(k, shape, in_dtype) for k in range(n)]
            for fn, tfn in ((qt.reduce_scatter, qcoll.reduce_scatter), (qt.all_reduce, qcoll.all_reduce)):
                got = fn(xs[me], group, mode=mode)
                want = qcoll.run_ranks(n, lambda k, g: tfn(xs[k], g, mode=mode))[me]
                same_bits(got, want, f"{path} {fn.__name__} {mode} {in_dtype}")
                calls += 1
    # The fused operator gives the bits of quantize-then-operate.
    x32 = [floats(k, shape) for k in range(n)]
    q = [qcoll.quantize_mx(v, "float4_e2m1") for v in x32]
    got = qt.reduce_scatter(x32[me], group, mode="mx-e2m1")
    want = qcoll.run_ranks(n, lambda k, g: qcoll.quant_reduce_scatter(*q[k], g, output_dtype=torch.float32))[me]
    same_bits(got, want, f"{path} fused vs quantize-then-operate")
    ok(f"{path}: float-in FP4 modes ({calls} calls), bit-identical to threads and to quantize-then-operate")


def check_ddp_hook(error_feedback: bool) -> None:
    """The DDP hook in mx-e2m1: each bucket's result is the average of the ranks' quantized
    buckets (bit for bit: the thread transport on the gathered, padded buckets)."""
    n = dist.get_world_size()
    me = dist.get_rank()
    mode = "mx-e2m1"
    xd, sd = qt.EXTENDED_MODES[mode]
    ddp, seen = spied_ddp(qt.QuantHookState(mode=mode, output_dtype=torch.float32, error_feedback=error_feedback))
    g = torch.Generator().manual_seed(10 + me)
    ddp(torch.randn(32, 64, generator=g)).square().mean().backward()
    assert len(seen) >= 2 and len(seen) % 2 == 0, len(seen)
    quantize = lambda v: qcoll.quantize_mx(v, xd)  # noqa: E731
    for b in range(0, len(seen), 2):
        mine, got = seen[b], seen[b + 1]
        # (error feedback: the first step has no residual yet, so the same bits)
        same_bits(got, bucket_average(mine, quantize, xd, sd, n, me)[2], f"ddp hook {mode} bucket {b // 2}")
    for p in ddp.parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all()
    ok(f"ddp hook: {mode}{' with error feedback' if error_feedback else ''}, buckets bit-identical to threads")


def check_fsdp1_hook() -> None:
    """FSDP1's sharded comm hook in kg-e1m2 on a flat gradient of n chunks: this rank's shard
    is the average of the ranks' quantized chunks (each padded to rows of 1024), bit for bit
    the fused reduce-scatter on threads."""
    n = dist.get_world_size()
    me = dist.get_rank()
    c = 1500  # elements per rank chunk: two rows of 1024, zero-padded
    grads = [floats(k, (n * c,)) for k in range(n)]
    out = torch.empty(c)
    qt.quant_reduce_scatter_hook(qt.FSDPHookState(mode="kg-e1m2"), grads[me], out)
    rows = -(-c // 1024)
    padded = []
    for g in grads:
        p = torch.zeros(n, rows * 1024)
        p[:, :c] = g.view(n, c)
        padded.append(p.view(n * rows, 1024))
    want = qcoll.run_ranks(n, lambda k, tg: qcoll.reduce_scatter(padded[k], tg, mode="kg-e1m2"))[me]
    same_bits(out, want.reshape(-1)[:c] / n, "fsdp1 hook kg-e1m2")
    ok("fsdp1 hook: kg-e1m2, the shard bit-identical to threads")


def main() -> None:
    qt.init_process_group("gloo")
    assert qcoll.get_contract() == "extended", "run with QCOLL_CONTRACT=extended"
    paths = []
    groups = both_paths()
    for group, path in groups:
        if path in paths:
            continue
        paths.append(path)
        check_bits(group, path)
    check_ddp_hook(False)
    check_ddp_hook(True)
    check_fsdp1_hook()
    dist.barrier()
    print(f"rank {dist.get_rank()}: all {len(checks)} checks ok on {','.join(paths)}", flush=True)
    sys.stdout.flush()
    for group, _ in groups:
        qt.release(group)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
