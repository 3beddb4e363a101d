"""Quantizers that produce the operators' inputs (contract.md §quantizers) and their inverse."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _core
from ._arrays import bits_of, check_not_pair, float32_values, input_dtype, is_torch_tensor, result, to_torch
from ._dtypes import DType, to_dtype
from .errors import invalid


def _rows_h(shape: tuple, param: str) -> tuple[int, int]:
    if len(shape) < 1:
        raise invalid(f"{param}: needs at least one dimension (the last one is H), got a scalar")
    h = int(shape[-1])
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    return rows, h


def _source(x: Any):
    """(2-D contiguous array, kind, is_torch): bfloat16 and float16 bits go to their own
    quantizers as they are; everything else as float32 values."""
    half = None
    if is_torch_tensor(x):
        half = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}.get(str(x.dtype))
    elif isinstance(x, np.ndarray):
        half = {"bfloat16": "bf16", "float16": "fp16"}.get(x.dtype.name)
    if half is not None:
        b = bits_of(x, "x")
        return b.raw, half, b.is_torch
    vals, is_torch = float32_values(x, "x")
    return vals, "f32", is_torch


_KG = {"f32": "quantize_kg_f32", "bf16": "quantize_kg_bf16", "fp16": "quantize_kg_fp16"}
_MX = {"f32": "quantize_mx_f32", "bf16": "quantize_mx_bf16", "fp16": "quantize_mx_fp16"}


def quantize_kg(x: Any, dtype: Any, *, hif8_target: Optional[float] = None):
    """Per-token-per-group quantization (group: 128 contiguous elements of a row).

    ``x``: float32 / bfloat16 / float16 (or anything convertible to float32) of shape
    (..., H), H a multiple of 128. ``dtype``: int8, hifloat8, float8_e4m3fn or float8_e5m2;
    under the extended contract (:func:`qcoll.set_contract`) also float4_e2m1 and
    float4_e1m2. Returns ``(q, scales)``: q of x's shape in ``dtype`` (HiF8 as uint8 codes;
    the 4-bit formats packed, two codes a byte: uint8 (..., H/2), for a torch x E2M1 as
    torch.float4_e2m1fn_x2), scales float32 of shape (..., H/128). ``hif8_target``
    overrides the HiF8 target (scale = amax / target); default :func:`default_hif8_target`.
    """
    t = to_dtype(dtype, "dtype")
    a, kind, is_torch = _source(x)
    rows, h = _rows_h(a.shape, "x")
    target = 0.0 if hif8_target is None else float(hif8_target)
    _core.check_quant(int(t), int(DType.FLOAT), h, target, x_param="dtype")  # the core's rule, before allocating
    q = _codes(a.shape, t)
    scales = np.empty(tuple(_core.scales_shape(int(DType.FLOAT), list(a.shape))), np.float32)
    src = np.ascontiguousarray(a).reshape(rows, h)
    fn = getattr(_core, _KG[kind])
    fn(src, int(t), q.reshape(rows, -1), scales.reshape(-1), target)
    return result(q, t, is_torch), result(scales, DType.FLOAT, is_torch)


def _codes(shape: tuple, t: DType) -> np.ndarray:
    """The quantizer's output codes for x of ``shape``: a byte each (8-bit), or packed two a
    byte (4-bit: the last dimension H/2, contract.md §ext-fp4-layout)."""
    h = int(shape[-1])
    return np.empty(tuple(shape[:-1]) + (int(_core.dtype_bytes(int(t), h)),), np.uint8)


def quantize_mx(x: Any, dtype: Any):
    """OCP MX quantization (group: 32 contiguous elements of a row, E8M0 scales).

    ``x``: float32 / bfloat16 / float16 of shape (..., H), H a multiple of 64. ``dtype``:
    float8_e4m3fn or float8_e5m2 (extended contract: also float4_e2m1, float4_e1m2, packed
    as for :func:`quantize_kg`). Returns ``(q, scales)``: q of x's shape, scales
    float8_e8m0fnu of shape (..., H/64, 2), the operators' MX layout.
    """
    t = to_dtype(dtype, "dtype")
    a, kind, is_torch = _source(x)
    rows, h = _rows_h(a.shape, "x")
    _core.check_quant(int(t), int(DType.FLOAT8_E8M0), h, x_param="dtype")  # the core's rule, before allocating
    q = _codes(a.shape, t)
    scales = np.empty(tuple(_core.scales_shape(int(DType.FLOAT8_E8M0), list(a.shape))), np.uint8)
    src = np.ascontiguousarray(a).reshape(rows, h)
    fn = getattr(_core, _MX[kind])
    fn(src, int(t), q.reshape(rows, -1), scales.reshape(-1))
    return result(q, t, is_torch), result(scales, DType.FLOAT8_E8M0, is_torch)


def dequantize(q: Any, scales: Any, *, x_dtype: Any = None, scales_dtype: Any = None):
    """float32 values ``decode(q) * scale`` (one fp32 multiply each), of q's shape.

    The group size follows from the scales type: float32 scales (KG) cover 128 elements,
    E8M0 scales (MX) 32. Raw uint8 q needs ``x_dtype`` (uint8 scales are E8M0, as the CLI
    takes them); for a typed array (ml_dtypes, torch) they must agree with its type. 4-bit
    q (extended contract): packed uint8 (..., H/2) with ``x_dtype`` float4_e2m1 /
    float4_e1m2, a torch.float4_e2m1fn_x2 tensor, or an ml_dtypes float4_e2m1fn array (one
    element a byte); the result has the logical shape (..., H).
    """
    check_not_pair(q, "q", "dequantize(q, scales) or dequantize(*pair)")
    qb = bits_of(q, "q")
    sb = bits_of(scales, "scales")
    xt = input_dtype(qb, x_dtype, "x_dtype", "q", "e.g. 'hifloat8'")
    qb = qb.as_packed(xt)
    st = input_dtype(sb, scales_dtype, "scales_dtype", "scales", "e.g. 'float8_e8m0'", raw_default=DType.FLOAT8_E8M0)
    rows, h = _rows_h(qb.shape, "q")
    # The core's rule, naming what the caller passed: the dtype argument where given, else the array.
    _core.check_quant(int(xt), int(st), h, x_param="x_dtype" if x_dtype is not None else "q",
                      scales_param="scales_dtype" if scales_dtype is not None else "scales")
    out = np.empty(qb.shape, np.float32)
    _core.dequantize(np.ascontiguousarray(qb.raw).view(np.uint8), np.ascontiguousarray(sb.raw),
                     rows, h, int(xt), int(st), out)
    return to_torch(out, DType.FLOAT) if qb.is_torch else out


def default_hif8_target() -> float:
    """The default HiF8 KG target (scale = amax / target), chosen by measurement."""
    return float(_core.default_hif8_target())
