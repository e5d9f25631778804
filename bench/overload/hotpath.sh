#!/usr/bin/env bash
# Small-request cost of the overload protections: the same closed-loop load (small JSON inference requests
# to an identity model with no delay, raw keep-alive connections, bench/overload/load.ts) against this tree
# and against a base revision built in a temporary folder, alternating A/B runs so that background load
# hits both alike. Prints requests/s, latency p50/p99 and the server's CPU time per request (user + system,
# from /proc/<pid>/stat), the figure least disturbed by other work on a shared machine.
#
# Usage: bash bench/overload/hotpath.sh [base revision, default HEAD~1] 
# Env: HOTPATH_SECONDS (10 per run), HOTPATH_ROUNDS (3), HOTPATH_CONNECTIONS ("1 16").
set -euo pipefail
cd "$(dirname "$0")/../.."
base=${1:-HEAD~1}
seconds=${HOTPATH_SECONDS:-10}
rounds=${HOTPATH_ROUNDS:-3}
connections=${HOTPATH_CONNECTIONS:-"1 16"}

say() { echo "bench/overload/hotpath: $*" >&2; }
die() {
  echo "bench/overload/hotpath: error: $*" >&2
  exit 1
}
# shellcheck source=bench/lib.sh
source bench/lib.sh

work=$(mktemp -d)
trap 'stop_server; rm -rf "$work"' EXIT
say "building this tree and $base"
npx tsc -p tsconfig.json
mkdir -p "$work/base"
git archive "$base" | tar -x -C "$work/base"
ln -s "$PWD/node_modules" "$work/base/node_modules"
(cd "$work/base" && npx tsc -p tsconfig.json)

mkdir -p "$work/repo/small/1"
cat >"$work/repo/small/config.pbtxt" <<'PBTXT'
name: "small"
backend: "identity"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
PBTXT

run() { # <tree> <label> <connections>
  (cd "$1" && exec bin/nereid.js --model-repository="$work/repo" --http-address=127.0.0.1 --http-port=0 \
    --allow-grpc=false --allow-metrics=false) >"$work/server.log" 2>&1 &
  server_pid=$!
  local port
  port=$(wait_port "$work/server.log" 'Started HTTPService at [^ ]*:[0-9]+' "$server_pid")
  # warm-up, then the measured run
  node dist/bench/overload/load.js --port "$port" --model small --mode closed --connections "$3" --seconds 2 >/dev/null
  local r cpu0 cpu1
  cpu0=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
  r=$(node dist/bench/overload/load.js --port "$port" --model small --mode closed --connections "$3" --seconds "$seconds")
  cpu1=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
  stop_server
  node -e 'const r=JSON.parse(process.argv[1]); const us=((process.argv[4]-process.argv[5])*1e6/Number(process.argv[6]))/r.ok; console.log(`${process.argv[2]} c=${process.argv[3]}: ${r.acceptedPerSecond} req/s, p50 ${r.acceptedMs.p50} ms, p99 ${r.acceptedMs.p99} ms, server CPU ${us.toFixed(0)} us/request, lost ${r.lost}`)' "$r" "$2" "$3" "$cpu1" "$cpu0" "$(getconf CLK_TCK)"
}

say "load average $(cut -d' ' -f1-3 /proc/loadavg)"
for c in $connections; do
  for ((i = 1; i <= rounds; i++)); do
    run "$work/base" "base ($base)" "$c"
    run "$PWD" "this tree" "$c"
  done
done
say "load average $(cut -d' ' -f1-3 /proc/loadavg)"
