#!/usr/bin/env bash
# Provisions the real storage servers the object-store tests start (test/integration/storage/,
# docs/model-repository.md), each cached in a gitignored folder keyed by its version:
#   - moto_server (S3) from PyPI (moto[server]) in a virtual environment .cache/moto-<version>/;
#   - fake-gcs-server (GCS), built with `go install` into .cache/go-tools/fake-gcs-server-<version>/;
#   - Azurite (Azure Blob) from npm into .cache/azurite-<version>/;
#   - MinIO (S3) with `go install` into .cache/go-tools/minio-<version>/, only with NEREID_WITH_MINIO=1 (a
#     long build; its tests skip otherwise) or when that folder already holds it.
# The three installs run side by side. It writes .cache/storage-servers.env, which the tests read.
# Idempotent: a piece whose versioned folder is complete is skipped, so a repeat run takes a second.
#
# Exit status: 0 when everything is in place, or when this machine cannot have a server at all (no `go`
# command, no python3 venv): the env file says which and why (NEREID_STORAGE_SKIP) and those tests skip
# with that message. A failed download or build exits 1, so a broken install fails the run instead of
# passing as a skip.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MOTO_VERSION=5.2.5
FAKE_GCS_VERSION=v1.56.1
AZURITE_VERSION=3.37.0
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c

cache=$PWD/.cache
envfile=$cache/storage-servers.env
mkdir -p "$cache"
say() { echo "setup-storage-servers: $*"; }
skips=()

moto_dir=$cache/moto-$MOTO_VERSION
moto_bin=$moto_dir/bin/moto_server
gcs_bin=$cache/go-tools/fake-gcs-server-$FAKE_GCS_VERSION/fake-gcs-server
azurite_dir=$cache/azurite-$AZURITE_VERSION
azurite_bin=$azurite_dir/node_modules/azurite/dist/src/blob/main.js
minio_bin=$cache/go-tools/minio-$MINIO_VERSION/minio

install_moto() {
  [[ -x $moto_bin && -f $moto_dir/.complete ]] && return 0
  say "installing moto[server] $MOTO_VERSION (PyPI) into $moto_dir"
  rm -rf "$moto_dir"
  python3 -m venv "$moto_dir" &&
    "$moto_dir/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION" &&
    touch "$moto_dir/.complete"
}

go_install() { # binary path, package@version
  [[ -x $1 ]] && return 0
  say "building $2 with go install (minutes the first time; the Go module and build caches keep it)"
  GOBIN=$(dirname "$1") GOFLAGS=-mod=mod go install "$2"
}

install_azurite() {
  [[ -f $azurite_bin && -f $azurite_dir/.complete ]] && return 0
  say "installing azurite $AZURITE_VERSION (npm) into $azurite_dir"
  rm -rf "$azurite_dir"
  mkdir -p "$azurite_dir"
  # --ignore-scripts: Azurite needs no install script (it runs from its JavaScript).
  npm install --prefix "$azurite_dir" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
    "azurite@$AZURITE_VERSION" >/dev/null && touch "$azurite_dir/.complete"
}

start=$(date +%s)
pids=()
names=()
if python3 -c 'import venv, ensurepip' 2>/dev/null; then
  install_moto >"$cache/setup-moto.log" 2>&1 &
  pids+=($!)
  names+=(moto)
else
  skips+=("moto: python3 has no venv/ensurepip")
fi
if command -v go >/dev/null; then
  go_install "$gcs_bin" "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION" >"$cache/setup-fake-gcs-server.log" 2>&1 &
  pids+=($!)
  names+=(fake-gcs-server)
  if [[ ${NEREID_WITH_MINIO:-0} == 1 ]]; then
    go_install "$minio_bin" "github.com/minio/minio@$MINIO_VERSION" >"$cache/setup-minio.log" 2>&1 &
    pids+=($!)
    names+=(minio)
  elif [[ ! -x $minio_bin ]]; then
    skips+=("minio: not built (NEREID_WITH_MINIO=1 builds it, a long go install)")
  fi
else
  skips+=("fake-gcs-server, minio: no go command")
fi
install_azurite >"$cache/setup-azurite.log" 2>&1 &
pids+=($!)
names+=(azurite)

failed=()
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    failed+=("${names[$i]}")
    echo "setup-storage-servers: error: installing ${names[$i]} failed:" >&2
    tail -n 20 "$cache/setup-${names[$i]}.log" >&2 || true
  fi
done

{
  echo "# Written by scripts/setup-storage-servers.sh; read by test/integration/storage/stores.ts."
  echo "NEREID_MOTO_SERVER=$([[ -x $moto_bin && -f $moto_dir/.complete ]] && echo "$moto_bin")"
  echo "NEREID_FAKE_GCS_SERVER=$([[ -x $gcs_bin ]] && echo "$gcs_bin")"
  echo "NEREID_AZURITE_BLOB=$([[ -f $azurite_bin && -f $azurite_dir/.complete ]] && echo "$azurite_bin")"
  echo "NEREID_MINIO=$([[ -x $minio_bin ]] && echo "$minio_bin")"
  echo "NEREID_STORAGE_SKIP=$(IFS=';'; echo "${skips[*]:-}")"
} >"$envfile"
if ((${#failed[@]})); then
  echo "setup-storage-servers: error: ${failed[*]} could not be installed" >&2
  exit 1
fi
say "servers ready in $(($(date +%s) - start)) s ($envfile)"
