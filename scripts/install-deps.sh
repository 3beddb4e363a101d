#!/usr/bin/env bash
# Installs what qcoll needs on Debian 12 (as root), skipping what is already there.
set -euo pipefail
APT_PACKAGES=(build-essential cmake ninja-build pkg-config git clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev libhwy-dev libcli11-dev nlohmann-json3-dev
  libopenmpi-dev openmpi-bin libgloo-dev gnuplot-nox iproute2 python3 python3-pip python3-dev)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages (PyPI) for the Python package in python/ and its tests: build tools
# (scikit-build-core, nanobind), runtime (numpy, ml_dtypes), tests (pytest; mpi4py for
# the MPI tests, a prebuilt wheel that uses the system Open MPI). Only what is missing.
PYTHON=${PYTHON:-python3}
PIP_PACKAGES=(numpy:numpy ml_dtypes:ml_dtypes pytest:pytest nanobind:nanobind
  scikit-build-core:scikit_build_core mpi4py:mpi4py)
missing_py=()
for entry in "${PIP_PACKAGES[@]}"; do
  "$PYTHON" -c "import ${entry#*:}" 2>/dev/null || missing_py+=("${entry%%:*}")
done
if ((${#missing_py[@]})); then
  echo "install-deps: pip installing ${missing_py[*]}"
  PIP_BREAK_SYSTEM_PACKAGES=1 "$PYTHON" -m pip install -q --disable-pip-version-check "${missing_py[@]}"
fi

# torch, for the qcoll.torch tests (python/tests/test_torch_dist.py: torchrun, gloo, CPU)
# and examples/torch_ddp.py: the default PyPI wheel and its CUDA libraries, about 5 GB
# (5 min 22 s on the 2-core development machine). QCOLL_SKIP_TORCH=1 skips it; the torch
# tests then skip.
if [ "${QCOLL_SKIP_TORCH:-0}" != "1" ] && ! "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "install-deps: pip installing torch (QCOLL_SKIP_TORCH=1 skips it)"
  PIP_BREAK_SYSTEM_PACKAGES=1 "$PYTHON" -m pip install -q --disable-pip-version-check torch
fi
