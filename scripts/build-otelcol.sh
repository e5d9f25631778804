#!/usr/bin/env bash
# Builds the minimal OpenTelemetry Collector of the OTLP check (test/otlp/collector: the upstream OTLP
# receiver and debug exporter) with the Go toolchain from the Go module proxy, once per collector version,
# into a gitignored folder: ${NEREID_OTELCOL_DIR:-.cache/otelcol}/<version>/otelcol. Prints that path.
# Exits 2, saying why, where it cannot be built (no Go); the test then skips saying so.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$ROOT/test/otlp/collector"
VERSION="$(sed -n 's|^\s*go.opentelemetry.io/collector/otelcol v\([0-9.]*\).*|\1|p' "$SRC/go.mod" | head -1)"
OUT="${NEREID_OTELCOL_DIR:-$ROOT/.cache/otelcol}/$VERSION"
BIN="$OUT/otelcol"
if [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "build-otelcol: no Go toolchain (go) on PATH to build the OpenTelemetry Collector" >&2
  exit 2
fi
mkdir -p "$OUT"
echo "build-otelcol: building the OpenTelemetry Collector $VERSION (a few minutes, once)" >&2
(cd "$SRC" && GOFLAGS=-mod=mod go build -trimpath -o "$BIN.tmp" .) >&2
mv "$BIN.tmp" "$BIN"
echo "$BIN"
