"""qcoll over torch.distributed: the quantized operators on a ProcessGroup, for CPU tensors.

Under ``torchrun --nproc_per_node 4 script.py`` (gloo), every rank calls::

    import torch.distributed as dist
    import qcoll.torch as qt
    dist.init_process_group("gloo")
    out = qt.all_reduce(x, mode="kg-int8")                # float in: the fused operator (quantized on the wire)
    out = qt.quant_reduce_scatter(q, scales)              # already quantized (q, scales)
    work = qt.all_reduce(x, async_op=True); ...; out = work.wait()

``group`` is a ProcessGroup (default: the world group). The first call on a group creates
its qcoll communicator (collective over the group, bounded by ``QCOLL_TIMEOUT_S``) and
caches it; :func:`release` drops it. Two paths, chosen once per group:

- ``shm``: every rank of the group on one host, and qcoll has the MPI-free bootstrap
  (``qcoll.init_comm``): the shared-memory transport, bootstrapped through the group (rank
  0 makes a unique id and the group broadcasts it);
- ``torch``: otherwise, or when ``QCOLL_TRANSPORT=torch``: the bytes move through the group
  itself (``all_to_all_single`` and ``all_gather_into_tensor``) and qcoll's own kernel sums
  them.

Both give the same bits as the thread transport (the agreement on the call, the kernels and
the output staging are qcoll's in both). ``QCOLL_TRANSPORT`` here: ``auto`` (default),
``shm`` (an error when the ranks are not on one host) or ``torch``; it must be the same on
every rank of the group.

Calls on one group run one at a time, in the order they were made: a synchronous call with
nothing pending on the calling thread, the others on one worker thread per group
(``async_op=True`` returns at once with a :class:`Work`). While an async call is pending,
do not run other collectives on the same group yourself: on the ``torch`` path qcoll's
transfers use the group, and gloo pairs collectives by their order.

After a timeout or a failed transfer the group's communicator is broken: every later call
on the group raises at once (a collective of the group may still be pending); call
:func:`release` and use a new group.
"""

import atexit
import concurrent.futures
import datetime
import os
import socket
import threading
import time
import warnings
import weakref
from typing import Any, Optional

import torch
import torch.distributed as dist

from . import _core
from . import comm as _qcoll_comm
from ._arrays import check_not_pair
from ._dtypes import DType, to_dtype
from .errors import Error, invalid, missing
from .ops import _run as _quant_op
from .ops import _run_fused as _fused_op
from .ops import abstain

__all__ = [
    "quant_reduce_scatter", "quant_all_reduce", "reduce_scatter", "all_reduce",
    "Work", "QuantHookState", "quant_allreduce_hook", "MODES", "EXTENDED_MODES",
    "FSDPReduceScatter", "quantize_fsdp_gradients", "FSDPHookState", "quant_reduce_scatter_hook",
    "transport", "release", "init_process_group",
]

#: The float-in modes of the vendor contract (qcoll's mode table): name -> (x dtype, scales
#: dtype). KG: fp32 scales per 128 elements; MX: E8M0 scales per 32 elements.
MODES = {m: (DType(x).spec_name, DType(s).spec_name) for m, x, s in _core.quant_mode_table(False)}
#: Every mode of the extended contract: MODES and the 4-bit ones (kg-e2m1, kg-e1m2, mx-e2m1,
#: mx-e1m2), taken only under QCOLL_CONTRACT=extended or qcoll.set_contract("extended").
EXTENDED_MODES = {m: (DType(x).spec_name, DType(s).spec_name) for m, x, s in _core.quant_mode_table(True)}

_TRANSPORTS = ("auto", "shm", "torch")
_ID_BYTES = int(_core.unique_id_bytes)
_HELLO_BYTES = 256
_incarnations: dict = {}  # torch group name -> communicators made for it
_comms: dict = {}  # ProcessGroup -> _GroupComm
_comms_lock = threading.Lock()


# ---- the communicator of a group ---------------------------------------------------------

def _timeout() -> datetime.timedelta:
    return datetime.timedelta(seconds=float(_core.timeout_seconds()))


def _wait(work, what: str, timeout: datetime.timedelta, tensors=()) -> None:
    """Waits for a call of qcoll's on the group; its tensors are then held (_hold)."""
    try:
        work.wait(timeout=timeout)
    except Exception as e:  # noqa: BLE001 - gloo raises RuntimeError (timeout) and others
        raise RuntimeError(f"{what} on the group, waiting at most {timeout.total_seconds():g} s (what was left "
                           f"of QCOLL_TIMEOUT_S): {type(e).__name__}: {e}") from None
    _hold(tensors)


# The tensors of qcoll's own calls on the group, weakly referenced until torch lets go of
# them. A gloo worker thread drops its reference to a call's tensors a moment after the call
# completed (after wait() returned: in about 2 calls of 3 here). If the interpreter is
# finalizing by then, the worker's taking of the GIL to drop a tensor that Python made ends
# the process: "terminate called without an active exception" from
# ProcessGroupGloo::runLoop (seen under load, with a script that exits right after its first
# qcoll call, whose set-up calls are its last ones on the group). release() and the exit
# handler wait for those references to go (_settle), while the interpreter is whole.
_held: list = []
_held_lock = threading.Lock()
_SETTLE_S = 5.0  # the longest release() / exit waits for them


def _hold(tensors) -> None:
    with _held_lock:
        _held[:] = [r for r in _held if r() is not None]
        _held.extend(weakref.ref(t) for t in tensors)


def _settle(limit_s: float = _SETTLE_S) -> bool:
    """Waits (GIL released) until torch dropped the held tensors, at most limit_s; True if it did."""
    deadline = time.monotonic() + limit_s
    while True:
        with _held_lock:
            _held[:] = [r for r in _held if r() is not None]
            if not _held:
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)


def _host_key() -> str:
    """What ranks on one host share: the host name and the kernel's boot id."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"


def _transport_setting() -> str:
    """QCOLL_TRANSPORT as this rank reads it ("auto" when unset; checked once every rank's
    reading is known, so that a bad value fails every rank at once)."""
    return os.environ.get("QCOLL_TRANSPORT", "").strip()[:64] or "auto"


def _has_shm_bootstrap() -> bool:
    """qcoll has the MPI-free bootstrap (qcoll.init_comm: shared memory, ranks on one host)."""
    return hasattr(_qcoll_comm, "init_comm")


class _TorchCollectives:
    """The torch path's collectives, called by qcoll (on the worker thread) with its own
    buffers as uint8 numpy arrays; each bounded by what is left of QCOLL_TIMEOUT_S. (Holds
    the group only: the qcoll communicator holds this, and no cycle goes through C++.)"""

    def __init__(self, group):
        self.group = group

    def all_gather(self, send, recv, timeout_ms: int) -> None:
        r, s = torch.from_numpy(recv), torch.from_numpy(send)
        w = dist.all_gather_into_tensor(r, s, group=self.group, async_op=True)
        _wait(w, "all_gather_into_tensor", datetime.timedelta(milliseconds=timeout_ms), (r, s))

    def all_to_all(self, send, recv, timeout_ms: int) -> None:
        r, s = torch.from_numpy(recv), torch.from_numpy(send)
        w = dist.all_to_all_single(r, s, group=self.group, async_op=True)
        _wait(w, "all_to_all_single", datetime.timedelta(milliseconds=timeout_ms), (r, s))


def _comm_name(group) -> str:
    """The same on every rank: the torch group's name and how many communicators this
    process made for a group of that name before."""
    base = f"torch:{group.group_name}"[:100]
    k = _incarnations.get(base, 0)
    _incarnations[base] = k + 1
    return base if k == 0 else f"{base}#{k}"


class _GroupComm:
    """One group's qcoll communicator, its path and its worker thread."""

    def __init__(self, group):
        self.group = group
        self.rank = dist.get_rank(group)
        self.size = dist.get_world_size(group)
        self.name = ""
        self.transport = ""
        self._handle = None
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="qcoll-torch")
        # One call at a time on the communicator, in the order made: a synchronous call with
        # nothing queued runs on the caller's thread (no hand-over to the worker and back,
        # which costs a wake-up each way, milliseconds on a loaded host); otherwise, and for
        # async_op, on the worker.
        self._run_lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queued = 0  # calls submitted to the worker and not finished
        self._setup()

    def _setup(self) -> None:
        setting = _transport_setting()
        timeout = _timeout()
        # Every rank says where it runs and what it asks for; all decide alike from that.
        hello = f"{setting}|{_host_key()}".encode()[:_HELLO_BYTES]
        mine = torch.zeros(_HELLO_BYTES, dtype=torch.uint8)
        mine[: len(hello)] = torch.frombuffer(bytearray(hello), dtype=torch.uint8)
        every = torch.zeros(self.size * _HELLO_BYTES, dtype=torch.uint8)
        try:
            _wait(dist.all_gather_into_tensor(every, mine, group=self.group, async_op=True),
                  "all_gather_into_tensor", timeout, (every, mine))
        except RuntimeError as e:
            raise Error(361001, f"group: creating the qcoll communicator of the group (rank {self.rank} of "
                                f"{self.size}) failed within QCOLL_TIMEOUT_S = {timeout.total_seconds():g} s: "
                                f"{e}") from None
        hellos = [bytes(every[k * _HELLO_BYTES:(k + 1) * _HELLO_BYTES].tolist()).rstrip(b"\0").decode()
                  for k in range(self.size)]
        settings = [h.split("|", 1)[0] for h in hellos]
        hosts = [h.split("|", 1)[1] for h in hellos]
        bad = [k for k, t in enumerate(settings) if t not in _TRANSPORTS]
        if bad:
            text = f"QCOLL_TRANSPORT: qcoll.torch moves data by shared memory or through the group: must be " \
                   f"auto, shm or torch"
            if self.rank in bad:
                raise invalid(f"{text}, got {setting!r}")
            raise Error(361001, f"{text}; rank {bad[0]} has {settings[bad[0]]!r}")
        if len(set(settings)) != 1:
            seen = ", ".join(f"rank {k}: {t}" for k, t in enumerate(settings))
            raise Error(361001, f"QCOLL_TRANSPORT: must be the same on every rank of the group, got {seen}")
        one_host = len(set(hosts)) == 1
        if setting == "shm" and not one_host:
            raise invalid("QCOLL_TRANSPORT: shm needs every rank of the group on one host, got "
                          f"{len(set(hosts))} hosts")
        if setting == "shm" and not _has_shm_bootstrap():
            raise invalid("QCOLL_TRANSPORT: shm needs the MPI-free bootstrap (qcoll.init_comm), "
                          "which this qcoll does not have")
        self.name = _comm_name(self.group)
        use_shm = setting != "torch" and one_host and _has_shm_bootstrap()
        if not use_shm or not self._setup_shm(timeout, setting == "shm"):
            fns = _TorchCollectives(self.group)
            self._handle = _core.ExternalComm(self.name, self.size, self.rank, fns.all_gather, fns.all_to_all)
            self.transport = "torch"

    def _setup_shm(self, timeout: datetime.timedelta, forced: bool) -> bool:
        """The shm communicator, bootstrapped through the group: rank 0 makes the unique id,
        the group broadcasts it, every rank joins (bounded by QCOLL_TIMEOUT_S). Then the
        ranks all-gather whether they joined: if one did not, every rank drops what it made
        and (unless QCOLL_TRANSPORT=shm) all take the torch path. Returns True on shm."""
        ids = torch.zeros(_ID_BYTES, dtype=torch.uint8)
        if self.rank == 0:
            ids[:] = torch.frombuffer(bytearray(_qcoll_comm.UniqueId().bytes), dtype=torch.uint8)
        root = dist.get_global_rank(self.group, 0)
        try:
            _wait(dist.broadcast(ids, src=root, group=self.group, async_op=True), "broadcast", timeout, (ids,))
        except RuntimeError as e:
            raise Error(361001, f"group: the unique id of the group's shared-memory communicator did not arrive "
                                f"from rank 0 within QCOLL_TIMEOUT_S = {timeout.total_seconds():g} s: {e}") from None
        failure = None
        try:
            self._handle = _qcoll_comm.init_comm(self.name, self.size, _qcoll_comm.UniqueId(bytes(ids.tolist())),
                                                 self.rank)
        except Error as e:
            failure = e
        mine = torch.tensor([0 if failure is None else 1], dtype=torch.int32)
        every = torch.zeros(self.size, dtype=torch.int32)
        try:
            _wait(dist.all_gather_into_tensor(every, mine, group=self.group, async_op=True), "all_gather_into_tensor",
                  timeout, (every, mine))
        except RuntimeError as e:
            raise Error(361001, f"group: agreeing on the shared-memory communicator failed: {e}") from None
        if int(every.sum()) == 0:
            self.transport = "shm"
            return True
        if self._handle is not None:
            self._handle.destroy()
            self._handle = None
        failed = [k for k in range(self.size) if int(every[k])]
        why = f"the shared-memory communicator failed on rank(s) {failed}" + (f": {failure}" if failure else "")
        if forced:
            if failure is not None:
                raise failure
            raise Error(361001, f"QCOLL_TRANSPORT=shm: {why}")
        warnings.warn(f"qcoll.torch: {why}; the group's calls move through the group instead", RuntimeWarning)
        return False

    def check(self) -> None:
        if self._handle is None:
            raise invalid("group: the qcoll communicator of this group was released")

    def submit(self, fn, async_op: bool):
        self.check()
        if not async_op:
            with self._queue_lock:
                inline = self._queued == 0 and self._run_lock.acquire(blocking=False)
            if inline:
                try:
                    return fn()
                finally:
                    self._run_lock.release()

        def job():
            try:
                with self._run_lock:
                    return fn()
            finally:
                with self._queue_lock:
                    self._queued -= 1

        with self._queue_lock:
            self._queued += 1
        fut = self._worker.submit(job)
        if async_op:
            return Work(fut)
        return fut.result()

    def close(self) -> None:
        self._worker.shutdown(wait=True)
        if self._handle is not None:
            self._handle.destroy()
            self._handle = None


def _resolve_group(group):
    if not dist.is_available() or not dist.is_initialized():
        raise invalid("group: torch.distributed is not initialised: call torch.distributed.init_process_group first")
    g = dist.group.WORLD if group is None else group
    if not isinstance(g, dist.ProcessGroup):
        raise invalid(f"group: expected a torch.distributed ProcessGroup or None (the world group), "
                      f"got {type(group).__name__}")
    if dist.get_rank(g) < 0:
        raise invalid("group: this process is not a member of the group")
    backend = str(dist.get_backend(g))
    if "gloo" not in backend and "mpi" not in backend:
        raise invalid(f"group: the group's backend must move CPU tensors (gloo or mpi), got {backend!r}")
    return g


def _comm(group) -> _GroupComm:
    g = _resolve_group(group)
    with _comms_lock:
        c = _comms.get(g)
        if c is None:
            c = _GroupComm(g)
            _comms[g] = c
        return c


def transport(group=None) -> str:
    """The path the group's calls take: ``"shm"`` or ``"torch"`` (creates the communicator;
    collective on first use)."""
    return _comm(group).transport


def release(group=None) -> None:
    """Drops the group's qcoll communicator (not collective); the next call makes a new
    one. Call it before ``torch.distributed.destroy_process_group``. Returns once torch let
    go of the tensors of qcoll's calls on the group (at most 5 s: see _hold)."""
    g = dist.group.WORLD if group is None else group
    with _comms_lock:
        c = _comms.pop(g, None)
    if c is not None:
        c.close()
    _settle()


@atexit.register
def _release_all() -> None:
    with _comms_lock:
        comms = list(_comms.values())
        _comms.clear()
    for c in comms:
        try:
            c.close()
        except Exception:  # noqa: BLE001 - at exit, nothing to report to
            pass
    _settle()


def init_process_group(backend: str = "gloo", **kwargs) -> None:
    """``torch.distributed.init_process_group(backend, **kwargs)`` that also works under
    mpirun: when ``RANK`` is unset, RANK / WORLD_SIZE / LOCAL_RANK come from Open MPI's or
    MPICH's environment, MASTER_ADDR defaults to 127.0.0.1 and MASTER_PORT to 29500 (set
    them for several hosts); with another ``init_method`` (``file://PATH``, ``tcp://``)
    the rank and world size found there are passed on."""
    env = os.environ
    if "RANK" not in env:
        for rank, size, local in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
                                  ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID")):
            if rank in env and size in env:
                env["RANK"], env["WORLD_SIZE"] = env[rank], env[size]
                env.setdefault("LOCAL_RANK", env.get(local, "0"))
                break
        env.setdefault("MASTER_ADDR", "127.0.0.1")
        env.setdefault("MASTER_PORT", "29500")
    # An init_method other than env:// (a file:// or tcp:// rendezvous) takes the rank and
    # the size as arguments: the ones found above.
    if kwargs.get("init_method", "env://") != "env://" and "RANK" in env and "WORLD_SIZE" in env:
        kwargs.setdefault("rank", int(env["RANK"]))
        kwargs.setdefault("world_size", int(env["WORLD_SIZE"]))
    dist.init_process_group(backend, **kwargs)


# ---- results of async calls ---------------------------------------------------------------

class Work:
    """A call started with ``async_op=True``. ``wait()`` returns its result tensor (or
    raises its qcoll.Error); ``get_future()`` gives a ``torch.futures.Future`` of it."""

    def __init__(self, fut: concurrent.futures.Future):
        self._fut = fut

    def wait(self, timeout: Optional[float] = None):
        """The result, after waiting at most ``timeout`` seconds (None: until done; the
        call itself is bounded by QCOLL_TIMEOUT_S)."""
        return self._fut.result(timeout)

    def is_completed(self) -> bool:
        return self._fut.done()

    def result(self):
        return self.wait()

    def get_future(self) -> "torch.futures.Future[torch.Tensor]":
        tf: torch.futures.Future = torch.futures.Future()

        def done(f: concurrent.futures.Future) -> None:
            e = f.exception()
            if e is not None:
                tf.set_exception(e)
            else:
                tf.set_result(f.result())

        self._fut.add_done_callback(done)
        return tf


# ---- the operators ------------------------------------------------------------------------

def _checked(c: _GroupComm, which: str, fn):
    """Runs fn(reached); if it fails before reaching the operator (reached[0] still False),
    takes part in the call anyway (qcoll.ops.abstain), so that the peers fail at once."""
    reached = [False]

    def run():
        try:
            return fn(reached)
        except BaseException:
            if not reached[0]:
                abstain(which, c.name)
            raise

    return run


def _cpu_tensor(t: Any, param: str):
    if param == "x":
        check_not_pair(t, "x", "quant_reduce_scatter(q, scales) or quant_reduce_scatter(*qcoll.quantize_kg(x, dtype))")
    if t is None:
        raise missing(param, "a torch CPU tensor")
    if param == "scales" and isinstance(t, dist.ProcessGroup):
        raise invalid("scales: got a ProcessGroup: the call is quant_reduce_scatter(x, scales, group=None); "
                      "pass the scales (from qcoll.quantize_kg / quantize_mx) before the group")
    if not isinstance(t, torch.Tensor):
        raise invalid(f"{param}: expected a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise invalid(f"{param}: only CPU tensors are supported, got a tensor on {t.device}")
    return t.detach().contiguous()


def _out_dtype(output_dtype: Any, default: Any, out: Any = None) -> Optional[DType]:
    """The output dtype: output_dtype, else out's own (None: qcoll.ops takes out's), else the default."""
    if output_dtype is None and out is not None:
        return None
    t = default if output_dtype is None else output_dtype
    d = to_dtype(t, "output_dtype")
    if d not in (DType.FLOAT, DType.FLOAT16, DType.BFLOAT16):
        raise invalid(f"output_dtype: must be float32, float16 or bfloat16, got {d.spec_name}")
    return d


def _out_tensor(out: Any):
    """A caller's ``out`` as given (qcoll.ops checks the rest: shape, dtype, layout, overlap)."""
    if out is None:
        return None
    if not isinstance(out, torch.Tensor):
        raise invalid(f"out: expected a torch.Tensor, got {type(out).__name__}")
    if out.device.type != "cpu":
        raise invalid(f"out: only CPU tensors are supported, got a tensor on {out.device}")
    return out.detach()


def _quant(which: str, group, x, scales, output_dtype, x_dtype, scales_dtype, async_op: bool, out=None):
    c = _comm(group)

    def fn(reached):
        xt = _cpu_tensor(x, "x")
        st = _cpu_tensor(scales, "scales")
        ot = _out_tensor(out)
        od = _out_dtype(output_dtype, torch.bfloat16, ot)
        reached[0] = True
        r = _quant_op(which, xt, st, c.name, "sum", od, x_dtype, scales_dtype, out=ot)
        return r if out is None else out

    return c.submit(_checked(c, which, fn), async_op)


def _float(which: str, group, input, mode: str, output_dtype, async_op: bool, out=None):
    c = _comm(group)

    def fn(reached):
        x = _cpu_tensor(input, "input")
        if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise invalid(f"input: dtype must be float32, bfloat16 or float16, got {x.dtype}")
        ot = _out_tensor(out)
        od = _out_dtype(output_dtype, x.dtype, ot)
        # The fused operator (QuantizeReduceScatter / QuantizeAllReduce): each chunk's rows
        # quantized straight into the transport's buffers; it checks the mode and out (and
        # takes part in the call when a check fails).
        reached[0] = True
        r = _fused_op(which, x, c.name, mode, "sum", od, 0.0, x_param="input", out=ot)
        return r if out is None else out

    return c.submit(_checked(c, which, fn), async_op)


def quant_reduce_scatter(x, scales, group=None, *, output_dtype=None, x_dtype=None,
                         scales_dtype=None, async_op: bool = False, out=None):
    """QuantReduceScatter over a ProcessGroup: rank r gets the (BS/n, H) sum over the
    group's ranks (in rank order) of decode(x_k) * scale_k for its row block r.

    ``x``: (BS, H) or (B, S, H), int8 / float8_e4m3fn / float8_e5m2 (or uint8 HiF8 codes
    with ``x_dtype="hifloat8"``; under the extended contract packed 4-bit x: a
    torch.float4_e2m1fn_x2 tensor (BS, H/2), or uint8 (BS, H/2) with ``x_dtype``
    float4_e2m1 / float4_e1m2); ``scales``: float32 (..., H/128) (KG) or float8_e8m0fnu
    (..., H/64, 2) (MX; uint8 bytes are taken as E8M0). Returns a tensor of
    ``output_dtype`` (float32, float16, bfloat16; default bfloat16, or out's dtype), or a
    :class:`Work` with ``async_op``. ``out``: a CPU tensor the caller owns, (BS/n, H),
    contiguous, not overlapping x or scales: written and returned instead of a new tensor
    (untouched when the call fails).
    Raises qcoll.Error (the same rules and messages as :func:`qcoll.quant_reduce_scatter`;
    ranks that disagree all get a CommunicationError)."""
    return _quant("rs", group, x, scales, output_dtype, x_dtype, scales_dtype, async_op, out)


def quant_all_reduce(x, scales, group=None, *, output_dtype=None, x_dtype=None,
                     scales_dtype=None, async_op: bool = False, out=None):
    """QuantAllReduce over a ProcessGroup: every rank gets the full sum, of x's shape (see
    :func:`quant_reduce_scatter`)."""
    return _quant("ar", group, x, scales, output_dtype, x_dtype, scales_dtype, async_op, out)


def reduce_scatter(input, group=None, *, mode: str = "kg-int8", output_dtype=None, async_op: bool = False,
                   out=None):
    """Reduce-scatter of float tensors with quantized data on the wire: QuantizeReduceScatter,
    the fused operator (:func:`qcoll.reduce_scatter`): each rank's ``input`` (float32 /
    bfloat16 / float16, (BS, H) or (B, S, H)) is quantized in ``mode`` (see :data:`MODES`)
    and reduce-scattered in one call, the bits of quantize-then-QuantReduceScatter. Returns
    (BS/n, H) in ``output_dtype`` (default: input's dtype, or out's). ``out``: a CPU tensor
    the caller owns, as ``torch.distributed.reduce_scatter_tensor``'s output (contiguous,
    not overlapping input): written and returned (untouched when the call fails)."""
    return _float("rs", group, input, mode, output_dtype, async_op, out)


def all_reduce(input, group=None, *, mode: str = "kg-int8", output_dtype=None, async_op: bool = False,
               out=None):
    """All-reduce of float tensors with quantized data on the wire (see
    :func:`reduce_scatter`); returns a new tensor of input's shape (input is not changed),
    or writes ``out``, which may be ``input`` itself: ``all_reduce(t, out=t)`` is in place,
    as ``torch.distributed.all_reduce(t)`` (the same bits as a new output)."""
    return _float("ar", group, input, mode, output_dtype, async_op, out)


# ---- gradient reduction for DDP, FSDP2 and FSDP1 (qcoll/_torch_grads.py) ------------------------

from ._torch_grads import _ROW_H as _HOOK_H  # noqa: E402,F401 - the padded layout's row length
from ._torch_grads import _padded_rows  # noqa: E402,F401
from ._torch_grads import (  # noqa: E402 - needs the definitions above
    FSDPHookState, FSDPReduceScatter, QuantHookState, quant_allreduce_hook, quant_reduce_scatter_hook,
    quantize_fsdp_gradients)
