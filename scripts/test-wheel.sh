#!/usr/bin/env bash
# The wheel as a new user gets it: builds the sdist and from it the repaired wheel
# (scripts/build-wheel.sh), installs the wheel into a new venv that has nothing else, with
# --no-index from a local folder of wheels, and runs from a folder outside the repository:
#   - `import qcoll` maps no MPI library, and ldd of the modules and of the program lists none;
#   - the versions agree: VERSION, the wheel's metadata, qcoll.__version__, `qcoll --version`;
#   - README.md's Python example, `qcoll demo --ranks 2 --bs 64`, `qcoll formats show|encode`;
#   - qcoll.mpi without an MPI library (QCOLL_MPI_LIBRARY naming one that does not exist):
#     MpiGroup raises MpiUnavailableError naming the library and how to get it;
#   - pytest -m wheel on a copy of python/tests (the tests marked `wheel`);
#   - with torch and mpi4py (a second venv over the system's packages, the same wheel
#     installed --no-deps): the tests marked `wheel` again, which then run the qcoll.torch
#     torchrun check and the operators over mpirun through qcoll.mpi.
#
# Usage: scripts/test-wheel.sh            (QCOLL_WHEEL=path.whl tests that wheel, no build)
# Network: only the first run, for the local folder of wheels (build/wheel-cache: numpy,
# ml_dtypes, pytest and their dependencies, pinned, `pip download`, about 20 MB) and the
# build tools of build-wheel.sh; later runs need none.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
CACHE=$ROOT/build/wheel-cache
# The wheel's runtime needs and pytest at their pins (requirements/python.lock).
PINS=$(grep -E '^(numpy|ml_dtypes|pytest)==' requirements/python.lock | tr '\n' ' ')
work=$(mktemp -d /tmp/qcoll-wheel-test.XXXXXX); trap 'rm -rf "$work"' EXIT
fail() { echo "test-wheel: FAILED: $*" >&2; exit 1; }
step() { echo "test-wheel: $*"; }

if [ -n "${QCOLL_WHEEL:-}" ]; then
  wheel=$(cd "$(dirname "$QCOLL_WHEEL")" && pwd)/$(basename "$QCOLL_WHEEL")
else
  scripts/build-wheel.sh "$work/dist"
  wheel=$(ls "$work"/dist/qcoll-*.whl)
fi
version=$(tr -d ' \n' < VERSION)

if [ ! -f "$CACHE/.pins" ] || [ "$(cat "$CACHE/.pins")" != "$PINS" ]; then
  step "pip download $PINS -> $CACHE (once)"
  rm -rf "$CACHE"; mkdir -p "$CACHE"
  "$PYTHON" -m pip download -q --disable-pip-version-check --only-binary=:all: -d "$CACHE" $PINS \
    -c requirements/python.lock
  echo "$PINS" > "$CACHE/.pins"
fi

step "new venv (no system packages), pip install --no-index $(basename "$wheel")"
"$PYTHON" -m venv "$work/venv"
V=$work/venv/bin
t0=$SECONDS
"$V/pip" install -q --disable-pip-version-check --no-index --find-links "$CACHE" "$wheel"
step "installed in $((SECONDS - t0)) s"
"$V/pip" install -q --disable-pip-version-check --no-index --find-links "$CACHE" pytest

cd "$work"  # outside the repository: what runs is the installed package
pkg=$("$V/python" -c 'import os, qcoll; print(os.path.dirname(qcoll.__file__))')
case $pkg in "$work"/venv/*) ;; *) fail "qcoll imported from $pkg, not from the venv" ;; esac

step "no MPI in import qcoll, nor in ldd of the modules and the program"
"$V/python" -c '
import qcoll
maps = open("/proc/self/maps").read()
assert "libmpi" not in maps and "open-pal" not in maps, "import qcoll mapped an MPI library"
'
for f in "$pkg"/_core*.so "$pkg"/_bin/qcoll; do
  [ -e "$f" ] || fail "$f is missing"
  deps=$(ldd "$f")
  if grep -Eq 'libmpi|open-rte|open-pal|libhwloc|libevent' <<<"$deps"; then fail "ldd $f lists MPI: $deps"; fi
  if grep -q 'not found' <<<"$deps"; then fail "ldd $f: $deps"; fi
done

step "one version: VERSION $version"
meta=$("$V/python" -c 'import importlib.metadata as m; print(m.version("qcoll"))')
py=$("$V/python" -c 'import qcoll; print(qcoll.__version__)')
cli=$("$V/qcoll" --version)
[ "$meta" = "$version" ] && [ "$py" = "$version" ] && [ "$cli" = "qcoll $version" ] ||
  fail "versions differ: VERSION $version, wheel $meta, qcoll.__version__ $py, qcoll --version '$cli'"

step "README.md's Python example"
"$V/python" - "$ROOT/README.md" > example.py <<'PY'
import re, sys
print(re.search(r"```python\n(.*?)```", open(sys.argv[1]).read(), re.S).group(1))
PY
out=$("$V/python" example.py) || fail "the README example: $out"
grep -q '^(2, 1024) ' <<<"$out" || fail "the README example printed: $out"

step "qcoll demo --ranks 2 --bs 64; qcoll formats show / encode"
"$V/qcoll" demo --ranks 2 --bs 64 > demo.txt || { cat demo.txt; fail "qcoll demo"; }
"$V/qcoll" formats show float8_e4m3fn > formats.txt || { cat formats.txt; fail "qcoll formats show"; }
[ "$(wc -l < formats.txt)" = 256 ] || fail "qcoll formats show float8_e4m3fn: $(wc -l < formats.txt) lines, not 256"
enc=$("$V/qcoll" formats encode hifloat8 1.0625) || fail "qcoll formats encode: $enc"
[ "${enc%% *}" = 0x09 ] || fail "qcoll formats encode hifloat8 1.0625 printed '$enc', not 0x09 (contract.md)"

step "qcoll.mpi without an MPI library"
msg=$(QCOLL_MPI_LIBRARY=libmpi-not-installed.so.40 "$V/python" -c '
import qcoll, qcoll.mpi
assert qcoll.mpi.available() is False
try:
    qcoll.mpi.MpiGroup()
except qcoll.mpi.MpiUnavailableError as e:
    print(e)
else:
    raise SystemExit("MpiGroup() did not raise")
') || fail "qcoll.mpi without MPI: $msg"
grep -q 'libmpi-not-installed.so.40' <<<"$msg" && grep -q 'apt-get install openmpi-bin libopenmpi3' <<<"$msg" &&
  grep -q 'pip install qcoll\[mpi\]' <<<"$msg" || fail "the message does not say what is missing: $msg"
echo "  $msg"

step "pytest -m wheel (clean venv)"
cp -r "$ROOT/python/tests" tests
"$V/python" -m pytest -q -rs -p no:cacheprovider -m wheel tests

if "$PYTHON" -c 'import torch, mpi4py' 2>/dev/null; then
  step "pytest -m wheel with torch and mpi4py (venv over the system's packages, --no-deps)"
  "$PYTHON" -m venv --system-site-packages "$work/tvenv"
  "$work/tvenv/bin/pip" install -q --disable-pip-version-check --no-index --no-deps "$wheel"
  "$work/tvenv/bin/python" -m pytest -q -p no:cacheprovider -m wheel -rs tests
else
  step "skipped the torch/mpi4py part: $PYTHON cannot import torch and mpi4py"
fi
step "passed"
