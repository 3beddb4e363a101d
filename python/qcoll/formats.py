"""decode / encode of every qcoll data type (contract.md §formats, §encoders) over numpy and torch."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._arrays import bits_of, float32_values, result, to_torch
from ._dtypes import DType, is_4bit, optional_dtype, to_dtype
from .errors import invalid

_EIGHT_BIT = tuple(t for t in DType if _core.is_8bit_format(int(t)))  # the core's 8-bit formats
_SIXTEEN_BIT = tuple(t for t in DType if t.itemsize == 2)


def decode(codes: Any, dtype: Any = None) -> np.ndarray:
    """Exact float32 values of ``codes``.

    ``codes`` is an array of a qcoll type (ml_dtypes float8_e4m3fn / float8_e5m2 /
    float8_e8m0fnu / bfloat16, numpy int8 / float16, or a torch CPU tensor of those), or raw
    codes (uint8 bytes, uint16 bit patterns) with ``dtype`` naming the format, e.g.
    ``decode(b, "hifloat8")``. The result has the shape of ``codes``, except for packed
    4-bit codes (contract.md §ext-fp4-layout): uint8 (..., N) with dtype float4_e2m1 /
    float4_e1m2, or a torch.float4_e2m1fn_x2 tensor, decode to (..., 2N) values; an
    ml_dtypes float4_e2m1fn array (one element a byte) keeps its shape.
    """
    src = bits_of(codes, "codes")
    want = optional_dtype(dtype, "dtype")
    if want is None:
        if src.dtype is None:
            raise invalid("dtype: raw codes (uint8) need an explicit dtype, e.g. dtype='hifloat8'")
        want = src.dtype
    elif src.dtype is not None and src.dtype != want and not (
        src.dtype == DType.INT8 and want in _EIGHT_BIT
    ):
        raise invalid(f"dtype: the array holds {src.dtype.spec_name}, but dtype={want.spec_name} was given")
    src = src.as_packed(want)
    raw = np.ascontiguousarray(src.raw)
    out = np.empty(src.shape, np.float32)
    if is_4bit(want):
        if raw.dtype.itemsize != 1:
            raise invalid(f"codes: {want.spec_name} codes are packed two a byte, got {raw.dtype.itemsize}-byte "
                          "elements")
        _core.decode4(raw.view(np.uint8).reshape(-1), int(want), True, out.reshape(-1))
    elif want in _EIGHT_BIT:
        if raw.dtype.itemsize != 1:
            raise invalid(f"codes: {want.spec_name} codes are 1 byte each, got {raw.dtype.itemsize}-byte elements")
        _core.decode8(raw.view(np.uint8).reshape(-1), int(want), out.reshape(-1))
    elif want in _SIXTEEN_BIT:
        if raw.dtype.itemsize != 2:
            raise invalid(f"codes: {want.spec_name} codes are 2 bytes each, got {raw.dtype.itemsize}-byte elements")
        _core.decode16(raw.view(np.uint16).reshape(-1), int(want), out.reshape(-1))
    elif want == DType.FLOAT:
        if raw.dtype != np.float32:
            raise invalid(f"codes: float values are 4 bytes each, got {raw.dtype.itemsize}-byte elements")
        out[...] = raw
    else:
        raise invalid(f"dtype: cannot decode {want.spec_name}")
    return to_torch(out, DType.FLOAT) if src.is_torch else out


def encode(values: Any, dtype: Any, *, saturating: bool = False, bits: bool = False):
    """Nearest ``dtype`` encoding of ``values`` (contract.md §encoders).

    Values are taken as float32 (float64 input is rounded to float32 first). Rounding is to
    nearest, ties to even (HiF8: ties away from zero); overflow is decided after rounding.
    ``saturating=False`` (default, as ml_dtypes and PyTorch): overflow gives NaN (E4M3FN)
    or +-Inf (E5M2, HiF8, float16); ``saturating=True`` clamps to +-max finite (E4M3FN,
    E5M2, HiF8; int8 always clamps). Returns an ml_dtypes / numpy array of the type
    (HiF8: uint8 codes), or the raw codes (uint8 / uint16) with ``bits=True``; a torch
    tensor for a torch input. The 4-bit formats (float4_e2m1, float4_e1m2) have one mode,
    saturating (+-Inf and overflow give +-max, NaN code 0; ``saturating`` is ignored), and
    come back packed two a byte: uint8 of shape (..., N/2) for values (..., N), N even (a
    torch input: E2M1 as torch.float4_e2m1fn_x2 unless ``bits=True``).
    """
    t = to_dtype(dtype)
    vals, is_torch = float32_values(values, "values")
    flat = np.ascontiguousarray(vals).reshape(-1)
    if is_4bit(t):
        if vals.ndim == 0 or vals.shape[-1] % 2 != 0:
            raise invalid(f"values: {t.spec_name} codes are packed two a byte along the last dimension, which must "
                          f"be even, got shape {tuple(vals.shape)}")
        out = np.empty(vals.shape[:-1] + (vals.shape[-1] // 2,), np.uint8)
        _core.encode4(flat, int(t), out.reshape(-1))
    elif t in _EIGHT_BIT:
        out = np.empty(vals.shape, np.uint8)
        _core.encode8(flat, int(t), bool(saturating), out.reshape(-1))
    elif t in _SIXTEEN_BIT:
        if saturating:
            raise invalid(f"saturating: {t.spec_name} has no saturating mode (overflow gives +-Inf), "
                          "got saturating=True")
        out = np.empty(vals.shape, np.uint16)
        _core.encode16(flat, int(t), out.reshape(-1))
    elif t == DType.FLOAT:
        out = np.array(vals, np.float32, copy=True)
    else:
        raise invalid(f"dtype: cannot encode to {t.spec_name}")
    if bits:
        if not is_torch:
            return out
        import torch  # raw codes as torch: uint8 bytes, or 16-bit patterns as int16

        return torch.from_dlpack(out if out.dtype != np.uint16 else out.view(np.int16))
    return result(out, t, is_torch)


def max_finite(dtype: Any) -> float:
    """Largest finite value of an 8-bit format (448, 57344, 32768; 127 for int8) or of a
    4-bit one (6, 1.75)."""
    return float(_core.max_finite(int(to_dtype(dtype))))
