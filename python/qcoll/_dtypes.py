"""The qcoll data types (contract.md §modes) and how numpy, ml_dtypes, torch and strings name them."""

from __future__ import annotations

import enum
from typing import Any, Optional

import ml_dtypes
import numpy as np

from . import _core
from .errors import invalid


class DType(enum.IntEnum):
    """qcoll data types; the values are those of qcollDataType (ACL's aclDataType). Names,
    aliases and sizes come from the C++ core (qcoll/dtype.hpp)."""

    FLOAT = 0
    FLOAT16 = 1
    INT8 = 2
    UINT8 = 4
    BFLOAT16 = 27
    HIFLOAT8 = 34
    FLOAT8_E5M2 = 35
    FLOAT8_E4M3FN = 36
    FLOAT8_E8M0 = 37
    FLOAT4_E2M1 = 40  # extended contract only (docs/contract.md §ext-fp4); itemsize 0: packed
    FLOAT4_E1M2 = 41

    @property
    def spec_name(self) -> str:
        return _core.dtype_name(int(self))

    @property
    def itemsize(self) -> int:
        return int(_core.dtype_size(int(self)))


_E8M0 = getattr(ml_dtypes, "float8_e8m0fnu", None)  # ml_dtypes >= 0.5

# numpy dtypes that name a qcoll type without ambiguity (uint8 does not: raw bytes).
_FROM_NUMPY = {
    np.dtype(np.float32): DType.FLOAT,
    np.dtype(np.float16): DType.FLOAT16,
    np.dtype(np.int8): DType.INT8,
    np.dtype(ml_dtypes.bfloat16): DType.BFLOAT16,
    np.dtype(ml_dtypes.float8_e4m3fn): DType.FLOAT8_E4M3FN,
    np.dtype(ml_dtypes.float8_e5m2): DType.FLOAT8_E5M2,
}
if _E8M0 is not None:
    _FROM_NUMPY[np.dtype(_E8M0)] = DType.FLOAT8_E8M0
# ml_dtypes' float4_e2m1fn holds one element a byte (bits 0-3): qcoll packs it (_arrays.bits_of).
_FP4_ML = getattr(ml_dtypes, "float4_e2m1fn", None)  # ml_dtypes >= 0.5
if _FP4_ML is not None:
    _FROM_NUMPY[np.dtype(_FP4_ML)] = DType.FLOAT4_E2M1

# The numpy dtype in which each qcoll type is returned (HiF8 has none: raw uint8 bytes).
_TO_NUMPY = {
    DType.FLOAT: np.dtype(np.float32),
    DType.FLOAT16: np.dtype(np.float16),
    DType.INT8: np.dtype(np.int8),
    DType.UINT8: np.dtype(np.uint8),
    DType.BFLOAT16: np.dtype(ml_dtypes.bfloat16),
    DType.HIFLOAT8: np.dtype(np.uint8),
    DType.FLOAT8_E5M2: np.dtype(ml_dtypes.float8_e5m2),
    DType.FLOAT8_E4M3FN: np.dtype(ml_dtypes.float8_e4m3fn),
    DType.FLOAT8_E8M0: np.dtype(_E8M0) if _E8M0 is not None else np.dtype(np.uint8),
    # 4-bit codes come back packed, two a byte (contract.md §ext-fp4-layout): uint8 (..., H/2).
    DType.FLOAT4_E2M1: np.dtype(np.uint8),
    DType.FLOAT4_E1M2: np.dtype(np.uint8),
}

_TORCH_NAMES = {
    "torch.float32": DType.FLOAT, "torch.float16": DType.FLOAT16, "torch.int8": DType.INT8,
    "torch.bfloat16": DType.BFLOAT16, "torch.float8_e4m3fn": DType.FLOAT8_E4M3FN,
    "torch.float8_e5m2": DType.FLOAT8_E5M2, "torch.float8_e8m0fnu": DType.FLOAT8_E8M0,
    "torch.float4_e2m1fn_x2": DType.FLOAT4_E2M1,  # packed: two elements a byte, shape (..., H/2)
}


def to_dtype(spec: Any, param: str = "dtype") -> DType:
    """A DType from a DType, its int value, a dtype name or alias ("hifloat8", "e4m3", "bf16"),
    a numpy / ml_dtypes dtype or scalar type, or a torch dtype."""
    if isinstance(spec, DType):
        return spec
    if spec is None:  # np.dtype(None) would be float64
        raise invalid(f"{param}: must be a dtype, got None; expected a name such as 'float8_e4m3fn', "
                      "a numpy / ml_dtypes / torch dtype or a qcoll.DType")
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        try:
            return DType(int(spec))
        except ValueError:
            raise invalid(f"{param}: unknown dtype value {int(spec)}") from None
    if isinstance(spec, str):
        value = _core.parse_dtype(spec)
        if value < 0:
            raise invalid(f"{param}: unknown dtype name {spec!r}; expected one of "
                          + ", ".join(sorted(t.spec_name for t in DType)))
        return DType(value)
    if type(spec).__module__ == "torch":
        t = _TORCH_NAMES.get(str(spec))
        if t is None:
            raise invalid(f"{param}: torch dtype {spec} has no SPEC counterpart")
        return t
    try:
        nd = np.dtype(spec)
    except TypeError:
        raise invalid(f"{param}: cannot interpret {spec!r} as a dtype") from None
    if nd == np.uint8:
        return DType.UINT8
    t = _FROM_NUMPY.get(nd)
    if t is None:
        raise invalid(f"{param}: numpy dtype {nd} has no SPEC counterpart")
    return t


def optional_dtype(spec: Any, param: str) -> Optional[DType]:
    return None if spec is None else to_dtype(spec, param)


def dtype_of_numpy(nd: np.dtype) -> Optional[DType]:
    """The qcoll type a numpy dtype stands for; None for raw bytes (uint8) and the rest."""
    return _FROM_NUMPY.get(np.dtype(nd))


def is_4bit(t: Optional[DType]) -> bool:
    """A 4-bit format (FLOAT4_E2M1, FLOAT4_E1M2; the extended contract's x dtypes)."""
    return t is not None and bool(_core.is_4bit_format(int(t)))


def is_ml_fp4(nd: np.dtype) -> bool:
    """ml_dtypes' float4_e2m1fn: one 4-bit element a byte (not packed)."""
    return _FP4_ML is not None and np.dtype(nd) == np.dtype(_FP4_ML)


def numpy_dtype(t: DType) -> np.dtype:
    return _TO_NUMPY[t]


def torch_dtype(t: DType):
    """The torch dtype for t, or None (HiF8, or a type this torch lacks)."""
    import torch

    names = {v: k for k, v in _TORCH_NAMES.items()}
    name = names.get(t)
    return getattr(torch, name.split(".", 1)[1], None) if name else None
