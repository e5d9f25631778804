#!/usr/bin/env bash
# Serving overhead benchmark (`npm run bench`): bare onnxruntime-node throughput of a model in-process, the
# same model served over HTTP by Nereid under load from Triton's perf_analyzer, and the served/bare ratio
# side by side. Results go to bench/results/<UTC time>/ (gitignored); the table is printed at the end and
# kept in summary.md there. See bench/README.md.
#
# Env: BENCH_MODEL (densenet_batched), BENCH_BATCHES ("1 8"), BENCH_CONCURRENCY ("1 4 16"),
#      BENCH_POINT_SECONDS (10: measuring time per point), BENCH_LOADGEN (auto | perf_analyzer | node),
#      NEREID_CHECKOUT (.: the built checkout whose bin/nereid.js is served; the bench code, models and
#      load generators stay this checkout's, as bench/before-after.sh uses it), BENCH_RESULTS (the results
#      folder instead of bench/results/<UTC time>), BENCH_SKIP_BUILD=1 (the caller already ran tsc and
#      scripts/setup-python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

model=${BENCH_MODEL:-densenet_batched}
batches=${BENCH_BATCHES:-"1 8"}
concurrencies=${BENCH_CONCURRENCY:-"1 4 16"}
point_seconds=${BENCH_POINT_SECONDS:-10}
loadgen=${BENCH_LOADGEN:-auto}
checkout=${NEREID_CHECKOUT:-.}
repository=examples/model_repository
onnx=$repository/$model/1/model.onnx

say() { echo "bench: $*" >&2; }
die() {
  echo "bench: error: $*" >&2
  exit 1
}
# shellcheck source=bench/lib.sh
source bench/lib.sh

[[ -f $onnx ]] || die "$onnx not found"
[[ -f $checkout/bin/nereid.js ]] || die "$checkout/bin/nereid.js not found (NEREID_CHECKOUT)"
results=${BENCH_RESULTS:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$results"

if [[ -z ${BENCH_SKIP_BUILD:-} ]]; then
  say "building"
  npx tsc -p tsconfig.json
  bash scripts/setup-python.sh >&2
fi
python=.venv/bin/python

case $loadgen in
  auto) if .venv/bin/perf_analyzer --version >/dev/null 2>&1; then loadgen=perf_analyzer; else loadgen=node; fi ;;
  perf_analyzer | node) ;;
  *) die "BENCH_LOADGEN must be auto, perf_analyzer or node" ;;
esac
[[ $loadgen == node ]] && say "perf_analyzer is not available here; using bench/load-client.ts instead"

# the 1-minute load average before we start: other work on the machine skews both sides of the ratio
cat >"$results/meta.json" <<EOF
{"model": "$model", "loadgen": "$loadgen", "seconds": $point_seconds, "cpus": $(nproc),
 "loadavg": $(cut -d' ' -f1 /proc/loadavg),
 "commit": "$(git -C "$checkout" rev-parse --short HEAD 2>/dev/null || echo unknown)", "node": "$(node --version)"}
EOF

# (a) bare onnxruntime-node, in-process
say "bare onnxruntime-node: $onnx, batches ${batches// /,}, ${point_seconds}s each"
node dist/bench/bare-onnxruntime.js --model "$onnx" --batches "${batches// /,}" \
  --seconds "$point_seconds" --out "$results/bare.json" >&2

# (b) the same model served by Nereid over HTTP
trap stop_server EXIT

say "starting nereid with $model only"
"$checkout/bin/nereid.js" --model-repository="$repository" --http-port=0 --grpc-port=0 --metrics-port=0 \
  --model-control-mode=explicit --load-model="$model" >"$results/server.log" 2>&1 &
server_pid=$!
port=$(wait_port "$results/server.log" 'Started HTTPService at [^ ]*:[0-9]+' "$server_pid")
say "server on port $port"

for b in $batches; do
  for c in $concurrencies; do
    point=$results/served-b$b-c$c
    say "served: batch $b, concurrency $c ($loadgen)"
    if [[ $loadgen == perf_analyzer ]]; then
      # three stable windows of a third of the point time each; a noisy point is retried with a looser
      # stability bound, and at last measured once over a fixed number of requests (about the point time
      # at bare speed) rather than dropped. <point>.mode records which measurement the number comes from.
      window_ms=$((point_seconds * 1000 / 3))
      common=(-m "$model" -b "$b" -i http -u "localhost:$port" --concurrency-range "$c"
        --warmup-request-count "$((2 * c))" -f "$point.csv")
      windows=(--measurement-mode time_windows -p "$window_ms" --max-trials 6)
      if .venv/bin/perf_analyzer "${common[@]}" "${windows[@]}" -s 15 >"$point.txt" 2>&1; then
        echo "stable within 15%" >"$point.mode"
      elif say "  not stable within 15%; retrying with 50%" &&
        .venv/bin/perf_analyzer "${common[@]}" "${windows[@]}" -s 50 >"$point.txt" 2>&1; then
        echo "stable within 50%" >"$point.mode"
      else
        count=$("$python" -c 'import json, math, sys
rate = max(r["imagesPerSec"] for r in json.load(open(sys.argv[1])) if r["batch"] == int(sys.argv[2]))
print(max(2 * int(sys.argv[3]), math.ceil(float(sys.argv[4]) * rate / int(sys.argv[2]))))' \
          "$results/bare.json" "$b" "$c" "$point_seconds")
        say "  not stable within 50%; measuring $count requests once"
        .venv/bin/perf_analyzer "${common[@]}" --request-count "$count" >"$point.txt" 2>&1 || {
          cat "$point.txt" >&2
          die "perf_analyzer failed (batch $b, concurrency $c)"
        }
        echo "unstable: one run of $count requests" >"$point.mode"
      fi
      grep -E 'Throughput:|Avg latency:' "$point.txt" | sed 's/^/bench:   /' >&2 || true
    else
      node dist/bench/load-client.js --url "http://localhost:$port" --model "$model" --batch "$b" \
        --concurrency "$c" --seconds "$point_seconds" --out "$point.json" >&2
    fi
  done
done
stop_server

# bare again: on a shared machine the ceiling is the better of the two bare runs
say "bare onnxruntime-node again"
node dist/bench/bare-onnxruntime.js --model "$onnx" --batches "${batches// /,}" \
  --seconds "$point_seconds" --out "$results/bare-after.json" >&2

# (c) the table
"$python" bench/summarize.py "$results"
mkdir -p bench/results && cp "$results/summary.md" bench/results/latest.md
say "results in $results"

# (d) dynamic batching: default scheduler vs dynamic batcher, next to bare at the formed batch sizes
# (bench/scheduling/run.sh). BENCH_SCHEDULING=0 skips it.
if [[ ${BENCH_SCHEDULING:-1} != 0 ]]; then
  bash bench/scheduling/run.sh
fi

# Transport: Nereid's HTTP and gRPC frontends on identity_fp32 next to bare node:http and @grpc/grpc-js
# echo servers (bench/transport/run.sh, bench/README.md). BENCH_TRANSPORT=0 skips it.
if [[ ${BENCH_TRANSPORT:-1} != 0 ]]; then
  TRANSPORT_SKIP_BUILD=1 bash bench/transport/run.sh
fi

# JavaScript backend: JS vs ONNX identity (16 FP32 and 3x224x224, concurrency 1 and 16), the copies of a
# large tensor, in-process infer() vs HTTP (bench/javascript.ts, docs/javascript-models.md).
# BENCH_JAVASCRIPT=0 skips it.
if [[ ${BENCH_JAVASCRIPT:-1} != 0 ]]; then
  say "javascript backend"
  node --initial-heap-size=128 dist/bench/javascript.js --out "$results/javascript.json" | tee "$results/javascript.md"
fi

# Python backend: Python vs ONNX identity (16 FP32 and 3x224x224, concurrency 1 and 16), the bytes a large
# tensor moves through /dev/shm per request (/proc/<pid>/io, strace when installed) (bench/python.ts,
# docs/python-backend.md). BENCH_PYTHON=0 skips it.
if [[ ${BENCH_PYTHON:-1} != 0 ]]; then
  say "python backend"
  node --initial-heap-size=128 dist/bench/python.js --out "$results/python.json" | tee "$results/python.md"
fi
