#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this): the fast lane
# (`-m "not slow"`: no model, server, cluster or browser; the guard in tests/fixtures/guard.py
# fails a test that starts one unmarked), then the slow lane (`-m slow`). Each lane prints
# its 25 slowest tests and how long it took. Both lanes always run; the script fails if
# either fails, including pytest's "no tests ran" (exit 5).
#
#   bash scripts/test.sh [PYTEST_ARGS...]     e.g. -x, or -p no:randomly
set -uo pipefail
cd "$(dirname "$0")/.."

lane() {
  local name=$1 marker=$2 start rc
  shift 2
  echo "=== $name lane (-m \"$marker\") ==="
  start=$(date +%s)
  python -m pytest -m "$marker" --durations=25 "$@"
  rc=$?
  echo "=== $name lane: exit $rc, $(( $(date +%s) - start )) s ==="
  if [ "$rc" -eq 5 ]; then
    echo "$name lane: no tests ran (pytest exit 5)" >&2
  fi
  return "$rc"
}

status=0
# The fast lane runs on every core (pytest-xdist): its tests are independent and CPU-bound.
# The slow lane does not: its session fixtures (one vLLM engine, one llama.cpp server, one
# Ray cluster) would be started once per worker, and the model already uses the cores.
lane fast "not slow" -n auto "$@" || status=1
lane slow "slow" "$@" || status=1
exit "$status"
