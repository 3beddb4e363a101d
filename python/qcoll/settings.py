"""The contract qcoll keeps (docs/contract.md §ext): ``vendor`` (the default: the vendor's
rules, refusal for refusal) or ``extended`` (adds the 4-bit x formats and any rank count in
[2, 1024]). The environment variable QCOLL_CONTRACT chooses it; :func:`set_contract` chooses
for the whole process instead (as C's qcollSetContract and C++'s qcoll::set_contract)."""

from __future__ import annotations

from typing import Optional

from . import _core


def set_contract(name: Optional[str]) -> None:
    """Keeps contract ``name`` ('vendor' or 'extended') for every later call of this process;
    None gives the choice back to QCOLL_CONTRACT. Another name raises InvalidParameterError."""
    _core.set_contract(name)


def get_contract() -> str:
    """The contract a call made now keeps: 'vendor' or 'extended'. A bad QCOLL_CONTRACT (with
    no set_contract choice) raises InvalidParameterError naming it."""
    return _core.get_contract()
