#!/usr/bin/env bash
# Installs what qcoll needs on Debian 12 (as root), skipping what is already there.
set -euo pipefail
APT_PACKAGES=(build-essential cmake ninja-build pkg-config git clang clang-format libclang-rt-14-dev
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

# Debian packages come from Debian 12's archive, whose versions do not change within the
# release (security fixes only): they need no pin. Python packages come from PyPI, where they
# do: each is pinned (requirements/*.txt, with everything they pull in locked in
# requirements/*.lock), and a package installed at another version is brought to the pin.
# PYTHON (default python3) is the interpreter that builds and tests the Python package: a
# venv's python works too.
PYTHON=${PYTHON:-python3}
REQ=requirements
# QCOLL_APT_ONLY=1: Debian's packages only (scripts/build-smpi.sh, which needs no Python).
sets=()
[ "${QCOLL_APT_ONLY:-0}" = "1" ] || sets+=(python)
[ "${QCOLL_APT_ONLY:-0}" = "1" ] || [ "${QCOLL_SKIP_TORCH:-0}" = "1" ] || sets+=(torch)
for set in "${sets[@]+"${sets[@]}"}"; do
  # The locked packages not installed at their pinned version (none: nothing to do).
  if ! stale=$("$PYTHON" scripts/pins.py check "$REQ/$set.lock"); then
    echo "install-deps: $PYTHON cannot check the pins (is pip there?)" >&2
    exit 1
  fi
  [ -z "$stale" ] && continue
  echo "install-deps: pip installing $REQ/$set.txt (pinned in $REQ/$set.lock): $stale"
  [ "$set" = torch ] && echo "install-deps: torch is about 5 GB with its CUDA libraries (QCOLL_SKIP_TORCH=1 skips it)"
  PIP_BREAK_SYSTEM_PACKAGES=1 "$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    -r "$REQ/$set.txt" -c "$REQ/$set.lock"
  if stale=$("$PYTHON" scripts/pins.py check "$REQ/$set.lock") && [ -n "$stale" ]; then
    echo "install-deps: still not at the pinned versions after pip install: $stale" >&2
    exit 1
  fi
done
