"""qcoll.torch's gradient reduction for FSDP2, FSDP1 and DDP with error feedback, across
processes: torch_fsdp_worker.py under torchrun (gloo, CPU), 2 and 4 processes. Each rank
checks the comms' outputs bit for bit against the thread transport on the gathered inputs,
the error bounds against fp32, the reduce ops, error feedback's bookkeeping and checkpoint,
and that a rank failing a check makes every rank fail at once; the FP4 modes (mx-e2m1,
kg-e1m2) through FSDP2's comm under the extended contract, with error feedback in mx-e2m1. Skipped only where torch (or
its FSDP2 comm hook, torch >= 2.9) is absent."""

import pathlib
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", exc_type=ModuleNotFoundError)
import torch.distributed  # noqa: E402
from test_torch_dist import _check, _env  # noqa: E402 - the launcher's environment and its output check

HERE = pathlib.Path(__file__).resolve().parent
WORKER = HERE / "torch_fsdp_worker.py"


def _has_fsdp2_hook() -> bool:
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:
        return False
    return hasattr(FSDPModule, "set_custom_reduce_scatter")


pytestmark = [
    pytest.mark.skipif(not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
                       reason="torch without gloo"),
    pytest.mark.skipif(not hasattr(torch, "float8_e8m0fnu"), reason="torch < 2.7: no float8_e8m0fnu"),
    pytest.mark.skipif(not _has_fsdp2_hook(), reason="torch < 2.9: no FSDPModule.set_custom_reduce_scatter"),
]


def _run(n: int, only=()) -> None:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}", str(WORKER)]
    for name in only:
        cmd += ["--only", name]
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600)
    assert _check(r, n)  # every rank printed "all N checks ok on PATH"
    return {int(m) for m in re.findall(r"rank \d+: all (\d+) checks ok", r.stdout)}


def test_fsdp_np2():
    # every check; fsdp2_fp4 sets the extended contract for its own two checks (FP4 modes)
    assert _run(2) == {9}


def test_fsdp_np4():
    # 4 processes on a small machine: the checks that depend on the group size
    assert _run(4, ["fsdp2", "ops", "fail", "ef", "fsdp2_fp4"]) == {6}
