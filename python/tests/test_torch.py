"""torch CPU tensors in and out, without copies (DLPack); skipped when torch is absent."""

import ml_dtypes
import numpy as np
import pytest

import qcoll
from reference import BF16, E4M3

# Skipped only when torch is not installed; a torch that is there but fails to import fails.
torch = pytest.importorskip("torch", exc_type=ModuleNotFoundError)
# torch.float8_e8m0fnu (the MX scales as a torch dtype) came in torch 2.7.
needs_e8m0 = pytest.mark.skipif(not hasattr(torch, "float8_e8m0fnu"), reason="torch < 2.7: no float8_e8m0fnu")


def test_encode_decode_torch_tensors():
    t = torch.tensor([[1.0, -2.5, 448.0, 1000.0]], dtype=torch.float32)
    q = qcoll.encode(t, "float8_e4m3fn")
    assert isinstance(q, torch.Tensor) and q.dtype == torch.float8_e4m3fn
    want = t.numpy().astype(E4M3).view(np.uint8)
    assert np.array_equal(q.view(torch.uint8).numpy(), want)
    back = qcoll.decode(q)
    assert isinstance(back, torch.Tensor) and back.dtype == torch.float32
    b = qcoll.encode(t, "bfloat16")
    assert b.dtype == torch.bfloat16 and torch.equal(b, t.to(torch.bfloat16))
    h = qcoll.encode(t, "hifloat8")
    assert h.dtype == torch.uint8


def test_decode_reads_the_tensor_memory():
    t = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e5m2)
    got = qcoll.decode(t)
    want = t.view(torch.uint8).numpy().view(ml_dtypes.float8_e5m2).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got.numpy()[ok], want[ok])
    from qcoll._arrays import bits_of

    assert bits_of(t, "codes").raw.ctypes.data == t.data_ptr()  # viewed, not copied


@needs_e8m0
def test_quantize_and_all_reduce_with_torch():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 1024, generator=gen)
    def fn(r, g):
        q, s = qcoll.quantize_mx(x[r], "float8_e4m3fn")
        assert q.dtype == torch.float8_e4m3fn and s.dtype == torch.float8_e8m0fnu
        return qcoll.quant_all_reduce(q, s, g)
    outs = qcoll.run_ranks(2, fn)
    assert isinstance(outs[0], torch.Tensor) and outs[0].dtype == torch.bfloat16
    ref = sum(qcoll.dequantize(*qcoll.quantize_mx(x[r].numpy(), "float8_e4m3fn")) for r in range(2))
    assert np.array_equal(outs[0].view(torch.int16).numpy().view(np.uint16),
                          ref.astype(BF16).view(np.uint16))


def test_cuda_tensor_rejected_or_absent():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    with pytest.raises(qcoll.InvalidParameterError, match="CPU"):
        qcoll.decode(torch.zeros(4, dtype=torch.bfloat16, device="cuda"))
