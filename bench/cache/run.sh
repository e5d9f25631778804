#!/usr/bin/env bash
# Response cache benchmark (bench/cache/run.ts): hit vs miss for densenet_onnx and simple, with the local
# cache and with Redis, over HTTP, and a local hit of simple against a bare echo server, in one table.
# Builds first; the table is kept in bench/results/cache-<UTC time>.md and bench/results/cache-latest.md.
# Env: CACHE_BENCH_SECONDS (4: measuring time per point), CACHE_BENCH_CONCURRENCY ("1,8").
set -euo pipefail
cd "$(dirname "$0")/../.."
npx tsc -p tsconfig.json >&2
mkdir -p bench/results
out=bench/results/cache-$(date -u +%Y%m%dT%H%M%SZ).md
node dist/bench/cache/run.js --seconds "${CACHE_BENCH_SECONDS:-4}" --concurrency "${CACHE_BENCH_CONCURRENCY:-1,8}" --out "$out"
cp "$out" bench/results/cache-latest.md
