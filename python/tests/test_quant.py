"""Quantizers against the contract.md §quantizers formulas written here in numpy, and §vectors."""

import ml_dtypes
import numpy as np
import pytest

import qcoll
from reference import BF16, E4M3, E5M2, E8M0, decode, hif8_encode

pytestmark = pytest.mark.wheel

MAXF = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}
ML = {"float8_e4m3fn": E4M3, "float8_e5m2": E5M2}


def sat_fp8(v: np.ndarray, name: str) -> np.ndarray:
    """encode_rne_saturating for finite v: ml_dtypes' RNE cast after clamping to +-max
    (the same result, as every value between max and the overflow point rounds to max)."""
    return np.clip(v, -MAXF[name], MAXF[name]).astype(ML[name]).view(np.uint8)


def kg_reference(x: np.ndarray, name: str, target: float):
    rows, h = x.shape
    g = x.reshape(rows, h // 128, 128)
    amax = np.abs(g).max(axis=2)
    if name == "int8":
        scale = (amax / np.float32(127)).astype(np.float32)
    elif name == "hifloat8":
        scale = (amax / np.float32(target)).astype(np.float32)
    else:
        scale = (amax / np.float32(MAXF[name])).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = (g / scale[..., None]).astype(np.float32)
    y = np.where(scale[..., None] == 0, np.float32(0), y)
    if name == "int8":
        q = np.clip(np.rint(y), -127, 127).astype(np.int8).view(np.uint8)
    elif name == "hifloat8":
        q = hif8_encode(y, saturating=True)
    else:
        q = sat_fp8(y, name)
    return q.reshape(rows, h), scale


def mx_reference(x: np.ndarray, name: str):
    rows, h = x.shape
    g = x.reshape(rows, h // 32, 32)
    amax = np.abs(g).max(axis=2)
    exp_field = (amax.view(np.uint32) >> 23).astype(np.int64) & 0xFF  # fp32 exponent field
    floor_log2 = exp_field - 127
    shared = np.maximum(floor_log2 - {"float8_e4m3fn": 8, "float8_e5m2": 15}[name], -127)
    y = np.ldexp(g, -shared[..., None]).astype(np.float32)  # v / 2^shared_exp, exact
    q = sat_fp8(y, name)
    return q.reshape(rows, h), (shared + 127).astype(np.uint8).reshape(rows, h // 64, 2)


def make_data(rng, rows, h):
    """Gaussian rows with a heavy-tailed part, a zero group and a few extremes."""
    x = rng.standard_normal((rows, h)).astype(np.float32)
    x[: rows // 2] *= rng.standard_t(2, size=(rows // 2, h)).astype(np.float32)
    x[0, :128] = 0.0
    x[1, 5] = 3.0e4
    x[1, h - 7] = -2.0e-30
    return x


@pytest.mark.parametrize("name", ["int8", "hifloat8", "float8_e4m3fn", "float8_e5m2"])
def test_quantize_kg_matches_spec_formula(name):
    rng = np.random.default_rng(10)
    x = make_data(rng, 16, 1024)
    q, s = qcoll.quantize_kg(x, name)
    rq, rs = kg_reference(x, name, qcoll.default_hif8_target())
    assert s.dtype == np.float32 and s.shape == (16, 8)
    np.testing.assert_array_equal(s.view(np.uint32), rs.view(np.uint32))
    np.testing.assert_array_equal(np.asarray(q).view(np.uint8), rq)
    assert np.all(s[0, 0] == 0) and np.all(np.asarray(q).view(np.uint8)[0, :128] == 0)


def test_quantize_kg_hif8_target_override():
    rng = np.random.default_rng(11)
    x = make_data(rng, 4, 256)
    for target in (15.0, 224.0, 32768.0):
        q, s = qcoll.quantize_kg(x, "hifloat8", hif8_target=target)
        rq, rs = kg_reference(x, "hifloat8", target)
        np.testing.assert_array_equal(s.view(np.uint32), rs.view(np.uint32))
        np.testing.assert_array_equal(q, rq)


def test_quantize_kg_bf16_input_and_3d_shape():
    rng = np.random.default_rng(12)
    x = make_data(rng, 6, 1024).astype(BF16).reshape(2, 3, 1024)
    q, s = qcoll.quantize_kg(x, "float8_e4m3fn")
    assert q.dtype == E4M3 and q.shape == (2, 3, 1024) and s.shape == (2, 3, 8)
    rq, rs = kg_reference(x.astype(np.float32).reshape(6, 1024), "float8_e4m3fn", 0)
    np.testing.assert_array_equal(q.view(np.uint8).reshape(6, 1024), rq)
    np.testing.assert_array_equal(s.reshape(6, 8), rs)


@pytest.mark.parametrize("name", ["int8", "hifloat8", "float8_e4m3fn", "float8_e5m2"])
def test_quantize_float16_input_kg_and_mx(name):
    # float16 goes to the fp16 quantizers; the result equals the float32 one on the same values.
    rng = np.random.default_rng(14)
    x = make_data(rng, 6, 1024)
    x[1, 5] = 3.0e4  # within float16
    x16 = x.astype(np.float16)
    q, s = qcoll.quantize_kg(x16, name)
    rq, rs = kg_reference(x16.astype(np.float32), name, qcoll.default_hif8_target())
    np.testing.assert_array_equal(np.asarray(q).view(np.uint8), rq)
    np.testing.assert_array_equal(s.view(np.uint32), rs.view(np.uint32))
    if name in MAXF:
        q, s = qcoll.quantize_mx(x16, name)
        rq, rs = mx_reference(x16.astype(np.float32), name)
        np.testing.assert_array_equal(np.asarray(q).view(np.uint8), rq)
        np.testing.assert_array_equal(np.asarray(s).view(np.uint8), rs)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_quantize_mx_matches_ocp_formula(name):
    rng = np.random.default_rng(13)
    x = make_data(rng, 8, 2048)
    x[2, 64:96] = np.float32(2.0**-140)  # a block of fp32 subnormals: shared exponent clamps to -127
    q, s = qcoll.quantize_mx(x, name)
    rq, rs = mx_reference(x, name)
    assert s.dtype == E8M0 and s.shape == (8, 32, 2)
    np.testing.assert_array_equal(s.view(np.uint8), rs)
    np.testing.assert_array_equal(q.view(np.uint8), rq)


def test_spec_vectors_mx_and_int8():
    x = np.zeros((1, 64), np.float32)
    x[0, :4] = [0, 8, 64, 512]
    x[0, 32:36] = [500, -1, 0.3, 2.0**-9]
    q, s = qcoll.quantize_mx(x, "float8_e4m3fn")
    assert list(s.view(np.uint8)[0, 0]) == [0x80, 0x7F]
    assert list(q.view(np.uint8)[0, :4]) == [0x00, 0x48, 0x60, 0x78]
    assert list(q.view(np.uint8)[0, 32:36]) == [0x7E, 0xB8, 0x2A, 0x01]
    x = np.zeros((1, 128), np.float32)
    x[0, :7] = [254, 3, 5, 1, -1, 127, 129]
    q, s = qcoll.quantize_kg(x, "int8")
    assert s[0, 0] == 2.0 and list(q[0, :7]) == [127, 2, 2, 0, 0, 64, 64]


@pytest.mark.parametrize("name,scales_kind", [("int8", "kg"), ("hifloat8", "kg"),
                                              ("float8_e5m2", "kg"), ("float8_e4m3fn", "mx")])
def test_dequantize_is_decode_times_scale(name, scales_kind):
    rng = np.random.default_rng(14)
    x = make_data(rng, 4, 1024)
    if scales_kind == "kg":
        q, s = qcoll.quantize_kg(x, name)
        want = decode(q, name) * np.repeat(s, 128, axis=1)
    else:
        q, s = qcoll.quantize_mx(x, name)
        want = decode(q, name) * np.repeat(decode(s, "float8_e8m0").reshape(4, 32), 32, axis=1)
    got = qcoll.dequantize(q, s, x_dtype=name if name == "hifloat8" else None)
    np.testing.assert_array_equal(got.view(np.uint32), want.astype(np.float32).view(np.uint32))


def test_quantizer_errors():
    with pytest.raises(qcoll.InvalidParameterError, match="multiple of 128") as e:
        qcoll.quantize_kg(np.zeros((2, 100), np.float32), "int8")
    assert e.value.status == 161002
    # The quantizers' parameter is `dtype` (the messages used to say x_dtype, which they do not take).
    with pytest.raises(qcoll.InvalidParameterError, match=r"\] dtype: MX"):
        qcoll.quantize_mx(np.zeros((2, 128), np.float32), "int8")
    with pytest.raises(qcoll.InvalidParameterError, match=r"\] dtype: KG"):
        qcoll.quantize_kg(np.zeros((2, 128), np.float32), "float8_e8m0")
    with pytest.raises(qcoll.InvalidParameterError, match="x_dtype"):
        qcoll.dequantize(np.zeros((1, 128), np.uint8), np.zeros((1, 1), np.float32))


def test_hif8_target_out_of_range_gives_the_real_reason():
    # The core's rule (0 or [1, 32768]) is the only one: the message names the parameter,
    # the range and the value, not a generic refusal.
    x = np.ones((2, 128), np.float32)
    for bad in (0.5, -1.0, 40000.0):
        with pytest.raises(qcoll.InvalidParameterError, match=r"hif8_target: .*\[1, 32768\], got ") as e:
            qcoll.quantize_kg(x, "hifloat8", hif8_target=bad)
        assert e.value.status == 161002 and str(bad) in e.value.message
    for ok in (1.0, 32768.0):
        qcoll.quantize_kg(x, "hifloat8", hif8_target=ok)


def test_dequantize_dtype_contradicting_a_typed_array_is_invalid():
    x = make_data(np.random.default_rng(3), 2, 128)
    q, s = qcoll.quantize_kg(x, "float8_e4m3fn")  # q: ml_dtypes float8_e4m3fn, s: float32
    with pytest.raises(qcoll.InvalidParameterError, match="x_dtype: the array holds float8_e4m3fn") as e:
        qcoll.dequantize(q, s, x_dtype="e5m2")
    assert e.value.status == 161002
    with pytest.raises(qcoll.InvalidParameterError, match="scales_dtype: the array holds float"):
        qcoll.dequantize(q, s, scales_dtype="float8_e8m0")
    # Naming the array's own types is fine, and gives the same values.
    np.testing.assert_array_equal(qcoll.dequantize(q, s, x_dtype="float8_e4m3fn", scales_dtype="float"),
                                  qcoll.dequantize(q, s))
