"""qcoll.set_contract / get_contract and the rank-count rule under each contract (contract.md §ext)."""

import pytest

import qcoll
from qcoll import _core


@pytest.fixture(autouse=True)
def _no_choice():
    qcoll.set_contract(None)
    yield
    qcoll.set_contract(None)


def test_default_is_vendor():
    assert qcoll.get_contract() == "vendor"
    assert not _core.rank_count_allowed(16)
    assert _core.rank_count_allowed(8)
    assert _core.rank_count_rule() == "2, 4 or 8"


def test_set_contract_extended_and_back():
    qcoll.set_contract("extended")
    assert qcoll.get_contract() == "extended"
    assert _core.rank_count_allowed(16) and _core.rank_count_allowed(3) and _core.rank_count_allowed(1024)
    assert not _core.rank_count_allowed(1) and not _core.rank_count_allowed(1025)
    assert _core.rank_count_rule() == "in [2, 1024]"
    qcoll.set_contract(None)
    assert qcoll.get_contract() == "vendor"


def test_environment_decides_without_a_choice(monkeypatch):
    monkeypatch.setenv("QCOLL_CONTRACT", "extended")
    assert qcoll.get_contract() == "extended"
    qcoll.set_contract("vendor")  # the program's choice wins over the environment
    assert qcoll.get_contract() == "vendor"


def test_bad_names_are_refused(monkeypatch):
    with pytest.raises(qcoll.InvalidParameterError, match=r"contract: must be 'vendor' or 'extended'.*got 'Extended'"):
        qcoll.set_contract("Extended")
    assert qcoll.get_contract() == "vendor"  # unchanged
    monkeypatch.setenv("QCOLL_CONTRACT", "sideways")
    with pytest.raises(qcoll.InvalidParameterError, match="QCOLL_CONTRACT"):
        qcoll.get_contract()


def test_extended_threads_take_sixteen_ranks():
    """Under extended a ThreadGroup of 16 runs the quantized reduce-scatter; under vendor it is refused."""
    import numpy as np

    n, rows, h = 16, 32, 1024
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((rows, h)).astype(np.float32) for _ in range(n)]
    qs = [qcoll.quantize_kg(x, "int8") for x in xs]

    def call(r, group):
        return qcoll.quant_reduce_scatter(qs[r][0], qs[r][1], group, output_dtype="float32")

    with pytest.raises(qcoll.InvalidParameterError, match="2, 4 or 8"):
        qcoll.run_ranks(n, call)
    qcoll.set_contract("extended")
    outs = qcoll.run_ranks(n, call)
    want = sum(qcoll.dequantize(q, s) for q, s in qs)  # fp32 sums in rank order 0..n-1
    got = np.concatenate(outs)
    np.testing.assert_array_equal(got, want.astype(np.float32))
