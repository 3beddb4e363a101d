"""torch_npu's quantized collectives, for porting Ascend scripts to a CPU (docs/ascend.md §python).

``npu_quant_reduce_scatter(x, scales, hcom, world_size, *, reduce_op="sum", output_dtype=None,
x_dtype=None, scales_dtype=None)`` and ``npu_quant_all_reduce(...)`` take torch_npu's
arguments and call :func:`qcoll.quant_reduce_scatter` / :func:`qcoll.quant_all_reduce`:

- ``hcom`` is the group name (a qcoll group name, or the name of an HCCL communicator);
  ``world_size`` must be 2, 4 or 8 (extended contract: in [2, 1024]) and the group's size;
- ``x_dtype`` / ``scales_dtype``: torch_npu's integer dtype codes (290 hifloat8,
  291 float8_e5m2, 292 float8_e4m3fn, 293 float8_e8m0fnu) or anything :func:`qcoll.to_dtype`
  takes (a name, a numpy / ml_dtypes / torch dtype, a :class:`qcoll.DType`);
- ``output_dtype``: a torch ScalarType code (5 float16, 6 float32, 15 bfloat16), a torch
  dtype, a name or a :class:`qcoll.DType`; None is bfloat16 (the vendor's default).

numpy arrays in, numpy arrays out; torch CPU tensors in, torch tensors out (torch optional).
"""

from __future__ import annotations

from typing import Any

from . import _core
from ._dtypes import DType, to_dtype
from .errors import invalid
from .groups import group_name
from .ops import quant_all_reduce, quant_reduce_scatter

#: torch_npu's codes for the 8-bit types torch itself lacks or names otherwise.
NPU_DTYPE_CODES = {
    290: DType.HIFLOAT8,
    291: DType.FLOAT8_E5M2,
    292: DType.FLOAT8_E4M3FN,
    293: DType.FLOAT8_E8M0,
}

#: torch ScalarType codes of the output dtypes.
TORCH_SCALAR_TYPE_CODES = {5: DType.FLOAT16, 6: DType.FLOAT, 15: DType.BFLOAT16}


def _is_code(spec: Any) -> bool:
    return isinstance(spec, int) and not isinstance(spec, (bool, DType))


def _input_dtype(spec: Any, param: str):
    if spec is None:
        return None
    if _is_code(spec):
        if spec in NPU_DTYPE_CODES:
            return NPU_DTYPE_CODES[spec]
        raise invalid(f"{param}: an integer must be a torch_npu dtype code "
                      f"(290 hifloat8, 291 float8_e5m2, 292 float8_e4m3fn, 293 float8_e8m0fnu), got {spec}")
    return to_dtype(spec, param)


def _output_dtype(spec: Any):
    if spec is None:
        return DType.BFLOAT16  # the vendor's default (torch_npu's signature)
    if _is_code(spec):
        if spec in TORCH_SCALAR_TYPE_CODES:
            return TORCH_SCALAR_TYPE_CODES[spec]
        raise invalid("output_dtype: an integer must be a torch ScalarType code (5 float16, 6 float32, "
                      f"15 bfloat16), got {spec}")
    return to_dtype(spec, "output_dtype")


def _check_world_size(hcom, world_size) -> None:
    # The operators' rank-count rule under the current contract (2, 4 or 8; extended: [2, 1024]).
    if not _is_code(world_size) or not _core.rank_count_allowed(world_size):
        raise invalid(f"world_size: must be {_core.rank_count_rule()}, got {world_size!r}")
    name = group_name(hcom)
    info = _core.resolve_group(name) if name is not None else None
    if info is not None and info[1] != world_size:
        raise invalid(f"world_size: must be the size of group '{name}' ({info[1]}), got {world_size}")


def npu_quant_reduce_scatter(x, scales, hcom, world_size, *, reduce_op: str = "sum", output_dtype=None,
                             x_dtype=None, scales_dtype=None):
    """torch_npu.npu_quant_reduce_scatter on a CPU: rank r gets row block r of the sum over the
    ranks of decode(x) * scales, shape (BS / world_size, H)."""
    _check_world_size(hcom, world_size)
    return quant_reduce_scatter(x, scales, hcom, reduce_op=reduce_op, output_dtype=_output_dtype(output_dtype),
                                x_dtype=_input_dtype(x_dtype, "x_dtype"),
                                scales_dtype=_input_dtype(scales_dtype, "scales_dtype"))


def npu_quant_all_reduce(x, scales, hcom, world_size, *, reduce_op: str = "sum", output_dtype=None,
                         x_dtype=None, scales_dtype=None):
    """torch_npu.npu_quant_all_reduce on a CPU: every rank gets the whole sum, of x's shape."""
    _check_world_size(hcom, world_size)
    return quant_all_reduce(x, scales, hcom, reduce_op=reduce_op, output_dtype=_output_dtype(output_dtype),
                            x_dtype=_input_dtype(x_dtype, "x_dtype"),
                            scales_dtype=_input_dtype(scales_dtype, "scales_dtype"))


__all__ = ["npu_quant_reduce_scatter", "npu_quant_all_reduce", "NPU_DTYPE_CODES", "TORCH_SCALAR_TYPE_CODES"]
