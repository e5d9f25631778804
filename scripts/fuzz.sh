#!/usr/bin/env bash
# The nightly fuzz run (`npm run fuzz`, docs/security.md "Fuzzing and API conformance"): builds, then runs
# every fuzz target of test/fuzz/ with 100,000 generated cases in all (each target in its own worker
# thread, watched for hangs) and prints the cases and outcomes per target. A fresh seed each run unless
# --seed is given; a failure prints the shrunk counterexample and the arguments that replay it.
#
#   bash scripts/fuzz.sh [--cases=100000] [--seed=N] [--target=name,...] [--path=P] [--hang-seconds=120]
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -p tsconfig.json
exec node dist/test/fuzz/run.js "$@"
