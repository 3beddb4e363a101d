"""The operators over MPI processes (shared memory and MPI transports) through mpi4py;
skipped when qcoll has no MPI transport, or mpi4py or mpirun is missing."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import qcoll
import qcoll.mpi

HERE = pathlib.Path(__file__).resolve().parent
MPIRUN = shutil.which("mpirun") or shutil.which("mpiexec")

pytestmark = [
    pytest.mark.wheel,
    pytest.mark.skipif(not qcoll.HAS_MPI, reason="qcoll built without the MPI transport"),
    pytest.mark.skipif(MPIRUN is None, reason="no mpirun"),
]


@pytest.mark.parametrize("n,transport", [(2, "shm"), (2, "mpi"), (4, "mpi")])
def test_operators_over_mpi(n, transport):
    pytest.importorskip("mpi4py", exc_type=ModuleNotFoundError)
    env = dict(os.environ, QCOLL_TRANSPORT=transport, QCOLL_TIMEOUT_S="30",
               PYTHONPATH=str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism",
           "none", "-n", str(n), sys.executable, str(HERE / "mpi_worker.py")]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(n):  # mpirun may interleave the ranks' lines
        assert f"rank {rank}: 6 checks ok over {transport}" in r.stdout, r.stdout + r.stderr



@pytest.mark.parametrize("n,transport", [(2, "mpi"), (3, "shm")])
def test_fp4_over_mpi_extended(n, transport):
    """QCOLL_CONTRACT=extended: the 4-bit x over MPI processes (n = 3: beyond the vendor's
    rank counts), bit for bit against the reference and the thread transport."""
    pytest.importorskip("mpi4py", exc_type=ModuleNotFoundError)
    env = dict(os.environ, QCOLL_TRANSPORT=transport, QCOLL_TIMEOUT_S="30", QCOLL_CONTRACT="extended",
               PYTHONPATH=str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism",
           "none", "-x", "QCOLL_CONTRACT", "-n", str(n), sys.executable, str(HERE / "mpi_worker.py")]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(n):
        assert f"rank {rank}: 10 checks ok over {transport}" in r.stdout, r.stdout + r.stderr
