#!/usr/bin/env bash
# Overload and soak benchmark (issue 23), loopback only, bounded in time: starts Nereid on the benchmark's
# repository (bench/overload/repo.ts) and runs the scenarios of bench/overload/drive.ts one after the
# other — capacity (2x capacity against a model with max_queue_size), connections (2,000 connections),
# soak (2x capacity with connection churn), json (16 x 66 MB JSON bodies; last, so that the soak's memory
# is not what the large bodies left) — each with health probes on new
# connections, on a kept-alive connection and on --http-health-port, and the server's RSS every 10 s.
# Results: bench/results/overload-<UTC time>/ (gitignored): <scenario>.json, server.log, summary.md.
#
# Env: OVERLOAD_SCENARIOS ("capacity connections soak json"), OVERLOAD_SECONDS (60: capacity, connections,
#      and the json probing window), OVERLOAD_SOAK_SECONDS (600), OVERLOAD_JSON_MB (66), OVERLOAD_JSON_COUNT
#      (16), OVERLOAD_SHORT=1 (a smoke run: 15 s per scenario, 30 s soak, 8 x 16 MB JSON),
#      OVERLOAD_SERVER_FLAGS (extra nereid flags), NEREID_CHECKOUT (.: the built checkout whose
#      bin/nereid.js is measured; the drivers and the repository stay this checkout's), OVERLOAD_RESULTS (the
#      results folder), OVERLOAD_SKIP_BUILD=1 (the caller already ran tsc).
set -euo pipefail
cd "$(dirname "$0")/../.."

scenarios=${OVERLOAD_SCENARIOS:-"capacity connections soak json"}
checkout=${NEREID_CHECKOUT:-.}
if [[ ${OVERLOAD_SHORT:-0} == 1 ]]; then
  seconds=${OVERLOAD_SECONDS:-15}
  soak_seconds=${OVERLOAD_SOAK_SECONDS:-30}
  json_mb=${OVERLOAD_JSON_MB:-16}
  json_count=${OVERLOAD_JSON_COUNT:-8}
else
  seconds=${OVERLOAD_SECONDS:-60}
  soak_seconds=${OVERLOAD_SOAK_SECONDS:-600}
  json_mb=${OVERLOAD_JSON_MB:-66}
  json_count=${OVERLOAD_JSON_COUNT:-16}
fi

say() { echo "bench/overload: $*" >&2; }
die() {
  echo "bench/overload: error: $*" >&2
  exit 1
}
# shellcheck source=bench/lib.sh
source bench/lib.sh

[[ -f $checkout/bin/nereid.js ]] || die "$checkout/bin/nereid.js not found (NEREID_CHECKOUT)"
results=${OVERLOAD_RESULTS:-bench/results/overload-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$results"

if [[ -z ${OVERLOAD_SKIP_BUILD:-} ]]; then
  say "building"
  npx tsc -p tsconfig.json
fi
node dist/bench/overload/repo.js --out "$results/repo"

# The 2,000-connection scenario needs descriptors for both ends on this machine.
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
somaxconn=$(cat /proc/sys/net/core/somaxconn 2>/dev/null || echo unknown)

cat >"$results/meta.json" <<JSON
{"commit": "$(git -C "$checkout" rev-parse --short HEAD 2>/dev/null || echo unknown)", "node": "$(node --version)",
 "cpus": $(nproc), "loadavg": "$(cut -d' ' -f1-3 /proc/loadavg)", "somaxconn": "$somaxconn",
 "seconds": $seconds, "soakSeconds": $soak_seconds, "jsonMb": $json_mb, "jsonCount": $json_count,
 "serverFlags": "${OVERLOAD_SERVER_FLAGS:-}"}
JSON

trap stop_server EXIT
say "starting nereid (load average $(cut -d' ' -f1-3 /proc/loadavg), somaxconn $somaxconn)"
# shellcheck disable=SC2086
"$checkout/bin/nereid.js" --model-repository="$results/repo" --http-address=127.0.0.1 --http-port=0 \
  --http-health-port=0 --allow-grpc=false --allow-metrics=false ${OVERLOAD_SERVER_FLAGS:-} \
  >"$results/server.log" 2>&1 &
server_pid=$!
port=$(wait_port "$results/server.log" 'Started HTTPService at [^ ]*:[0-9]+' "$server_pid")
health_port=$(wait_port "$results/server.log" 'Started HTTP health service at [^ ]*:[0-9]+' "$server_pid")

for s in $scenarios; do
  secs=$seconds
  [[ $s == soak ]] && secs=$soak_seconds
  say "$s ($secs s, load average $(cut -d' ' -f1 /proc/loadavg))"
  node dist/bench/overload/drive.js --scenario "$s" --port "$port" --health-port "$health_port" \
    --pid "$server_pid" --seconds "$secs" --json-mb "$json_mb" --json-count "$json_count" \
    --out "$results/$s.json"
  kill -0 "$server_pid" 2>/dev/null || die "the server died during $s (see $results/server.log)"
  sleep 2
done

stop_server
node dist/bench/overload/summarize.js "$results" | tee "$results/summary.md"
mkdir -p bench/results && cp "$results/summary.md" bench/results/overload-latest.md
