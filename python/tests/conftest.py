"""What a caller's environment must not change in the Python tests (as cmake/test_env.cmake
does for ctest): every QCOLL_* / HCCL_* setting and the launcher variables of torchrun and
mpirun are removed before any test module is imported, so the tests (and the processes they
start: torchrun, mpirun, workers) see the defaults unless a test sets a value itself; and the
markers of qcoll's Python tests."""
import os
import re

CLEARED = re.compile(r"^(QCOLL_|HCCL_|TORCHELASTIC_|OMPI_COMM_WORLD_)|^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|"
                     r"GROUP_RANK|ROLE_RANK|MASTER_ADDR|MASTER_PORT|PMI_RANK|PMI_SIZE|MPI_LOCALRANKID)$")
# Knobs of the test scripts that a caller sets on purpose.
KEPT = {"QCOLL_SKIP_PYTHON", "QCOLL_SKIP_TORCH", "QCOLL_SANITIZERS", "QCOLL_BUILD_DIR", "QCOLL_EXHAUSTIVE",
        "QCOLL_CLI"}  # (QCOLL_CLI: where the tests find the qcoll program)

for _name in [n for n in os.environ if CLEARED.search(n) and n not in KEPT]:
    del os.environ[_name]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "wheel: runs against an installed wheel from outside the repository (scripts/test-wheel.sh)")
