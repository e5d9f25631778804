#!/usr/bin/env bash
# `npm start`: build what changed, make sure the bundled Python models have an interpreter with numpy, then serve
# examples/model_repository. Extra arguments are passed to the server (e.g. `npm start -- --http-port=9000`).
#
# Signals: npm passes SIGTERM/SIGINT to its child only, not to the whole process group. package.json runs
# this script with `exec`, so the child is this bash; while a step runs, the traps below pass the signal to
# it (each step runs in a process group of its own, so pip or npm's children go too), and the server
# itself replaces this script (`exec`), so it gets the signal directly and stops its Python stubs.
#
# The Python environment: the first run creates .venv with numpy only (the one package the bundled Python
# models import), which takes well under a minute, and says so before it starts. The full tooling
# environment (tritonclient, pytest, ruff, mypy, perf_analyzer) is scripts/setup-python.sh's job; it
# completes this same .venv when the tests need it.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "npm start: $*" >&2; }

child=
forward() {
  local sig=$1
  if [[ -n $child ]]; then
    kill -"$sig" -- "-$child" 2>/dev/null || kill -"$sig" "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  say "stopped by SIG$sig"
  exit $((128 + $(kill -l "$sig")))
}
trap 'forward TERM' TERM
trap 'forward INT' INT

# Runs one step in its own process group (setsid: a background job of a script is not a group leader, so
# setsid keeps its pid) and waits for it, so a signal arriving meanwhile reaches the step's whole tree.
step() {
  setsid "$@" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=
  return "$rc"
}

# The build: only when a source changed since the last one, and then incrementally. dist/.start-build-stamp
# marks the last successful build from here; the sources are what tsconfig.json compiles (src, test, bench)
# plus the files that change how (tsconfig.json, package.json). tsc --incremental keeps its state in
# dist/.tsbuildinfo, so a rebuild re-checks only what the changed files reach. A deleted source does not
# count as a change: `npm run build` (or removing dist/) covers that.
# NEREID_START_SKIP_BUILD=1: dist/ is already built (the tests that run `npm start` build once, before).
build_stamp=dist/.start-build-stamp
changed_sources() {
  local newer=()
  [[ -f $build_stamp ]] && newer=(-newer "$build_stamp")
  { find src test bench -name '*.ts' "${newer[@]}" -print; find tsconfig.json package.json "${newer[@]}" -print; } |
    wc -l
}
if [[ -z ${NEREID_START_SKIP_BUILD:-} ]]; then
  changed=$(changed_sources)
  if [[ ! -f $build_stamp || $changed -gt 0 ]]; then
    say "building ($changed files changed since the last build)…"
    mkdir -p dist
    touch dist/.start-build-next
    step node node_modules/typescript/bin/tsc -p tsconfig.json --incremental --tsBuildInfoFile dist/.tsbuildinfo
    # The stamp takes the time the build started, so a file saved during the build counts next time.
    mv dist/.start-build-next "$build_stamp"
  else
    say "dist/ is up to date (no source changed since the last build)"
  fi
fi

if [[ ! -x .venv/bin/python ]]; then
  numpy=$(grep -E '^numpy==' test/compat/requirements.txt)
  python=${PYTHON:-python3}
  say "first run: creating .venv, a Python environment with $numpy, because the bundled Python models"
  say "(add_sub_python, repeat_int32_python, simple_identity) need an interpreter with numpy. This takes"
  say "up to a minute, once; later starts skip it. (\`bash scripts/setup-python.sh\` adds the test tools.)"
  if ! step "$python" -m venv .venv; then
    rm -rf .venv
    say "error: '$python -m venv' failed: install Python >= 3.11 with venv (Debian: apt-get install python3-venv)"
    exit 1
  fi
  if ! step .venv/bin/python -m pip install -q --disable-pip-version-check "$numpy"; then
    rm -rf .venv
    say "error: installing $numpy into .venv failed (see above); the next start tries again"
    exit 1
  fi
  say ".venv is ready ($(.venv/bin/python --version))"
fi

trap - TERM INT
exec bin/nereid.js --model-repository=examples/model_repository "$@"
