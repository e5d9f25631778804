#!/usr/bin/env bash
# Transport benchmark: what Nereid's HTTP and gRPC frontends cost next to the bare minimum a Node server
# needs to answer the same requests. perf_analyzer drives identity_fp32 ([1,16] FP32 = 64 B, and
# [1,153600] FP32 = 600 KB) at several concurrencies against
#   - Nereid (bin/nereid.js, identity_fp32 only, in onnxruntime) over HTTP and gRPC,
#   - bench/transport/http-echo.ts, a bare node:http server echoing KServe v2 binary tensors,
#   - bench/transport/grpc-echo.ts, a bare @grpc/grpc-js server echoing ModelInfer,
# and prints requests/s, p50 and p99 for each, and Nereid / bare echo per protocol (target >= 60%).
# Unless TRANSPORT_BUILTIN=0, a second Nereid serves an identity_fp32 of the same name and shapes on the
# built-in `identity` backend (no onnxruntime, no worker thread): its column shows what the frontends and
# the core cost without a model runtime in the way. Unless TRANSPORT_EVENT_LOOP=0, a third serves the
# example's identity_fp32 with `execution_thread: "event_loop"` (onnxruntime on the main thread).
# Results go to bench/results/transport-<UTC time>/ (gitignored) and bench/results/transport-latest.md.
# See bench/README.md.
#
# Env: TRANSPORT_CONCURRENCY ("1 8 32"), TRANSPORT_PAYLOADS (FP32 values per request: "16 153600"),
#      TRANSPORT_PROTOCOLS ("http grpc"), TRANSPORT_POINT_SECONDS (6: measuring time per point, three
#      windows), TRANSPORT_GRPC_ECHO_ARGS (extra grpc-echo flags, e.g. "--codec protobufjs"),
#      TRANSPORT_BUILTIN (1: also measure Nereid on the built-in identity backend; 0: don't),
#      TRANSPORT_EVENT_LOOP (1: also measure the model with execution_thread "event_loop"; 0: don't),
#      TRANSPORT_PA_MEMORY_BYTES (4000000000: what one perf_analyzer run may keep in responses),
#      TRANSPORT_SKIP_BUILD=1 (the caller already ran tsc and scripts/setup-python.sh),
#      NEREID_CHECKOUT (.: the built checkout whose bin/nereid.js the Nereid targets run; the echo servers,
#      models and perf_analyzer stay this checkout's), TRANSPORT_RESULTS (the results folder).
set -euo pipefail
cd "$(dirname "$0")/../.."

concurrencies=${TRANSPORT_CONCURRENCY:-"1 8 32"}
payloads=${TRANSPORT_PAYLOADS:-"16 153600"}
protocols=${TRANSPORT_PROTOCOLS:-"http grpc"}
point_seconds=${TRANSPORT_POINT_SECONDS:-6}
grpc_echo_args=${TRANSPORT_GRPC_ECHO_ARGS:-}
builtin=${TRANSPORT_BUILTIN:-1}
event_loop=${TRANSPORT_EVENT_LOOP:-1}
model=identity_fp32
repository=examples/model_repository
pa=.venv/bin/perf_analyzer
checkout=${NEREID_CHECKOUT:-.}

say() { echo "transport: $*" >&2; }
die() {
  echo "transport: error: $*" >&2
  exit 1
}

[[ -d $repository/$model ]] || die "$repository/$model not found"
results=${TRANSPORT_RESULTS:-bench/results/transport-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$results"

if [[ -z ${TRANSPORT_SKIP_BUILD:-} ]]; then
  say "building"
  npx tsc -p tsconfig.json >&2 || say "tsc reported errors (outputs are still written); going on"
  bash scripts/setup-python.sh >&2
fi
"$pa" --version >/dev/null 2>&1 || die "perf_analyzer is not available (scripts/setup-python.sh provides it)"
for f in dist/bench/transport/http-echo.js dist/bench/transport/grpc-echo.js "$checkout/bin/nereid.js"; do
  [[ -f $f ]] || die "$f missing (build first)"
done

# --- the three servers, each on port 0, all up for the whole run (an idle one costs nothing) ------------
pids=()
stop_all() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap stop_all EXIT

# shellcheck source=bench/lib.sh
source bench/lib.sh

targets=()
declare -A port
# start_nereid <target> <repository> [flags...]: a Nereid on free ports, logging to $results/<target>.log;
# once it listens, its ports are port[<target>-http] and port[<target>-grpc] and it joins the targets.
start_nereid() {
  local target=$1 repo=$2 pid
  shift 2
  "$checkout/bin/nereid.js" --model-repository="$repo" --http-port=0 --grpc-port=0 --metrics-port=0 "$@" \
    >"$results/$target.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  port[$target-http]=$(wait_port "$results/$target.log" 'Started HTTPService at [^ ]*:[0-9]+' "$pid")
  port[$target-grpc]=$(wait_port "$results/$target.log" 'Started GRPCInferenceService at [^ ]*:[0-9]+' "$pid")
  targets+=("$target")
}

say "starting http-echo, grpc-echo and nereid ($model only)"
node dist/bench/transport/http-echo.js >"$results/http-echo.log" 2>&1 &
pids+=($!)
http_echo_pid=$!
# shellcheck disable=SC2086 # word splitting of the extra flags is wanted
node dist/bench/transport/grpc-echo.js $grpc_echo_args >"$results/grpc-echo.log" 2>&1 &
pids+=($!)
grpc_echo_pid=$!

start_nereid nereid "$repository" --model-control-mode=explicit --load-model="$model"
targets+=(echo)
if [[ $builtin == 1 ]]; then
  # the same model name, shapes and batching on the built-in identity backend (no model file needed)
  mkdir -p "$results/builtin-repository/$model/1"
  cat >"$results/builtin-repository/$model/config.pbtxt" <<EOF
name: "$model"
backend: "identity"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
EOF
  start_nereid builtin "$results/builtin-repository"
fi
if [[ $event_loop == 1 ]]; then
  # the example model itself, with its sessions on the event loop instead of worker threads
  mkdir -p "$results/event-loop-repository/$model"
  cp -r "$repository/$model/1" "$results/event-loop-repository/$model/"
  {
    cat "$repository/$model/config.pbtxt"
    echo 'parameters { key: "execution_thread" value: { string_value: "event_loop" } }'
  } >"$results/event-loop-repository/$model/config.pbtxt"
  start_nereid evloop "$results/event-loop-repository"
fi
port[echo-http]=$(wait_port "$results/http-echo.log" 'listening on [0-9]+' "$http_echo_pid")
port[echo-grpc]=$(wait_port "$results/grpc-echo.log" 'listening on [0-9]+' "$grpc_echo_pid")
say "ports: nereid http ${port[nereid-http]} grpc ${port[nereid-grpc]}, echo http ${port[echo-http]} grpc ${port[echo-grpc]}"

# the echo servers must give correct answers, or their numbers mean nothing
.venv/bin/python bench/transport/check_echo.py --http "127.0.0.1:${port[echo-http]}" \
  --grpc "127.0.0.1:${port[echo-grpc]}" >&2

cat >"$results/meta.json" <<EOF
{"model": "$model", "seconds": $point_seconds, "cpus": $(nproc), "loadavg_before": $(cut -d' ' -f1 /proc/loadavg),
 "grpc_echo_args": "$grpc_echo_args", "builtin": $builtin, "event_loop": $event_loop,
 "commit": "$(git -C "$checkout" rev-parse --short HEAD 2>/dev/null || echo unknown)", "node": "$(node --version)",
 "perf_analyzer": "$("$pa" --version 2>&1 | head -n1 | tr -d '"')"}
EOF

# perf_analyzer keeps every request's data until it exits (measured over HTTP at 600 KB: 0.9 GB after
# 500 requests, 3.2 GB after 1500, i.e. over 2 MB per request; longer runs were OOM-killed at 23 GB). So
# the requests of one perf_analyzer run are capped at pa_budget_bytes / (4 x payload bytes): a short
# probe estimates the rate from its mean latency (concurrency / latency; its throughput line is unreliable, as perf_analyzer
# divides a small fixed count by at least one second), and the windows are shortened to fit the cap.
# ulimit -v backs the cap up, so a misjudged run fails on its own instead of starving the machine.
pa_budget_bytes=${TRANSPORT_PA_MEMORY_BYTES:-4000000000}

# measure <target> <protocol> <payload> <concurrency>: one perf_analyzer point into $results.
# Three stable time windows (-s 15), retried with -s 50 on a noisy machine, and at last one fixed-count
# run (marked "unstable") rather than no number. The fixed count is the median rate of the windows the
# failed attempts saw (-v prints them) times the point time (within the memory cap).
measure() {
  local target=$1 protocol=$2 payload=$3 c=$4
  local point=$results/$target-$protocol-$payload-c$c
  local window_ms=$((point_seconds * 1000 / 3)) trials=6
  local url=127.0.0.1:${port[$target-$protocol]}
  local budget=$((pa_budget_bytes / (16 * payload)))
  local common=(-m "$model" -i "$protocol" -u "$url" --shape "INPUT0:$payload" --concurrency-range "$c")
  if ((budget < 100000)); then
    local probe_us
    # A timeout: perf_analyzer once waited forever on its last gRPC responses (600 KB, concurrency 32,
    # a fresh connection; not reproduced in 30 retries). A hung probe only costs the window estimate.
    probe_us=$(timeout 120 "$pa" "${common[@]}" --request-count "$((10 * c))" 2>&1 |
      grep -oE 'Avg latency: [0-9]+' | head -n1 | grep -oE '[0-9]+$' || true)
    if [[ -n $probe_us ]] && ((probe_us > 0)); then
      # requests in one run <= budget: (warm-up + trials windows) x rate x window
      local fit=$((budget * probe_us / (c * (trials + 1))))
      fit=$((fit / 1000)) # us -> ms
      ((fit < window_ms)) && window_ms=$((fit < 200 ? 200 : fit))
    fi
  fi
  common+=(--warmup-request-count "$((4 * c))" -f "$point.csv")
  local windows=(--measurement-mode time_windows -p "$window_ms" --max-trials "$trials" -v)
  # address space for the budget plus 3 GB for perf_analyzer itself
  local vmem_kb=$(((pa_budget_bytes + 3000000000) / 1024))
  run_pa() { (ulimit -v "$vmem_kb" && timeout "$((point_seconds * 20 + 120))" "$pa" "$@"); }
  # The probe can underestimate the rate (a cold connection): a run that outgrows the memory cap
  # (std::bad_alloc) is retried with a window a quarter as long, down to 100 ms.
  local ok=0
  while :; do
    echo "window ${window_ms} ms" >"$point.window"
    if run_pa "${common[@]}" "${windows[@]}" -s 15 >"$point.txt" 2>&1; then
      ok=1
      break
    fi
    grep -q 'bad_alloc' "$point.txt" && ((window_ms > 100)) || break
    window_ms=$((window_ms / 4 < 100 ? 100 : window_ms / 4))
    windows=(--measurement-mode time_windows -p "$window_ms" --max-trials "$trials" -v)
    say "  $target: perf_analyzer ran out of memory; windows of $window_ms ms"
  done
  if ((ok)); then
    echo "stable within 15%" >"$point.mode"
  elif cp "$point.txt" "$point.try1.txt" &&
    run_pa "${common[@]}" "${windows[@]}" -s 50 >"$point.txt" 2>&1; then
    echo "stable within 50%" >"$point.mode"
  else
    cat "$point.txt" >>"$point.try1.txt"
    local count
    count=$(grep -ohE 'Pass \[[0-9]+\] throughput: [0-9.]+' "$point.try1.txt" | awk '{print $NF}' | sort -g |
      awk -v s="$point_seconds" -v c="$c" -v b="$budget" '{ v[NR] = $1 }
        END { r = NR ? v[int((NR + 1) / 2)] : 0; n = int(r * s); if (n > b) n = b; if (n < 50 * c) n = 50 * c; print n }')
    run_pa "${common[@]}" --request-count "$count" >"$point.txt" 2>&1 || {
      cat "$point.txt" >&2
      die "perf_analyzer failed: $target $protocol payload $payload concurrency $c"
    }
    echo "unstable: one run of $count requests" >"$point.mode"
  fi
  say "  $target: $(grep -E '^\s*Throughput:' "$point.txt" | head -n1 | sed 's/^ *//') ($(cat "$point.mode"), windows of $window_ms ms)"
}

# Nereid and its bare counterpart are measured back to back for each point, alternating which goes first,
# so that load from other work on the machine drifts over both sides of a ratio alike (the built-in
# backend variant, a diagnostic, comes last).
flip=0
for payload in $payloads; do
  for protocol in $protocols; do
    for c in $concurrencies; do
      say "$protocol, $payload FP32 values, concurrency $c"
      if ((flip % 2 == 0)); then order=("${targets[@]}"); else order=(echo nereid "${targets[@]:2}"); fi
      for target in "${order[@]}"; do measure "$target" "$protocol" "$payload" "$c"; done
      flip=$((flip + 1))
    done
  done
done
stop_all

.venv/bin/python - "$results/meta.json" <<'PY'
import json, sys
path = sys.argv[1]
meta = json.load(open(path))
meta["loadavg_after"] = float(open("/proc/loadavg").read().split()[0])
json.dump(meta, open(path, "w"))
PY
.venv/bin/python bench/transport/summarize.py "$results"
mkdir -p bench/results && cp "$results/summary.md" bench/results/transport-latest.md
say "results in $results"
