#!/usr/bin/env bash
# The one test command (README: `npm test`): build, unit + integration tests (node:test), then the
# compatibility suite: Triton's real Python client and perf_analyzer against bin/nereid.js (test/compat,
# in the .venv that scripts/setup-python.sh provisions).
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -p tsconfig.json
mapfile -t files < <(find dist/src dist/test -name '*.test.js' | sort)
status=0
node --test --test-concurrency=1 "${files[@]}" || status=$?
bash scripts/setup-python.sh
.venv/bin/pytest -q test/compat || status=$?
exit "$status"
