#!/usr/bin/env bash
# Where a concurrency-1 request's time goes, tail included (issue 29 item 1): starts <checkout>/bin/nereid.js
# on a copy of bench/vs-triton/models with every request traced (`--trace-config rate=1`, TIMESTAMPS) and
# the GC preload (bench/c1-tail-gc.ts: each collection on the trace's clock), drives <model> with
# perf_analyzer at concurrency 1, then prints each part of a request's cycle (pre, to_stub, model,
# from_stub, post, gap: bench/c1-tail.ts) at p50/p90/p99, the parts of the slowest 1 % of cycles, and how
# many of those ran a garbage collection. Tracing every request costs a few µs each; compare parts with
# each other, not the totals with an untraced run.
#
#   bash bench/c1-tail.sh <checkout> <http | grpc> [model]
#
# Env: PORT (24380; PORT+1 is gRPC), WINDOW_MS (4000: two windows), WARMUP_SECONDS (10: served first
# and left out, 0 = none, then the first tenth is left out), NODE_FLAGS, SERVER_FLAGS,
# STUB_PYTHON (the stubs' interpreter; default .venv-triton's, as bench/cpu-per-request.sh), KEEP=<dir>
# (copies the trace, the GC log and the server's log there).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=$(cd "${1:?usage: c1-tail.sh <checkout> <http|grpc> [model]}" && pwd)
protocol=${2:?protocol}
model=${3:-vt_add_sub}
port=${PORT:-24380}
window=${WINDOW_MS:-4000}
warmup=${WARMUP_SECONDS:-10}
python=${STUB_PYTHON:-$root/.venv-triton/bin/python}
[[ -f $root/dist/bench/c1-tail.js ]] || {
  echo "c1-tail: build first (npx tsc -p tsconfig.json)" >&2
  exit 1
}

work=$(mktemp -d /tmp/c1-tail.XXXXXX)
mkdir "$work/models"
cp -r "$root"/bench/vs-triton/models/* "$work/models/"
# shellcheck disable=SC2086
NEREID_GC_LOG=$work/gc.log node ${NODE_FLAGS:-} --initial-heap-size=128 \
  --import "$(node -p "require('node:url').pathToFileURL('$root/dist/bench/c1-tail-gc.js').href")" \
  "$target/bin/nereid.js" --model-repository="$work/models" --http-port="$port" --grpc-port=$((port + 1)) \
  --allow-metrics=false --log-info=false --backend-config=python,python-executable="$python" \
  --trace-config triton,file="$work/trace.json" --trace-config triton,log-frequency=0 \
  --trace-config rate=1 --trace-config level=TIMESTAMPS ${SERVER_FLAGS:-} >"$work/server.log" 2>&1 &
pid=$!
cleanup() {
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [[ -n ${KEEP:-} ]]; then
    mkdir -p "$KEEP"
    cp "$work"/trace.json "$work"/gc.log "$work"/server.log "$KEEP"/ 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 150); do
  curl -sf "localhost:$port/v2/models/$model/ready" >/dev/null && break
  sleep 0.2
done
url=localhost:$port
[[ $protocol == grpc ]] && url=localhost:$((port + 1))
served() {
  curl -s "localhost:$port/v2/models/$model/stats" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["model_stats"][0]["inference_stats"]["success"]["count"])'
}
# Warm-up, left out of the analysis: V8 compiles the request path over the first several thousand
# requests (bench/README.md, "What sets the concurrency-1 tail").
if ((warmup > 0)); then
  "$root"/.venv/bin/perf_analyzer -m "$model" -i "$protocol" -u "$url" --concurrency-range 1 \
    --measurement-interval $((warmup * 1000)) --stability-percentage 999 --max-trials 1 >/dev/null 2>&1 || true
fi
skip=
((warmup > 0)) && skip=$(served)
"$root"/.venv/bin/perf_analyzer -m "$model" -i "$protocol" -u "$url" --concurrency-range 1 \
  --measurement-interval "$window" --stability-percentage 999 --max-trials 2 >"$work/pa.txt" 2>&1 || true
kill -INT "$pid"
wait "$pid" 2>/dev/null || true
echo "$(basename "$target") $protocol c1 $model, ${skip:-no} warm-up requests left out, load $(cut -d' ' -f1 /proc/loadavg)"
node "$root/dist/bench/c1-tail.js" "$work/trace.json" "$work/gc.log" $skip
