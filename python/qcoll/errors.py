"""Exceptions raised by qcoll: every failure of the C++ core arrives as a :class:`Error`
carrying the status code of docs/contract.md §status and the core's message."""

from __future__ import annotations

SUCCESS = 0
PARAM_NULLPTR = 161001
PARAM_INVALID = 161002
RUNTIME_ERROR = 361001
INNER_ERROR = 561000


class Error(Exception):
    """A non-zero qcoll status.

    Attributes: ``status`` (the numeric code, e.g. 161002; ``code`` is the same number),
    ``status_name`` (e.g. ``"PARAM_INVALID"``) and ``message`` (the core's message, which
    names the parameter, the rule, the value seen and the value expected).
    """

    def __init__(self, status: int, message: str):
        self.status = int(status)
        self.message = str(message)
        super().__init__(f"[{self.status_name} {self.status}] {self.message}")

    @property
    def code(self) -> int:
        return self.status

    @property
    def status_name(self) -> str:
        from . import _core  # the core's names (qcoll/status.hpp); imported late: _core raises these

        return _core.status_name(self.status)


class NullPointerError(Error, ValueError):
    """PARAM_NULLPTR (161001): a required tensor is missing (None)."""


class InvalidParameterError(Error, ValueError):
    """PARAM_INVALID (161002): an argument breaks a rule of contract.md §validation or of the API."""


class CommunicationError(Error, RuntimeError):
    """RUNTIME_ERROR (361001): a peer failed, disagreed on the call, or timed out."""


class InternalError(Error, RuntimeError):
    """INNER_ERROR (561000): a bug or resource failure inside the library."""


_BY_STATUS = {
    PARAM_NULLPTR: NullPointerError,
    PARAM_INVALID: InvalidParameterError,
    RUNTIME_ERROR: CommunicationError,
    INNER_ERROR: InternalError,
}


def error_from_status(status: int, message: str) -> Error:
    """The exception object for a status code (used by the extension module)."""
    return _BY_STATUS.get(int(status), Error)(status, message)


def invalid(message: str) -> InvalidParameterError:
    return InvalidParameterError(PARAM_INVALID, message)


def missing(param: str, expected: str) -> NullPointerError:
    """PARAM_NULLPTR for a required argument given as None (the core's "must not be null", in
    the caller's words)."""
    return NullPointerError(PARAM_NULLPTR, f"{param}: must not be None; expected {expected}")


def renamed(e: Error, names: dict) -> Error:
    """The same error with the core's parameter name at the start of its message replaced by
    the caller's (``{"reduceOp:": "reduce_op:"}``: prefixes), so that a message names what
    the caller wrote. Errors that start otherwise are returned as they are."""
    msg = e.message
    for core, mine in names.items():
        if msg.startswith(core):
            new = type(e)(e.status, mine + msg[len(core):])
            new.__traceback__ = e.__traceback__
            return new
    return e
