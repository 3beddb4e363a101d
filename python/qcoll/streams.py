"""Streams: launch a collective and overlap it with other work.

Passing ``stream=`` to an operator enqueues its call on that stream and returns a
:class:`Work` at once; the calls of one stream run in order on a thread of its own,
different streams run concurrently (the GIL is not needed by the calls)::

    s = qcoll.Stream()
    w = qcoll.quant_all_reduce(x, scales, g, stream=s)   # returns at once
    ...                                                   # other work
    out = w.wait()                                        # the result (or qcoll.Error)

A failure is raised by ``wait()`` / ``synchronize()``; the output of a failed call is never
written. The stream keeps the arrays a call uses until a synchronize covered it.
"""

from __future__ import annotations

from . import _core
from .errors import Error, RUNTIME_ERROR, error_from_status


class Stream:
    """An ordered queue of operator calls, run by its own thread (qcollStreamCreate)."""

    def __init__(self):
        self._s = _core.Stream()

    def synchronize(self, timeout_ms: int = -1) -> bool:
        """Waits until every call enqueued so far has finished, at most ``timeout_ms``
        milliseconds (-1: no limit). Returns False when the time ran out (the calls go on);
        raises the first failure among the calls (once)."""
        return self._s.synchronize(int(timeout_ms))

    def destroy(self) -> None:
        """Waits for the calls still enqueued, then releases the stream; raises a failure
        not yet reported."""
        self._s.destroy()

    @property
    def alive(self) -> bool:
        return self._s.alive

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.destroy()
        else:  # already failing: release without masking the exception
            try:
                self.destroy()
            except Error:
                pass

    def __repr__(self) -> str:
        return f"Stream(alive={self.alive})"


class Work:
    """One call enqueued on a stream; ``wait()`` returns its output."""

    def __init__(self, stream: Stream, result):
        self.stream = stream
        self._result = result

    def wait(self, timeout_ms: int = -1):
        """Synchronizes the stream (every call enqueued on it so far) and returns this call's
        output. Raises the stream's first failure, or a RUNTIME_ERROR qcoll.Error when
        ``timeout_ms`` ran out (the call goes on: wait again)."""
        if not self.stream.synchronize(timeout_ms):
            raise error_from_status(RUNTIME_ERROR, f"stream: synchronize timed out after {int(timeout_ms)} ms "
                                                   "(the calls go on; wait again)")
        return self._result

    def result(self):
        """wait() without a time limit."""
        return self.wait()
