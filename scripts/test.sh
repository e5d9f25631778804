#!/usr/bin/env bash
# The one test command (README: `npm test`): build, unit + integration tests (node:test), then the
# compatibility suite with the real tritonclient in a Python venv.
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -p tsconfig.json
mapfile -t files < <(find dist/src dist/test -name '*.test.js' | sort)
node --test --test-concurrency=1 "${files[@]}"
