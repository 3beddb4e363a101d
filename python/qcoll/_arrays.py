"""Arrays in and out: numpy arrays (ml_dtypes types included) and torch CPU tensors.

Inside, every array is a plain numpy view of its bits (float32, uint16 or uint8) plus the
qcoll type it carries. torch tensors are viewed without a copy through DLPack; results go
back as torch tensors when the main input was one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from . import _core
from ._dtypes import DType, dtype_of_numpy, is_4bit, is_ml_fp4, numpy_dtype, optional_dtype, torch_dtype
from .errors import invalid, missing

_BITS = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.float32)}


@dataclass
class Bits:
    raw: np.ndarray          # the same memory, as uint8 / uint16 / float32
    dtype: Optional[DType]   # the qcoll type the source array carries; None for raw bytes
    is_torch: bool = False
    packed: bool = False     # raw holds 4-bit codes two a byte: its last dimension is H/2

    @property
    def shape(self) -> tuple:
        """The logical shape: raw's, with the last dimension doubled for packed 4-bit data."""
        s = tuple(self.raw.shape)
        return s[:-1] + (2 * s[-1],) if self.packed and s else s

    def as_packed(self, t: Optional[DType]) -> "Bits":
        """These bits read as codes of t: packed when t is a 4-bit format (raw uint8 bytes)."""
        if is_4bit(t) and not self.packed:
            return Bits(self.raw, self.dtype, self.is_torch, True)
        return self


def pack_fp4(codes: np.ndarray, param: str) -> np.ndarray:
    """4-bit codes one a byte (bits 0-3), shape (..., H) -> packed uint8 (..., H/2), the even
    element in bits 0-3 (contract.md §ext-fp4-layout; the core's packing)."""
    if codes.ndim == 0 or codes.shape[-1] % 2 != 0:
        raise invalid(f"{param}: a 4-bit array packs two elements a byte along its last dimension, which must be "
                      f"even, got shape {tuple(codes.shape)}")
    out = np.empty(codes.shape[:-1] + (codes.shape[-1] // 2,), np.uint8)
    _core.pack4(np.ascontiguousarray(codes).view(np.uint8).reshape(-1), out.reshape(-1))
    return out


def unpack_fp4(packed: np.ndarray) -> np.ndarray:
    """Packed 4-bit codes uint8 (..., H/2) -> one code a byte (..., H) (bits 4-7 clear)."""
    p = np.ascontiguousarray(packed).view(np.uint8)
    out = np.empty(p.shape[:-1] + (2 * p.shape[-1],) if p.ndim else (2,), np.uint8)
    _core.unpack4(p.reshape(-1), out.reshape(-1))
    return out


def is_torch_tensor(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "__dlpack__")


def _torch_bits(t, param: str) -> Bits:
    import torch

    if t.device.type != "cpu":
        raise invalid(f"{param}: only CPU tensors are supported, got a tensor on {t.device}")
    t = t.detach()
    name = str(t.dtype)
    from ._dtypes import _TORCH_NAMES

    spec = _TORCH_NAMES.get(name)
    if t.dtype == torch.uint8:
        spec = None
    elif spec is None:
        raise invalid(f"{param}: torch dtype {t.dtype} has no SPEC counterpart")
    size = t.element_size()
    view = {1: torch.uint8, 2: torch.int16, 4: torch.float32}[size]
    raw = np.from_dlpack(t.view(view) if t.dtype != view else t)
    if size == 2:
        raw = raw.view(np.uint16)
    return Bits(raw, spec, True, packed=is_4bit(spec))  # float4_e2m1fn_x2: two elements a byte


def check_not_pair(obj: Any, param: str, call: str) -> None:
    """Refuses the (q, scales) pair that quantize_kg / quantize_mx return, given as one
    argument: ``call`` shows the right spelling."""
    if isinstance(obj, (tuple, list)) and len(obj) == 2 and all(
            isinstance(a, np.ndarray) or is_torch_tensor(a) for a in obj):
        raise invalid(f"{param}: got a tuple of 2 arrays, like the (q, scales) pair of quantize_kg / quantize_mx; "
                      f"pass them as two arguments: {call}")


def bits_of(obj: Any, param: str) -> Bits:
    """The bits of an array-like, without a copy for numpy arrays and torch CPU tensors."""
    if obj is None:
        raise missing(param, "an array or a torch CPU tensor")
    if is_torch_tensor(obj):
        return _torch_bits(obj, param)
    a = obj if isinstance(obj, np.ndarray) else np.asarray(obj)
    if a.dtype.kind in "OUSV" and not isinstance(obj, np.ndarray):
        raise invalid(f"{param}: expected an array or a torch CPU tensor, got {type(obj).__name__}")
    spec = dtype_of_numpy(a.dtype)
    if a.dtype in (np.uint8, np.uint16):  # raw codes: the caller names the format
        return Bits(a, None)
    if spec is None:
        raise invalid(f"{param}: numpy dtype {a.dtype} has no SPEC counterpart; expected float32, "
                      "float16, int8, uint8 / uint16 (raw codes) or an ml_dtypes type (bfloat16, float8_e4m3fn, "
                      "float8_e5m2, float8_e8m0fnu, float4_e2m1fn)")
    if is_ml_fp4(a.dtype):  # one element a byte: packed here (a copy), as the operators take 4-bit data
        return Bits(pack_fp4(a.view(np.uint8), param), spec, packed=True)
    if a.dtype.itemsize not in _BITS:
        raise invalid(f"{param}: unexpected element size {a.dtype.itemsize}")
    return Bits(a.view(_BITS[a.dtype.itemsize]), spec)


def input_dtype(b: Bits, explicit: Any, param: str, array: str, hint: str,
                raw_default: Optional[DType] = None) -> DType:
    """The SPEC type of an input array: ``explicit`` (the argument named ``param``) where
    given, which must agree with a typed array, else the array's own type; raw bytes are
    ``raw_default`` where the format has only one 8-bit type (scales: E8M0, as the CLI
    infers it), else need ``param``. ``array`` names the input in messages, ``hint`` gives
    an example value."""
    t = optional_dtype(explicit, param)
    if t is None:
        if b.dtype is None:
            if raw_default is not None and b.raw.dtype.itemsize == raw_default.itemsize:
                return raw_default
            raise invalid(f"{param}: a uint8 {array} needs {param} ({hint}), got {param}=None")
        return b.dtype
    if b.dtype is not None and b.dtype != t:
        raise invalid(f"{param}: the array holds {b.dtype.spec_name}, but {param}={t.spec_name} was given")
    return t


def float32_values(obj: Any, param: str) -> tuple[np.ndarray, bool]:
    """Values as a float32 array (exact for float16/bfloat16/8-bit inputs; float64 and
    integers are rounded to float32 first), and whether obj was a torch tensor."""
    if obj is None:
        raise missing(param, "an array or a torch CPU tensor of values")
    if is_torch_tensor(obj):
        import torch

        if obj.device.type != "cpu":
            raise invalid(f"{param}: only CPU tensors are supported, got a tensor on {obj.device}")
        t = obj.detach()
        if t.dtype != torch.float32:
            t = t.to(torch.float32)
        return np.from_dlpack(t), True
    a = obj if isinstance(obj, np.ndarray) else np.asarray(obj)
    if a.dtype == np.float32:
        return a, False
    if a.dtype.kind not in "fiub" and dtype_of_numpy(a.dtype) is None:
        raise invalid(f"{param}: cannot convert dtype {a.dtype} to float32 values")
    return a.astype(np.float32), False


def typed(raw: np.ndarray, t: DType) -> np.ndarray:
    """raw bits (uint8/uint16/float32) viewed as the numpy type of t."""
    return raw.view(numpy_dtype(t))


def to_torch(a: np.ndarray, t: DType):
    """A numpy result as a torch tensor of the matching dtype (shares memory)."""
    import torch

    if a.dtype == np.uint16 or a.dtype.itemsize == 2 and a.dtype != np.float16:
        base = torch.from_dlpack(a.view(np.int16))
    elif a.dtype.itemsize == 1 and a.dtype not in (np.uint8, np.int8):
        base = torch.from_dlpack(a.view(np.uint8))
    else:
        base = torch.from_dlpack(a)
    want = torch_dtype(t) if t not in (DType.HIFLOAT8, DType.UINT8) else torch.uint8
    if want is None:
        want = torch.uint8
    return base.view(want) if base.dtype != want else base


def result(raw: np.ndarray, t: DType, as_torch: bool):
    out = typed(raw, t)
    return to_torch(out, t) if as_torch else out
