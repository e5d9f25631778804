#!/usr/bin/env bash
# Every other bench table before and after a change, back to back (issue 29's "no regression beyond
# run-to-run spread"): onnxruntime served/bare (bench/run.sh), transport (bench/transport/run.sh),
# JavaScript backend (dist/bench/javascript.js), response cache (dist/bench/cache/run.js) and overload
# (bench/overload/run.sh), each run against the before build and the after build one right after the
# other, the side that goes first alternating from bench to bench and round to round; then one table per
# bench with before, after and after/before (bench/before_after.py). See bench/README.md.
#
# Usage: bash bench/before-after.sh <before checkout> [<after checkout> (default .)]
# Both checkouts must be built (dist/, bin/nereid.js); this one is built first (its dist/bench is the bench
# code of both sides) unless BA_SKIP_BUILD=1.
#
# The SAME bench code on both sides: the benches that drive a server over the network (run.sh, transport,
# cache, overload) run from this checkout — its scripts, load generators, echo servers, model repositories
# and perf_analyzer — with only the server process taken from the other checkout (NEREID_CHECKOUT /
# --nereid <checkout>/bin/nereid.js). The JavaScript bench runs in-process: it is compiled against its
# checkout's src/, so each side runs its own checkout's dist/bench/javascript.js, and only when that
# checkout's bench/javascript.ts is byte for byte this one's (otherwise it stops and says so).
#
# Env: BA_BENCHES ("onnx transport javascript cache overload"), BA_ROUNDS (1: runs per side and bench; 2
#      gives each side's run-to-run spread), BA_OUT (bench/results/before-after-<UTC time>), BA_SKIP_BUILD.
#      Short settings by default (one round took 31 min at load 13-20, two thirds of it in points that
#      never stabilised and went through every retry; estimated 10-15 min per round on a quiet 2-core
#      machine, not measured); each bench's own variables override them (BENCH_*, TRANSPORT_*,
#      OVERLOAD_*), and BA_JAVASCRIPT_ARGS, BA_CACHE_ARGS.
# Servers listen on ports the kernel picks (port 0); no bench here takes a fixed port.
set -euo pipefail
[[ $# -ge 1 && $# -le 2 ]] || {
  echo "usage: bash bench/before-after.sh <before checkout> [<after checkout>]" >&2
  exit 2
}
before=$(cd "$1" && pwd)
after=$(cd "${2:-.}" && pwd)
cd "$(dirname "$0")/.."
driver=$PWD

say() { echo "before-after: $*" >&2; }
die() {
  echo "before-after: error: $*" >&2
  exit 1
}

benches=${BA_BENCHES:-"onnx transport javascript cache overload"}
rounds=${BA_ROUNDS:-1}
out=${BA_OUT:-bench/results/before-after-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

for side in "$before" "$after"; do
  [[ -f $side/bin/nereid.js && -f $side/dist/src/cli/main.js ]] || die "$side is not a built checkout"
done
if [[ -z ${BA_SKIP_BUILD:-} ]]; then
  say "building $driver"
  npx tsc -p tsconfig.json >&2
fi
bash scripts/setup-python.sh >&2
for b in $benches; do
  case $b in
    onnx | transport | cache | overload) ;;
    javascript)
      for side in "$before" "$after"; do
        cmp -s bench/javascript.ts "$side/bench/javascript.ts" ||
          die "$side/bench/javascript.ts differs from $driver's: the two sides would not run the same bench"
        [[ -f $side/dist/bench/javascript.js ]] || die "$side/dist/bench/javascript.js missing (build it)"
      done
      ;;
    *) die "unknown bench '$b' (onnx transport javascript cache overload)" ;;
  esac
done

commit() { git -C "$1" rev-parse --short HEAD 2>/dev/null || echo unknown; }
cat >"$out/meta.json" <<EOF
{"before": "$before ($(commit "$before"))", "after": "$after ($(commit "$after"))", "rounds": $rounds,
 "cpus": $(nproc), "load_start": $(cut -d' ' -f1 /proc/loadavg), "benches": "$benches"}
EOF

# run_bench <bench> <checkout> <folder>: one run of one bench against one build, results in <folder>
run_bench() {
  local bench=$1 checkout=$2 dir=$3
  case $bench in
    onnx)
      NEREID_CHECKOUT=$checkout BENCH_RESULTS=$dir BENCH_SKIP_BUILD=1 BENCH_BATCHES=${BENCH_BATCHES:-1 8} \
        BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-1 4} BENCH_POINT_SECONDS=${BENCH_POINT_SECONDS:-3} \
        BENCH_SCHEDULING=0 BENCH_TRANSPORT=0 BENCH_JAVASCRIPT=0 BENCH_PYTHON=0 bash bench/run.sh
      ;;
    transport)
      NEREID_CHECKOUT=$checkout TRANSPORT_RESULTS=$dir TRANSPORT_SKIP_BUILD=1 \
        TRANSPORT_CONCURRENCY=${TRANSPORT_CONCURRENCY:-1 8} TRANSPORT_POINT_SECONDS=${TRANSPORT_POINT_SECONDS:-3} \
        TRANSPORT_BUILTIN=${TRANSPORT_BUILTIN:-0} TRANSPORT_EVENT_LOOP=${TRANSPORT_EVENT_LOOP:-0} \
        bash bench/transport/run.sh
      ;;
    javascript)
      # shellcheck disable=SC2086 # word splitting of the extra flags is wanted
      node --initial-heap-size=128 "$checkout/dist/bench/javascript.js" \
        ${BA_JAVASCRIPT_ARGS:---requests 500 --rounds 2 --seconds 2} --out "$dir/javascript.json"
      ;;
    cache)
      # shellcheck disable=SC2086
      node dist/bench/cache/run.js --nereid "$checkout" ${BA_CACHE_ARGS:---seconds 2 --concurrency 1,8} \
        --out "$dir/cache.md"
      ;;
    overload)
      NEREID_CHECKOUT=$checkout OVERLOAD_RESULTS=$dir OVERLOAD_SKIP_BUILD=1 OVERLOAD_SHORT=1 \
        OVERLOAD_SECONDS=${OVERLOAD_SECONDS:-8} OVERLOAD_SOAK_SECONDS=${OVERLOAD_SOAK_SECONDS:-16} \
        OVERLOAD_JSON_MB=${OVERLOAD_JSON_MB:-8} OVERLOAD_JSON_COUNT=${OVERLOAD_JSON_COUNT:-4} \
        bash bench/overload/run.sh
      ;;
  esac
}

failed=0
flip=0
t0=$SECONDS
for ((r = 1; r <= rounds; r++)); do
  for b in $benches; do
    if ((flip % 2 == 0)); then order=(before after); else order=(after before); fi
    flip=$((flip + 1))
    for side in "${order[@]}"; do
      checkout=$before
      [[ $side == after ]] && checkout=$after
      dir=$out/$b/$side-$r
      mkdir -p "$dir"
      say "round $r/$rounds, $b, $side ($checkout), load $(cut -d' ' -f1 /proc/loadavg), $((SECONDS - t0)) s so far"
      if ! run_bench "$b" "$checkout" "$dir" >"$dir.log" 2>&1; then
        say "  $b against $side failed (see $dir.log); going on"
        failed=$((failed + 1))
      fi
    done
  done
done

.venv/bin/python - "$out/meta.json" <<'PY'
import json, sys
path = sys.argv[1]
meta = json.load(open(path))
meta["load_end"] = float(open("/proc/loadavg").read().split()[0])
json.dump(meta, open(path, "w"))
PY
.venv/bin/python bench/before_after.py "$out" | tee "$out/summary.md"
say "$((SECONDS - t0)) s; results in $out"
((failed == 0)) || die "$failed bench run(s) failed (their logs are next to their folders in $out)"
