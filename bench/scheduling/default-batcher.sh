#!/usr/bin/env bash
# The default dynamic batcher on a small MLP, the way a user would write it: the 64 → 256 → 256 → 16 MLP
# of test/integration/tiny-onnx.ts with no instance group (onnxruntime's default: two CPU instances) and
# no parameters, once without a scheduling config (every request alone) and once with `dynamic_batching
# { }`. For each checkout given (built; this one by default), in turn and for several rounds (the side that
# goes first alternates): perf_analyzer over gRPC at one concurrency, three time windows, and per point the
# requests/s, p50/p99, the server's CPU per request (utime+stime of the process, onnxruntime's threads
# included, over the point / requests counted by the statistics), and the batch sizes formed (batch_stats
# deltas over the point). The load average is printed with every point.
#
# Usage: bash bench/scheduling/default-batcher.sh [CHECKOUT...]
# Env:   BENCH_DB_CONCURRENCY (16), BENCH_DB_ROUNDS (2), BENCH_DB_WINDOW_MS (3000)
set -euo pipefail
cd "$(dirname "$0")/../.."
here=$(pwd)

say() { echo "bench/scheduling/default-batcher: $*" >&2; }
die() {
  echo "bench/scheduling/default-batcher: error: $*" >&2
  exit 1
}
# shellcheck source=bench/lib.sh
source bench/lib.sh

concurrency=${BENCH_DB_CONCURRENCY:-16}
rounds=${BENCH_DB_ROUNDS:-2}
window_ms=${BENCH_DB_WINDOW_MS:-3000}
checkouts=("$@")
((${#checkouts[@]} > 0)) || checkouts=("$here")
pa=$here/.venv/bin/perf_analyzer
[[ -x $pa ]] || die "no perf_analyzer (scripts/setup-python.sh)"

results=$here/bench/results/default-batcher-$(date -u +%Y%m%dT%H%M%SZ)
repo=$results/repo
mkdir -p "$repo"
node --input-type=module -e "
import { mkdirSync, writeFileSync } from 'node:fs';
import { mlpModel } from '$here/dist/test/integration/tiny-onnx.js';
const body = 'platform: \"onnxruntime_onnx\"\nmax_batch_size: 32\n' +
  'input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 64 ] } ]\n' +
  'output [ { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 16 ] } ]\n';
for (const [name, extra] of [['mlp_unbatched', ''], ['mlp_dynamic', 'dynamic_batching { }\n']]) {
  mkdirSync('$repo/' + name + '/1', { recursive: true });
  writeFileSync('$repo/' + name + '/config.pbtxt', 'name: \"' + name + '\"\n' + body + extra);
  writeFileSync('$repo/' + name + '/1/model.onnx', mlpModel(64, 256, 16));
}"

trap stop_server EXIT

point() { # checkout model
  local co=$1 model=$2 log=$results/server.log
  # No auto-complete: it would give mlp_unbatched a dynamic batcher too.
  (cd "$co" && exec node bin/nereid.js --model-repository="$repo" --http-port=0 --grpc-port=0 \
    --allow-metrics=false --disable-auto-complete-config) >"$log" 2>&1 &
  server_pid=$!
  local http grpc
  http=$(wait_port "$log" 'Started HTTPService at [^ ]*:[0-9]+' "$server_pid")
  grpc=$(wait_port "$log" 'Started GRPCInferenceService at [^ ]*:[0-9]+' "$server_pid")
  local common=(-m "$model" -i grpc -u "localhost:$grpc" --concurrency-range "$concurrency")
  "$pa" "${common[@]}" --request-count $((40 * concurrency)) >/dev/null 2>&1 || true
  curl -sf "http://localhost:$http/v2/models/$model/stats" >"$results/before.json"
  local load cpu0 cpu1
  load=$(cut -d' ' -f1 /proc/loadavg)
  cpu0=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
  "$pa" "${common[@]}" --measurement-interval "$window_ms" --stability-percentage 999 --max-trials 3 \
    -f "$results/point.csv" >"$results/point.txt" 2>&1 || die "perf_analyzer failed: $(tail -n 3 "$results/point.txt")"
  cpu1=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
  curl -sf "http://localhost:$http/v2/models/$model/stats" >"$results/after.json"
  stop_server
  "$here/.venv/bin/python" - "$co" "$model" "$load" "$cpu0" "$cpu1" "$(getconf CLK_TCK)" "$results" <<'PY'
import csv, json, sys
co, model, load, cpu0, cpu1, tck, out = sys.argv[1:]
def stats(name):
    s = json.load(open(f"{out}/{name}.json"))["model_stats"][0]
    hist = {int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in s.get("batch_stats", [])}
    return int(s["inference_stats"]["success"]["count"]), hist
n0, h0 = stats("before")
n1, h1 = stats("after")
hist = {k: v - h0.get(k, 0) for k, v in sorted(h1.items()) if v > h0.get(k, 0)}
requests = max(n1 - n0, 1)
row = next(csv.DictReader(open(f"{out}/point.csv")))
cpu_us = (float(cpu1) - float(cpu0)) / float(tck) / requests * 1e6
avg = sum(k * v for k, v in hist.items()) / max(sum(hist.values()), 1)
print(
    f"| {co} | {model} | {float(row['Inferences/Second']):,.0f} | {int(row['p50 latency']):,} | "
    f"{int(row['p99 latency']):,} | {cpu_us:.0f} | {avg:.2f} | {' '.join(f'{k}×{v}' for k, v in hist.items())} | {load} |"
)
PY
}

echo "| checkout | model | inf/s | p50 µs | p99 µs | server CPU µs/req | average batch | batches (size×count) | load |"
echo "|---|---|---:|---:|---:|---:|---:|---|---:|"
for ((r = 0; r < rounds; r++)); do
  order=("${checkouts[@]}")
  if ((r % 2 == 1)); then
    order=()
    for ((i = ${#checkouts[@]} - 1; i >= 0; i--)); do order+=("${checkouts[i]}"); done
  fi
  for co in "${order[@]}"; do
    for model in mlp_unbatched mlp_dynamic; do
      say "round $r: $co $model, gRPC c$concurrency"
      point "$co" "$model"
    done
  done
done
say "results in $results"
