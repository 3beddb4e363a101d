"""Communicators for the operators: groups of threads of this process.

A group is named; an operator's ``group`` argument is that name (or the group object).
Each Python thread that acts as a rank joins the group first::

    with qcoll.ThreadGroup("tp0", 4) as g:
        def work(rank):
            with g.rank(rank):
                return qcoll.quant_all_reduce(x[rank], s[rank], g)
        ...

or, shorter, ``qcoll.run_ranks(4, fn)`` starts the threads and collects the results.
"""

from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Any, Callable, Optional

from . import _core

_counter = itertools.count()


class ThreadGroup:
    """An in-process group of ``nranks`` ranks, each a thread of this process."""

    def __init__(self, name: str, nranks: int):
        self._group = _core.ThreadGroup(name, int(nranks))
        self.name = name
        self.size = int(nranks)

    def join(self, rank: int) -> None:
        """Makes the calling thread rank ``rank`` of this group (for this thread only)."""
        self._group.join(int(rank))

    def leave(self) -> None:
        """Ends the calling thread's membership."""
        self._group.leave()

    @contextmanager
    def rank(self, rank: int):
        """``with g.rank(r):`` joins as rank r for the block, then leaves."""
        self.join(rank)
        try:
            yield self
        finally:
            self.leave()

    def destroy(self) -> None:
        """Releases the group (waits until no thread is inside an operator on it)."""
        self._group.destroy()

    def __enter__(self) -> "ThreadGroup":
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return f"ThreadGroup(name={self.name!r}, nranks={self.size})"


class CoreGroup:
    """A group over a communicator object of the extension (``self._comm``: rank, size,
    destroy()) whose name is registered for this process (or thread)."""

    name: str
    _comm: Any

    @property
    def rank(self) -> int:
        return self._comm.rank

    @property
    def size(self) -> int:
        return self._comm.size

    def destroy(self) -> None:
        """Unregisters the name and releases the communicator (never waits for peers)."""
        self._comm.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, rank={self.rank}, size={self.size})"


def group_name(group: Any) -> Optional[str]:
    """The name an operator resolves: a str as it is, or the ``name`` of a group object."""
    if group is None or isinstance(group, str):
        return group
    name = getattr(group, "name", None)
    if isinstance(name, str):
        return name
    from .errors import invalid

    raise invalid(f"group: expected a group name (str) or a group object, got {type(group).__name__}")


def run_ranks(nranks: int, fn: Callable[[int, ThreadGroup], Any], *, name: Optional[str] = None) -> list:
    """Runs ``fn(rank, group)`` on ``nranks`` threads, each joined to a fresh ThreadGroup as
    its rank; returns the results in rank order. If any rank raised, raises the exception
    of the lowest such rank after every thread has finished."""
    name = name or f"qcoll-py-{next(_counter)}"
    results: list = [None] * nranks
    errors: list = [None] * nranks
    with ThreadGroup(name, nranks) as g:

        def body(r: int) -> None:
            try:
                with g.rank(r):
                    results[r] = fn(r, g)
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                errors[r] = e

        threads = [threading.Thread(target=body, args=(r,), name=f"{name}-rank{r}") for r in range(nranks)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for e in errors:
        if e is not None:
            raise e
    return results
