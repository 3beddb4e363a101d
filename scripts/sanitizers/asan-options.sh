# Sourced by scripts/test-sanitizers.sh and scripts/repeat-tests.sh (from the repository
# root): the ASan / UBSan / LSan options the sanitizer ctest relies on. They come after the
# caller's own *SAN_OPTIONS, so that these hold (later entries win) and the caller's other
# options are kept.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0"
