#!/usr/bin/env bash
# Provisions the browser the dashboard's end-to-end tests (test/browser, docs/dashboard.md) drive through
# playwright-core: Debian's `chromium` package. Playwright's own browser downloads come from its CDN,
# which this project's machines cannot reach, so the browser is the distribution's: installed with apt as
# root when missing, or named by NEREID_CHROMIUM (any Chromium or Chrome binary).
# It writes .cache/browser.env (NEREID_CHROMIUM=<path>, NEREID_CHROMIUM_VERSION=<version>), which the tests
# read. Idempotent: a second run only checks the version.
#
# Exit status: 0 when a browser is in place, or when this machine cannot have one (not root with apt):
# then the env file says why (NEREID_BROWSER_SKIP) and the tests skip with that message. A failed install
# or a browser that does not start exits 1, so a broken setup fails the run instead of passing as a skip.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cache=$PWD/.cache
envfile=$cache/browser.env
mkdir -p "$cache"
say() { echo "setup-browser: $*"; }
die() {
  echo "setup-browser: error: $*" >&2
  exit 1
}

browser=${NEREID_CHROMIUM:-}
if [[ -z $browser ]]; then
  browser=$(command -v chromium || true)
fi
if [[ -z $browser ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    say "installing chromium (apt)"
    apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null ||
      die "apt-get install chromium failed"
    browser=$(command -v chromium) || die "chromium installed but not on PATH"
  else
    reason="no chromium here and not root with apt-get to install it (set NEREID_CHROMIUM to a Chromium binary)"
    say "cannot provide a browser: $reason (the browser tests will skip)"
    printf 'NEREID_BROWSER_SKIP=%q\n' "$reason" >"$envfile"
    exit 0
  fi
fi
[[ -x $browser ]] || die "$browser is not an executable"
# Debian's launcher script prints its own chatter first; the version is the line that says Chromium/Chrome.
version=$("$browser" --version 2>/dev/null | grep -Eo '(Chromium|Chrome) [0-9][0-9.]*' | head -1 | awk '{print $2}')
[[ -n $version ]] || die "$browser --version does not say which version it is"
printf 'NEREID_CHROMIUM=%q\nNEREID_CHROMIUM_VERSION=%q\n' "$browser" "$version" >"$envfile"
say "chromium $version at $browser"
