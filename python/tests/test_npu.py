"""qcoll.npu: torch_npu's signatures and dtype codes give the bits of qcoll's operators."""

import numpy as np
import pytest

import qcoll
from qcoll import npu

H = 1024


def inputs(rank, rows=8, h=H):
    rng = np.random.default_rng(rank)
    x = rng.integers(0, 256, (rows, h), dtype=np.uint8)
    x[(x & 0x7F) == 0x7F] = 0x11  # no NaN codes: equal bits compare equal
    s = rng.uniform(0.01, 2.0, (rows, h // 128)).astype(np.float32)
    return x, s


def test_codes_match_qcoll_bits():
    def fn(r, g):
        x, s = inputs(r)
        got_rs = npu.npu_quant_reduce_scatter(x, s, g.name, 4, x_dtype=292, output_dtype=15)
        want_rs = qcoll.quant_reduce_scatter(x, s, g, x_dtype="float8_e4m3fn", output_dtype="bfloat16")
        got_ar = npu.npu_quant_all_reduce(x, s, g.name, 4, x_dtype=290, output_dtype=6)
        want_ar = qcoll.quant_all_reduce(x, s, g, x_dtype="hifloat8", output_dtype="float32")
        return got_rs, want_rs, got_ar, want_ar

    for got_rs, want_rs, got_ar, want_ar in qcoll.run_ranks(4, fn):
        assert got_rs.shape == (2, H) and got_rs.dtype == want_rs.dtype
        assert got_rs.view(np.uint16).tobytes() == want_rs.view(np.uint16).tobytes()
        assert got_ar.dtype == np.float32 and got_ar.shape == (8, H)
        assert got_ar.view(np.uint32).tobytes() == want_ar.view(np.uint32).tobytes()


def test_mx_codes_and_default_output():
    def fn(r, g):
        x, _ = inputs(r)
        e8 = np.full((8, H // 64, 2), 126 + r, np.uint8)
        got = npu.npu_quant_all_reduce(x, e8, g.name, 2, x_dtype=291, scales_dtype=293)
        want = qcoll.quant_all_reduce(x, e8, g, x_dtype="float8_e5m2", scales_dtype="float8_e8m0")
        return got, want

    for got, want in qcoll.run_ranks(2, fn):
        assert got.dtype == want.dtype  # bfloat16, the vendor's default
        assert got.view(np.uint16).tobytes() == want.view(np.uint16).tobytes()


def test_world_size_and_codes_are_checked():
    def fn(r, g):
        x, s = inputs(r)
        errs = []
        for call in (
            lambda: npu.npu_quant_reduce_scatter(x, s, g.name, 4, x_dtype=292),  # group has 2 ranks
            lambda: npu.npu_quant_reduce_scatter(x, s, g.name, 3, x_dtype=292),
            lambda: npu.npu_quant_reduce_scatter(x, s, g.name, 2, x_dtype=299),
            lambda: npu.npu_quant_reduce_scatter(x, s, g.name, 2, x_dtype=292, output_dtype=7),
        ):
            with pytest.raises(qcoll.InvalidParameterError) as e:
                call()
            errs.append(e.value.message)
        return errs

    errs = qcoll.run_ranks(2, fn)[0]
    assert "world_size" in errs[0] and "(2)" in errs[0]
    assert "2, 4 or 8" in errs[1]
    assert "x_dtype" in errs[2] and "299" in errs[2]
    assert "output_dtype" in errs[3] and "7" in errs[3]


def test_torch_tensors_round_trip():
    torch = pytest.importorskip("torch", exc_type=ModuleNotFoundError)

    def fn(r, g):
        x, s = inputs(r)
        xt = torch.from_numpy(x.view(np.int8))
        got = npu.npu_quant_reduce_scatter(xt, torch.from_numpy(s), g.name, 2, output_dtype=torch.float32)
        want = qcoll.quant_reduce_scatter(x.view(np.int8), s, g, output_dtype="float32")
        return got, want

    for got, want in qcoll.run_ranks(2, fn):
        assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
        assert got.numpy().view(np.uint32).tobytes() == want.view(np.uint32).tobytes()
