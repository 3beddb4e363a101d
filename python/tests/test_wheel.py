"""The installed package stands alone (scripts/test-wheel.sh runs this against the repaired
wheel in a venv that has nothing else): `import qcoll` needs no MPI library, the libraries it
loads are its own, qcoll.mpi says what is missing when MPI is, the `qcoll` program is there,
and every version agrees."""
import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

import qcoll
import qcoll._cli
import qcoll._core  # noqa: F401  (loads the extension and its libraries)

pytestmark = pytest.mark.wheel

PKG = os.path.dirname(os.path.realpath(qcoll.__file__))
MPI_LIBS = ("libmpi", "libopen-rte", "libopen-pal", "libhwloc", "libevent")


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **env))


def test_native_libraries_come_from_the_package():
    # libqcoll and Highway from the package folder (or qcoll.libs beside it, where
    # `auditwheel repair` puts what it grafts), never from the system.
    with open("/proc/self/maps") as f:
        mapped = {line.split()[-1] for line in f if ("libhwy" in line or "libqcoll" in line) and "/" in line}
    assert any("libhwy" in p for p in mapped), mapped
    assert any("libqcoll" in p for p in mapped), mapped
    site = os.path.dirname(PKG)
    for p in mapped:
        d = os.path.dirname(os.path.realpath(p))
        assert d == PKG or d == os.path.join(site, "qcoll.libs"), p


def test_import_maps_no_mpi_library():
    # qcoll.mpi too: it opens the MPI library only when a group is made.
    r = _python("import qcoll, qcoll.npu, qcoll.mpi\n"
                "print(open('/proc/self/maps').read())")
    assert r.returncode == 0, r.stderr
    for lib in MPI_LIBS:
        assert lib not in r.stdout, f"import qcoll mapped {lib}"


@pytest.mark.skipif(shutil.which("ldd") is None, reason="no ldd")
def test_ldd_of_the_core_module_and_the_program_lists_no_mpi():
    core = [os.path.join(PKG, f) for f in os.listdir(PKG) if f.startswith("_core") and f.endswith(".so")]
    assert len(core) == 1, os.listdir(PKG)
    for f in core + [qcoll._cli.program()]:
        out = subprocess.run(["ldd", f], capture_output=True, text=True, check=True).stdout
        assert "not found" not in out, out
        for lib in MPI_LIBS:
            assert lib not in out, f"ldd {f}:\n{out}"


@pytest.mark.skipif(not qcoll.HAS_MPI, reason="qcoll built without MPI")
def test_mpi_group_without_an_mpi_library_says_what_to_install():
    r = _python("import qcoll, qcoll.mpi\n"
                "assert qcoll.mpi.available() is False\n"
                "try:\n"
                "    qcoll.mpi.MpiGroup()\n"
                "except qcoll.mpi.MpiUnavailableError as e:\n"
                "    print(e)\n",
                QCOLL_MPI_LIBRARY="libmpi-not-installed.so.40")
    assert r.returncode == 0, r.stderr
    msg = r.stdout
    assert "libmpi-not-installed.so.40" in msg, msg
    assert "apt-get install openmpi-bin libopenmpi3" in msg, msg
    assert "pip install qcoll[mpi]" in msg, msg


def test_one_version_everywhere():
    cli = subprocess.run([qcoll._cli.program(), "--version"], capture_output=True, text=True, timeout=30)
    assert cli.returncode == 0, cli.stderr
    assert qcoll.__version__ == importlib.metadata.version("qcoll")
    assert cli.stdout.strip() == f"qcoll {qcoll.__version__}"


def test_console_script_runs_the_program():
    # The console script `qcoll` that pip installed with the package: in a venv beside its
    # python, else in the scheme's scripts folder (e.g. /usr/local/bin), else on PATH.
    candidates = [os.path.join(os.path.dirname(sys.executable), "qcoll"),
                  os.path.join(sysconfig.get_path("scripts"), "qcoll"), shutil.which("qcoll")]
    script = next((c for c in candidates if c and os.path.exists(c)), None)
    assert script, candidates
    r = subprocess.run([script, "demo", "--ranks", "2", "--bs", "64"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([script, "formats", "encode", "hifloat8", "1.0625"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split()[0] == "0x09", r.stdout  # contract.md's HiF8 vector
