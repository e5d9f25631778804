#!/usr/bin/env bash
# Tracing overhead: requests/s of the `simple` model over HTTP and gRPC with tracing off, with
# `--trace-config rate=1000` (Triton's default rate, level TIMESTAMPS) and with every request traced
# (rate=1), measured with Triton's perf_analyzer at concurrency 4 over a fixed number of requests (one Nereid per configuration, started on
# free ports). The trace file goes to a temporary folder. Prints one line per point and a table of ratios.
# Usage: bash bench/tracing.sh   (env: BENCH_TRACE_REQUESTS, default 3000: requests per point)
set -euo pipefail
cd "$(dirname "$0")/.."
count="${BENCH_TRACE_REQUESTS:-3000}"
pa=.venv/bin/perf_analyzer
[ -x "$pa" ] || { echo "tracing bench: perf_analyzer is missing (bash scripts/setup-python.sh)" >&2; exit 1; }
npx tsc -p tsconfig.json
work="$(mktemp -d)"
trap '[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"' EXIT
declare -A result
for config in off rate1000 every; do
  case "$config" in
    off) flags=() ;;
    rate1000) flags=(--trace-config "triton,file=$work/t1000.json" --trace-config level=TIMESTAMPS --trace-config rate=1000) ;;
    every) flags=(--trace-config "triton,file=$work/tall.json" --trace-config level=TIMESTAMPS --trace-config rate=1) ;;
  esac
  log="$work/nereid-$config.log"
  node bin/nereid.js --model-repository=examples/model_repository --model-control-mode=explicit \
    --load-model=simple --http-port=0 --grpc-port=0 --allow-metrics=false "${flags[@]}" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -q "Started HTTPService" "$log" && break; sleep 0.1; done
  http_port="$(sed -n 's/.*Started HTTPService at [^ ]*:\([0-9]*\).*/\1/p' "$log")"
  grpc_port="$(sed -n 's/.*Started GRPCInferenceService at [^ ]*:\([0-9]*\).*/\1/p' "$log")"
  for proto in http grpc; do
    port=$http_port; [ "$proto" = grpc ] && port=$grpc_port
    out="$work/$config-$proto.csv"
    # One run over a fixed request count: a shared machine is too noisy for perf_analyzer's stability windows.
    "$pa" -m simple -i "$proto" -u "localhost:$port" --concurrency-range 4 --request-count "$count" \
      --warmup-request-count 200 -f "$out" >"$work/pa-$config-$proto.txt" 2>&1 || true
    rps="$(awk -F, 'NR==2 {print $2}' "$out" 2>/dev/null || echo 0)"
    result[$config-$proto]="${rps:-0}"
    echo "$config $proto: ${rps:-0} infer/s"
  done
  kill "$pid"; wait "$pid" || true
done
printf '\n%-6s %12s %12s %12s %10s %10s\n' proto off rate=1000 every r1000/off every/off
for proto in http grpc; do
  off="${result[off-$proto]}"; r="${result[rate1000-$proto]}"; e="${result[every-$proto]}"
  awk -v p="$proto" -v o="$off" -v r="$r" -v e="$e" \
    'BEGIN { printf "%-6s %12.1f %12.1f %12.1f %9.3f %9.3f\n", p, o, r, e, (o>0?r/o:0), (o>0?e/o:0) }'
done
