"""out=: caller-owned outputs of the four operators (docs/python.md §out), on thread groups
and on shared-memory communicators (qcoll.init_comm, ranks as threads of this process):
the bits of a new output, the all-reduce in place, every refusal (status code, message
naming the parameter, the value and the rule), and out untouched by a failing call. And the
workspace pool the operators keep per group (reused across calls, released with the group)."""

import threading

import ml_dtypes
import numpy as np
import pytest

import qcoll
from qcoll import _core

H = 1024
SENTINEL = 0x5A5A


def floats(r, rows, dtype=np.float32, seed=0):
    x = np.random.default_rng(100 * seed + r).standard_normal((rows, H), dtype=np.float32) * (1 + r)
    return x.astype(dtype)


def quantized(r, rows):
    return qcoll.quantize_kg(floats(r, rows), "int8")


def shm_ranks(n, fn):
    """fn(rank, comm) on n threads, each joined to one shared-memory communicator (a fresh
    name); the results in rank order (re-raises the lowest failing rank's exception)."""
    uid = qcoll.UniqueId()
    name = f"py-out-shm-{uid.hex()[64:72]}"
    results, errors = [None] * n, [None] * n

    def body(r):
        try:
            with qcoll.init_comm(name, n, uid, r) as g:
                results[r] = fn(r, g)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors[r] = e

    ts = [threading.Thread(target=body, args=(r,)) for r in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for e in errors:
        if e is not None:
            raise e
    return results


RUNNERS = {"threads": qcoll.run_ranks, "shm": shm_ranks}


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def out_like(shape, dtype):
    o = np.empty(shape, dtype)
    bits(o)[...] = SENTINEL if o.dtype.itemsize == 2 else 0x5A5A5A5A
    return o


def untouched(o):
    return bool(np.all(bits(o) == (SENTINEL if o.dtype.itemsize == 2 else 0x5A5A5A5A)))


def call(op, r, g, rows, **kw):
    """One call of `op` ("rs", "ar": fused; "qrs", "qar": quantized) on rank r's inputs."""
    if op in ("rs", "ar"):
        fn = qcoll.reduce_scatter if op == "rs" else qcoll.all_reduce
        return fn(floats(r, rows, ml_dtypes.bfloat16), g, mode="kg-int8", **kw)
    fn = qcoll.quant_reduce_scatter if op == "qrs" else qcoll.quant_all_reduce
    return fn(*quantized(r, rows), g, **kw)


@pytest.mark.parametrize("transport", RUNNERS)
@pytest.mark.parametrize("op", ["rs", "ar", "qrs", "qar"])
@pytest.mark.parametrize("out_dtype", [np.float32, ml_dtypes.bfloat16])
def test_out_has_the_bits_of_a_new_output(transport, op, out_dtype):
    n, rows = 2, 8

    def fn(r, g):
        want = call(op, r, g, rows, output_dtype=out_dtype)
        o = out_like(want.shape, out_dtype)
        got = call(op, r, g, rows, out=o)  # out's dtype is the output dtype
        assert got is o
        got2 = call(op, r, g, rows, out=o, output_dtype=out_dtype)  # both given, the same
        assert got2 is o
        return want, o

    for want, o in RUNNERS[transport](n, fn):
        assert o.dtype == want.dtype and o.shape == want.shape
        assert np.array_equal(bits(o), bits(want))


@pytest.mark.parametrize("transport", RUNNERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_all_reduce_in_place(transport, dtype):
    # 4100 rows per rank: more than one chunk of the fused operator's pipeline per rank.
    n, rows = 2, 2 * 4100

    def fn(r, g):
        x = floats(r, rows, dtype, seed=3)
        want = qcoll.all_reduce(x, g, output_dtype=dtype)
        got = qcoll.all_reduce(x, g, out=x)
        assert got is x
        return want, x

    for want, x in RUNNERS[transport](n, fn):
        assert np.array_equal(bits(x), bits(want))
        assert np.isfinite(np.asarray(want, np.float32)).all() and np.asarray(want, np.float32).any()


def refusal_cases():
    """(name, op, make(r) -> kwargs with out=..., message part) for n = 2, 8 rows per rank."""
    bf = ml_dtypes.bfloat16

    def x_of(r):
        return floats(r, 8, bf)

    def overlap_rs(r):
        base = floats(r, 8 + 4, bf)
        return {"x": base[:8], "out": base[7:11]}

    def overlap_ar(r):
        base = floats(r, 9, bf)
        return {"x": base[:8], "out": base[1:9]}

    def other_dtype_in_place(r):
        x = floats(r, 8, np.float16)
        return {"x": x, "out": x.view(bf)}

    def read_only(r):
        o = out_like((4, H), bf)
        o.flags.writeable = False
        return {"x": x_of(r), "out": o}

    def strided(r):
        o = out_like((4, 2 * H), bf)[:, ::2]
        return {"x": x_of(r), "out": o}

    def scales_overlap(r):
        q, s = quantized(r, 8)
        big = np.zeros(4 * H, np.float32)
        big[: s.size] = s.ravel()
        return {"x": q, "scales": big[: s.size].reshape(s.shape), "out": big.reshape(4, H)}

    return [
        ("shape", "rs", lambda r: {"x": x_of(r), "out": out_like((8, H), bf)}, "out: shape must be (BS/n, H) = (4, 1024)"),
        ("shape ar", "ar", lambda r: {"x": x_of(r), "out": out_like((4, H), bf)}, "out: shape must be the input's shape"),
        ("dtype", "rs", lambda r: {"x": x_of(r), "out": np.zeros((4, H), np.int8)}, "out: dtype must be float, float16 or bfloat16, got int8"),
        ("raw codes", "rs", lambda r: {"x": x_of(r), "out": np.zeros((4, H), np.uint16)}, "got raw uint16 codes"),
        ("float64", "rs", lambda r: {"x": x_of(r), "out": np.zeros((4, H), np.float64)}, "out: numpy dtype float64"),
        ("output_dtype", "rs", lambda r: {"x": x_of(r), "out": out_like((4, H), bf), "output_dtype": "float"},
         "out: dtype is bfloat16, but output_dtype=float was given"),
        ("contiguous", "rs", strided, "out: must be contiguous"),
        ("read-only", "rs", read_only, "out: must be writeable"),
        ("not an array", "rs", lambda r: {"x": x_of(r), "out": [[0.0] * H] * 4}, "out: must be a numpy array or a torch"),
        ("overlap rs", "rs", overlap_rs, "out: overlaps x (the output must not overlap the inputs)"),
        ("partial overlap ar", "ar", overlap_ar, "out: overlaps x without being x itself"),
        ("in place, other dtype", "ar", other_dtype_in_place, "out: overlaps x without being x itself"),
        ("overlap scales", "qrs", scales_overlap, "out: overlaps scales"),
        ("quantized in place", "qar", lambda r: (lambda q, s: {"x": q, "scales": s, "out": q})(*quantized(r, 8)),
         "out: dtype must be float, float16 or bfloat16, got int8"),
    ]


def run_case(op, kw, g):
    kw = dict(kw)
    x = kw.pop("x")
    if op in ("rs", "ar"):
        fn = qcoll.reduce_scatter if op == "rs" else qcoll.all_reduce
        return fn(x, g, **kw)
    fn = qcoll.quant_reduce_scatter if op == "qrs" else qcoll.quant_all_reduce
    return fn(x, kw.pop("scales"), g, **kw)


@pytest.mark.parametrize("transport", RUNNERS)
@pytest.mark.parametrize("name,op,make,message", refusal_cases(), ids=[c[0] for c in refusal_cases()])
def test_refusals_name_the_rule_and_write_nothing(transport, name, op, make, message):
    def fn(r, g):
        kw = make(r)
        out = kw.get("out")
        before = None if out is None or not isinstance(out, np.ndarray) else out.copy()
        x_before = np.asarray(kw["x"]).copy()
        with pytest.raises(qcoll.InvalidParameterError) as e:
            run_case(op, kw, g)
        assert e.value.status == 161002  # PARAM_INVALID
        assert message in str(e.value), str(e.value)
        if before is not None:
            assert np.array_equal(bits(before), bits(out)), "out was written by a refused call"
        assert np.array_equal(bits(x_before), bits(kw["x"]))
        # The group is still usable: every rank refused the same call.
        return np.asarray(qcoll.all_reduce(floats(r, 8), g, output_dtype="float"))

    res = RUNNERS[transport](2, fn)
    assert np.array_equal(res[0], res[1])


def test_torch_numpy_mismatch():
    torch = pytest.importorskip("torch")

    def fn(r, g):
        x = floats(r, 8)
        with pytest.raises(qcoll.InvalidParameterError, match=r"out: must be a numpy array \(the input is one\), got torch"):
            qcoll.all_reduce(x, g, out=torch.zeros(8, H))
        with pytest.raises(qcoll.InvalidParameterError, match=r"out: must be a torch.Tensor \(the input is one\)"):
            qcoll.all_reduce(torch.from_numpy(x), g, out=np.zeros((8, H), np.float32))
        t = torch.from_numpy(x.copy())
        got = qcoll.all_reduce(t, g, out=t)  # in place on a torch tensor
        assert got is t
        want = qcoll.all_reduce(x, g, output_dtype="float")
        return np.array_equal(t.numpy().view(np.uint32), want.view(np.uint32))

    assert qcoll.run_ranks(2, fn) == [True, True]


@pytest.mark.parametrize("transport", RUNNERS)
@pytest.mark.parametrize("op", ["rs", "ar", "qrs", "qar"])
def test_failed_call_leaves_out_untouched(transport, op):
    """Ranks that disagree on the call (rank 1 has twice the rows): every rank fails in the
    agreement, before anything is written."""

    def fn(r, g):
        rows = 8 if r == 0 else 16
        shape = ((rows // 2) if op in ("rs", "qrs") else rows, H)
        o = out_like(shape, ml_dtypes.bfloat16)
        with pytest.raises(qcoll.CommunicationError, match="disagree"):
            call(op, r, g, rows, out=o)
        assert untouched(o)
        x = floats(r, 8)
        with pytest.raises(qcoll.CommunicationError):  # in place, the ranks disagree on the mode
            qcoll.all_reduce(x, g, mode="kg-int8" if r == 0 else "mx-e4m3", out=x)
        assert np.array_equal(x, floats(r, 8))
        return True

    assert RUNNERS[transport](2, fn) == [True, True]


def test_stream_with_out():
    def fn(r, g):
        x = floats(r, 8)
        o = out_like((4, H), np.float32)
        with qcoll.Stream() as st:
            w = qcoll.reduce_scatter(x, g, out=o, stream=st)
            got = w.wait()
        assert got is o
        return np.array_equal(o, qcoll.reduce_scatter(x, g, output_dtype="float"))

    assert shm_ranks(2, fn) == [True, True]


def test_workspace_is_kept_per_group_and_released_with_it():
    """On shm the reduce-scatter stages its result in a workspace (contract.md §staging): one
    buffer per rank, kept for the next calls of the group, released with the group."""
    seen = {}
    both = threading.Barrier(2)

    def fn(r, g):
        x = floats(r, 64)
        for _ in range(5):
            qcoll.reduce_scatter(x, g, output_dtype="float")
        seen[r] = g.name
        both.wait()  # neither rank has given its buffer back to the pool late, nor destroyed the group
        idle = _core.idle_workspaces(g.name)
        both.wait()
        return idle

    res = shm_ranks(2, fn)
    # Both ranks (threads of this process) use one pool: at most one buffer each, 32 x 1024
    # float32 = 131072 bytes, whatever the number of calls.
    count, total = _core.idle_workspaces(seen[0])
    assert count == 0 and total == 0, "the pool outlived its group"
    assert res[0] == res[1]
    count, total = res[0]
    assert 1 <= count <= 2 and total == count * 32 * H * 4, res


def test_thread_groups_need_no_workspace():
    def fn(r, g):
        qcoll.reduce_scatter(floats(r, 8), g)
        return _core.idle_workspaces(g.name)

    assert qcoll.run_ranks(2, fn) == [(0, 0), (0, 0)]
