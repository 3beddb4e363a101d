"""The operators QuantReduceScatter and QuantAllReduce (contract.md §operation, §api), with the vendor's Python
signature ``(x, scales, group, *, reduce_op="sum", output_dtype=None, x_dtype=None,
scales_dtype=None)``; and the fused operators (contract.md §fused) from a float tensor,
``reduce_scatter(x, group, *, mode="kg-int8", output_dtype=None)`` and ``all_reduce`` (the output
in x's dtype unless output_dtype names another)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _core
from ._arrays import Bits, bits_of, check_not_pair, input_dtype, is_torch_tensor, result
from ._dtypes import DType, optional_dtype
from .errors import Error, invalid, renamed
from .groups import group_name
from .streams import Stream, Work


def _input(a: Any, explicit: Any, param: str, hint: str,
           raw_default: Optional[DType] = None) -> tuple[Optional[Bits], int]:
    """The bits of an operator input and its dtype value (None: PARAM_NULLPTR)."""
    b = bits_of(a, param)
    return b, int(input_dtype(b, explicit, f"{param}_dtype", param, hint, raw_default))


#: Not given (a required argument left out: a message instead of Python's TypeError).
_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<missing>"})()

_GROUP = "a group name or a group object (qcoll.ThreadGroup, qcoll.init_comm, qcoll.mpi.MpiGroup)"

#: The core's parameter names -> the Python API's, at the start of a message.
_QUANT_NAMES = {"reduceOp:": "reduce_op:", "output: dtype must": "output_dtype: must"}
_FUSED_NAMES = {"reduceOp:": "reduce_op:", "config.xDtype:": "mode:", "config.scalesDtype:": "mode:",
                "config.hif8Target:": "hif8_target:", "output: dtype must": "output_dtype: must"}


def mode_names() -> list:
    """The quantization modes of the current contract (vendor: six; extended: and the four
    4-bit ones), for messages; the vendor's where QCOLL_CONTRACT is bad (the call says why)."""
    try:
        extended = _core.get_contract() == "extended"
    except Error:
        extended = False
    return list(_core.quant_mode_names(extended))


def _is_group(obj: Any) -> bool:
    from .groups import CoreGroup, ThreadGroup

    return isinstance(obj, (str, ThreadGroup, CoreGroup))


def _call_shape(which: str, x, scales, group, stream) -> tuple[Any, Optional[str]]:
    """Refuses the wrong arities a newcomer writes (the (q, scales) pair as x, the scales left
    out, no group) with a message naming the parameter; returns (group, the name of the
    group to abstain on). The name is that of any group the call was given, so that a rank
    that fails here still fails its peers at once."""
    fn = "quant_reduce_scatter" if which == "rs" else "quant_all_reduce"
    given = scales if group is _MISSING and _is_group(scales) else group
    name = group_name(given) if _is_group(given) else None
    try:
        check_not_pair(x, "x", f"{fn}(q, scales, group) or {fn}(*qcoll.quantize_kg(x, dtype), group)")
        if scales is _MISSING:
            raise invalid(f"scales: missing: the call is {fn}(x, scales, group), with the scales of quantize_kg / "
                          "quantize_mx")
        if group is _MISSING:
            if _is_group(scales):
                raise invalid(f"scales: got the group {scales!r}, and no group: the call is {fn}(x, scales, group); "
                              "pass the scales (from quantize_kg / quantize_mx) before the group")
            raise invalid(f"group: missing: the call is {fn}(x, scales, group), with a group name or object")
        if group is None:
            raise invalid(f"group: must not be None; expected {_GROUP}")
    except Error:
        if stream is None and name is not None and _core.resolve_group(name) is not None:
            abstain(which, name)
        raise
    return group, name


def abstain(which: str, name: str) -> None:
    """Takes part in a call on group ``name`` as a rank whose call is invalid (a null
    reduceOp: PARAM_INVALID in phase one), so that the peers fail at once, naming this rank,
    instead of waiting for the timeout. For a rank that fails before reaching the operator."""
    fn = _core.quant_reduce_scatter if which == "rs" else _core.quant_all_reduce
    one = np.zeros(1, np.float32)
    try:
        fn(one.view(np.int8)[:1], int(DType.INT8), one, int(DType.FLOAT), name, None, one, int(DType.FLOAT))
    except Error:
        pass


def _checked(which: str, name: Optional[str], stream, check):
    """``check()``, the Python-side argument checks of a call on group ``name``; on a failure
    this rank still takes part in the call (the peers then fail at once), then reports why.
    (Not for a call meant for a stream: a call made now would overtake the enqueued ones.)"""
    try:
        if stream is not None:
            _check_stream(stream)
        return check()
    except Error:
        if stream is None and name is not None and _core.resolve_group(name) is not None:
            abstain(which, name)
        raise


def _check_reduce_op(reduce_op) -> None:
    if reduce_op is None:
        raise invalid('reduce_op: must be "sum", got None')


def _run(which: str, x, scales, group, reduce_op, output_dtype, x_dtype, scales_dtype, stream=None, out=None):
    group, _ = _call_shape(which, x, scales, group, stream)
    name = group_name(group)

    def check():
        _check_reduce_op(reduce_op)
        xb, xt = _input(x, x_dtype, "x", "e.g. 'hifloat8'")
        xb = xb.as_packed(DType(xt))  # 4-bit x: packed uint8 (..., H/2), the logical shape (..., H)
        sb, st = _input(scales, scales_dtype, "scales", "e.g. 'float8_e8m0'", DType.FLOAT8_E8M0)
        ot = optional_dtype(output_dtype, "output_dtype")
        ob = None
        if out is not None:
            ob, ot = _caller_output(which, out, ot, xb, (("x", xb), ("scales", sb)), name, in_place=False)
        return xb, xt, sb, st, ob, ot

    xb, xt, sb, st, ob, ot = _checked(which, name, stream, check)
    if ot is None:
        ot = DType.BFLOAT16  # the vendor's default
    raw = ob.raw if ob is not None else _output(which, xb, name, ot)
    fn = _core.quant_reduce_scatter if which == "rs" else _core.quant_all_reduce
    xr = None if xb is None else xb.raw
    sr = None if sb is None else sb.raw
    if stream is None:
        try:
            fn(xr, xt, sr, st, name, reduce_op, raw, int(ot))
        except Error as e:
            raise renamed(e, _QUANT_NAMES) from None
        return out if out is not None else result(raw, ot, xb is not None and xb.is_torch)
    # Enqueued: the stream keeps x, scales and out alive until a synchronize covered the call.
    fn(xr, xt, sr, st, name, reduce_op, raw, int(ot), stream._s, (x, scales, xr, sr, out, raw))
    return Work(stream, out if out is not None else result(raw, ot, xb is not None and xb.is_torch))


def _output_shape(which: str, xb: Optional[Bits], name: Optional[str]) -> Optional[tuple]:
    """The contract's output shape for x's shape and the group's size; None when the name is
    unknown to this thread, x is missing or has no such shape (the operator then rejects the
    call before writing anything)."""
    if xb is None or name is None:
        return None
    info = _core.resolve_group(name)
    if info is None:
        return None
    want = _core.output_shape(which, list(xb.shape), info[1])
    return None if want is None else tuple(want)


def _output(which: str, xb: Optional[Bits], name: Optional[str], ot: DType) -> np.ndarray:
    """A new output array for a call. Any shape will do where the contract has none for the
    call: the operator rejects it then. (np.zeros costs no more than np.empty here: a large
    array is fresh zero pages either way, faulted in as the operator writes them.)"""
    shape = _output_shape(which, xb, name)
    if shape is None:
        shape = (1,) if xb is None else xb.shape
    return np.zeros(shape, np.dtype({1: np.uint8, 2: np.uint16, 4: np.float32}[ot.itemsize]))


_OUT_DTYPES = (DType.FLOAT, DType.FLOAT16, DType.BFLOAT16)


def _address_range(a: np.ndarray) -> tuple[int, int]:
    start = a.__array_interface__["data"][0]
    return start, start + a.nbytes


def _caller_output(which: str, out: Any, ot: Optional[DType], xb: Optional[Bits], inputs, name: Optional[str],
                   in_place: bool) -> tuple[Bits, DType]:
    """Checks a caller's ``out`` (rules of docs/python.md §out) before anything runs, so that
    a refused call writes nothing; returns its bits and the output dtype (out's own dtype;
    ``output_dtype``, when given too, must name the same). ``inputs``: (name, bits) of the
    call's inputs, which out must not overlap; ``in_place``: out may be the first input
    itself (same memory, shape and dtype), the all-reduce's in-place form."""
    if xb is not None and xb.is_torch != is_torch_tensor(out):
        want = "a torch.Tensor (the input is one)" if xb.is_torch else "a numpy array (the input is one)"
        raise invalid(f"out: must be {want}, got {type(out).__module__}.{type(out).__name__}")
    if not is_torch_tensor(out) and not isinstance(out, np.ndarray):
        raise invalid(f"out: must be a numpy array or a torch CPU tensor, got {type(out).__name__}")
    ob = bits_of(out, "out")
    if ob.dtype not in _OUT_DTYPES:
        got = f"raw {ob.raw.dtype} codes" if ob.dtype is None else ob.dtype.spec_name
        raise invalid(f"out: dtype must be float, float16 or bfloat16, got {got}")
    if ot is not None and ot != ob.dtype:
        raise invalid(f"out: dtype is {ob.dtype.spec_name}, but output_dtype={ot.spec_name} was given "
                      "(give one of them, or the same)")
    want = _output_shape(which, xb, name)
    if want is not None and tuple(ob.raw.shape) != want:
        rule = "(BS/n, H)" if which == "rs" else "the input's shape"
        raise invalid(f"out: shape must be {rule} = {want} for this call, got {tuple(ob.raw.shape)}")
    if not ob.raw.flags.c_contiguous:
        raise invalid(f"out: must be contiguous (row-major), got strides {tuple(ob.raw.strides)} (bytes) for shape "
                      f"{tuple(ob.raw.shape)}")
    if not ob.raw.flags.writeable:
        raise invalid("out: must be writeable, got a read-only array")
    lo, hi = _address_range(ob.raw)
    for k, (param, b) in enumerate(inputs):
        if b is None or b.raw.size == 0 or ob.raw.size == 0 or not np.may_share_memory(ob.raw, b.raw):
            continue
        if in_place and k == 0:
            same = (b.raw.flags.c_contiguous and _address_range(b.raw) == (lo, hi) and b.dtype == ob.dtype
                    and b.raw.shape == ob.raw.shape)
            if same:
                continue
            raise invalid(f"out: overlaps {param} without being {param} itself; the all-reduce writes in place only "
                          f"into {param} itself (same memory, shape and dtype)")
        raise invalid(f"out: overlaps {param} (the output must not overlap the inputs)")
    return ob, ob.dtype


def _check_stream(stream) -> None:
    if not isinstance(stream, Stream):
        raise invalid(f"stream: expected a qcoll.Stream or None, got {type(stream).__name__}")


def _run_fused(which: str, x, group, mode, reduce_op, output_dtype, hif8_target, stream=None, out=None,
               x_param: str = "x"):
    if group is _MISSING:
        fn = "reduce_scatter" if which == "rs" else "all_reduce"
        raise invalid(f"group: missing: the call is {fn}({x_param}, group, *, mode=...), with a group name or object")
    if group is None:
        raise invalid(f"group: must not be None; expected {_GROUP}")
    name = group_name(group)

    def check():
        _check_reduce_op(reduce_op)
        xb = bits_of(x, x_param)
        if xb.dtype is None:
            raise invalid(f"{x_param}: must hold float32, float16 or bfloat16 values, got raw {xb.raw.dtype} codes")
        if not isinstance(mode, str):
            raise invalid(f"mode: must be a string ({', '.join(mode_names())}), got {mode!r}")
        ot = optional_dtype(output_dtype, "output_dtype")
        ob = None
        if out is not None:
            ob, ot = _caller_output(which, out, ot, xb, ((x_param, xb),), name, in_place=which == "ar")
        return (xb, *_core.quant_mode(mode), ob, ot)

    xb, x_dtype, scales_dtype, ob, ot = _checked(which, name, stream, check)
    if ot is None:
        # Float in: the input's dtype, as torch's collectives (and qcoll.torch) return it.
        ot = xb.dtype if xb.dtype in (DType.FLOAT, DType.FLOAT16, DType.BFLOAT16) else DType.BFLOAT16
    raw = ob.raw if ob is not None else _output(which, xb, name, ot)
    fn = _core.quantize_reduce_scatter if which == "rs" else _core.quantize_all_reduce
    xr = None if xb is None else xb.raw
    args = (xr, -1 if xb is None else int(xb.dtype), x_dtype, scales_dtype, float(hif8_target), name, reduce_op,
            raw, int(ot))
    if stream is None:
        try:
            fn(*args)
        except Error as e:
            raise renamed(e, {**_FUSED_NAMES, "input:": x_param + ":"}) from None
        return out if out is not None else result(raw, ot, xb is not None and xb.is_torch)
    fn(*args, stream._s, (x, xr, out, raw))
    return Work(stream, out if out is not None else result(raw, ot, xb is not None and xb.is_torch))


def reduce_scatter(x, group=_MISSING, *, mode: str = "kg-int8", output_dtype=None, reduce_op: str = "sum",
                   hif8_target: float = 0.0, stream: Optional[Stream] = None, out=None):
    """QuantizeReduceScatter, the fused operator: quantizes ``x`` in ``mode`` and reduce-scatters
    it in one call. Rank r gets its row block r of the sum, exactly the bits of
    ``quantize_kg``/``quantize_mx`` followed by :func:`quant_reduce_scatter`.

    ``x``: (BS, H) or (B, S, H) of float32, float16 or bfloat16 (numpy / ml_dtypes, or a torch
    CPU tensor). ``mode``: kg-int8, kg-hif8, kg-e4m3, kg-e5m2 (per-token-per-group, fp32
    scales per 128) or mx-e4m3, mx-e5m2 (OCP MX, E8M0 scales per 32); under the extended
    contract also kg-e2m1, kg-e1m2, mx-e2m1, mx-e1m2 (4-bit x). ``hif8_target``: the
    kg-hif8 target (0: the default). ``output_dtype``: float, float16 or bfloat16 (default:
    x's dtype, as torch's collectives return it).
    Returns a (BS/n, H) array (a torch tensor for a torch x); on a ``stream`` a
    :class:`qcoll.Work`. ``out``: an array the caller owns (numpy for a numpy x, a torch
    tensor for a torch one) of the result's shape, float32 / float16 / bfloat16 (its dtype
    is the output dtype), contiguous, writeable, not overlapping x; written and returned
    instead of a new array (nothing written when the call fails). Raises qcoll.Error.
    """
    return _run_fused("rs", x, group, mode, reduce_op, output_dtype, hif8_target, stream, out)


def all_reduce(x, group=_MISSING, *, mode: str = "kg-int8", output_dtype=None, reduce_op: str = "sum",
               hif8_target: float = 0.0, stream: Optional[Stream] = None, out=None):
    """QuantizeAllReduce, the fused operator: every rank gets the full reduction, of x's shape
    (see :func:`reduce_scatter` for the arguments). ``out`` may be ``x`` itself (in place, as
    ``torch.distributed.all_reduce``; the same bits as a new output)."""
    return _run_fused("ar", x, group, mode, reduce_op, output_dtype, hif8_target, stream, out)


def quant_reduce_scatter(x, scales=_MISSING, group=_MISSING, *, reduce_op: str = "sum", output_dtype=None,
                         x_dtype=None, scales_dtype=None, stream: Optional[Stream] = None, out=None):
    """QuantReduceScatter: rank r gets, for its row block r, the fp32 sum over ranks 0..n-1
    (in that order) of decode(x_k) * scale_k, cast to ``output_dtype`` (default bfloat16).

    ``x``: (BS, H) or (B, S, H) of int8, hifloat8 (uint8 + ``x_dtype="hifloat8"``),
    float8_e4m3fn or float8_e5m2; under the extended contract also 4-bit x, packed two
    codes a byte: uint8 (BS, H/2) with ``x_dtype`` float4_e2m1 / float4_e1m2, a
    torch.float4_e2m1fn_x2 tensor, or an ml_dtypes float4_e2m1fn array (BS, H) (packed
    here, a copy). ``scales``: float32 (BS, H/128) (KG), or E8M0
    (BS, H/64, 2) (MX; uint8 bytes also accepted, taken as E8M0).
    ``group``: a group name or object joined by the calling thread/process.
    Returns a (BS/n, H) array (a torch tensor for a torch x). Raises qcoll.Error.
    ``stream``: a :class:`qcoll.Stream`: the call is enqueued and a :class:`qcoll.Work` is
    returned at once; its ``wait()`` gives the array (or raises the call's failure).
    ``out``: a caller-owned output, as for :func:`reduce_scatter` (not overlapping x or scales).
    """
    return _run("rs", x, scales, group, reduce_op, output_dtype, x_dtype, scales_dtype, stream, out)


def quant_all_reduce(x, scales=_MISSING, group=_MISSING, *, reduce_op: str = "sum", output_dtype=None,
                     x_dtype=None, scales_dtype=None, stream: Optional[Stream] = None, out=None):
    """QuantAllReduce: every rank gets the full reduction, of x's shape (see
    :func:`quant_reduce_scatter` for the arguments, ``stream`` and ``out`` included)."""
    return _run("ar", x, scales, group, reduce_op, output_dtype, x_dtype, scales_dtype, stream, out)
