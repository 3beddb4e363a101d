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


# ---- messages a newcomer meets: the caller's parameter, the dtype's name, what was expected ----

def test_quantizer_dtype_errors_name_dtype_and_show_the_dtype_by_name():
    x = np.ones((2, H), np.float32)
    with pytest.raises(qcoll.InvalidParameterError) as e:
        qcoll.quantize_kg(x, "float16")
    assert e.value.message == ("dtype: KG (float scales) takes int8, hifloat8, float8_e4m3fn or float8_e5m2, "
                               "got float16"), e.value.message
    with pytest.raises(qcoll.InvalidParameterError) as e:
        qcoll.quantize_mx(x, "int8")
    assert e.value.message == "dtype: MX (float8_e8m0 scales) takes float8_e4m3fn or float8_e5m2, got int8"
    with pytest.raises(qcoll.InvalidParameterError, match=r"\] dtype: must be a dtype, got None"):
        qcoll.quantize_kg(x, None)


def test_dequantize_names_the_array_the_caller_passed():
    q, s = qcoll.quantize_kg(np.ones((2, H), np.float32), "int8")
    bf16 = qcoll.encode(np.ones((2, H), np.float32), "bfloat16")
    with pytest.raises(qcoll.InvalidParameterError) as e:
        qcoll.dequantize(bf16, s)
    assert e.value.message.startswith("q: KG (float scales) takes") and e.value.message.endswith("got bfloat16")
    assert "(27)" not in e.value.message and "x_dtype" not in e.value.message
    with pytest.raises(qcoll.InvalidParameterError, match=r"\] x_dtype: KG .* got float16$"):
        qcoll.dequantize(q.view(np.uint8), s, x_dtype="float16")  # the caller named it: x_dtype
    with pytest.raises(qcoll.NullPointerError) as e:
        qcoll.dequantize(q, None)
    assert e.value.message.startswith("scales: must not be None") and "null" not in e.value.message
    with pytest.raises(qcoll.InvalidParameterError, match=r"\] q: got a tuple of 2 arrays.*dequantize\(\*pair\)"):
        qcoll.dequantize((q, s), None)


def test_forgotten_scales_and_the_pair_as_x_are_explained_on_every_rank():
    x, s = kg_inputs()
    t0 = time.monotonic()
    errs = on_two_ranks(lambda r, g: qcoll.quant_reduce_scatter(x, g))  # scales forgotten
    for e in errs:
        assert isinstance(e, qcoll.InvalidParameterError), errs
        assert e.message.startswith("scales: got the group") and "quant_reduce_scatter(x, scales, group)" in e.message
    errs = on_two_ranks(lambda r, g: qcoll.quant_all_reduce((x, s), g))  # quantize_kg's pair as x
    assert all(e.message.startswith("x: got a tuple of 2 arrays") for e in errs), errs
    # One rank wrong: it still fails its peer at once (it takes part in the call).
    errs = on_two_ranks(lambda r, g: qcoll.quant_all_reduce(x, g) if r == 1 else qcoll.quant_all_reduce(x, s, g))
    assert isinstance(errs[1], qcoll.InvalidParameterError) and errs[1].message.startswith("scales: got the group")
    assert isinstance(errs[0], qcoll.CommunicationError) and "rank 1" in errs[0].message, errs
    assert time.monotonic() - t0 < 20  # the agreement, not QCOLL_TIMEOUT_S
    with pytest.raises(qcoll.InvalidParameterError, match=r"\] group: missing: the call is quant_reduce_scatter"):
        qcoll.quant_reduce_scatter(x, s)
    with pytest.raises(qcoll.InvalidParameterError, match=r"\] scales: missing"):
        qcoll.quant_reduce_scatter(x)
    with pytest.raises(qcoll.InvalidParameterError, match=r"\] group: missing: the call is all_reduce\(x, group"):
        qcoll.all_reduce(np.ones((4, H), np.float32))


def test_none_is_called_none_and_core_names_become_the_python_ones():
    x, s = kg_inputs()
    e = single(lambda r, g: qcoll.quant_all_reduce(x, s, g, reduce_op=None))
    assert e.message == 'reduce_op: must be "sum", got None', e.message
    e = single(lambda r, g: qcoll.quant_all_reduce(x, s, g, reduce_op="max"))
    assert e.message.startswith('reduce_op: must be "sum"') and '"max"' in e.message, e.message
    e = single(lambda r, g: qcoll.quant_all_reduce(None, s, g))
    assert isinstance(e, qcoll.NullPointerError) and e.message.startswith("x: must not be None"), e.message
    with pytest.raises(qcoll.InvalidParameterError, match=r"\] group: must not be None"):
        qcoll.quant_all_reduce(x, s, None)
    e = single(lambda r, g: qcoll.all_reduce(np.ones((4, 1000), np.float32), g))
    assert e.message.startswith("x: H must be a multiple of 128"), e.message  # the fused call's x, not "input"


def test_kg_modes_have_the_cli_short_names():
    x = np.random.default_rng(3).standard_normal((2, 4, H)).astype(np.float32)
    for short in ("int8", "hif8", "e4m3", "e5m2"):
        a = qcoll.run_ranks(2, lambda r, g: qcoll.all_reduce(x[r], g, mode=short, output_dtype="float"))
        b = qcoll.run_ranks(2, lambda r, g: qcoll.all_reduce(x[r], g, mode="kg-" + short, output_dtype="float"))
        np.testing.assert_array_equal(a[0], b[0])
    e = single(lambda r, g: qcoll.all_reduce(x[r], g, mode="e8m0"))
    assert e.message.startswith("mode: must be kg-int8") and "int8, hif8, e4m3, e5m2 also name the KG modes" in e.message


def test_uint8_mx_scales_are_e8m0_without_scales_dtype():
    a = np.random.default_rng(4).standard_normal((2, 4, H)).astype(np.float32)
    qs = [qcoll.quantize_mx(a[r], "float8_e4m3fn") for r in range(2)]
    typed = qcoll.run_ranks(2, lambda r, g: qcoll.quant_all_reduce(*qs[r], g, output_dtype="float"))
    raw = qcoll.run_ranks(2, lambda r, g: qcoll.quant_all_reduce(qs[r][0], qs[r][1].view(np.uint8), g,
                                                                  output_dtype="float"))
    np.testing.assert_array_equal(typed[0], raw[0])
    np.testing.assert_array_equal(qcoll.dequantize(qs[0][0], qs[0][1].view(np.uint8)),
                                  qcoll.dequantize(*qs[0]))


@pytest.mark.parametrize("in_dtype", ["float32", "float16", "bfloat16"])
def test_float_in_calls_return_the_input_dtype_by_default(in_dtype):
    x = qcoll.encode(np.random.default_rng(5).standard_normal((2, 4, H)), in_dtype) if in_dtype != "float32" \
        else np.random.default_rng(5).standard_normal((2, 4, H)).astype(np.float32)
    for fn in (qcoll.reduce_scatter, qcoll.all_reduce):
        got = qcoll.run_ranks(2, lambda r, g: fn(x[r], g, mode="mx-e4m3"))
        want = qcoll.run_ranks(2, lambda r, g: fn(x[r], g, mode="mx-e4m3", output_dtype=in_dtype))
        assert got[0].dtype == x.dtype and got[0].dtype.name == in_dtype
        np.testing.assert_array_equal(got[0].view(np.uint8), want[0].view(np.uint8))
    # The quantized operators and the vendor's API keep the vendor's bfloat16.
    q, s = kg_inputs()
    assert qcoll.run_ranks(2, lambda r, g: qcoll.quant_all_reduce(q, s, g))[0].dtype.name == "bfloat16"
    assert qcoll.run_ranks(2, lambda r, g: qcoll.npu.npu_quant_all_reduce(q, s, g.name, 2))[0].dtype.name == \
        "bfloat16"


def test_quant_hook_state_checks_the_group_size_when_it_is_made(tmp_path):
    """A group of a size the operators refuse fails at QuantHookState(...), not in backward()."""
    pytest.importorskip("torch")
    import subprocess
    import sys

    script = tmp_path / "hook.py"
    script.write_text(f"""
import torch.distributed as dist
import qcoll, qcoll.torch as qt
dist.init_process_group("gloo", init_method="file://{tmp_path / 'store'}", rank=0, world_size=1)
try:
    qt.QuantHookState(mode="kg-int8")
except qcoll.InvalidParameterError as e:
    print("refused:", e.message)
try:
    qt.QuantHookState(mode="kg-int4")
except qcoll.InvalidParameterError as e:
    print("mode refused:", e.message)
try:
    qt.QuantHookState(mode="int8", output_dtype="float")  # the short spelling is a mode: the group is refused
except qcoll.InvalidParameterError as e:
    print("short:", e.message)
dist.destroy_process_group()
""")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "refused: group: the quantized all-reduce takes a group of 2, 4 or 8 ranks, got 1" in r.stdout, r.stdout
    assert "mode refused: mode: must be kg-int8" in r.stdout, r.stdout
    assert "short: group:" in r.stdout, r.stdout
