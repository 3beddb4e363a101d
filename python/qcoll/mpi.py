"""Groups of MPI processes (one rank per process), from mpi4py communicators.

Needs an MPI library (Open MPI: ``apt-get install openmpi-bin libopenmpi3``) and mpi4py
(``pip install qcoll[mpi]``); ``import qcoll`` itself needs neither::

    from mpi4py import MPI
    import qcoll, qcoll.mpi
    with qcoll.mpi.MpiGroup(MPI.COMM_WORLD, "tp") as g:   # collective
        out = qcoll.quant_all_reduce(x, scales, g)

On one host the ranks exchange through shared memory, otherwise through MPI
(``QCOLL_TRANSPORT=shm|mpi|auto``); the window size comes from ``HCCL_BUFFSIZE`` (MB).

The communicators live in the extension module ``qcoll._mpi``, which takes MPI's functions
from the MPI library this module opens first (``QCOLL_MPI_LIBRARY``, default the soname qcoll
was built against, e.g. ``libmpi.so.40`` for Open MPI 4 and 5); ``missing()`` says what is
missing, and ``MpiGroup`` raises :class:`MpiUnavailableError` with that text.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, Optional

from . import _build
from .errors import invalid
from .groups import CoreGroup

_INSTALL_MPI = ("install Open MPI (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi3; "
                "Fedora: dnf install openmpi) or point QCOLL_MPI_LIBRARY at its libmpi.so.40")
_INSTALL_MPI4PY = "pip install qcoll[mpi] (mpi4py)"

_state: dict = {}


class MpiUnavailableError(ImportError):
    """qcoll.mpi cannot run here: no MPI library, no mpi4py, or a qcoll built without MPI.
    The message names what is missing and how to get it."""


def _load() -> Any:
    """qcoll._mpi, after opening the MPI library with RTLD_GLOBAL; raises MpiUnavailableError."""
    if "module" in _state:
        return _state["module"]
    if "error" in _state:
        raise MpiUnavailableError(_state["error"])
    why = None
    if not _build.MPI_SONAME:
        why = ("qcoll.mpi: this qcoll was built without MPI (QCOLL_WITH_MPI=OFF or no MPI found "
               "when it was built); rebuild it where MPI's development files are (libopenmpi-dev)")
    else:
        lib = os.environ.get("QCOLL_MPI_LIBRARY") or _build.MPI_SONAME
        try:
            # Global: qcoll._mpi (and Open MPI's own plugins) take MPI's symbols from it.
            ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            why = (f"qcoll.mpi: no MPI library: {lib} cannot be loaded ({e}); {_INSTALL_MPI}; "
                   f"and for mpi4py: {_INSTALL_MPI4PY}")
    if why is None:
        try:
            from . import _mpi
        except ImportError as e:
            why = f"qcoll.mpi: the MPI module qcoll._mpi does not load with {lib}: {e}"
    if why is not None:
        _state["error"] = why
        raise MpiUnavailableError(why)
    _state["module"] = _mpi
    return _mpi


def missing() -> Optional[str]:
    """None when MpiGroup can be made here (MPI library, qcoll._mpi and mpi4py load), else
    what is missing and how to get it."""
    try:
        _load()
    except MpiUnavailableError as e:
        return str(e)
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return f"qcoll.mpi: mpi4py is not installed: {_INSTALL_MPI4PY}"
    return None


def available() -> bool:
    """True when this qcoll has the MPI transport, the MPI library loads and mpi4py can be
    imported."""
    return missing() is None


class MpiGroup(CoreGroup):
    """A qcoll communicator over an mpi4py communicator (collective to create: every rank
    of ``comm`` calls it with the same ``name``). The name is registered for the process."""

    def __init__(self, comm: Any = None, name: str = "qcoll-mpi"):
        mod = _load()
        try:
            from mpi4py import MPI  # initialises MPI if needed
        except ImportError as e:
            raise MpiUnavailableError(f"qcoll.mpi: mpi4py is not installed ({e}): {_INSTALL_MPI4PY}") from e

        comm = MPI.COMM_WORLD if comm is None else comm
        if not isinstance(comm, MPI.Comm):
            raise invalid(f"comm: expected an mpi4py communicator, got {type(comm).__name__}")
        self._comm = mod.MpiComm(name, int(comm.py2f()))
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
        from . import _core

        _core.release_workspaces(self.name)  # the operators' workspaces kept for this group (in _core)
        self._comm.destroy()


def world(name: Optional[str] = None) -> MpiGroup:
    """MpiGroup over MPI.COMM_WORLD."""
    return MpiGroup(None, name or "qcoll-world")
