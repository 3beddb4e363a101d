# Sourced by the test scripts: `step NAME COMMAND...` runs a stage and records its wall time
# in `timings`; `print_timings` lists them. STAGE_PREFIX names the script in the headings.
timings=()
step() {
  local name=$1; shift
  local t0=$SECONDS
  echo "== ${STAGE_PREFIX:-test}: $name"
  "$@"
  timings+=("$name: $((SECONDS - t0)) s")
}
print_timings() { echo "${STAGE_PREFIX:-test}: stage times"; printf '  %s\n' "${timings[@]}"; }
