#!/usr/bin/env bash
# `npm start`: build, make sure the bundled Python models have an interpreter with numpy (the repository's
# .venv, created once by scripts/setup-python.sh), then serve examples/model_repository. Extra arguments are
# passed to the server (e.g. `npm start -- --http-port=9000`).
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -p tsconfig.json
[[ -x .venv/bin/python ]] || NEREID_SKIP_PERF_ANALYZER=1 bash scripts/setup-python.sh
exec bin/nereid.js --model-repository=examples/model_repository "$@"
