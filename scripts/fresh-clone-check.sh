#!/usr/bin/env bash
# The first hour, checked: clones this repository's committed HEAD into a temporary folder and runs the
# README's two commands there exactly as written, as a new user would:
#   1. `npm ci && npm start` in the background (one process group, as a terminal runs it), waits until
#      http://localhost:8000/v2/health/ready answers 200, then sends SIGINT to the group (Ctrl-C) and
#      requires exit status 0;
#   2. `npm test` (about 30 minutes on 2 cores; README says what it needs from the machine).
# Logs the wall time and exit status of each, and exits non-zero if either failed. Uncommitted changes are
# not in the clone: commit first.
#
# Usage: bash scripts/fresh-clone-check.sh [--start-only] [--keep]
#   --start-only  run step 1 only (skip the long npm test)
#   --keep        keep the temporary folder (its path is printed) instead of deleting it
# Env: NEREID_FRESH_READY_TIMEOUT (seconds to wait for ready, default 900: npm ci downloads and the first
#      start builds and creates .venv).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

start_only=
keep=
for arg in "$@"; do
  case $arg in
    --start-only) start_only=1 ;;
    --keep) keep=1 ;;
    *)
      echo "usage: bash scripts/fresh-clone-check.sh [--start-only] [--keep]" >&2
      exit 2
      ;;
  esac
done

say() { echo "fresh-clone-check: $*"; }
die() {
  echo "fresh-clone-check: error: $*" >&2
  exit 1
}

command -v curl >/dev/null || die "curl is needed to poll the server's readiness"
if curl -s -o /dev/null --max-time 2 http://localhost:8000/v2/health/ready; then
  die "something already answers on localhost:8000; stop it first (the README's npm start uses that port)"
fi

head=$(git -C "$root" rev-parse HEAD)
work=$(mktemp -d "${TMPDIR:-/tmp}/nereid-fresh-clone.XXXXXX")
group=
cleanup() {
  if [[ -n $group ]]; then kill -KILL -- "-$group" 2>/dev/null || true; fi
  if [[ -n $keep ]]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

say "cloning $head into $work/nereid"
git clone -q --no-checkout "$root" "$work/nereid"
git -C "$work/nereid" checkout -q --detach "$head"
cd "$work/nereid"

results=()
status=0

# --- 1. npm ci && npm start ------------------------------------------------------------------------------
# Job control on: the background job gets a process group of its own and SIGINT is not ignored in it (a
# non-interactive shell's background jobs otherwise start with SIGINT ignored), so the kill below is the
# terminal's Ctrl-C.
say "running: npm ci && npm start (log: $work/start.log)"
t0=$(date +%s)
set -m
bash -c 'npm ci && npm start' >"$work/start.log" 2>&1 &
group=$!
set +m
timeout=${NEREID_FRESH_READY_TIMEOUT:-900}
ready=
while (($(date +%s) - t0 < timeout)); do
  if ! kill -0 "$group" 2>/dev/null; then break; fi
  if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 http://localhost:8000/v2/health/ready) == 200 ]]; then
    ready=1
    break
  fi
  sleep 1
done
t_ready=$(($(date +%s) - t0))
if [[ -n $ready ]]; then
  say "ready on :8000 after ${t_ready}s; sending SIGINT to the process group"
  kill -INT -- "-$group" 2>/dev/null || true
  code=0
  t1=$(date +%s)
  # Stop waiting after a minute: a server that does not stop on SIGINT is a failure too.
  while kill -0 "$group" 2>/dev/null && (($(date +%s) - t1 < 60)); do sleep 0.2; done
  if kill -0 "$group" 2>/dev/null; then
    kill -KILL -- "-$group" 2>/dev/null || true
    code=timeout
    wait "$group" 2>/dev/null || true
  else
    wait "$group" || code=$?
  fi
  group=
  if [[ $code == 0 ]]; then
    results+=("  ok      npm ci && npm start: ready after ${t_ready}s, exit 0 after SIGINT ($(($(date +%s) - t1))s)")
  else
    results+=("  FAILED  npm ci && npm start: ready after ${t_ready}s, but exit $code after SIGINT")
    status=1
  fi
  if grep -q 'Traceback' "$work/start.log"; then
    results+=("  FAILED  npm start's output holds a Python traceback (see $work/start.log)")
    status=1
  fi
else
  code=0
  if kill -0 "$group" 2>/dev/null; then
    kill -KILL -- "-$group" 2>/dev/null || true
    code="not ready within ${timeout}s"
  else
    wait "$group" || code="exit $?"
  fi
  group=
  results+=("  FAILED  npm ci && npm start: $code after ${t_ready}s (see $work/start.log)")
  status=1
  keep=1
fi
[[ $status -eq 0 ]] || tail -n 30 "$work/start.log"

# --- 2. npm test -----------------------------------------------------------------------------------------
if [[ -n $start_only ]]; then
  results+=("  skipped npm test (--start-only)")
else
  say "running: npm test (log: $work/test.log)"
  t0=$(date +%s)
  code=0
  npm test 2>&1 | tee "$work/test.log" || code=${PIPESTATUS[0]}
  if [[ $code -eq 0 ]]; then
    results+=("  ok      npm test: exit 0 after $(($(date +%s) - t0))s")
  else
    results+=("  FAILED  npm test: exit $code after $(($(date +%s) - t0))s (see $work/test.log)")
    status=1
    keep=1
  fi
fi

echo
echo "==================== fresh clone check ($head) ===================="
printf '%s\n' "${results[@]}"
exit "$status"
