"""The fused operators qcoll.reduce_scatter / qcoll.all_reduce (contract.md §fused): the bits of
quantize_kg / quantize_mx followed by quant_reduce_scatter / quant_all_reduce, for every mode x
input dtype x output dtype, n in {2, 4}, 2-D and 3-D; the mode table; errors."""

import zlib

import ml_dtypes
import numpy as np
import pytest

import qcoll

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

MODES = ["kg-int8", "kg-hif8", "kg-e4m3", "kg-e5m2", "mx-e4m3", "mx-e5m2"]
MODE_DTYPES = {"kg-int8": ("int8", "float"), "kg-hif8": ("hifloat8", "float"), "kg-e4m3": ("float8_e4m3fn", "float"),
               "kg-e5m2": ("float8_e5m2", "float"), "mx-e4m3": ("float8_e4m3fn", "float8_e8m0"),
               "mx-e5m2": ("float8_e5m2", "float8_e8m0")}
INPUTS = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def make_input(rng, shape, in_dtype):
    """Values over many binades, with zero groups, NaN and +-Inf."""
    v = rng.standard_normal(shape).astype(np.float32) * np.float32(2.0) ** rng.integers(-8, 9, shape)
    flat = v.reshape(-1)
    flat[:128] = 0.0                      # a zero group
    flat[200] = np.nan
    flat[300] = np.inf
    flat[301] = -np.inf
    return v.astype(INPUTS[in_dtype])


def quantize_then_operate(x, g, mode, output_dtype, op):
    x_dtype, scales_dtype = MODE_DTYPES[mode]
    if scales_dtype == "float":
        q, s = qcoll.quantize_kg(x, x_dtype)
    else:
        q, s = qcoll.quantize_mx(x, x_dtype)
    fn = qcoll.quant_reduce_scatter if op == "rs" else qcoll.quant_all_reduce
    return fn(q, s, g, output_dtype=output_dtype, x_dtype=x_dtype, scales_dtype=scales_dtype)


def bits(a):
    a = np.asarray(a)
    return a.view(np.uint32) if a.dtype.itemsize == 4 else a.view(np.uint16)


CASES = [(op, n, mode, ind, od, nd) for op in ("rs", "ar") for n in (2, 4) for mode in MODES
         for ind in INPUTS for od in ("float", "float16", "bfloat16") for nd in (2, 3)]


@pytest.mark.parametrize("op,n,mode,in_dtype,out_dtype,ndim", CASES)
def test_fused_equals_quantize_then_operate(op, n, mode, in_dtype, out_dtype, ndim):
    seed = zlib.crc32(repr((op, n, mode, in_dtype, out_dtype, ndim)).encode())
    shape = (2 * n, 1024) if ndim == 2 else (2, n, 1024)
    xs = [make_input(np.random.default_rng(seed + r), shape, in_dtype) for r in range(n)]
    fused = qcoll.reduce_scatter if op == "rs" else qcoll.all_reduce

    def work(r, g):
        a = fused(xs[r], g, mode=mode, output_dtype=out_dtype)
        b = quantize_then_operate(xs[r], g, mode, out_dtype, op)
        return a, b

    for r, (a, b) in enumerate(qcoll.run_ranks(n, work)):
        want_shape = (shape[0] * (1 if ndim == 2 else shape[1]) // n, 1024) if op == "rs" else shape
        assert a.shape == want_shape
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(bits(a), bits(b), err_msg=f"rank {r}")


def test_hif8_target_reaches_the_quantizer():
    x = [make_input(np.random.default_rng(r), (4, 1024), "float32") for r in range(2)]

    def work(r, g):
        out = {}
        for t in (0.0, 4.0):
            a = qcoll.reduce_scatter(x[r], g, mode="kg-hif8", output_dtype="float", hif8_target=t)
            q, s = qcoll.quantize_kg(x[r], "hifloat8", hif8_target=t if t else None)
            b = qcoll.quant_reduce_scatter(q, s, g, output_dtype="float", x_dtype="hifloat8")
            out[t] = (a, b)
        return out

    for res in qcoll.run_ranks(2, work):
        for a, b in res.values():
            np.testing.assert_array_equal(bits(a), bits(b))
        assert not np.array_equal(bits(res[0.0][0]), bits(res[4.0][0]))  # the target changes the bits


def test_torch_input_gives_a_torch_result():
    torch = pytest.importorskip("torch", exc_type=ModuleNotFoundError)
    xs = [torch.randn(4, 1024, dtype=torch.bfloat16) for _ in range(2)]
    res = qcoll.run_ranks(2, lambda r, g: qcoll.all_reduce(xs[r], g, mode="mx-e4m3"))
    assert isinstance(res[0], torch.Tensor) and res[0].dtype == torch.bfloat16 and res[0].shape == (4, 1024)
    assert torch.equal(res[0].view(torch.int16), res[1].view(torch.int16))


def test_errors():
    x = np.zeros((4, 1024), np.float32)

    def bad_mode(r, g):
        with pytest.raises(qcoll.InvalidParameterError, match=r"mode: must be kg-int8, .* or mx-e5m2, got 'mx-int8'"):
            qcoll.reduce_scatter(x, g, mode="mx-int8")
        return True

    assert all(qcoll.run_ranks(2, bad_mode))

    def bad_input(r, g):
        with pytest.raises(qcoll.InvalidParameterError, match=r"\] x: dtype must be float, float16 or bfloat16, got int8"):
            qcoll.reduce_scatter(np.zeros((4, 1024), np.int8), g)
        with pytest.raises(qcoll.InvalidParameterError, match=r"\] x: H must be a multiple of 128"):
            qcoll.all_reduce(np.zeros((4, 1000), np.float32), g)
        with pytest.raises(qcoll.InvalidParameterError, match=r"x: must hold float32, float16 or bfloat16"):
            qcoll.all_reduce(np.zeros((4, 1024), np.uint16), g)
        return True

    assert all(qcoll.run_ranks(2, bad_input))

    # One rank calls the fused operator, the other the quantized one: both fail, nothing hangs.
    def mixed(r, g):
        try:
            if r == 0:
                qcoll.reduce_scatter(x, g, mode="kg-e4m3")
            else:
                q, s = qcoll.quantize_kg(x, "float8_e4m3fn")
                qcoll.quant_reduce_scatter(q, s, g)
        except qcoll.CommunicationError as e:
            return str(e)
        return ""

    for msg in qcoll.run_ranks(2, mixed):
        assert "disagree" in msg and "QuantizeReduceScatter" in msg
