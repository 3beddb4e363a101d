"""The 4-bit x formats of the extended contract (contract.md §ext-fp4) in the Python package:
the quantizers, dequantize, decode / encode, the operators (pre-quantized and fused) on thread
groups, n beyond 8, ml_dtypes / torch FP4 arrays, and the vendor contract's refusals. Bit for
bit against tests/reference.py (the value lists, never qcoll's code)."""

import zlib

import ml_dtypes
import numpy as np
import pytest

import qcoll
from reference import (BF16, cast_output, fp4_encode, fp4_pack, fp4_unpack, fp4_values, quantize_kg_fp4,
                       quantize_mx_fp4, reduce_rows)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # reference: fp16 overflow

H = 1024
FP4 = ["float4_e2m1", "float4_e1m2"]
SCALES = ["float", "float8_e8m0"]
MODE = {("float4_e2m1", "float"): "kg-e2m1", ("float4_e1m2", "float"): "kg-e1m2",
        ("float4_e2m1", "float8_e8m0"): "mx-e2m1", ("float4_e1m2", "float8_e8m0"): "mx-e1m2"}


@pytest.fixture(autouse=True)
def _extended():
    qcoll.set_contract("extended")
    yield
    qcoll.set_contract(None)


def bits(a):
    a = np.asarray(a)
    return a.view({4: np.uint32, 2: np.uint16, 1: np.uint8}[a.dtype.itemsize])


def rng_for(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def random_packed(rng, shape, scales_dtype):
    """Packed x (every byte is two valid codes) and scales in the operators' layouts."""
    lead, h = tuple(shape[:-1]), shape[-1]
    x = rng.integers(0, 256, size=lead + (h // 2,), dtype=np.uint8)
    if scales_dtype == "float":
        s = (rng.random(lead + (h // 128,)) * 2.0 ** rng.integers(-20, 21, lead + (h // 128,))).astype(np.float32)
    else:
        s = rng.integers(127 - 30, 127 + 31, size=lead + (h // 64, 2), dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu)
    return x, s


# ---- formats -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FP4)
def test_decode_every_code_pair(dtype):
    packed = np.arange(256, dtype=np.uint8).reshape(4, 64)
    got = qcoll.decode(packed, dtype)
    assert got.shape == (4, 128) and got.dtype == np.float32
    np.testing.assert_array_equal(bits(got), bits(fp4_values(dtype)[fp4_unpack(packed)]))


@pytest.mark.parametrize("dtype,alias", [("float4_e2m1", "float4_e2m1fn"), ("float4_e2m1", "e2m1"),
                                         ("float4_e1m2", "e1m2")])
def test_aliases_name_the_formats(dtype, alias):
    assert qcoll.to_dtype(alias) == qcoll.to_dtype(dtype)
    assert qcoll.to_dtype(dtype).value == {"float4_e2m1": 40, "float4_e1m2": 41}[dtype]


def test_encode_test_vectors_of_the_contract():
    e2m1 = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 5.5, 1e9, -np.inf, -0.0, -0.1, np.nan, 6], np.float32)
    want = [0x0, 0x2, 0x2, 0x4, 0x4, 0x6, 0x6, 0x7, 0x7, 0xF, 0x8, 0x8, 0x0, 0x7]
    got = fp4_unpack(qcoll.encode(e2m1, "float4_e2m1"))
    assert got.tolist() == want
    e1m2 = np.array([0.125, 0.375, 0.875, 1.125, 1.625, 1.8125, -100, 0], np.float32)
    assert fp4_unpack(qcoll.encode(e1m2, "e1m2")).tolist() == [0x0, 0x2, 0x4, 0x4, 0x6, 0x7, 0xF, 0x0]


@pytest.mark.parametrize("dtype", FP4)
def test_encode_matches_reference_and_ml_dtypes(dtype):
    v = (rng_for(dtype).standard_normal((16, 256)) * 3).astype(np.float32)
    got = qcoll.encode(v, dtype)
    assert got.shape == (16, 128) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, fp4_pack(fp4_encode(v, dtype)))
    if dtype == "float4_e2m1":
        np.testing.assert_array_equal(got, fp4_pack(v.astype(ml_dtypes.float4_e2m1fn).view(np.uint8)))
    with pytest.raises(qcoll.InvalidParameterError, match="must be even"):
        qcoll.encode(v[:, :3], dtype)


def test_ml_dtypes_and_torch_fp4_arrays_decode():
    v = np.array([[0.5, -6, 3, 0], [1.5, -0.0, 4, 2]], np.float32)
    a = v.astype(ml_dtypes.float4_e2m1fn)  # one element a byte
    np.testing.assert_array_equal(qcoll.decode(a), v)  # its own shape
    np.testing.assert_array_equal(qcoll.decode(fp4_pack(a.view(np.uint8)), "e2m1"), v)
    torch = pytest.importorskip("torch", exc_type=ModuleNotFoundError)
    t = torch.from_numpy(fp4_pack(a.view(np.uint8))).view(torch.float4_e2m1fn_x2)
    got = qcoll.decode(t)
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == (2, 4)
    np.testing.assert_array_equal(got.numpy(), v)
    with pytest.raises(qcoll.InvalidParameterError, match="holds float4_e2m1"):
        qcoll.decode(a, "float4_e1m2")


# ---- quantizers ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FP4)
@pytest.mark.parametrize("shape", [(6, 256), (2, 3, 512)])
def test_quantize_kg_matches_reference(dtype, shape):
    x = (rng_for("kg", dtype, shape).standard_normal(shape) * 10).astype(np.float32)
    x[0, ..., :128] = 0  # a zero group: scale 0, codes 0
    q, s = qcoll.quantize_kg(x, dtype)
    assert q.dtype == np.uint8 and q.shape == shape[:-1] + (shape[-1] // 2,)
    assert s.dtype == np.float32 and s.shape == shape[:-1] + (shape[-1] // 128,)
    wq, ws = quantize_kg_fp4(x, dtype)
    np.testing.assert_array_equal(q, wq)
    np.testing.assert_array_equal(bits(s), bits(ws))
    d = qcoll.dequantize(q, s, x_dtype=dtype)
    assert d.shape == shape
    want = fp4_values(dtype)[fp4_unpack(wq)] * np.repeat(ws, 128, axis=-1)
    np.testing.assert_array_equal(bits(d), bits(want.astype(np.float32)))


@pytest.mark.parametrize("dtype", FP4)
def test_quantize_mx_matches_reference(dtype):
    shape = (4, 384)
    x = (rng_for("mx", dtype).standard_normal(shape) * 2.0 ** rng_for("e", dtype).integers(-8, 9, shape))
    x = x.astype(np.float32)
    x[1, :32] = 0  # an all-zero block: code 0x00
    q, s = qcoll.quantize_mx(x, dtype)
    assert q.shape == (4, 192) and s.shape == (4, 6, 2) and s.dtype == np.dtype(ml_dtypes.float8_e8m0fnu)
    wq, ws = quantize_mx_fp4(x, dtype)
    np.testing.assert_array_equal(q, wq)
    np.testing.assert_array_equal(s.view(np.uint8), ws)
    d = qcoll.dequantize(q, s, x_dtype=dtype)
    sc = np.repeat(np.ldexp(np.float32(1), ws.reshape(4, -1).astype(np.int32) - 127).astype(np.float32), 32, axis=-1)
    np.testing.assert_array_equal(bits(d), bits((fp4_values(dtype)[fp4_unpack(wq)] * sc).astype(np.float32)))


def test_quantize_from_bf16_and_torch():
    torch = pytest.importorskip("torch", exc_type=ModuleNotFoundError)
    x = (rng_for("bf").standard_normal((4, 256)) * 5).astype(BF16)
    q, s = qcoll.quantize_kg(x, "e2m1")
    wq, ws = quantize_kg_fp4(x.astype(np.float32), "float4_e2m1")
    np.testing.assert_array_equal(q, wq)
    tq, ts = qcoll.quantize_mx(torch.from_numpy(x.astype(np.float32)), "float4_e2m1fn")
    assert tq.dtype == torch.float4_e2m1fn_x2 and tuple(tq.shape) == (4, 128)
    np.testing.assert_array_equal(tq.view(torch.uint8).numpy(), quantize_mx_fp4(x.astype(np.float32),
                                                                                  "float4_e2m1")[0])
    tq2, _ = qcoll.quantize_kg(torch.from_numpy(x.astype(np.float32)), "e1m2")
    assert tq2.dtype == torch.uint8  # torch has no E1M2 type: raw packed bytes
    d = qcoll.dequantize(tq, ts)  # the torch type names x's dtype
    assert tuple(d.shape) == (4, 256)


# ---- operators -----------------------------------------------------------------------------

CASES = [(op, n, xd, sd, od) for op in ("rs", "ar") for n in (2, 4, 8) for xd in FP4 for sd in SCALES
         for od in (("float", "bfloat16") if n != 4 else ("float16",))]


@pytest.mark.parametrize("op,n,x_dtype,scales_dtype,out_dtype", CASES)
def test_operator_matches_reference(op, n, x_dtype, scales_dtype, out_dtype):
    rng = rng_for(op, n, x_dtype, scales_dtype, out_dtype)
    shape = (2, n, H) if n == 4 else (2 * n, H)
    inputs = [random_packed(rng, shape, scales_dtype) for _ in range(n)]
    xs, ss = [i[0] for i in inputs], [i[1] for i in inputs]
    fn = qcoll.quant_reduce_scatter if op == "rs" else qcoll.quant_all_reduce
    outs = qcoll.run_ranks(n, lambda r, g: fn(xs[r], ss[r], g, output_dtype=out_dtype, x_dtype=x_dtype))
    rows = 2 * n
    for r, out in enumerate(outs):
        want_shape = (rows // n, H) if op == "rs" else shape
        assert out.shape == want_shape
        block = slice(r * 2, r * 2 + 2) if op == "rs" else slice(0, rows)
        want = cast_output(reduce_rows(xs, ss, x_dtype, scales_dtype, block, H), out_dtype)
        np.testing.assert_array_equal(bits(out).reshape(-1), want.reshape(-1))


@pytest.mark.parametrize("n", [3, 5, 12])
def test_rank_counts_beyond_vendor(n):
    """Any n in [2, 1024] under extended, with FP4 x; under vendor n = 3 stays refused."""
    rng = rng_for("n", n)
    inputs = [random_packed(rng, (2 * n, H), "float8_e8m0") for _ in range(n)]
    xs, ss = [i[0] for i in inputs], [i[1] for i in inputs]
    for op, fn in (("rs", qcoll.quant_reduce_scatter), ("ar", qcoll.quant_all_reduce)):
        outs = qcoll.run_ranks(n, lambda r, g: fn(xs[r], ss[r], g, output_dtype="float", x_dtype="float4_e1m2"))
        for r, out in enumerate(outs):
            block = slice(2 * r, 2 * r + 2) if op == "rs" else slice(0, 2 * n)
            want = cast_output(reduce_rows(xs, ss, "float4_e1m2", "float8_e8m0", block, H), "float")
            np.testing.assert_array_equal(bits(out).reshape(-1), want.reshape(-1))
    if n == 3:
        qcoll.set_contract("vendor")
        q8 = [qcoll.quantize_kg(np.ones((6, H), np.float32), "int8") for _ in range(n)]
        with pytest.raises(qcoll.InvalidParameterError, match="2, 4 or 8"):
            qcoll.run_ranks(n, lambda r, g: qcoll.quant_all_reduce(*q8[r], g))


def test_typed_fp4_inputs_ml_dtypes_and_torch_give_the_same_bits():
    """x as an ml_dtypes float4_e2m1fn array (one element a byte), a torch float4_e2m1fn_x2
    tensor, and packed uint8 with x_dtype: the same bits."""
    n = 2
    rng = rng_for("typed")
    inputs = [random_packed(rng, (4, H), "float") for _ in range(n)]
    xs, ss = [i[0] for i in inputs], [i[1] for i in inputs]
    want = qcoll.run_ranks(n, lambda r, g: qcoll.quant_all_reduce(xs[r], ss[r], g, x_dtype="float4_e2m1"))
    ml = [fp4_unpack(x).view(ml_dtypes.float4_e2m1fn) for x in xs]
    got = qcoll.run_ranks(n, lambda r, g: qcoll.quant_all_reduce(ml[r], ss[r], g))
    for w, o in zip(want, got):
        np.testing.assert_array_equal(bits(o), bits(w))
    torch = pytest.importorskip("torch", exc_type=ModuleNotFoundError)
    tx = [torch.from_numpy(x).view(torch.float4_e2m1fn_x2) for x in xs]
    ts = [torch.from_numpy(s) for s in ss]
    got = qcoll.run_ranks(n, lambda r, g: qcoll.quant_all_reduce(tx[r], ts[r], g))
    for w, o in zip(want, got):
        assert isinstance(o, torch.Tensor) and tuple(o.shape) == (4, H)
        np.testing.assert_array_equal(o.view(torch.int16).numpy().view(np.uint16), bits(w))
    with pytest.raises(qcoll.InvalidParameterError, match="x_dtype"):
        qcoll.run_ranks(n, lambda r, g: qcoll.quant_all_reduce(xs[r], ss[r], g))  # uint8 needs x_dtype


@pytest.mark.parametrize("mode", ["kg-e2m1", "kg-e1m2", "mx-e2m1", "mx-e1m2"])
@pytest.mark.parametrize("op", ["rs", "ar"])
def test_fused_equals_quantize_then_operate(mode, op):
    n = 4
    xd = "float4_e2m1" if "e2m1" in mode else "float4_e1m2"
    quantize = qcoll.quantize_mx if mode.startswith("mx") else qcoll.quantize_kg
    xs = [(rng_for(mode, op, k).standard_normal((2 * n, H)) * (k + 1)).astype(np.float32) for k in range(n)]
    qs = [quantize(x, xd) for x in xs]
    ref_q = [quantize_mx_fp4(x, xd) if mode.startswith("mx") else quantize_kg_fp4(x, xd) for x in xs]
    for (q, s), (wq, ws) in zip(qs, ref_q):
        np.testing.assert_array_equal(q, wq)
    fused = qcoll.reduce_scatter if op == "rs" else qcoll.all_reduce
    quant = qcoll.quant_reduce_scatter if op == "rs" else qcoll.quant_all_reduce
    got = qcoll.run_ranks(n, lambda r, g: fused(xs[r], g, mode=mode))
    want = qcoll.run_ranks(n, lambda r, g: quant(*qs[r], g, x_dtype=xd, output_dtype="float"))
    sd = "float8_e8m0" if mode.startswith("mx") else "float"
    for r, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == np.float32
        np.testing.assert_array_equal(bits(a), bits(b))
        block = slice(2 * r, 2 * r + 2) if op == "rs" else slice(0, 2 * n)
        ref = cast_output(reduce_rows([q for q, _ in ref_q], [s for _, s in ref_q], xd, sd, block, H), "float")
        np.testing.assert_array_equal(bits(a).reshape(-1), ref.reshape(-1))


# ---- the vendor contract refuses ------------------------------------------------------------

def test_vendor_refuses_fp4():
    qcoll.set_contract("vendor")
    x = np.ones((2, H), np.float32)
    for fn in (qcoll.quantize_kg, qcoll.quantize_mx):
        with pytest.raises(qcoll.InvalidParameterError, match=r"dtype: .*float4_e2m1.*needs QCOLL_CONTRACT=extended"):
            fn(x, "float4_e2m1")
    with pytest.raises(qcoll.InvalidParameterError, match=r"float4_e1m2.*QCOLL_CONTRACT=extended"):
        qcoll.dequantize(np.zeros((2, 512), np.uint8), np.zeros((2, 8), np.float32), x_dtype="e1m2")
    with pytest.raises(qcoll.InvalidParameterError, match=r"mode: mx-e2m1 needs QCOLL_CONTRACT=extended"):
        qcoll.run_ranks(2, lambda r, g: qcoll.reduce_scatter(x, g, mode="mx-e2m1"))
    packed = np.zeros((2, H // 2), np.uint8)
    s = np.ones((2, H // 128), np.float32)
    with pytest.raises(qcoll.InvalidParameterError, match="float4_e2m1"):
        qcoll.run_ranks(2, lambda r, g: qcoll.quant_reduce_scatter(packed, s, g, x_dtype="float4_e2m1"))
    # The 8-bit modes are unchanged.
    q, sc = qcoll.quantize_kg(x, "int8")
    assert q.shape == x.shape


def test_bad_contract_setting_fails_only_fp4_quantizers(monkeypatch):
    qcoll.set_contract(None)
    monkeypatch.setenv("QCOLL_CONTRACT", "sideways")
    x = np.ones((2, 128), np.float32)
    qcoll.quantize_kg(x, "int8")  # the vendor's call: the setting is not read
    with pytest.raises(qcoll.InvalidParameterError, match="QCOLL_CONTRACT"):
        qcoll.quantize_kg(x, "float4_e2m1")


def test_torch_modes_follow_the_contract():
    pytest.importorskip("torch", exc_type=ModuleNotFoundError)
    import qcoll.torch as qt

    assert len(qt.MODES) == 6 and "mx-e2m1" not in qt.MODES
    assert qt.EXTENDED_MODES["mx-e2m1"] == ("float4_e2m1", "float8_e8m0")
    assert qt.EXTENDED_MODES["kg-e1m2"] == ("float4_e1m2", "float")
    assert {m: qt.EXTENDED_MODES[m] for m in qt.MODES} == qt.MODES
    state = qt.QuantHookState(mode="kg-e2m1", error_feedback=True)  # extended: taken (no group yet)
    assert (state._reducer.x_dtype, state._reducer.scales_dtype) == ("float4_e2m1", "float")
    qcoll.set_contract("vendor")
    with pytest.raises(qcoll.InvalidParameterError, match=r"mode: kg-e2m1 needs QCOLL_CONTRACT=extended"):
        qt.QuantHookState(mode="kg-e2m1")
    with pytest.raises(qcoll.InvalidParameterError, match=r"mode: must be kg-int8, .* got 'kg-int4'"):
        qt.QuantHookState(mode="kg-int4")


def test_npu_names_take_fp4_and_three_ranks_under_extended():
    """qcoll.npu's world_size follows the contract's rank-count rule; x_dtype by name."""
    from qcoll import npu

    n = 3
    inputs = [random_packed(rng_for("npu"), (2 * n, H), "float") for _ in range(n)]

    def fn(r, g):
        got = npu.npu_quant_reduce_scatter(*inputs[r], g.name, n, x_dtype="float4_e2m1", output_dtype=6)
        want = qcoll.quant_reduce_scatter(*inputs[r], g, x_dtype="float4_e2m1", output_dtype="float32")
        return got, want

    for got, want in qcoll.run_ranks(n, fn):
        np.testing.assert_array_equal(bits(got), bits(want))
    with pytest.raises(qcoll.InvalidParameterError, match=r"world_size: must be in \[2, 1024\], got 1"):
        npu.npu_quant_reduce_scatter(*inputs[0], "nowhere", 1, x_dtype="float4_e2m1")
