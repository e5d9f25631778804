#!/usr/bin/env bash
# Regenerates the dashboard screenshots in docs/images/ (docs/dashboard.md, README.md): they are taken by
# the browser test itself (test/browser/dashboard.test.ts) while it checks what they show, so a picture
# in the docs is always of a page that passed. Needs the browser scripts/setup-browser.sh provides.
# The pictures' server runs from the project's folder on the relative examples/model_repository, so no
# checkout's path shows in them, and under traffic for a minute first, so the charts and the
# models table (toy_llm's tokens/s and TTFT included) have figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
npx tsc -p tsconfig.json
NEREID_DASHBOARD_SCREENSHOTS="$PWD/docs/images" node --test dist/test/browser/dashboard.test.js
ls -l docs/images/dashboard-*.png
