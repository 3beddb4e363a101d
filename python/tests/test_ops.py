"""The operators over thread groups against a numpy reference (contract.md §numerics), bit for bit:
every x dtype x scales mode x output dtype, n in {2, 4, 8}, 2-D and 3-D x."""

import zlib

import numpy as np
import pytest

import qcoll
from reference import BF16, E4M3, E5M2, E8M0, cast_output, reduce_rows

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # reference: fp16 overflow, Inf - Inf

H = 1024
MODES = [("int8", "float"), ("hifloat8", "float"), ("float8_e4m3fn", "float"),
         ("float8_e5m2", "float"), ("float8_e4m3fn", "float8_e8m0"), ("float8_e5m2", "float8_e8m0")]
NAN_CODES = {"int8": [], "hifloat8": [0x80], "float8_e4m3fn": [0x7F, 0xFF],
             "float8_e5m2": [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF]}
TYPED = {"int8": np.int8, "float8_e4m3fn": E4M3, "float8_e5m2": E5M2}


def random_inputs(rng, x_dtype, scales_dtype, shape):
    """x: random codes over the whole format (NaN codes excluded, Inf kept), as the typed
    array (HiF8: uint8); scales: fp32 of random sign-free magnitudes 2^-20..2^20 (KG) or
    E8M0 exponents 2^-30..2^30 (MX), in the operators' layouts."""
    codes = rng.integers(0, 256, size=shape, dtype=np.uint8)
    bad = np.isin(codes, NAN_CODES[x_dtype])
    codes[bad] = 0x01
    x = codes if x_dtype == "hifloat8" else codes.view(TYPED[x_dtype])
    lead = shape[:-1]
    if scales_dtype == "float":
        s = (rng.random(lead + (shape[-1] // 128,)) * 2.0 ** rng.integers(-20, 21, lead + (shape[-1] // 128,)))
        s = s.astype(np.float32)
    else:
        s = rng.integers(127 - 30, 127 + 31, size=lead + (shape[-1] // 64, 2), dtype=np.uint8).view(E8M0)
    return x, s


def expected(xs, ss, x_dtype, scales_dtype, out_dtype, rank, n, op):
    rows = int(np.prod(np.asarray(xs[0]).shape[:-1]))
    block = slice(rank * rows // n, (rank + 1) * rows // n) if op == "rs" else slice(0, rows)
    acc = reduce_rows(xs, ss, x_dtype, scales_dtype, block, H)
    return cast_output(acc, out_dtype)


def as_float(raw, out_dtype):
    """Reference output bits as float32 values."""
    view = {"float": np.float32, "float16": np.float16, "bfloat16": BF16}[out_dtype]
    return raw.view(view).astype(np.float32)


def bits(a):
    a = np.asarray(a)
    return a.view(np.uint32) if a.dtype.itemsize == 4 else a.view(np.uint16)


CASES = [(op, n, xd, sd, od) for op in ("rs", "ar") for n in (2, 4, 8) for (xd, sd) in MODES
         for od in ("float", "float16", "bfloat16")]


@pytest.mark.parametrize("op,n,x_dtype,scales_dtype,out_dtype", CASES)
def test_operator_matches_numpy_reference(op, n, x_dtype, scales_dtype, out_dtype):
    rng = np.random.default_rng(zlib.crc32(f"{op}{n}{x_dtype}{scales_dtype}{out_dtype}".encode()))
    shape = (2, n, H) if n == 4 else (2 * n, H)  # 3-D x for n = 4
    inputs = [random_inputs(rng, x_dtype, scales_dtype, shape) for _ in range(n)]
    xs, ss = [i[0] for i in inputs], [i[1] for i in inputs]
    fn = qcoll.quant_reduce_scatter if op == "rs" else qcoll.quant_all_reduce
    kw = {"x_dtype": "hifloat8"} if x_dtype == "hifloat8" else {}

    def rank_fn(r, group):
        return fn(xs[r], ss[r], group, output_dtype=out_dtype, **kw)

    outs = qcoll.run_ranks(n, rank_fn)
    rows = 2 * n
    for r, out in enumerate(outs):
        want_shape = (rows // n, H) if op == "rs" else shape
        assert out.shape == want_shape
        assert out.dtype == qcoll._dtypes.numpy_dtype(qcoll.to_dtype(out_dtype))
        want = expected(xs, ss, x_dtype, scales_dtype, out_dtype, r, n, op).reshape(want_shape)
        got = bits(out)
        nan = np.isnan(np.asarray(out).astype(np.float32))
        np.testing.assert_array_equal(nan, np.isnan(as_float(want, out_dtype)))  # Inf - Inf
        np.testing.assert_array_equal(got[~nan], want[~nan])


def test_default_output_dtype_is_bfloat16_and_group_object_accepted():
    rng = np.random.default_rng(7)
    xs = [random_inputs(rng, "float8_e4m3fn", "float8_e8m0", (4, H)) for _ in range(2)]
    outs = qcoll.run_ranks(2, lambda r, g: qcoll.quant_all_reduce(xs[r][0], xs[r][1], g))
    assert outs[0].dtype.name == "bfloat16"
    np.testing.assert_array_equal(bits(outs[0]), bits(outs[1]))  # every replica identical
    want = expected([x for x, _ in xs], [s for _, s in xs], "float8_e4m3fn", "float8_e8m0", "bfloat16", 0, 2, "ar")
    np.testing.assert_array_equal(bits(outs[0]), want)


def test_thread_group_context_and_explicit_join():
    import threading

    rng = np.random.default_rng(8)
    xs = [random_inputs(rng, "int8", "float", (2, H)) for _ in range(2)]
    out = [None, None]
    with qcoll.ThreadGroup("py-explicit", 2) as g:
        def work(r):
            g.join(r)
            try:
                out[r] = qcoll.quant_reduce_scatter(xs[r][0], xs[r][1], "py-explicit", output_dtype="float")
            finally:
                g.leave()
        ts = [threading.Thread(target=work, args=(r,)) for r in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    for r in range(2):
        want = expected([x for x, _ in xs], [s for _, s in xs], "int8", "float", "float", r, 2, "rs")
        np.testing.assert_array_equal(bits(out[r]), want)
