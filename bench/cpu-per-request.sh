#!/usr/bin/env bash
# CPU per request of one server on one bench/vs-triton model, from /proc, so that other load on the machine
# inflates it far less than it does a rate (bench/README.md, "CPU per request").
#
#   bash bench/cpu-per-request.sh <nereid checkout | triton> <http | grpc> <concurrency> [model]
#
# Starts <checkout>/bin/nereid.js (any built checkout: compare two builds by alternating them) or, with
# `triton`, the real Triton 2.51 from .venv-triton (scripts/setup-triton.sh), on a copy of
# bench/vs-triton/models; warms up; runs perf_analyzer over three time windows; prints requests/s, p50/p99,
# the server process's and the model's stub processes' CPU µs per request (utime+stime over the run divided
# by the requests the server's statistics counted), the server main thread's own share of that CPU (its
# JavaScript, node:http2 and system calls, without onnxruntime's or the compiler's threads), and the main
# thread's voluntary and involuntary context switches per request.
#
# Env: PORT (18100; PORT+1 is gRPC, PORT+2 Triton's metrics), WINDOW_MS (4000), WARMUP_REQUESTS (10000),
# SERVER_FLAGS (extra server flags), PYTHON (the stubs' interpreter), EXTRA_MODELS (a directory whose models join the copy:
# bench/cpu-per-request-models holds vt_identity_large_onnx, the 600 KB identity without a stub),
# NODE_FLAGS (e.g. --perf-basic-prof), PERF=<file> (records `perf record -g` of the server and its stubs
# during the run), STAT=1 (counts system calls and context switches per request with `perf stat`).
#
# A decoupled model (model_transaction_policy { decoupled: true }, e.g. vt_stream16) is run over gRPC with
# perf_analyzer --streaming, as bench/vs-triton/vs_triton.py runs its decoupled case; a request is one
# stream call (all its responses), counted once by the server's statistics.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:?usage: cpu-per-request.sh <checkout|triton> <http|grpc> <concurrency> [model]}
protocol=${2:?protocol}
concurrency=${3:?concurrency}
model=${4:-vt_add_sub}
port=${PORT:-18100}
window=${WINDOW_MS:-4000}
# V8 compiles the request path over the first ~8,000 requests (bench/README.md, "What sets the
# concurrency-1 tail"): a shorter warm-up measures the compiler at c1.
warmup=${WARMUP_REQUESTS:-10000}
perf_analyzer=$root/.venv/bin/perf_analyzer
# The stubs' Python: PYTHON, else .venv-triton's (the one Triton's stubs use), else .venv's.
python=${PYTHON:-$root/.venv-triton/bin/python}
[[ -x $python ]] || python=$root/.venv/bin/python

repo=$(mktemp -d /tmp/cpu-per-request.XXXXXX)
cp -r "$root"/bench/vs-triton/models/* "$repo/"
[[ -n ${EXTRA_MODELS:-} ]] && cp -r "$EXTRA_MODELS"/* "$repo/"
log=$repo/server.log
if [[ $target == triton ]]; then
  "$root"/.venv-triton/bin/tritonserver --model-repository="$repo" --http-port="$port" \
    --grpc-port=$((port + 1)) --metrics-port=$((port + 2)) --allow-metrics=false --log-info=false \
    --backend-config=python,shm-region-prefix-name=cpureq$port ${SERVER_FLAGS:-} >"$log" 2>&1 &
else
  # shellcheck disable=SC2086
  node ${NODE_FLAGS:-} --initial-heap-size=128 "$target/bin/nereid.js" --model-repository="$repo" \
    --http-port="$port" --grpc-port=$((port + 1)) --allow-metrics=false --log-info=false \
    --backend-config=python,python-executable="$python" ${SERVER_FLAGS:-} >"$log" 2>&1 &
fi
pid=$!
cleanup() {
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$repo"
}
trap cleanup EXIT
for _ in $(seq 150); do
  curl -sf "localhost:$port/v2/models/$model/ready" >/dev/null && break
  sleep 0.2
done
stubs=$(pgrep -P "$pid" -f "nereid_python_stub.py ${model}_[0-9]|triton_python_backend_stub .*/${model}/" || true)
url=localhost:$port
[[ $protocol == grpc ]] && url=localhost:$((port + 1))
extra=()
if grep -Eq 'decoupled: *true' "$repo/$model/config.pbtxt"; then
  [[ $protocol == grpc ]] || { echo "$model is decoupled: only grpc (streaming) serves it" >&2; exit 2; }
  extra=(--streaming)
fi

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
main_ticks() { sed 's/.*) //' "/proc/$pid/task/$pid/stat" | awk '{print $12 + $13}'; }
stub_ticks() {
  local t=0 p
  for p in $stubs; do t=$((t + $(ticks "$p"))); done
  echo "$t"
}
switches() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$pid/status"; }
served() {
  curl -s "localhost:$port/v2/models/$model/stats" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["model_stats"][0]["inference_stats"]["success"]["count"])'
}

"$perf_analyzer" -m "$model" -i "$protocol" -u "$url" --concurrency-range "$concurrency" \
  --request-count "$warmup" "${extra[@]}" >/dev/null 2>&1 || true
n0=$(served)
h0=$(ticks "$pid")
m0=$(main_ticks)
s0=$(stub_ticks)
vol0=$(switches voluntary_ctxt_switches)
inv0=$(switches nonvoluntary_ctxt_switches)
events=raw_syscalls:sys_enter,context-switches,syscalls:sys_enter_futex,syscalls:sys_enter_writev,syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_readv,syscalls:sys_enter_recvfrom,syscalls:sys_enter_recvmsg,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait
watchers=()
if [[ -n ${STAT:-} ]]; then
  perf stat -x, -o "$repo/stat-server.txt" -e "$events" -p "$pid" 2>/dev/null &
  watchers+=($!)
  perf stat -x, -o "$repo/stat-stub.txt" -e "$events" -p "$(echo "$stubs" | tr ' \n' ',,' | sed 's/,$//')" 2>/dev/null &
  watchers+=($!)
fi
if [[ -n ${PERF:-} ]]; then
  perf record -q -o "$PERF" -F 1999 -g -p "$pid,$(echo "$stubs" | tr ' \n' ',,' | sed 's/,$//')" 2>/dev/null &
  watchers+=($!)
fi
"$perf_analyzer" -m "$model" -i "$protocol" -u "$url" --concurrency-range "$concurrency" \
  --measurement-interval "$window" --stability-percentage 999 --max-trials 3 "${extra[@]}" >"$repo/pa.txt" 2>&1 || true
for w in "${watchers[@]}"; do kill -INT "$w" 2>/dev/null || true; done
for w in "${watchers[@]}"; do wait "$w" 2>/dev/null || true; done
n=$(($(served) - n0))
h=$(($(ticks "$pid") - h0))
m=$(($(main_ticks) - m0))
s=$(($(stub_ticks) - s0))
vol=$(($(switches voluntary_ctxt_switches) - vol0))
inv=$(($(switches nonvoluntary_ctxt_switches) - inv0))
rate=$(awk '/Throughput:/ {print $2; exit}' "$repo/pa.txt")
p50=$(awk '/p50 latency:/ {print $3; exit}' "$repo/pa.txt")
p99=$(awk '/p99 latency:/ {print $3; exit}' "$repo/pa.txt")
name=$target
[[ $target != triton ]] && name=$(basename "$target")
python3 - "$name" "$protocol" "$concurrency" "$n" "$h" "$m" "$s" "$vol" "$inv" "${rate:-0}" "${p50:-?}" "${p99:-?}" "$repo" <<'EOF'
import os, sys
name, proto, c, n, h, m, s, vol, inv, rate, p50, p99, repo = sys.argv[1:]
n = max(int(n), 1)
tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
load = open("/proc/loadavg").read().split()[0]
# Triton's main thread only waits: its share is left out.
main = f" (main thread {int(m) * tick_us / n:.0f})" if name != "triton" else ""
print(f"{name} {proto} c{c}: {float(rate):,.0f}/s p50 {p50} p99 {p99} µs | server {int(h) * tick_us / n:.0f} µs/req{main}, "
      f"stubs {int(s) * tick_us / n:.0f} µs/req | main thread switches/req: voluntary {int(vol) / n:.2f}, "
      f"involuntary {int(inv) / n:.2f} | {n} requests, load {load}")
for side in ("server", "stub"):
    path = os.path.join(repo, f"stat-{side}.txt")
    if not os.path.exists(path):
        continue
    counts = []
    for line in open(path):
        f = line.split(",")
        if f[0].isdigit() and int(f[0]) > 0:
            event = f[2].replace("syscalls:sys_enter_", "").replace("raw_syscalls:sys_enter", "all syscalls")
            counts.append(f"{event} {int(f[0]) / n:.2f}")
    print(f"  {side} per request: " + ", ".join(counts))
EOF
