"""Communicators of processes on one host without MPI: a unique id, then every rank joins.

As ``ncclGetUniqueId`` / ``ncclCommInitRank``: one process makes a :class:`UniqueId` and
hands it to the ranks by any means (its ``hex()`` in an environment variable or a file, its
``bytes`` in a torch store, pickling); every rank calls :func:`init_comm`::

    uid = qcoll.UniqueId()                                # rank 0 (keep this process alive)
    os.environ["QCOLL_UID"] = uid.hex()                   # ... or any other way
    g = qcoll.init_comm("tp", 4, qcoll.UniqueId(os.environ["QCOLL_UID"]), rank)
    out = qcoll.quant_all_reduce(x, scales, g)            # g (or "tp") as the group

The ranks exchange through shared memory (``HCCL_BUFFSIZE`` MB per rank in /dev/shm, removed
as soon as every rank has joined). Joining is bounded by ``QCOLL_TIMEOUT_S``; a wrong or
duplicate rank, ranks that disagree on ``nranks``, or a stale id raise :class:`qcoll.Error`
on every rank that came.
"""

from __future__ import annotations

from typing import Optional, Union

from . import _core
from .errors import invalid
from .groups import CoreGroup

_ID_BYTES = int(_core.unique_id_bytes)


class UniqueId:
    """The 128 bytes that name one rendezvous. ``UniqueId()`` makes a fresh one (this process
    then serves its rendezvous until every rank has joined); ``UniqueId(hex_str)`` or
    ``UniqueId(raw_bytes)`` reads one back."""

    __slots__ = ("_bytes",)

    def __init__(self, data: Union[None, str, bytes, bytearray, memoryview] = None):
        if data is None:
            self._bytes = bytes(_core.unique_id())
        elif isinstance(data, str):
            self._bytes = bytes(_core.unique_id_from_hex(data))
        elif isinstance(data, (bytes, bytearray, memoryview)):
            b = bytes(data)
            if len(b) != _ID_BYTES:
                raise invalid(f"uid: must be {_ID_BYTES} bytes, got {len(b)}")
            self._bytes = bytes(_core.unique_id_from_hex(b.hex()))  # checks that they are an id
        else:
            raise invalid(f"uid: expected None, a hex str or {_ID_BYTES} bytes, got {type(data).__name__}")

    @classmethod
    def from_hex(cls, text: str) -> "UniqueId":
        return cls(str(text))

    @classmethod
    def from_bytes(cls, data: bytes) -> "UniqueId":
        return cls(bytes(data))

    @property
    def bytes(self) -> bytes:
        return self._bytes

    def hex(self) -> str:
        """256 lowercase hex digits."""
        return self._bytes.hex()

    def __bytes__(self) -> bytes:
        return self._bytes

    def __eq__(self, other) -> bool:
        return isinstance(other, UniqueId) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __reduce__(self):
        return (UniqueId, (self._bytes,))

    def __repr__(self) -> str:
        return f"UniqueId('...{self.hex()[64:80]}...')"  # its random part


class Comm(CoreGroup):
    """Rank ``rank`` of a communicator of ``nranks`` ranks on this host (see :func:`init_comm`).
    Usable as the ``group`` of the operators; ``destroy()`` (or leaving a ``with`` block)
    releases it (never waits for peers)."""

    def __init__(self, name: Optional[str], nranks: int, uid: UniqueId, rank: int):
        if not isinstance(uid, UniqueId):
            uid = UniqueId(uid)
        self._comm = _core.Comm(name, int(nranks), uid.bytes, int(rank))
        self.name = self._comm.name

    @property
    def transport(self) -> str:
        return "shm"


def init_comm(name: Optional[str], nranks: int, uid: Union[UniqueId, str, bytes], rank: int) -> Comm:
    """Joins the rendezvous of ``uid`` as rank ``rank`` of ``nranks`` (collective: every rank
    calls it with the same uid, nranks and name). ``name`` is the group name the operators
    resolve (None: ``"uid-"`` and 32 hex digits of the id). Returns a :class:`Comm`. When
    several ranks are threads of one process, the name is registered for the calling thread
    only (and the Comm must be destroyed on it)."""
    return Comm(name, nranks, uid if isinstance(uid, UniqueId) else UniqueId(uid), rank)
