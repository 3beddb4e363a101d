"""qcoll.torch across processes: torch_dist_worker.py under torchrun (2 and 4 processes,
gloo) and under mpirun (2 processes); skipped only where torch is absent (mpirun: where
mpirun is absent). Each run checks, on the group path (QCOLL_TRANSPORT=torch) and on the
default path (shm on one host when qcoll has the MPI-free bootstrap): every operator, mode
and output dtype bit-identical to the thread transport, async calls, errors when ranks
disagree, a missing rank (bounded by QCOLL_TIMEOUT_S) and the DDP hook. torch_fp4_worker.py
(2 and 3 processes, QCOLL_CONTRACT=extended): the 4-bit x and modes, bit-identical to threads."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", exc_type=ModuleNotFoundError)
import torch.distributed  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
WORKER = HERE / "torch_dist_worker.py"
pytestmark = [
    pytest.mark.skipif(not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
                       reason="torch without gloo"),
    # the worker's MX scales are torch.float8_e8m0fnu tensors, a dtype of torch 2.7 and later
    pytest.mark.skipif(not hasattr(torch, "float8_e8m0fnu"), reason="torch < 2.7: no float8_e8m0fnu"),
]


def _env():
    env = dict(os.environ, QCOLL_TIMEOUT_S="60", OMP_NUM_THREADS="1")
    env.pop("QCOLL_TRANSPORT", None)
    return env


def _check(r: subprocess.CompletedProcess, n: int) -> set:
    out = r.stdout + r.stderr
    # The lines that say what failed first (pytest shortens long messages), then the tail.
    why = "\n".join(line for line in out.splitlines() if "Error" in line or "assert" in line)[-3000:]
    assert r.returncode == 0, why + "\n----\n" + out[-6000:]
    paths = set()
    for rank in range(n):
        # (the ranks' lines may run into one another: match the path names only)
        m = re.search(rf"rank {rank}: all (\d+) checks ok on ((?:torch|shm)(?:,(?:torch|shm))*)", r.stdout)
        assert m, out[-6000:]
        paths.update(m.group(2).split(","))
    return paths


def _expected_paths() -> set:
    import qcoll.torch as qt

    return {"torch", "shm"} if qt._has_shm_bootstrap() else {"torch"}


@pytest.mark.wheel
@pytest.mark.parametrize("n", [2, 4])
def test_torchrun(n):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}", str(WORKER)]
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600)
    assert _check(r, n) == _expected_paths()


MPIRUN = shutil.which("mpirun") or shutil.which("mpiexec")


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun")
def test_mpirun(tmp_path):
    # The ranks meet through a file (torch's FileStore), not a port picked here and reused.
    env = _env()
    env.setdefault("PYTHONPATH", "")
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-x", "QCOLL_TIMEOUT_S",
           "-x", "OMP_NUM_THREADS", "-x", "PYTHONPATH", "-n", "2", sys.executable, str(WORKER), "--quick",
           "--init-file", str(tmp_path / "rendezvous")]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert _check(r, 2) == _expected_paths()


FP4_WORKER = HERE / "torch_fp4_worker.py"


@pytest.mark.skipif(not hasattr(torch, "float4_e2m1fn_x2"), reason="torch without float4_e2m1fn_x2")
@pytest.mark.parametrize("n", [2, 3])
def test_torchrun_fp4_extended(n):
    """The FP4 modes and x under QCOLL_CONTRACT=extended (contract.md §ext), on both paths, bit-identical
    to the thread transport; n = 3 is a rank count only the extended contract takes."""
    env = dict(_env(), QCOLL_CONTRACT="extended")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}", str(FP4_WORKER)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert _check(r, n) == _expected_paths()
