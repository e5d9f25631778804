#!/usr/bin/env bash
# Tracing overhead: requests/s of the `simple` model over HTTP and gRPC with tracing off, with
# `--trace-config rate=1000` (Triton's default rate, level TIMESTAMPS) and with every request traced
# (rate=1), measured with Triton's perf_analyzer at concurrency 4. The three servers run side by side and
# the configurations are alternated within one run (each round runs every configuration once, in an order
# that rotates from round to round), so a change in the machine's load hits all three alike; the median of
# the rounds is reported with the ratios to "off", and the load average before and after. On a shared
# machine whose load exceeds 2 per core no verdict is given: the spread is then larger than the cost
# measured. The trace files go to a temporary folder.
# Usage: bash bench/tracing.sh
#   env: BENCH_TRACE_ROUNDS (default 3), BENCH_TRACE_WINDOW_MS (default 2000: each point is three windows
#        of this length), BENCH_KEEP=1 keeps the work folder (logs, perf_analyzer output, trace files).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "tracing bench: $*"; }
die() {
  echo "tracing bench: error: $*" >&2
  exit 1
}
# shellcheck source=bench/lib.sh
. bench/lib.sh
rounds="${BENCH_TRACE_ROUNDS:-3}"
window_ms="${BENCH_TRACE_WINDOW_MS:-2000}"
pa=.venv/bin/perf_analyzer
[ -x "$pa" ] || die "perf_analyzer is missing (bash scripts/setup-python.sh)"
npx tsc -p tsconfig.json
work="$(mktemp -d)"
configs=(off rate1000 every)
declare -A pid http grpc
cleanup() {
  for c in "${configs[@]}"; do
    [ -n "${pid[$c]:-}" ] && kill -TERM "${pid[$c]}" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  [ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

for c in "${configs[@]}"; do
  case "$c" in
    off) flags=() ;;
    rate1000) flags=(--trace-config "triton,file=$work/t1000.json" --trace-config level=TIMESTAMPS --trace-config rate=1000) ;;
    every) flags=(--trace-config "triton,file=$work/tall.json" --trace-config level=TIMESTAMPS --trace-config rate=1) ;;
  esac
  log="$work/nereid-$c.log"
  node bin/nereid.js --model-repository=examples/model_repository --model-control-mode=explicit \
    --load-model=simple --http-address=127.0.0.1 --http-port=0 --grpc-address=127.0.0.1 --grpc-port=0 \
    --allow-metrics=false "${flags[@]}" >"$log" 2>&1 &
  pid[$c]=$!
  http[$c]="$(wait_port "$log" 'Started HTTPService at [^ ]*:[0-9]+' "${pid[$c]}")"
  grpc[$c]="$(wait_port "$log" 'Started GRPCInferenceService at [^ ]*:[0-9]+' "${pid[$c]}")"
done

cores="$(nproc)"
load_before="$(cut -d' ' -f1 /proc/loadavg)"
say "$cores cores, load average $load_before; $rounds rounds, 3 windows of $window_ms ms per point, concurrency 4"
for round in $(seq 1 "$rounds"); do
  for proto in http grpc; do
    for i in 0 1 2; do
      c="${configs[$(((i + round) % 3))]}"
      port="${http[$c]}"
      [ "$proto" = grpc ] && port="${grpc[$c]}"
      out="$work/$c-$proto-$round.csv"
      # Time windows, every trial accepted (-s 1000): a shared machine is too noisy for perf_analyzer's
      # stability check, and a fixed request count is timed in whole seconds (its rates come out as
      # count/1, count/2, ...), too coarse for a few percent.
      "$pa" -m simple -i "$proto" -u "127.0.0.1:$port" --concurrency-range 4 --measurement-mode time_windows \
        -p "$window_ms" -s 1000 --max-trials 3 --warmup-request-count 100 -f "$out" \
        >"$work/pa-$c-$proto-$round.txt" 2>&1 || true
      rps="$(awk -F, 'NR==2 {print $2}' "$out" 2>/dev/null || true)"
      echo "${rps:-0}" >>"$work/$c-$proto.rps"
      echo "round $round $proto $c: ${rps:-0} infer/s"
    done
  done
done
load_after="$(cut -d' ' -f1 /proc/loadavg)"

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
printf '\nmedian of %s rounds (infer/s)\n%-6s %12s %12s %12s %12s %10s\n' "$rounds" proto off rate=1000 every \
  r1000/off every/off
declare -A ratio
for proto in http grpc; do
  o="$(median "$work/off-$proto.rps")"
  r="$(median "$work/rate1000-$proto.rps")"
  e="$(median "$work/every-$proto.rps")"
  ratio[$proto]="$(awk -v o="$o" -v r="$r" 'BEGIN { printf "%.3f", (o > 0 ? r / o : 0) }')"
  awk -v p="$proto" -v o="$o" -v r="$r" -v e="$e" \
    'BEGIN { printf "%-6s %12.1f %12.1f %12.1f %12.3f %10.3f\n", p, o, r, e, (o>0?r/o:0), (o>0?e/o:0) }'
done
echo
echo "load average: $load_before before, $load_after after, on $cores cores"
if awk -v a="$load_before" -v b="$load_after" -v n="$cores" 'BEGIN { exit !((a > b ? a : b) > 2 * n) }'; then
  echo "verdict: none. The load exceeded 2 per core; the spread is larger than the cost measured."
else
  for proto in http grpc; do
    awk -v p="$proto" -v r="${ratio[$proto]}" 'BEGIN {
      printf "verdict %s: rate=1000 costs %.1f %% (goal < 3 %%): %s\n", p, (1 - r) * 100, (r >= 0.97 ? "met" : "not met")
    }'
  done
fi
