#!/usr/bin/env bash
# The whole test suite (npm test), in three stages; each stage's time is printed at its end.
#   1. static checks (tsc, ansible-lint, yamllint, shellcheck, syntax checks);
#   2. two lanes side by side, because neither keeps both cores busy (the TypeScript tests mostly wait on terraform
#      and the AWS emulator, the worker's tests on rendezvous timeouts and process starts):
#        lane 1: the TypeScript tests (npm run test:unit), then the worker's tests on the current torch release
#                (only the tests marked torch_release);
#        lane 2: the worker's tests on Debian's torch 1.13, all of them (this builds the worker image first), then
#                the quick TypeScript tests again on Node.js 22 (npm run test:quick:node22);
#      each lane's output goes to a log, printed when the lane ends;
#   3. the local testbed end to end (npm run test:e2e), alone: it measures bandwidth and CPU quotas.
# Any failure fails the suite after its stage, with the failing lane's log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

logs=$(mktemp -d "${TMPDIR:-/tmp}/ringlab-suite.XXXXXX")
trap 'rm -rf "$logs"' EXIT
trap 'kill 0; exit 130' INT TERM
suite_started=$SECONDS

stage() { printf '\n=== %s\n' "$*"; }
took() { printf '=== %s: %d s\n' "$1" $((SECONDS - $2)); }

stage "static checks"
started=$SECONDS
npm run --silent test:static || { echo "FAIL: static checks" >&2; exit 1; }
took "static checks" "$started"

stage "TypeScript and worker tests, two lanes side by side (logs follow as each lane ends)"
started=$SECONDS
names=("" "test:unit, then test:python:current" "test:python:system, then test:quick:node22")
( npm run --silent test:unit && npm run --silent test:python:current ) >"$logs/lane1.log" 2>&1 &
pids=("" "$!")
( npm run --silent test:python:system && npm run --silent test:quick:node22 ) >"$logs/lane2.log" 2>&1 &
pids+=("$!")
failed=()
running=(1 2)
last_note=$SECONDS
while [[ ${#running[@]} -gt 0 ]]; do
  still=()
  for lane in "${running[@]}"; do
    if kill -0 "${pids[$lane]}" 2>/dev/null; then still+=("$lane"); continue; fi
    if wait "${pids[$lane]}"; then status=passed; else status=FAILED; failed+=("lane $lane (${names[$lane]})"); fi
    printf '\n--- lane %s (%s): %s after %d s\n' "$lane" "${names[$lane]}" "$status" $((SECONDS - started))
    cat "$logs/lane$lane.log"
  done
  running=("${still[@]}")
  if [[ ${#running[@]} -gt 0 ]]; then
    sleep 2
    if (( SECONDS - last_note >= 60 )); then
      last_note=$SECONDS
      printf '    still running after %d s: lane %s\n' $((SECONDS - started)) "${running[*]}"
    fi
  fi
done
took "TypeScript and worker tests" "$started"
if [[ ${#failed[@]} -gt 0 ]]; then echo "FAIL: ${failed[*]}" >&2; exit 1; fi

stage "end to end on the local testbed"
started=$SECONDS
npm run --silent test:e2e || { echo "FAIL: end to end" >&2; exit 1; }
took "end to end" "$started"

printf '\nPASS: the whole suite in %d s\n' $((SECONDS - suite_started))
