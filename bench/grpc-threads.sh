#!/usr/bin/env bash
# --grpc-infer-thread-count on a tiny model: requests/s and CPU µs per request of the server's main thread
# and of its other threads (gRPC protocol threads, libuv, V8), from /proc/PID/task/*/stat, under
# perf_analyzer -i grpc (ModelInfer, raw_input_contents).
#
#   bash bench/grpc-threads.sh <threads> [concurrency]
#
# <threads> 0 serves gRPC on the main thread (the flag not given). Runs <checkout>/bin/nereid.js with NODE
# (default: Node 24 from .cache/node, scripts/setup-node-lines.sh; --grpc-infer-thread-count needs Node
# 22.12+) on a builtin identity model (FP32 [16], max_batch_size 8, no batcher), warms up, measures one
# WINDOW_MS window (default 5000) and prints one line. Alternate thread counts point by point
# (bench/README.md, "gRPC protocol threads"). Env: PORT (gRPC, 24320; HTTP for the statistics is PORT+1),
# WINDOW_MS, NODE. The twin of bench/http-threads.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
threads=${1:?usage: grpc-threads.sh <threads> [concurrency]}
concurrency=${2:-16}
port=${PORT:-24320}
http_port=$((port + 1))
window=${WINDOW_MS:-5000}
node=${NODE:-$(ls -d "$root"/.cache/node/24.*/package/bin/node 2>/dev/null | tail -1)}
perf_analyzer=$root/.venv/bin/perf_analyzer
model=tiny

repo=$(mktemp -d /tmp/grpc-threads.XXXXXX)
mkdir -p "$repo/$model/1"
cat >"$repo/$model/config.pbtxt" <<PBTXT
name: "$model"
backend: "identity"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
PBTXT
thread_flag=()
[[ $threads -gt 0 ]] && thread_flag=(--grpc-infer-thread-count="$threads")
"$node" --initial-heap-size=128 "$root/bin/nereid.js" --model-repository="$repo" --grpc-port="$port" \
  --http-port="$http_port" --allow-metrics=false --log-info=false "${thread_flag[@]}" >"$repo/server.log" 2>&1 &
pid=$!
cleanup() {
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$repo"
}
trap cleanup EXIT
ready=
for _ in $(seq 600); do
  curl -sf "localhost:$http_port/v2/models/$model/ready" >/dev/null && ready=1 && break
  sleep 0.2
done
[[ -n $ready ]] || { echo "the server did not get ready:" >&2; cat "$repo/server.log" >&2; exit 1; }
served() {
  curl -s "localhost:$http_port/v2/models/$model/stats" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["model_stats"][0]["inference_stats"]["success"]["count"])'
}
# Ticks of the main thread, and of all the process's threads, now.
ticks() {
  local main all=0 t
  main=$(awk '{print $14 + $15}' "/proc/$pid/task/$pid/stat")
  for t in /proc/$pid/task/*/stat; do all=$((all + $(awk '{print $14 + $15}' "$t" 2>/dev/null || echo 0))); done
  echo "$main $all"
}
"$perf_analyzer" -i grpc -m "$model" -u "localhost:$port" --concurrency-range "$concurrency" --request-count 2000 \
  >/dev/null 2>&1 || true
n0=$(served)
read -r m0 a0 < <(ticks)
t0=$(date +%s.%N)
"$perf_analyzer" -i grpc -m "$model" -u "localhost:$port" --concurrency-range "$concurrency" \
  --measurement-interval "$window" --stability-percentage 999 --max-trials 3 >"$repo/pa.txt" 2>&1 || true
read -r m1 a1 < <(ticks)
t1=$(date +%s.%N)
n=$(($(served) - n0))
# Requests/s from the server's own count over the measured run (perf_analyzer's windows plus its gaps).
rate=$(python3 -c "print($n / ($t1 - $t0))")
p99=$(awk '/p99 latency:/ {print $3; exit}' "$repo/pa.txt")
python3 - "$threads" "$concurrency" "$n" "$((m1 - m0))" "$((a1 - a0))" "${rate:-0}" "${p99:-?}" "$("$node" --version)" <<'PY'
import os, sys
threads, c, n, main, all_, rate, p99, version = sys.argv[1:]
n = max(int(n), 1)
us = 1e6 / os.sysconf("SC_CLK_TCK")
load = open("/proc/loadavg").read().split()[0]
print(f"threads {threads} c{c} ({version}): {float(rate):,.0f}/s p99 {p99} µs | main thread {int(main) * us / n:.0f} µs/req, "
      f"other threads {(int(all_) - int(main)) * us / n:.0f} µs/req, process {int(all_) * us / n:.0f} µs/req | {n} requests, load {load}")
PY
