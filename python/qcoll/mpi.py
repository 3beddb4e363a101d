"""Groups of MPI processes (one rank per process), from mpi4py communicators.

Needs mpi4py and a qcoll built with MPI (``qcoll.HAS_MPI``)::

    from mpi4py import MPI
    import qcoll, qcoll.mpi
    with qcoll.mpi.MpiGroup(MPI.COMM_WORLD, "tp") as g:   # collective
        out = qcoll.quant_all_reduce(x, scales, g)

On one host the ranks exchange through shared memory, otherwise through MPI
(``QCOLL_TRANSPORT=shm|mpi|auto``); the window size comes from ``HCCL_BUFFSIZE`` (MB).
"""

from __future__ import annotations

from typing import Any, Optional

from . import _core
from .errors import invalid
from .groups import CoreGroup


def available() -> bool:
    """True when this qcoll has the MPI transport and mpi4py can be imported."""
    if not _core.has_mpi:
        return False
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


class MpiGroup(CoreGroup):
    """A qcoll communicator over an mpi4py communicator (collective to create: every rank
    of ``comm`` calls it with the same ``name``). The name is registered for the process."""

    def __init__(self, comm: Any = None, name: str = "qcoll-mpi"):
        if not _core.has_mpi:
            raise invalid("comm: this qcoll was built without MPI (QCOLL_WITH_MPI=OFF or no MPI found)")
        from mpi4py import MPI  # initialises MPI if needed

        comm = MPI.COMM_WORLD if comm is None else comm
        if not isinstance(comm, MPI.Comm):
            raise invalid(f"comm: expected an mpi4py communicator, got {type(comm).__name__}")
        self._comm = _core.MpiComm(name, int(comm.py2f()))
        self.name = name

    @property
    def transport(self) -> str:
        """"shm" (one host) or "mpi"."""
        return self._comm.transport

    @property
    def window_bytes(self) -> int:
        return self._comm.window_bytes

    def destroy(self) -> None:
        """Unregisters the name and releases the communicator (not collective; before
        MPI is finalised)."""
        self._comm.destroy()


def world(name: Optional[str] = None) -> MpiGroup:
    """MpiGroup over MPI.COMM_WORLD."""
    return MpiGroup(None, name or "qcoll-world")
