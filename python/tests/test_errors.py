"""Bad input raises qcoll.Error with the contract.md §status code and a message that names the
parameter; a rule broken on one rank makes every rank fail, none hangs."""

import time

import numpy as np
import pytest

import qcoll
from reference import E4M3, E8M0

H = 1024


def kg_inputs(rows=4, h=H):
    return np.zeros((rows, h), np.int8), np.ones((rows, h // 128), np.float32)


def on_two_ranks(call):
    """Runs call(rank, group) on 2 threads; returns each rank's exception (or None)."""
    def fn(r, g):
        try:
            call(r, g)
        except qcoll.Error as e:
            return e
        return None
    return qcoll.run_ranks(2, fn)


def single(call):
    """The exception of a call whose validation fails before any communication (both ranks)."""
    errs = on_two_ranks(call)
    assert all(isinstance(e, qcoll.Error) for e in errs), errs
    return errs[0]


def test_error_attributes():
    x, s = kg_inputs()
    e = single(lambda r, g: qcoll.quant_reduce_scatter(x, s, g, reduce_op="max"))
    assert isinstance(e, qcoll.InvalidParameterError) and isinstance(e, ValueError)
    assert e.status == e.code == 161002 and e.status_name == "PARAM_INVALID"
    assert "reduceOp" in e.message or "reduce_op" in e.message
    assert "max" in e.message and "161002" in str(e)


def test_unknown_group_is_param_invalid():
    x, s = kg_inputs()
    with pytest.raises(qcoll.InvalidParameterError, match="no-such-group") as e:
        qcoll.quant_all_reduce(x, s, "no-such-group")
    assert e.value.status == 161002


def test_group_name_too_long():
    with pytest.raises(qcoll.InvalidParameterError):
        qcoll.ThreadGroup("g" * 128, 2)
    x, s = kg_inputs()
    with pytest.raises(qcoll.InvalidParameterError):
        qcoll.quant_all_reduce(x, s, "g" * 128)


def test_missing_tensor_is_param_nullptr():
    x, s = kg_inputs()
    e = single(lambda r, g: qcoll.quant_reduce_scatter(None, s, g))
    assert isinstance(e, qcoll.NullPointerError) and e.status == 161001
    e = single(lambda r, g: qcoll.quant_all_reduce(x, None, g))
    assert e.status == 161001


@pytest.mark.parametrize("h", [1000, 896, 8320])
def test_bad_h(h):
    x, s = np.zeros((4, h), np.int8), np.ones((4, max(h // 128, 1)), np.float32)
    e = single(lambda r, g: qcoll.quant_reduce_scatter(x, s, g))
    assert e.status == 161002 and "H" in e.message and str(h) in e.message


def test_bad_dtype_combination():
    x = np.zeros((4, H), np.int8)
    s = np.full((4, H // 64, 2), 127, np.uint8).view(E8M0)
    e = single(lambda r, g: qcoll.quant_all_reduce(x, s, g))
    assert e.status == 161002


def test_bad_output_dtype():
    x, s = kg_inputs()
    e = single(lambda r, g: qcoll.quant_all_reduce(x, s, g, output_dtype="int8"))
    assert e.status == 161002


def test_bad_scales_shape():
    x, _ = kg_inputs()
    s = np.ones((4, 4), np.float32)
    e = single(lambda r, g: qcoll.quant_reduce_scatter(x, s, g))
    assert e.status == 161002 and "scales" in e.message


def test_rows_not_divisible_by_ranks():
    x, s = kg_inputs(rows=3)
    e = single(lambda r, g: qcoll.quant_all_reduce(x, s, g))
    assert e.status == 161002


def test_non_contiguous_x():
    x = np.zeros((4, 2 * H), np.int8)[:, ::2]
    s = np.ones((4, H // 128), np.float32)
    e = single(lambda r, g: qcoll.quant_all_reduce(x, s, g))
    assert e.status == 161002


def test_python_side_dtype_errors():
    x, s = kg_inputs()
    with pytest.raises(qcoll.InvalidParameterError, match="x_dtype"):
        qcoll.quant_all_reduce(x.view(np.uint8), s, "g")  # raw bytes need x_dtype
    with pytest.raises(qcoll.InvalidParameterError, match="holds float8_e4m3fn"):
        qcoll.quant_all_reduce(x.view(E4M3), s, "g", x_dtype="hifloat8")
    with pytest.raises(qcoll.InvalidParameterError, match="output_dtype"):
        qcoll.quant_all_reduce(x, s, "g", output_dtype="float64")
    with pytest.raises(qcoll.InvalidParameterError, match="group"):
        qcoll.quant_all_reduce(x, s, 42)


def test_rule_broken_on_one_rank_fails_every_rank():
    x, s = kg_inputs()
    errs = on_two_ranks(lambda r, g: qcoll.quant_reduce_scatter(
        x, s, g, reduce_op="sum" if r == 0 else "max"))
    assert errs[1].status == 161002
    assert errs[0].status == 361001 and isinstance(errs[0], qcoll.CommunicationError)


def test_python_side_error_on_one_rank_fails_every_rank_at_once():
    x, s = kg_inputs()
    t0 = time.monotonic()
    errs = on_two_ranks(lambda r, g: qcoll.quant_all_reduce(x.view(np.uint8) if r == 1 else x, s, g))
    assert isinstance(errs[1], qcoll.InvalidParameterError) and "x_dtype" in errs[1].message, errs
    assert isinstance(errs[0], qcoll.CommunicationError) and "rank 1" in errs[0].message, errs
    assert time.monotonic() - t0 < 20  # the agreement, not QCOLL_TIMEOUT_S (60 s)


@pytest.mark.parametrize("bad", ["mode", "x", "output_dtype"])
def test_python_side_error_on_one_rank_of_a_fused_call_fails_every_rank_at_once(bad):
    x = np.ones((4, 1024), np.float32)
    kw = {"mode": {"mode": "kg-int4"}, "x": {}, "output_dtype": {"output_dtype": "int8x"}}[bad]

    def call(r, g):
        if r == 1:
            return qcoll.all_reduce(x.view(np.int32) if bad == "x" else x, g, **kw)
        return qcoll.all_reduce(x, g)

    t0 = time.monotonic()
    errs = on_two_ranks(call)
    assert isinstance(errs[1], qcoll.InvalidParameterError) and errs[1].message.startswith(
        {"mode": "mode", "x": "x", "output_dtype": "output_dtype"}[bad]), errs
    assert isinstance(errs[0], qcoll.CommunicationError) and "rank 1" in errs[0].message, errs
    assert time.monotonic() - t0 < 20  # the agreement, not QCOLL_TIMEOUT_S (60 s)


def test_ranks_disagreeing_on_shape_fail_every_rank():
    errs = on_two_ranks(lambda r, g: qcoll.quant_all_reduce(*kg_inputs(rows=4 if r == 0 else 8), g))
    assert [e.status for e in errs] == [361001, 361001]


def test_thread_group_errors():
    with pytest.raises(qcoll.InvalidParameterError):
        qcoll.ThreadGroup("bad-size", 0)
    with qcoll.ThreadGroup("py-dup", 2):
        with pytest.raises(qcoll.Error):
            qcoll.ThreadGroup("py-dup", 2)
    g = qcoll.ThreadGroup("py-rank", 2)
    with pytest.raises(qcoll.InvalidParameterError):
        g.join(2)
    g.destroy()
    with pytest.raises(qcoll.InvalidParameterError, match="destroyed"):
        g.join(0)


def test_exception_in_one_rank_is_reraised_by_run_ranks():
    def fn(r, g):
        if r == 1:
            raise KeyError("rank 1 failed")
        return r
    with pytest.raises(KeyError, match="rank 1 failed"):
        qcoll.run_ranks(2, fn)
