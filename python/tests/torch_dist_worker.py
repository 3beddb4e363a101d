"""One rank of the qcoll.torch tests, run by test_torch_dist.py under torchrun (or mpirun).

Every check compares with the thread transport in this process: each rank makes every
rank's inputs (seeded by rank), runs the operator on qcoll.run_ranks threads, and keeps its
own rank's result as the expected bits. Prints "rank R: CHECK ok" per check and
"rank R: all N checks ok on PATHS" at the end; any failure raises (non-zero exit).

    python -m torch.distributed.run --standalone --nproc_per_node 2 torch_dist_worker.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

import qcoll
import qcoll.torch as qt

H = 1024
KG = [("int8", "float"), ("hifloat8", "float"), ("float8_e4m3fn", "float"), ("float8_e5m2", "float")]
MX = [("float8_e4m3fn", "float8_e8m0"), ("float8_e5m2", "float8_e8m0")]
OUTS = [torch.float32, torch.float16, torch.bfloat16]
INS = [torch.float32, torch.float16, torch.bfloat16]
TORCH_X = {"int8": torch.int8, "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}

checks = []
T0 = time.monotonic()


def ok(name: str) -> None:
    checks.append(name)
    print(f"rank {dist.get_rank()}: {name} ok ({time.monotonic() - T0:.1f} s)", flush=True)


def inputs(k: int, xd: str, sd: str, shape):
    """Rank k's quantized inputs: random codes without NaN, finite scales (torch tensors)."""
    g = np.random.default_rng(1000 + 17 * k + len(xd) * 3 + len(sd))
    codes = g.integers(0, 256, size=shape, dtype=np.uint8)
    nan = {"int8": [], "hifloat8": [0x80], "float8_e4m3fn": [0x7F, 0xFF],
           "float8_e5m2": [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF]}[xd]
    codes[np.isin(codes, nan)] = 0x01
    x = torch.from_numpy(codes)
    if xd in TORCH_X:
        x = x.view(TORCH_X[xd])
    return x, scales(g, sd, shape)


def scales(g, sd: str, shape) -> torch.Tensor:
    """Finite scales for x of ``shape`` from numpy generator g: fp32 (KG) or E8M0 (MX)."""
    lead = tuple(shape[:-1])
    if sd == "float":
        return torch.from_numpy((g.random(lead + (shape[-1] // 128,)) * 2.0 ** g.integers(-8, 9, lead + (shape[-1] // 128,)))
                                .astype(np.float32))
    return torch.from_numpy(g.integers(120, 135, size=lead + (shape[-1] // 64, 2), dtype=np.uint8)).view(
        torch.float8_e8m0fnu)


def floats(k: int, shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(500 + k)
    return (torch.randn(shape, generator=g) * (1 + k)).to(dtype)


def thread_result(n: int, fn):
    """fn(k, thread_group) on n thread ranks; this process's rank's result."""
    return qcoll.run_ranks(n, fn)[dist.get_rank()]


def same_bits(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape, want.shape)
    iv = {4: torch.int32, 2: torch.int16, 1: torch.uint8}[got.element_size()]
    if not torch.equal(got.view(iv), want.view(iv)):
        bad = (got.view(iv) != want.view(iv)).nonzero()[:4].tolist()
        raise AssertionError(f"{what}: bits differ at {bad}")


def check_bits(group, path: str, quick: bool) -> None:
    """Every operator, mode and output dtype: same bits as the thread transport."""
    n = dist.get_world_size(group)
    me = dist.get_rank(group)
    modes = KG + MX if not quick else [KG[0], MX[0]]
    outs = OUTS if not quick else [torch.bfloat16]
    shape = (2 * n, H)
    for xd, sd in modes:
        kw = {"x_dtype": "hifloat8"} if xd == "hifloat8" else {}
        ins = [inputs(k, xd, sd, shape) for k in range(n)]
        for od in outs:
            for name, fn, tfn in (("quant_reduce_scatter", qt.quant_reduce_scatter, qcoll.quant_reduce_scatter),
                                  ("quant_all_reduce", qt.quant_all_reduce, qcoll.quant_all_reduce)):
                got = fn(*ins[me], group, output_dtype=od, **kw)
                want = qcoll.run_ranks(n, lambda k, g: tfn(*ins[k], g, output_dtype=od, **kw))[me]
                same_bits(got, want, f"{path} {name} {xd}/{sd} -> {od}")
    ok(f"{path}: quantized operators, {len(modes)} modes x {len(outs)} output dtypes, bit-identical")

    # 3-D x, and the default output dtype (bfloat16).
    x, s = inputs(me, "float8_e4m3fn", "float", (2, n, H))
    got = qt.quant_all_reduce(x, s, group)
    ins = [inputs(k, "float8_e4m3fn", "float", (2, n, H)) for k in range(n)]
    want = qcoll.run_ranks(n, lambda k, g: qcoll.quant_all_reduce(*ins[k], g))[me]
    same_bits(got, want, f"{path} 3-D all-reduce")
    assert got.shape == (2, n, H) and got.dtype == torch.bfloat16
    ok(f"{path}: 3-D x, default bfloat16 output")

    # Float in: the fused operators, against the fused operators on the thread transport,
    # for every mode, input dtype and output dtype (None: the input's dtype), 2-D and 3-D.
    fmodes = list(qt.MODES) if not quick else ["kg-int8", "mx-e4m3"]
    ins = INS if not quick else [torch.float32]
    calls = 0
    for mode in fmodes:
        for in_dtype in ins:
            xs = [floats(k, shape, in_dtype) for k in range(n)]
            for od in [None] + (OUTS if not quick else []):
                want_od = in_dtype if od is None else od
                for fn, tfn in ((qt.reduce_scatter, qcoll.reduce_scatter), (qt.all_reduce, qcoll.all_reduce)):
                    got = fn(xs[me], group, mode=mode, output_dtype=od)
                    want = qcoll.run_ranks(n, lambda k, g: tfn(xs[k], g, mode=mode, output_dtype=want_od))[me]
                    same_bits(got, want, f"{path} {fn.__name__} {mode} {in_dtype} -> {want_od}")
                    calls += 1
    xs = [floats(k, (3, n, H), torch.bfloat16) for k in range(n)]
    for fn, tfn in ((qt.reduce_scatter, qcoll.reduce_scatter), (qt.all_reduce, qcoll.all_reduce)):
        got = fn(xs[me], group, mode="kg-hif8", output_dtype=torch.float32)
        want = qcoll.run_ranks(n, lambda k, g: tfn(xs[k], g, mode="kg-hif8", output_dtype=torch.float32))[me]
        same_bits(got, want, f"{path} 3-D {fn.__name__}")
    # The fused operator gives the bits of quantize-then-operate (here once per path).
    x32 = [floats(k, shape) for k in range(n)]
    q = [qcoll.quantize_mx(v, "float8_e5m2") for v in x32]
    got = qt.reduce_scatter(x32[me], group, mode="mx-e5m2")
    want = qcoll.run_ranks(n, lambda k, g: qcoll.quant_reduce_scatter(*q[k], g, output_dtype=torch.float32))[me]
    same_bits(got, want, f"{path} fused vs quantize-then-operate")
    ok(f"{path}: float-in reduce_scatter / all_reduce (fused), {len(fmodes)} modes x {len(ins)} input x "
       f"{calls // len(fmodes) // len(ins) // 2} output dtypes (the default too), 2-D and 3-D, bit-identical")

    # async_op: several calls in flight, results in order and bit-identical.
    xs = [floats(k, shape) for k in range(n)]
    works = [qt.all_reduce(xs[me] * (j + 1), group, mode="kg-int8", async_op=True) for j in range(4)]
    for j, w in enumerate(works):
        got = w.wait()
        want = qcoll.run_ranks(n, lambda k, g: qcoll.quant_all_reduce(*qcoll.quantize_kg(xs[k] * (j + 1), "int8"), g,
                                                                       output_dtype=torch.float32))[me]
        same_bits(got, want, f"{path} async all_reduce #{j}")
    fut = qt.reduce_scatter(xs[me], group, async_op=True).get_future()
    assert fut.wait().shape == (2, H)
    ok(f"{path}: async_op (4 in flight, then a torch future)")


def check_out(group, path: str) -> None:
    """out=: the bits of a new output for the four operators; the all-reduce in place
    (out=input, several chunks of the fused pipeline); refusals before anything runs (every
    rank refuses alike), a call the ranks disagree on: out untouched in both."""
    n = dist.get_world_size(group)
    me = dist.get_rank(group)
    shape = (2 * n, H)
    x = floats(me, shape, torch.bfloat16)
    for fn, rows in ((qt.reduce_scatter, 2), (qt.all_reduce, 2 * n)):
        for od in (torch.float32, torch.bfloat16):
            want = fn(x, group, mode="mx-e4m3", output_dtype=od)
            out = torch.full((rows, H), 7.0, dtype=od)
            got = fn(x, group, mode="mx-e4m3", out=out)
            assert got is out
            same_bits(out, want, f"{path} {fn.__name__} out= {od}")
            w = fn(x, group, mode="mx-e4m3", out=out.zero_(), output_dtype=od, async_op=True)
            assert w.wait() is out
            same_bits(out, want, f"{path} {fn.__name__} out= async {od}")
    q, s = inputs(me, "int8", "float", shape)
    for fn, rows in ((qt.quant_reduce_scatter, 2), (qt.quant_all_reduce, 2 * n)):
        want = fn(q, s, group, output_dtype=torch.float16)
        out = torch.empty((rows, H), dtype=torch.float16)
        assert fn(q, s, group, out=out) is out
        same_bits(out, want, f"{path} {fn.__name__} out=")
    # In place, as torch.distributed.all_reduce(t): 4100 rows per rank, more than one chunk.
    big = floats(me, (4100 * n, H), torch.bfloat16)
    want = qt.all_reduce(big, group)
    t = big.clone()
    assert qt.all_reduce(t, group, out=t) is t
    same_bits(t, want, f"{path} all_reduce in place")
    # Refusals: every rank breaks the same rule; out untouched, the group usable after.
    sentinel = torch.full((2, H), 3.0, dtype=torch.bfloat16)
    base = torch.zeros(2 * n + 2, H, dtype=torch.bfloat16)
    cases = [
        (lambda: qt.reduce_scatter(x, group, out=torch.empty(2 * n, H)), "out: shape must be (BS/n, H)"),
        (lambda: qt.reduce_scatter(x, group, out=torch.empty(2, H, dtype=torch.int32)), "torch dtype torch.int32"),
        (lambda: qt.reduce_scatter(x, group, out=sentinel, output_dtype=torch.float32),
         "out: dtype is bfloat16, but output_dtype=float was given"),
        (lambda: qt.reduce_scatter(x, group, out=torch.empty(H, 2, dtype=torch.bfloat16).t()), "out: must be contiguous"),
        (lambda: qt.reduce_scatter(base[:2 * n], group, out=base[2 * n - 1:2 * n + 1]), "out: overlaps input"),
        (lambda: qt.all_reduce(base[:2 * n], group, out=base[1:2 * n + 1]), "out: overlaps input without being input itself"),
        (lambda: qt.reduce_scatter(x, group, out=np.zeros((2, H), np.float32)), "out: expected a torch.Tensor"),
    ]
    for k, (bad, msg) in enumerate(cases):
        expect_error(bad, qcoll.InvalidParameterError, msg, 20.0, f"{path}: out refusal {k}")
        assert torch.equal(sentinel, torch.full((2, H), 3.0, dtype=torch.bfloat16))
    # The ranks disagree (the last one has twice the rows): every rank fails, out untouched.
    rows = 4 * n if me == n - 1 else 2 * n
    out = torch.full((rows, H), 3.0, dtype=torch.bfloat16)
    expect_error(lambda: qt.all_reduce(floats(me, (rows, H), torch.bfloat16), group, out=out), qcoll.CommunicationError,
                 "disagree", 20.0, f"{path}: out= on a call the ranks disagree on")
    assert torch.equal(out, torch.full((rows, H), 3.0, dtype=torch.bfloat16)), "out written by a failed call"
    t = big.clone()
    mode = "mx-e4m3" if me == n - 1 else "kg-int8"
    expect_error(lambda: qt.all_reduce(t, group, mode=mode, out=t), qcoll.CommunicationError, "", 20.0,
                 f"{path}: in place on a call the ranks disagree on")
    assert torch.equal(t, big), "input changed by a failed in-place call"
    same_bits(qt.all_reduce(big, group), want, f"{path} usable after the refusals")
    ok(f"{path}: out= (4 operators, async, in place over several chunks), {len(cases)} refusals and a "
       "disagreement with out untouched")


def expect_error(fn, cls, pattern: str, bound_s: float, what: str) -> str:
    t0 = time.monotonic()
    try:
        fn()
    except cls as e:
        took = time.monotonic() - t0
        assert pattern in str(e), f"{what}: {pattern!r} not in {e}"
        assert took < bound_s, f"{what}: took {took:.1f} s, bound {bound_s} s"
        print(f"rank {dist.get_rank()}: {what}: {type(e).__name__} after {took:.2f} s: {e}", flush=True)
        return str(e)
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"{what}: expected {cls.__name__}, got {type(e).__name__}: {e}") from None
    raise AssertionError(f"{what}: no error")


def check_errors(group, path: str) -> None:
    """Ranks that disagree: every rank fails, quickly and with the rank named."""
    n = dist.get_world_size(group)
    me = dist.get_rank(group)
    last = n - 1
    bound = 20.0  # well under QCOLL_TIMEOUT_S (60) : the agreement, not a timeout
    rows = 4 * n if me == last else 2 * n
    x, s = inputs(me, "int8", "float", (rows, H))
    expect_error(lambda: qt.quant_reduce_scatter(x, s, group), qcoll.CommunicationError, f"rank {last}", bound,
                 f"{path}: shapes differ")
    mode = "mx-e4m3" if me == last else "kg-int8"
    expect_error(lambda: qt.all_reduce(floats(me, (2 * n, H)), group, mode=mode), qcoll.CommunicationError,
                 f"rank {last}", bound, f"{path}: modes differ")
    # A rule broken on one rank only (H not a multiple of 128): that rank PARAM_INVALID, the others fail at once.
    h = H + 64 if me == last else H
    cls = qcoll.InvalidParameterError if me == last else qcoll.CommunicationError
    expect_error(lambda: qt.all_reduce(floats(me, (2 * n, h)), group), cls, "", bound, f"{path}: bad H on one rank")
    # A Python-side error on one rank (unknown mode): the same.
    mode = "kg-int4" if me == last else "kg-int8"
    expect_error(lambda: qt.all_reduce(floats(me, (2 * n, H)), group, mode=mode), cls,
                 "mode" if me == last else "", bound, f"{path}: unknown mode on one rank")
    # The group still works after errors that every rank saw in time.
    got = qt.all_reduce(torch.ones(2 * n, H), group, output_dtype=torch.float32)
    assert torch.allclose(got, torch.full((2 * n, H), float(n)), rtol=1e-6), got
    ok(f"{path}: ranks that disagree (shape, mode, H, unknown mode) all fail in < {bound:.0f} s; group usable after")


def check_missing_rank(path: str) -> None:
    """The last rank never calls: the others fail within QCOLL_TIMEOUT_S, and the group is
    broken for them afterwards (a clear error, at once)."""
    n = dist.get_world_size()
    me = dist.get_rank()
    os.environ["QCOLL_TRANSPORT"] = path
    g = dist.new_group(list(range(n)))
    qt.transport(g)  # the communicator, made by every rank
    os.environ["QCOLL_TIMEOUT_S"] = "2"
    try:
        if me != n - 1:
            expect_error(lambda: qt.all_reduce(floats(me, (2 * n, H)), g), qcoll.CommunicationError, "", 15.0,
                         f"{path}: missing rank")
            # Another timeout would now take 60 s: an error well before it came at once.
            os.environ["QCOLL_TIMEOUT_S"] = "60"
            expect_error(lambda: qt.all_reduce(floats(me, (2 * n, H)), g), qcoll.CommunicationError, "", 15.0,
                         f"{path}: broken group")
    finally:
        os.environ["QCOLL_TIMEOUT_S"] = "60"
    ok(f"{path}: a missing rank -> CommunicationError within QCOLL_TIMEOUT_S = 2 s, then at once")


def check_buckets(seen, mode: str, n: int, me: int) -> None:
    """seen: each bucket's input and the hook's result, in turn."""
    xd, sd = qt.MODES[mode]
    quantize = (lambda v: qcoll.quantize_mx(v, xd)) if sd == "float8_e8m0" else (lambda v: qcoll.quantize_kg(v, xd))
    for b in range(0, len(seen), 2):
        mine, got = seen[b], seen[b + 1]
        every, padded, want = bucket_average(mine, quantize, xd, sd, n, me)
        numel = mine.numel()
        same_bits(got, want, f"ddp hook {mode} bucket {b // 2}")
        ref = torch.stack(every).mean(0)
        qerr = sum((qcoll.dequantize(*quantize(p)).reshape(-1)[:numel] - p.reshape(-1)[:numel]).abs()
                   for p in padded) / n
        err = (got - ref).abs()
        slack = 1e-6 * torch.stack(every).abs().mean(0)  # fp32 rounding of the two sums
        assert torch.all(err <= qerr + slack), (mode, float((err - qerr - slack).max()))
        assert float(err.max()) > 0, "a quantized average equal to the fp32 one: quantization did not happen"


def bucket_average(mine: torch.Tensor, quantize, xd: str, sd: str, n: int, me: int):
    """(every rank's bucket, each padded to the hook's (rows, 1024), and the average of their
    quantized rows on the thread transport: the bits the hook must give)."""
    every = [torch.empty_like(mine) for _ in range(n)]
    dist.all_gather(every, mine)
    numel = mine.numel()
    rows = qt._padded_rows(numel, n)
    padded = []
    for t in every:
        p = torch.zeros(rows * 1024)
        p[:numel] = t
        padded.append(p.view(rows, 1024))
    want = qcoll.run_ranks(n, lambda k, tg: qcoll.quant_all_reduce(*quantize(padded[k]), tg, output_dtype=torch.float32,
                                                                    x_dtype=xd, scales_dtype=sd))[me]
    return every, padded, want.reshape(-1)[:numel] / n


def spied_ddp(state):
    """(a small DDP model with the quantized hook of ``state``, the list the hook fills with
    each bucket's input and result, in turn)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 300), torch.nn.ReLU(), torch.nn.Linear(300, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.05)
    seen = []

    def hook(st, bucket):
        seen.append(bucket.buffer().clone())
        return qt.quant_allreduce_hook(st, bucket).then(lambda f: seen.append(f.value().clone()) or f.value())

    ddp.register_comm_hook(state, hook)
    return ddp, seen


def check_ddp_hook() -> None:
    """The DDP hook: each bucket's result equals the average of the ranks' quantized buckets
    (bit for bit: the thread transport on the gathered buckets) and is within the
    quantization error of the fp32 average."""
    n = dist.get_world_size()
    me = dist.get_rank()
    for mode in ("kg-int8", "mx-e4m3"):
        ddp, seen = spied_ddp(qt.QuantHookState(mode=mode, output_dtype=torch.float32))
        for step in range(2):  # the second after DDP rebuilt its buckets
            seen.clear()
            g = torch.Generator().manual_seed(10 + me + 100 * step)
            ddp.zero_grad()
            ddp(torch.randn(32, 64, generator=g)).square().mean().backward()
            assert len(seen) >= 2 and len(seen) % 2 == 0, len(seen)
            check_buckets(seen, mode, n, me)
            for p in ddp.parameters():
                assert p.grad is not None and torch.isfinite(p.grad).all()
        # Registered as it is (DDP checks the hook's signature), the same gradients.
        want = [p.grad.clone() for p in ddp.parameters()]
        torch.manual_seed(0)
        plain = torch.nn.parallel.DistributedDataParallel(
            torch.nn.Sequential(torch.nn.Linear(64, 300), torch.nn.ReLU(), torch.nn.Linear(300, 10)), bucket_cap_mb=0.05)
        plain.register_comm_hook(qt.QuantHookState(mode=mode, output_dtype=torch.float32), qt.quant_allreduce_hook)
        for step in range(2):
            g = torch.Generator().manual_seed(10 + me + 100 * step)
            plain.zero_grad()
            plain(torch.randn(32, 64, generator=g)).square().mean().backward()
        for p, w in zip(plain.parameters(), want):
            same_bits(p.grad, w, f"ddp hook {mode} registered directly")
    ok("ddp hook: kg-int8 and mx-e4m3, 2 steps: buckets bit-identical to the quantized average, within the "
       "quantization error of the fp32 average")


def check_release_settles(group, path: str) -> None:
    """release() returns only once torch let go of the tensors of qcoll's own calls on the
    group (a gloo worker thread drops them a moment after a call completed; a script that
    exits right after must not have that moment fall into the interpreter's finalization,
    where it aborts the process): 5 rounds of a new communicator, a call and release()."""
    for i in range(5):
        os.environ["QCOLL_TRANSPORT"] = path
        assert qt.transport(group) == path, qt.transport(group)
        os.environ.pop("QCOLL_TRANSPORT")
        qt.all_reduce(floats(i, (2 * dist.get_world_size(), 1024)), group, mode="kg-int8")
        qt.release(group)
        left = sum(r() is not None for r in qt._held)
        assert left == 0, f"{path}: {left} tensors of qcoll's calls still held by torch after release() (round {i})"
    ok(f"release() on {path}: torch let go of the tensors of qcoll's calls, 5 rounds")


def both_paths() -> list:
    """[(group, path)]: the group path, forced, on a group of its own; then the default path
    (shm on one host when qcoll has the bootstrap) on the world group (None)."""
    n = dist.get_world_size()
    os.environ["QCOLL_TRANSPORT"] = "torch"
    tg = dist.new_group(list(range(n)))
    assert qt.transport(tg) == "torch"
    os.environ.pop("QCOLL_TRANSPORT")
    want_world = "shm" if qt._has_shm_bootstrap() else "torch"
    assert qt.transport() == want_world, qt.transport()
    return [(tg, "torch"), (None, want_world)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer modes (for mpirun)")
    ap.add_argument("--init-file", help="rendezvous through this file (a FileStore) instead of MASTER_PORT")
    args = ap.parse_args()
    if args.init_file:
        qt.init_process_group("gloo", init_method=f"file://{args.init_file}")
    else:
        qt.init_process_group("gloo")
    paths = []
    for group, path in both_paths():
        if path in paths:
            continue
        paths.append(path)
        check_bits(group, path, args.quick)
        check_out(group, path)
        if not args.quick:
            check_errors(group, path)
        check_release_settles(group, path)
    if not args.quick:
        check_ddp_hook()
        # Last: these leave their group broken.
        for path in paths:
            check_missing_rank(path)
    dist.barrier()
    print(f"rank {dist.get_rank()}: all {len(checks)} checks ok on {','.join(paths)}", flush=True)
    sys.stdout.flush()
    os._exit(0)  # the groups of check_missing_rank have pending collectives: no teardown


if __name__ == "__main__":
    main()
