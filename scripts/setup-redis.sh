#!/usr/bin/env bash
# Makes sure `redis-server` is on PATH for the Redis response-cache tests (test/integration/cache-redis*):
# they start their own servers on free loopback ports and never use a system service. When it is missing
# and this runs as root on Debian/Ubuntu, Debian's `redis-server` package is installed with apt, with
# service start-up blocked (policy-rc.d) so the package's own service never runs. Prints
# `setup-redis: skipped: <why>` and exits 0 when it can't be had (the tests then skip); a failing apt run
# as root is an error (exit 1), so CI can't pass by skipping.
set -euo pipefail

say() { echo "setup-redis: $*"; }

if command -v redis-server >/dev/null 2>&1; then
  say "$(redis-server --version | head -n1)"
  exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  say "skipped: redis-server is not installed and this is not root on a Debian-like system"
  exit 0
fi

# Debian's maintainer scripts start a packaged service unless policy-rc.d says no (101): the tests run
# their own servers, so the packaged one must never start. An existing policy is left as it is.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  made_policy=1
fi
cleanup() { if ((made_policy)); then rm -f "$policy"; fi; }
trap cleanup EXIT

say "installing redis-server (apt)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null
command -v redis-server >/dev/null 2>&1 || {
  echo "setup-redis: error: redis-server still missing after apt-get install" >&2
  exit 1
}
say "$(redis-server --version | head -n1)"
