"""Independent references for the tests, written from the contract (docs/contract.md), never
from qcoll's code: HiF8 decode/encode from the §formats-hifloat8 table, E8M0 encode from
§encoders, the §quantizers and the operators of §operation / §numerics in numpy float32."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
BF16 = np.dtype(ml_dtypes.bfloat16)


# ---- HiFloat8 (contract.md §formats-hifloat8) ---------------------------------------------
def hif8_value(b: int) -> float:
    s = -1.0 if b & 0x80 else 1.0
    v = b & 0x7F
    if b == 0x80:
        return math.nan
    if v == 0:
        return 0.0
    if v == 0x6F:
        return s * math.inf
    if v >= 0x60:
        mag, neg, mbits, m = 8 + ((v >> 1) & 7), v & 0x10, 1, v & 1
    elif v >= 0x40:
        mag, neg, mbits, m = 4 + ((v >> 2) & 3), v & 0x10, 2, v & 3
    elif v >= 0x20:
        mag, neg, mbits, m = 2 + ((v >> 3) & 1), v & 0x10, 3, v & 7
    elif v >= 0x10:
        mag, neg, mbits, m = 1, v & 0x08, 3, v & 7
    elif v >= 0x08:
        mag, neg, mbits, m = 0, 0, 3, v & 7
    else:
        return s * 2.0 ** (v - 23)
    e = -mag if neg else mag
    return s * 2.0**e * (1 + m / 2**mbits)


HIF8_TABLE = np.array([hif8_value(b) for b in range(256)], dtype=np.float64)

# Positive finite HiF8 values, ascending, and their codes.
_pos_codes = np.array([c for c in range(0x00, 0x80) if c != 0x6F], dtype=np.uint8)
_order = np.argsort(HIF8_TABLE[_pos_codes])
HIF8_POS_CODES = _pos_codes[_order]
HIF8_POS_VALUES = HIF8_TABLE[HIF8_POS_CODES]
HIF8_MAX = 32768.0
HIF8_OVERFLOW_VALUE = 49152.0  # the next value if the format had one more binade


def hif8_encode(values: np.ndarray, saturating: bool = False) -> np.ndarray:
    """Nearest HiF8 code, ties away from zero, overflow after rounding, no negative zero."""
    v = np.asarray(values, dtype=np.float32).astype(np.float64)
    a = np.abs(v)
    finite = np.isfinite(a)
    af = np.where(finite, a, 0.0)
    grid = np.append(HIF8_POS_VALUES, HIF8_OVERFLOW_VALUE)
    n = len(grid)
    idx = np.searchsorted(grid, af, side="left")  # first grid value >= |v|
    i = np.clip(idx, 1, n - 1)
    lo, hi = grid[i - 1], grid[i]
    pick = np.where((af - lo) >= (hi - af), i, i - 1)  # a tie goes to the larger magnitude
    overflow = (idx >= n) | (pick == n - 1)
    codes = HIF8_POS_CODES[np.clip(pick, 0, len(HIF8_POS_CODES) - 1)].astype(np.uint8)
    codes = np.where(overflow, np.uint8(0x6E if saturating else 0x6F), codes)
    inf = np.isinf(v)
    codes = np.where(inf, np.uint8(0x6E if saturating else 0x6F), codes)
    neg = (v < 0) & (codes != 0)
    codes = np.where(neg, codes | 0x80, codes).astype(np.uint8)
    return np.where(np.isnan(v), np.uint8(0x80), codes).astype(np.uint8)


# ---- E8M0 encode (§encoders: round the exponent up when the fraction is >= 0.5) ----------
def e8m0_encode(values: np.ndarray) -> np.ndarray:
    """Finite positive inputs only (the contract's rule); magnitudes outside the E8M0 range are
    clamped to 0x00 / 0xFE, as docs/python.md records."""
    v = np.asarray(values, dtype=np.float64)
    m, e = np.frexp(v)  # v = m * 2^e, m in [0.5, 1): floor(log2 v) = e - 1, fraction 2m - 1
    exp = np.where(m >= 0.75, e, e - 1)
    return np.clip(exp + 127, 0, 254).astype(np.uint8)


# ---- the 4-bit formats (contract.md §ext-fp4): value lists, packed two codes a byte ------
# Code c: bit 3 the sign, bits 0-2 the index into the magnitudes.
FP4_MAGNITUDES = {
    "float4_e2m1": np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float32),
    "float4_e1m2": np.array([0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75], dtype=np.float32),
}
FP4_EMAX = {"float4_e2m1": 2, "float4_e1m2": 0}  # the MX emax (§ext-fp4-quantizers)


def fp4_values(dtype: str) -> np.ndarray:
    """The 16 codes' values: +mags for 0..7, -mags for 8..15."""
    m = FP4_MAGNITUDES[dtype]
    return np.concatenate([m, -m]).astype(np.float32)


def fp4_unpack(packed: np.ndarray) -> np.ndarray:
    """uint8 (..., N) -> codes (..., 2N): the even element in bits 0-3, the odd one in 4-7."""
    p = np.asarray(packed).view(np.uint8)
    return np.stack([p & 0xF, p >> 4], axis=-1).reshape(p.shape[:-1] + (2 * p.shape[-1],))


def fp4_pack(codes: np.ndarray) -> np.ndarray:
    c = np.asarray(codes, dtype=np.uint8)
    return (c[..., 0::2] & 0xF) | ((c[..., 1::2] & 0xF) << 4)


def fp4_encode(values: np.ndarray, dtype: str) -> np.ndarray:
    """Codes (one a byte) of float32 values: the nearest magnitude, a tie to the even code,
    saturating (beyond the largest value and +-Inf: +-max), the sign kept (-0 -> 0x8), NaN 0."""
    v = np.asarray(values, dtype=np.float32)
    mags = FP4_MAGNITUDES[dtype].astype(np.float64)
    a = np.abs(v).astype(np.float64)
    a = np.where(np.isinf(a), mags[-1], a)
    d = np.abs(a[..., None] - mags)  # distance to every magnitude
    best = d.min(axis=-1, keepdims=True)
    tied = d == best
    # Among the nearest (at most two, adjacent): the even index.
    even = tied & (np.arange(8) % 2 == 0)
    idx = np.where(even.any(axis=-1), even.argmax(axis=-1), tied.argmax(axis=-1)).astype(np.uint8)
    codes = np.where(np.signbit(v), idx | 0x8, idx).astype(np.uint8)
    return np.where(np.isnan(v), np.uint8(0), codes).astype(np.uint8)


def floor_log2(a: np.ndarray) -> np.ndarray:
    """floor(log2(a)) of positive float32 values, exactly (frexp: a = m * 2^e, m in [0.5, 1))."""
    _, e = np.frexp(np.asarray(a, dtype=np.float64))
    return e - 1


def quantize_kg_fp4(x: np.ndarray, dtype: str):
    """KG (group 128): scale = fp32(amax / max), q = encode(v / scale); a zero group: scale 0,
    codes 0. Returns (packed uint8 (..., H/2), float32 scales (..., H/128))."""
    x = np.asarray(x, dtype=np.float32)
    g = x.reshape(x.shape[:-1] + (x.shape[-1] // 128, 128))
    amax = np.abs(g).max(axis=-1)
    scale = (amax / FP4_MAGNITUDES[dtype][-1]).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = fp4_encode(g / scale[..., None], dtype)
    q = np.where(scale[..., None] == 0, np.uint8(0), q).reshape(x.shape)
    return fp4_pack(q), scale


def quantize_mx_fp4(x: np.ndarray, dtype: str):
    """MX (group 32): shared_exp = floor(log2(amax)) - emax, clamped to [-127, 127], scale code
    shared_exp + 127, q = encode(v / 2^shared_exp). Finite inputs. Returns (packed uint8
    (..., H/2), E8M0 codes (..., H/64, 2) as uint8)."""
    x = np.asarray(x, dtype=np.float32)
    g = x.reshape(x.shape[:-1] + (x.shape[-1] // 32, 32))
    amax = np.abs(g).max(axis=-1)
    with np.errstate(divide="ignore"):
        e = np.where(amax > 0, floor_log2(np.where(amax > 0, amax, 1)) - FP4_EMAX[dtype], -127)
    e = np.clip(e, -127, 127)
    scale = np.ldexp(np.float32(1), e.astype(np.int32)).astype(np.float32)
    q = fp4_encode(g / scale[..., None], dtype).reshape(x.shape)
    codes = (e + 127).astype(np.uint8).reshape(x.shape[:-1] + (x.shape[-1] // 64, 2))
    return fp4_pack(q), codes


# ---- decoding for the operator reference ---------------------------------------------
def decode(codes: np.ndarray, dtype: str) -> np.ndarray:
    """Values of codes; the 4-bit formats from packed bytes (..., N) to (..., 2N)."""
    if dtype in FP4_MAGNITUDES:
        return fp4_values(dtype)[fp4_unpack(codes)]
    c = np.asarray(codes).view(np.uint8)
    if dtype == "int8":
        return c.view(np.int8).astype(np.float32)
    if dtype == "hifloat8":
        return HIF8_TABLE[c].astype(np.float32)
    if dtype == "float8_e4m3fn":
        return c.view(E4M3).astype(np.float32)
    if dtype == "float8_e5m2":
        return c.view(E5M2).astype(np.float32)
    if dtype == "float8_e8m0":
        return c.view(E8M0).astype(np.float32)
    raise ValueError(dtype)


def expand_scales(scales: np.ndarray, scales_dtype: str, rows: int, h: int) -> np.ndarray:
    """The scale of every element (rows, h) as float32: flat index (row*H + h) / group."""
    if scales_dtype == "float":
        s = np.asarray(scales, dtype=np.float32).reshape(rows, h // 128)
        return np.repeat(s, 128, axis=1)
    s = decode(np.asarray(scales).reshape(-1), "float8_e8m0").reshape(rows, h // 32)
    return np.repeat(s, 32, axis=1)


def cast_output(acc: np.ndarray, out_dtype: str) -> np.ndarray:
    """The reference output as raw bits (uint32 / uint16)."""
    if out_dtype == "float":
        return acc.astype(np.float32).view(np.uint32)
    if out_dtype == "float16":
        return acc.astype(np.float16).view(np.uint16)  # numpy: round to nearest even
    return acc.astype(BF16).view(np.uint16)  # ml_dtypes: round to nearest even


def reduce_rows(xs, ss, x_dtype, scales_dtype, rows: slice, h: int) -> np.ndarray:
    """fp32 sum over ranks 0..n-1, in order, of decode(x_k) * scale_k for the given rows:
    one float32 multiply and one float32 add per term, starting from +0."""
    acc = None
    for x, s in zip(xs, ss):
        x2 = np.asarray(x).reshape(-1, h // 2 if x_dtype in FP4_MAGNITUDES else h)  # 4-bit: packed rows
        nrows = x2.shape[0]
        d = decode(x2, x_dtype)[rows] * expand_scales(s, scales_dtype, nrows, h)[rows]
        acc = (np.zeros_like(d) + d) if acc is None else (acc + d)
    return acc


def random_rank_inputs(rng, n: int, rows: int, h: int, scales_dtype: str):
    """Inputs of n ranks for the process tests: x codes 0x01..0x6F as uint8 (valid in every x
    format), scales fp32 in [0, 1) (KG) or E8M0 exponents 2^-27..2^22 (MX)."""
    xs = [rng.integers(1, 0x70, size=(rows, h), dtype=np.uint8) for _ in range(n)]
    if scales_dtype == "float":
        ss = [rng.random((rows, h // 128)).astype(np.float32) for _ in range(n)]
    else:
        ss = [rng.integers(100, 150, size=(rows, h // 64, 2), dtype=np.uint8).view(E8M0) for _ in range(n)]
    return xs, ss

