#!/usr/bin/env bash
# The one test command (README: `npm test`): build, unit + integration + deployment tests (node:test; the
# deployment tools come from scripts/setup-deploy-tools.sh, docs/kubernetes.md, the storage servers from
# scripts/setup-storage-servers.sh, docs/model-repository.md), the compatibility
# suite (Triton's real Python client and perf_analyzer against bin/nereid.js: test/compat, in the .venv that
# scripts/setup-python.sh provisions), then the differential suite (the real Triton 2.51 and Nereid side by
# side: test/differential, with the Triton that scripts/setup-triton.sh puts in .venv-triton). The exit
# status is non-zero if any suite failed; the last line printed is the differential suite's pytest summary.
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -p tsconfig.json
status=0
# The deployment tests (test/deploy: helm, kubeconform, hadolint, haproxy, prometheus) need their tools;
# the setup installs and caches them. It exits 0 without a tool only when this machine cannot have it (the
# tests then skip saying why); any other failure fails the run.
bash scripts/setup-deploy-tools.sh || status=1
# The object-store tests (test/integration/storage-*.test.ts, test/compat/test_object_storage.py) start real
# S3, GCS and Azure servers: moto_server, fake-gcs-server, Azurite (docs/model-repository.md), installed and
# cached by version in .cache/ by this setup. Same rule: a skip only when this machine cannot have a server.
bash scripts/setup-storage-servers.sh || status=1
mapfile -t files < <(find dist/src dist/test -name '*.test.js' | sort)
node --test --test-concurrency=1 "${files[@]}" || status=$?
bash scripts/setup-python.sh
.venv/bin/pytest -q test/compat || status=$?

# The differential suite is skipped only when setup-triton could not install Triton here (no network, an
# unsupported platform): it then prints why, exits 0 and installs nothing, and pytest reports the suite as
# skipped. Any other setup failure fails the run, and NEREID_DIFF_REQUIRE_TRITON makes a missing Triton
# errors rather than skips, so a broken install can't pass as a skip.
require_triton=1
if bash scripts/setup-triton.sh; then
  [[ -x ${NEREID_TRITON_VENV:-.venv-triton}/bin/tritonserver ]] || require_triton=0
else
  status=1
fi
NEREID_DIFF_REQUIRE_TRITON=$require_triton .venv/bin/pytest -q test/differential || status=$?
exit "$status"
