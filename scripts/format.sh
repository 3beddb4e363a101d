#!/usr/bin/env bash
# clang-format (.clang-format) over the C and C++ files git tracks (src, include, tests,
# tools, bench, fuzz, examples, python/src).
#   scripts/format.sh           rewrites the files in place
#   scripts/format.sh --check   changes nothing; lists each file that differs and how many of
#                               its lines would change, then the total; fails when any would
#   scripts/format.sh [--check] FILE...   only these files
# CLANG_FORMAT picks the program (default clang-format; Debian 12's is 14.0.6).
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
if (($#)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.c' '*.cc' '*.cpp' '*.h' '*.hpp')
fi
if [ "$check" = 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 "$CLANG_FORMAT" -i --style=file
  exit 0
fi
total=0 nfiles=0
for f in "${files[@]}"; do
  n=$("$CLANG_FORMAT" --style=file "$f" | diff "$f" - | grep -c '^<' || true)
  if [ "$n" -gt 0 ]; then
    echo "$f: $n lines"
    total=$((total + n)) nfiles=$((nfiles + 1))
  fi
done
echo "format.sh: $total lines in $nfiles of ${#files[@]} files differ from .clang-format"
[ "$total" = 0 ]
