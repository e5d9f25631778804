#!/usr/bin/env bash
# Dynamic-batching benchmark (a stage of bench/run.sh, or on its own): the densenet_batched example and a
# small MLP, each served by Nereid with Triton's default scheduler (every request alone) and with
# `dynamic_batching { max_queue_delay_microseconds }` (Triton's semantics, and with Nereid's early dispatch),
# under perf_analyzer at several concurrencies over gRPC; the batch sizes the server formed (from /v2/models/<m>/stats); bare onnxruntime-node at those batch
# sizes; a bare echo server's latency for the MLP's request (context for the p99 bound); ratios and targets
# (bench/scheduling/summarize.ts). Results go to
# bench/results/scheduling-<UTC time>/ (gitignored); the table is printed and kept in summary.md there.
#
# Env: BENCH_SCHED_DELAY_US (2000), BENCH_SCHED_CONCURRENCY ("1 8 32"), BENCH_POINT_SECONDS (10),
#      BENCH_SCHED_MODELS ("densenet mlp"), BENCH_SCHED_PROTOCOL (grpc; or http),
#      BENCH_SCHED_KINDS ("unbatched dynamic early").
set -euo pipefail
cd "$(dirname "$0")/../.."

delay_us=${BENCH_SCHED_DELAY_US:-2000}
concurrencies=${BENCH_SCHED_CONCURRENCY:-"1 8 32"}
point_seconds=${BENCH_POINT_SECONDS:-10}
families=${BENCH_SCHED_MODELS:-"densenet mlp"}
protocol=${BENCH_SCHED_PROTOCOL:-grpc}
# unbatched: the default scheduler; dynamic: dynamic_batching; early: dynamic_batching + early dispatch
kinds=${BENCH_SCHED_KINDS:-"unbatched dynamic early"}

say() { echo "bench/scheduling: $*" >&2; }
die() {
  echo "bench/scheduling: error: $*" >&2
  exit 1
}
# shellcheck source=bench/lib.sh
source bench/lib.sh

results=bench/results/scheduling-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$results"

say "building"
npx tsc -p tsconfig.json
bash scripts/setup-python.sh >&2
.venv/bin/perf_analyzer --version >/dev/null 2>&1 || die "perf_analyzer does not run here (see bench/README.md)"

repo=$results/repo
node dist/bench/scheduling/repo.js --out "$repo" --delay-us "$delay_us"

cat >"$results/meta.json" <<EOF
{"delayUs": $delay_us, "seconds": $point_seconds, "cpus": $(nproc), "loadavg": $(cut -d' ' -f1 /proc/loadavg),
 "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)", "node": "$(node --version)", "protocol": "$protocol"}
EOF

load_args=()
for f in $families; do
  for kind in $kinds; do load_args+=(--load-model="${f}_${kind}"); done
done

trap stop_server EXIT

say "starting nereid (default scheduler and dynamic batching, max_queue_delay ${delay_us} us)"
# No auto-complete: it would give every batchable model a dynamic batcher, the unbatched ones included.
bin/nereid.js --model-repository="$repo" --http-port=0 --grpc-port=0 --metrics-port=0 \
  --disable-auto-complete-config --model-control-mode=explicit "${load_args[@]}" >"$results/server.log" 2>&1 &
server_pid=$!
port=$(wait_port "$results/server.log" 'Started HTTPService at [^ ]*:[0-9]+' "$server_pid")
grpc_port=$(wait_port "$results/server.log" 'Started GRPCInferenceService at [^ ]*:[0-9]+' "$server_pid")
# perf_analyzer's protocol: grpc (the issue's setting) or http; statistics are always read over HTTP.
case $protocol in
  grpc) target=localhost:$grpc_port ;;
  http) target=localhost:$port ;;
  *) die "BENCH_SCHED_PROTOCOL must be grpc or http, not '$protocol'" ;;
esac
say "server on port $port (HTTP), $grpc_port (gRPC); perf_analyzer over $protocol"

stats() { curl -sf "http://localhost:$port/v2/models/$1/stats" >"$2" || die "statistics of $1"; }

for f in $families; do
  for kind in $kinds; do
    model=${f}_${kind}
    for c in $concurrencies; do
      point=$results/served-$model-c$c
      say "served: $model, concurrency $c"
      # Windows of at least 3 s: a batch of 8 densenet images can take a second on a busy machine.
      window_ms=$((point_seconds * 1000 / 3))
      ((window_ms >= 3000)) || window_ms=3000
      common=(-m "$model" -b 1 -i "$protocol" -u "$target" --concurrency-range "$c"
        --warmup-request-count "$((2 * c))" -f "$point.csv")
      # The warm-up requests are counted in the statistics too; take the snapshot after a short warm-up run.
      .venv/bin/perf_analyzer -m "$model" -b 1 -i "$protocol" -u "$target" --concurrency-range "$c" \
        --request-count "$((4 * c))" >/dev/null 2>&1 || true
      stats "$model" "$point.stats-before.json"
      windows=(--measurement-mode time_windows -p "$window_ms")
      if .venv/bin/perf_analyzer "${common[@]}" "${windows[@]}" --max-trials 6 -s 25 >"$point.txt" 2>&1; then
        echo "stable within 25%" >"$point.mode"
      else
        # A noisy machine: take three windows whatever their spread, so a point never runs unbounded.
        say "  not stable within 25%; taking three windows as they come"
        if .venv/bin/perf_analyzer "${common[@]}" "${windows[@]}" --max-trials 3 -s 1000 >"$point.txt" 2>&1; then
          echo "unstable: three windows, any spread" >"$point.mode"
        else
          tail -n 3 "$point.txt" >&2
          say "  perf_analyzer failed ($model, concurrency $c); the point is left out"
          rm -f "$point.csv"
        fi
      fi
      stats "$model" "$point.stats-after.json"
      grep -E 'Throughput:|p99 latency:' "$point.txt" | sed 's/^/bench\/scheduling:   /' >&2 || true
    done
  done
done
stop_server

# Context for the MLP's p99: a bare echo server (bench/transport, no model, no scheduler) under the same
# load and a request of the same size, i.e. what the transport's own tail looks like on this machine
# (summarize.ts prints it beside a missed bound). densenet's limit comes from its bare runs (Little's law).
if [[ " $families " == *" mlp "* ]]; then
  case $protocol in
    grpc) echo_js=dist/bench/transport/grpc-echo.js ;;
    http) echo_js=dist/bench/transport/http-echo.js ;;
  esac
  node "$echo_js" >"$results/echo.log" 2>&1 &
  server_pid=$!
  echo_port=$(wait_port "$results/echo.log" 'listening on [0-9]+' "$server_pid")
  mlp_inputs=$(node dist/bench/scheduling/repo.js --print-mlp-inputs)
  for c in $concurrencies; do
    say "bare $protocol echo: the MLP's request (${mlp_inputs} FP32), concurrency $c"
    .venv/bin/perf_analyzer -m identity_fp32 -b 1 -i "$protocol" -u "localhost:$echo_port" --shape "INPUT0:$mlp_inputs" \
      --concurrency-range "$c" --warmup-request-count "$((2 * c))" -f "$results/echo-mlp-c$c.csv" \
      --measurement-mode time_windows -p 2000 --max-trials 6 -s 25 >"$results/echo-mlp-c$c.txt" 2>&1 ||
      say "  the echo did not stabilise within 25% (concurrency $c); left out"
  done
  stop_server
fi

# Bare onnxruntime-node at batch 1 and at the batch sizes the server formed.
for f in $families; do
  onnx=$repo/${f}_unbatched/1/model.onnx
  sizes=$(node dist/bench/scheduling/summarize.js "$results" --formed "$f")
  # the same intra-op threads as the served model (bench/scheduling/repo.ts); densenet: every core
  threads=()
  [[ $f == mlp ]] && threads=(--threads "$(node dist/bench/scheduling/repo.js --print-mlp-threads)")
  say "bare onnxruntime-node: $f at batch sizes $sizes"
  node dist/bench/bare-onnxruntime.js --model "$onnx" --batches "$sizes" --seconds "$point_seconds" \
    "${threads[@]}" --out "$results/bare-$f.json" >&2
done

node dist/bench/scheduling/summarize.js "$results"
cp "$results/summary.md" bench/results/scheduling-latest.md
say "results in $results"
