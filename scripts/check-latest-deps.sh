#!/usr/bin/env bash
# Are the pins current? Installs the newest versions of requirements/python.txt (and
# torch.txt unless QCOLL_SKIP_TORCH=1) from PyPI into a throwaway venv, builds the Python
# package there, runs its tests, and reports what changed against the locks. Not part of CI
# (it follows PyPI, which moves); run it before moving a pin, then commit the new locks with
# `--lock` once the tests pass.
#   scripts/check-latest-deps.sh          newest versions, tests, report
#   scripts/check-latest-deps.sh --lock   the same, then writes requirements/*.lock from it
# VENV (default a new temporary folder) is removed at the end unless KEEP_VENV=1.
set -euo pipefail
cd "$(dirname "$0")/.."
LOCK=0; [ "${1:-}" = "--lock" ] && LOCK=1
VENV=${VENV:-$(mktemp -d /tmp/qcoll-latest-XXXXXX)}
PY=${PYTHON:-python3}
cleanup() { [ "${KEEP_VENV:-0}" = 1 ] || rm -rf "$VENV"; }
trap cleanup EXIT
"$PY" -m venv "$VENV"
V="$VENV/bin/python"
unpinned() { sed -e 's/#.*//' -e 's/==.*//' -e '/^[[:space:]]*$/d' "$@"; }
"$V" -m pip install -q --disable-pip-version-check $(unpinned requirements/python.txt)
"$V" -m pip freeze > "$VENV/python.freeze"
sets=(python)
if [ "${QCOLL_SKIP_TORCH:-0}" != 1 ]; then
  "$V" -m pip install -q --disable-pip-version-check $(unpinned requirements/torch.txt)
  "$V" -m pip freeze > "$VENV/torch.freeze"
  sets+=(torch)
fi
for set in "${sets[@]}"; do
  echo "check-latest-deps: requirements/$set.lock against the newest versions:"
  changed=$("$V" scripts/pins.py diff "requirements/$set.lock" "$VENV/$set.freeze")
  echo "${changed:-  (no change)}" | sed 's/^/  /'
done
status=0
"$V" -m pip install -q --no-build-isolation --disable-pip-version-check . &&
  "$V" -m pytest -q -rs -p no:cacheprovider python/tests || status=$?
rm -rf build/python-*  # built against the throwaway venv: the next scripts/test.sh builds anew
if [ "$status" != 0 ]; then
  echo "check-latest-deps: the Python tests FAILED with the newest versions (exit $status): keep the pins" >&2
  exit "$status"
fi
echo "check-latest-deps: the Python tests pass with the newest versions"
if [ "$LOCK" = 1 ]; then
  for set in "${sets[@]}"; do
    head=$(grep '^#' "requirements/$set.lock")
    { echo "$head"; cat "$VENV/$set.freeze"; } > "requirements/$set.lock"
  done
  echo "check-latest-deps: wrote requirements/{${sets[*]}}.lock; set the same versions in requirements/*.txt"
fi
