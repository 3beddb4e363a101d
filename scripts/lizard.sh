#!/usr/bin/env bash
# Function length and cyclomatic complexity of src/ and tools/ (issue 19's rule): prints
# every function over 80 lines of code or of complexity over 20, and fails when there is
# one. lizard is pinned in requirements/python.txt (scripts/install-deps.sh installs it).
#   scripts/lizard.sh [extra lizard arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -m lizard --version >/dev/null 2>&1; then
  echo "lizard.sh: lizard is not installed for $PYTHON (scripts/install-deps.sh installs the pin)" >&2
  exit 1
fi
# -w: warnings only (one line per function over a limit), and exit status 1 when any.
if ! out=$("$PYTHON" -m lizard -C 20 -L 80 -w "$@" src tools); then
  printf '%s\n' "$out"
  echo "lizard.sh: $(printf '%s\n' "$out" | grep -c ': warning:') functions over -C 20 / -L 80 (src, tools)" >&2
  exit 1
fi
echo "lizard.sh: no function over 80 lines or complexity 20 in src/ and tools/"
