"""Quantized gradient reduction for torch's data-parallel trainers (qcoll.torch re-exports
these): the DDP hook, a ReduceScatter comm for FSDP2 (``fully_shard``), a sharded comm hook
for FSDP1 (``FullyShardedDataParallel``), and error feedback for all three.

Every one of them lays the flat gradient out as rows of ``_ROW_H`` elements, each rank's
chunk padded with zeros to whole rows (a group of 128 / 32 elements never crosses a row, so
the layout does not change the numbers), runs qcoll's operator on the group (the paths of
qcoll.torch: shm or torch), sums in float32 and rounds once to the gradient's dtype.

Error feedback (``error_feedback=True``): each rank keeps the residual of its own
quantization, ``e - dequantize(quantize(e))`` with ``e = gradient + residual``, and adds it
to the next step's gradient; the residual is in the state's ``state_dict()``.
"""


from typing import Optional

import torch
import torch.distributed as dist

from . import _core
from ._dtypes import DType
from . import quant as _quant
from . import torch as _qt
from .errors import invalid
from .ops import _run as _quant_op
from .ops import _run_fused as _fused_op

_ROW_H = 1024  # row length of the padded layout (a multiple of every mode's group size)

# How a mode's scales type quantizes (qcoll's mode table gives the element and scales
# types): a new scales type (e.g. FP4's) is one more entry here.
_QUANTIZERS = {
    "float": _quant.quantize_kg,        # KG: fp32 scale per 128 elements
    "float8_e8m0": _quant.quantize_mx,  # MX: E8M0 scale per 32 elements
}

# The reduce dtypes the comms take: the gradient is read as float32 (exactly) and the
# float32 sum is rounded once to this dtype.
_GRAD_DTYPES = (torch.float32, torch.bfloat16)


def _check_mode(mode, error_feedback: bool) -> tuple:
    """(x dtype, scales dtype) of a float-in mode, checked by the contract's own table
    (error feedback also quantizes here, so it needs the mode's quantizer)."""
    if not isinstance(mode, str):
        raise invalid(f"mode: must be a string ({', '.join(_qt.MODES)}), got {mode!r}")
    xd, sd = (_core_name(v) for v in _core.quant_mode(mode))
    if error_feedback and sd not in _QUANTIZERS:
        raise invalid(f"error_feedback: mode {mode!r} has {sd} scales, which qcoll.torch's error feedback does "
                      f"not quantize yet (it knows {', '.join(_QUANTIZERS)})")
    return xd, sd


def _core_name(v) -> str:
    from ._dtypes import DType

    return DType(v).spec_name


def _check_group_size(group, who: str, op: str) -> None:
    """Refuses a group size the operator `op` ("all-reduce", "reduce-scatter") does not take."""
    if dist.is_available() and dist.is_initialized():
        g = _qt._resolve_group(group)
        n = dist.get_world_size(g)
        if not _core.rank_count_allowed(n):  # under the current contract (QCOLL_CONTRACT, qcoll.set_contract)
            raise invalid(f"group: the quantized {op} takes a group of {_core.rank_count_rule()} ranks, got {n} "
                          f"({who} refuses it at once instead of failing in backward())")


def _rows(numel: int) -> int:
    return max(1, -(-numel // _ROW_H))


class _Residuals:
    """One rank's quantization residuals, by key (float32, the shape of what was sent)."""

    def __init__(self):
        self.by_key: dict = {}

    def add(self, key, x: torch.Tensor) -> torch.Tensor:
        """x (float32) plus the residual kept under key (a new tensor)."""
        r = self.by_key.get(key)
        if r is None:
            return x.clone()
        if r.shape != x.shape:
            raise invalid(f"error_feedback: the residual kept for {key!r} has shape {tuple(r.shape)}, the new input "
                          f"{tuple(x.shape)}: give each FSDP module (each bucket layout) its own state")
        return x + r

    def keep(self, key, e: torch.Tensor, sent: torch.Tensor) -> None:
        r = e - sent
        # A non-finite gradient element would make its residual NaN for good: it keeps none.
        r[~torch.isfinite(r)] = 0.0
        self.by_key[key] = r

    def state_dict(self) -> dict:
        return {"residuals": {k: v.clone() for k, v in self.by_key.items()}}

    def load_state_dict(self, sd: dict) -> None:
        if not isinstance(sd, dict) or "residuals" not in sd:
            raise invalid("state_dict: expected the dict of a state_dict() call (with 'residuals')")
        got = {}
        for k, v in sd["residuals"].items():
            if not isinstance(v, torch.Tensor) or v.dtype != torch.float32:
                raise invalid(f"state_dict: residual {k!r} must be a float32 tensor, got "
                              f"{getattr(v, 'dtype', type(v).__name__)}")
            got[k] = v.detach().to("cpu").clone()
        self.by_key = got


def _quantize_local(e: torch.Tensor, xd: str, sd: str):
    """(q, scales, what the peers will decode) of e (rows, H) float32."""
    q, s = _QUANTIZERS[sd](e, xd)
    return q, s, _quant.dequantize(q, s, x_dtype=xd, scales_dtype=sd)


class _Reducer:
    """The shared part: mode, error feedback, the padded layout and the operator call."""

    def __init__(self, mode: str, error_feedback: bool):
        self.mode = mode
        if not isinstance(error_feedback, bool):
            raise invalid(f"error_feedback: must be True or False, got {error_feedback!r}")
        self.x_dtype, self.scales_dtype = _check_mode(mode, error_feedback)
        self.error_feedback = error_feedback
        self.residuals = _Residuals()

    def state_dict(self) -> dict:
        """The residuals of error feedback (empty without it), for a checkpoint."""
        return {"mode": self.mode, "error_feedback": self.error_feedback, **self.residuals.state_dict()}

    def load_state_dict(self, sd: dict) -> None:
        """Restores what :meth:`state_dict` returned (the mode must be the same)."""
        if isinstance(sd, dict) and sd.get("mode", self.mode) != self.mode:
            raise invalid(f"state_dict: made for mode {sd.get('mode')!r}, this state has mode {self.mode!r}")
        self.residuals.load_state_dict(sd)

    def padded(self, flat: torch.Tensor, n: int, key) -> tuple:
        """flat: n rank chunks of c elements -> (x (n*R, H), c, e or None): each chunk padded
        to R whole rows; e: x plus the residual (error feedback)."""
        c = flat.numel() // n
        rows = _rows(c)
        if rows * _ROW_H == c and not self.error_feedback:
            return flat.view(n * rows, _ROW_H), c, None  # no copy (the fused operator reads bf16 too)
        x = torch.zeros(n, rows * _ROW_H, dtype=torch.float32)
        x[:, :c] = flat.view(n, c)
        x = x.view(n * rows, _ROW_H)
        if not self.error_feedback:
            return x, c, None
        return x, c, self.residuals.add(key, x)

    def reduce_scatter(self, c: _qt._GroupComm, x: torch.Tensor, e: Optional[torch.Tensor], key, reached) -> torch.Tensor:
        """The float32 (R, H) sum of the ranks' quantized rows for this rank (call inside
        the group's submit, reached[0] set before the operator)."""
        if e is None:
            reached[0] = True
            return _fused_op("rs", x, c.name, self.mode, "sum", DType.FLOAT, 0.0, x_param="input")
        q, s, sent = _quantize_local(e, self.x_dtype, self.scales_dtype)
        reached[0] = True
        out = _quant_op("rs", q, s, c.name, "sum", DType.FLOAT, self.x_dtype, self.scales_dtype)
        self.residuals.keep(key, e, sent)  # kept only once the call succeeded
        return out


def _scale_of(op, n: int) -> tuple:
    """(divide by, multiply by) for a torch ReduceOp as FSDP passes it: AVG -> (n, None), SUM
    -> (None, None), PREMUL_SUM(f) -> (None, f)."""
    kind = getattr(op, "op", op)
    R = dist.ReduceOp.RedOpType
    if kind == R.SUM:
        return None, None
    if kind == R.AVG:
        return n, None
    if kind == R.PREMUL_SUM:
        f = getattr(op, "factor", None)
        if isinstance(f, torch.Tensor):
            f = float(f.reshape(-1)[0]) if f.numel() == 1 else None
        if not isinstance(f, (int, float)):
            raise invalid(f"op: PREMUL_SUM with a factor qcoll cannot read ({f!r}): expected one number")
        return None, float(f)
    raise invalid(f"op: the quantized reduce-scatter sums (SUM, AVG, PREMUL_SUM), got {kind!r}")


def _write(out: torch.Tensor, total: torch.Tensor, c: int, div: Optional[int], mul: Optional[float]) -> None:
    """out (c elements) = the first c of total (float32), scaled in float32, rounded once."""
    t = total.reshape(-1)[:c]
    if div is not None:
        t = t / div
    if mul is not None:
        t = t * mul
    out.view(-1).copy_(t)


# ---- FSDP2 ---------------------------------------------------------------------------------

_fsdp2_base = object
try:  # torch >= 2.9: the comm interface of fully_shard
    from torch.distributed.fsdp._fully_shard._fsdp_api import ReduceScatter as _fsdp2_base  # noqa: F811
except ImportError:  # pragma: no cover - older torch
    pass


class FSDPReduceScatter(_fsdp2_base):
    """A ``ReduceScatter`` comm for FSDP2 (``module.set_custom_reduce_scatter(comm)``): the
    gradient reduce-scatter with quantized data on the wire (qcoll's QuantizeReduceScatter).

    FSDP hands a 1-D input of ``world_size`` rank chunks in the reduce dtype (float32 or
    bfloat16) and the chunk's output; ``op`` AVG divides the float32 sum by the group size,
    SUM keeps it, PREMUL_SUM(f) multiplies it by f (after ``set_gradient_divide_factor``),
    then the result is rounded once to the output's dtype. ``group``: None takes the group
    FSDP passes (its reduce-scatter group); a group given here is used instead.
    ``error_feedback``: see :class:`QuantHookState`; give each FSDP module its own comm
    (``quantize_fsdp_gradients`` does)."""

    def __init__(self, mode: str = "kg-int8", group=None, error_feedback: bool = False):
        self._reducer = _Reducer(mode, error_feedback)
        self.mode = mode
        self.group = group
        self.error_feedback = error_feedback
        _check_group_size(group, "FSDPReduceScatter", "reduce-scatter")

    def allocate(self, size, *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        if torch.device(device).type != "cpu":
            raise invalid(f"device: qcoll.torch reduces CPU tensors, got {device}")
        return torch.empty(size, dtype=dtype, device=device)

    def __call__(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor, group=None, op=None,
                 async_op: bool = False):
        g = self.group if self.group is not None else group
        comm = _qt._comm(g)
        n = comm.size

        def fn(reached):
            for name, t in (("input_tensor", input_tensor), ("output_tensor", output_tensor)):
                if not isinstance(t, torch.Tensor) or t.device.type != "cpu" or t.dtype not in _GRAD_DTYPES:
                    raise invalid(f"{name}: must be a CPU tensor of float32 or bfloat16, got "
                                  f"{getattr(t, 'dtype', type(t).__name__)} on {getattr(t, 'device', '?')}")
            if input_tensor.dim() != 1 or not input_tensor.is_contiguous() or input_tensor.numel() % n:
                raise invalid(f"input_tensor: must be 1-D and contiguous with a multiple of the group size ({n}) "
                              f"elements, got shape {tuple(input_tensor.shape)}")
            if output_tensor.numel() != input_tensor.numel() // n:
                raise invalid(f"output_tensor: must have input_tensor.numel() / {n} = {input_tensor.numel() // n} "
                              f"elements, got {output_tensor.numel()}")
            div, mul = _scale_of(dist.ReduceOp.AVG if op is None else op, n)
            x, c, e = self._reducer.padded(input_tensor.detach(), n, "input")
            total = self._reducer.reduce_scatter(comm, x, e, "input", reached)
            _write(output_tensor.detach(), total, c, div, mul)
            return None

        r = comm.submit(_qt._checked(comm, "rs", fn), async_op)
        return r  # a qcoll.torch.Work with async_op (its wait() finishes the call), else None

    def state_dict(self) -> dict:
        return self._reducer.state_dict()

    def load_state_dict(self, sd: dict) -> None:
        self._reducer.load_state_dict(sd)


def _fsdp2_modules(model):
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:
        raise invalid(f"model: FSDP2 (torch.distributed.fsdp.fully_shard, FSDPModule) is not in torch "
                      f"{torch.__version__}: quantize_fsdp_gradients needs torch 2.9 or later") from None
    if not hasattr(FSDPModule, "set_custom_reduce_scatter"):
        raise invalid(f"model: FSDPModule.set_custom_reduce_scatter is not in torch {torch.__version__}: "
                      f"a custom gradient reduce-scatter needs torch 2.9 or later")
    mods = [(name, m) for name, m in model.named_modules() if isinstance(m, FSDPModule)]
    if not mods:
        raise invalid("model: no module of it is an FSDP2 module: call torch.distributed.fsdp.fully_shard on "
                      "its layers and on the model first")
    return mods


def quantize_fsdp_gradients(model, mode: str = "kg-int8", error_feedback: bool = False, group=None) -> dict:
    """Sets an :class:`FSDPReduceScatter` (one per module) on every FSDP2 module of
    ``model`` (``fully_shard`` applied); returns them by module name ("" for ``model``
    itself), e.g. for their ``state_dict()`` in a checkpoint."""
    comms = {}
    for name, m in _fsdp2_modules(model):
        comm = FSDPReduceScatter(mode, group=group, error_feedback=error_feedback)
        m.set_custom_reduce_scatter(comm)
        comms[name] = comm
    return comms


# ---- FSDP1 ---------------------------------------------------------------------------------

class FSDPHookState:
    """State of :func:`quant_reduce_scatter_hook` (FSDP1's sharded comm hook): the group
    (default: the world group, which must be FSDP's process group), the mode and error
    feedback (the residual kept per flat parameter size: with FSDP units of equal size, give
    each unit its own state)."""

    def __init__(self, group=None, mode: str = "kg-int8", error_feedback: bool = False):
        self._reducer = _Reducer(mode, error_feedback)
        _check_group_size(group, "FSDPHookState", "reduce-scatter")
        self.group = group
        self.mode = mode
        self.error_feedback = error_feedback

    def state_dict(self) -> dict:
        return self._reducer.state_dict()

    def load_state_dict(self, sd: dict) -> None:
        self._reducer.load_state_dict(sd)


def quant_reduce_scatter_hook(state: FSDPHookState, grad: torch.Tensor, output: torch.Tensor) -> None:
    """FSDP1's sharded comm hook (``fsdp_model.register_comm_hook(state, hook)``): ``grad``
    the padded unsharded flat gradient (world_size chunks), ``output`` this rank's shard,
    written with the average over the group (as FSDP's default hook)."""
    comm = _qt._comm(state.group)
    n = comm.size

    def fn(reached):
        if grad.dtype not in _GRAD_DTYPES or output.dtype not in _GRAD_DTYPES:
            raise invalid(f"grad: the quantized reduce-scatter takes float32 or bfloat16 gradients, got {grad.dtype}")
        if grad.numel() != n * output.numel():
            raise invalid(f"output: must have grad.numel() / {n} elements, got {output.numel()} for {grad.numel()}")
        key = f"flat{grad.numel()}"
        x, c, e = state._reducer.padded(grad.detach().reshape(-1), n, key)
        total = state._reducer.reduce_scatter(comm, x, e, key, reached)
        _write(output.detach(), total, c, n, None)

    comm.submit(_qt._checked(comm, "rs", fn), False)


# ---- DDP -----------------------------------------------------------------------------------

class QuantHookState:
    """State of :func:`quant_allreduce_hook`: the group (default: the world group), the
    mode (see :data:`MODES`), the dtype of the all-reduced result (bfloat16 halves the
    all-gather's bytes; float32 keeps the sum exact) and error feedback (each rank adds the
    residual of its last quantization of each parameter's gradient to the next one; the
    residuals are in :meth:`state_dict`)."""

    def __init__(self, group=None, mode: str = "kg-int8", output_dtype=torch.bfloat16, error_feedback: bool = False):
        # Checked here, where the mistake is made, not inside the first backward(): the
        # mode, the output dtype and (once torch.distributed is initialised) the group and
        # its size, by the operators' own rules.
        self._reducer = _Reducer(mode, error_feedback)
        _qt._out_dtype(output_dtype, torch.bfloat16)
        _check_group_size(group, "QuantHookState", "all-reduce")
        self.group = group
        self.mode = mode
        self.output_dtype = output_dtype
        self.error_feedback = error_feedback
        # Residuals per parameter (DDP rebuilds its buckets after the first step): a
        # parameter's key is the order in which the hook first met it, the same in every
        # process that runs the same model (DDP launches its buckets in order).
        self._slots: dict = {}

    def state_dict(self) -> dict:
        return self._reducer.state_dict()

    def load_state_dict(self, sd: dict) -> None:
        self._reducer.load_state_dict(sd)

    def _keys(self, bucket) -> list:
        keys = []
        for p in bucket.parameters():
            k = self._slots.get(id(p))
            if k is None:
                k = self._slots[id(p)] = f"param{len(self._slots)}"
            keys.append(k)
        return keys


def _padded_rows(numel: int, n: int) -> int:
    rows = -(-numel // _ROW_H)
    return max(n, -(-rows // n) * n)


def _bucket_with_feedback(state: QuantHookState, bucket, flat: torch.Tensor, numel: int):
    """e = bucket + residuals (per parameter), and a function that keeps e's new residuals."""
    keys = state._keys(bucket)
    sizes = [gr.numel() for gr in bucket.gradients()]
    if sum(sizes) != numel:
        raise invalid(f"bucket: its gradients have {sum(sizes)} elements, its buffer {numel}")
    res = state._reducer.residuals
    e = flat.clone()
    at = 0
    for k, m in zip(keys, sizes):
        e[at:at + m] = res.add(k, flat[at:at + m])
        at += m

    def keep(e_rows: torch.Tensor, sent_rows: torch.Tensor) -> None:
        ev, sv = e_rows.reshape(-1), sent_rows.reshape(-1)
        pos = 0
        for k, m in zip(keys, sizes):
            res.keep(k, ev[pos:pos + m], sv[pos:pos + m])
            pos += m

    return e, keep


def quant_allreduce_hook(state: QuantHookState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """A DDP communication hook (``model.register_comm_hook(state, quant_allreduce_hook)``):
    averages the bucket over the group with a quantized all-reduce. The flat bucket is
    padded with zeros to (rows, 1024), rows a multiple of the group size."""
    buf = bucket.buffer()
    g = _qt._resolve_group(state.group)
    n = dist.get_world_size(g)
    numel = buf.numel()
    rows = _padded_rows(numel, n)
    x = torch.zeros(rows * _ROW_H, dtype=torch.float32)
    x[:numel] = buf.detach().reshape(-1)
    if not state.error_feedback:
        work = _qt.all_reduce(x.view(rows, _ROW_H), g, mode=state.mode, output_dtype=state.output_dtype,
                              async_op=True)
    else:
        e, keep = _bucket_with_feedback(state, bucket, x[:numel], numel)
        x[:numel] = e
        q, s, sent = _quantize_local(x.view(rows, _ROW_H), state._reducer.x_dtype, state._reducer.scales_dtype)
        work = _qt.quant_all_reduce(q, s, g, output_dtype=state.output_dtype, x_dtype=state._reducer.x_dtype,
                                    scales_dtype=state._reducer.scales_dtype, async_op=True)
        keep(x[:numel], sent.reshape(-1)[:numel])

    def finish(fut: torch.futures.Future) -> torch.Tensor:
        total = fut.value().reshape(-1)[:numel]
        return (total.to(torch.float32) / n).to(buf.dtype).view_as(buf)

    return work.get_future().then(finish)
