#!/usr/bin/env bash
# Creates or refreshes the repository's Python environment, .venv: the real tritonclient, numpy, pytest, ruff
# and mypy (pins in test/compat/requirements.txt), plus Triton's perf_analyzer (test/compat/perf-analyzer.txt)
# as .venv/bin/perf_analyzer. Idempotent: a stamp keyed by the pin files and this script makes a repeat run
# return at once.
#
# perf_analyzer's PyPI wheel is a native binary built for glibc >= 2.38 and GCC 13's libstdc++, newer than
# Debian 12 ships. pip refuses the wheel there, so we fetch it for its own platform tag, unpack it, and when it
# does not run natively we run it on a private glibc/libstdc++ unpacked from Debian 13's packages (through
# that glibc's own loader), leaving the system's libraries alone.
#
# Env: PYTHON (interpreter for the venv, default python3), NEREID_VENV (default .venv),
#      NEREID_SKIP_PERF_ANALYZER=1 (don't provision perf_analyzer), DEBIAN_MIRROR (default: the system's).
set -euo pipefail

self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
cd "$(dirname "$self")/.."

venv=${NEREID_VENV:-.venv}
python=${PYTHON:-python3}
req=test/compat/requirements.txt
pa_req=test/compat/perf-analyzer.txt
stamp=$venv/.nereid-setup-stamp

say() { echo "setup-python: $*"; }
die() {
  echo "setup-python: error: $*" >&2
  exit 1
}

key=$(cat "$req" "$pa_req" "$self" | sha256sum | cut -d' ' -f1)${NEREID_SKIP_PERF_ANALYZER:+-nopa}
if [[ -x $venv/bin/python && -f $stamp && "$(cat "$stamp")" == "$key" ]]; then
  say "$venv is up to date"
  exit 0
fi

is_root() { [[ $(id -u) -eq 0 ]]; }
apt_updated=
apt_install() {
  is_root && command -v apt-get >/dev/null || return 1
  if [[ -z $apt_updated ]]; then
    apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

# --- the venv and the pinned Python packages -------------------------------------------------------------
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  die "$python is $("$python" --version 2>&1); numpy 2.4 needs Python >= 3.11"
if [[ ! -x $venv/bin/python ]]; then
  say "creating $venv with $("$python" --version 2>&1)"
  if ! "$python" -m venv "$venv"; then
    rm -rf "$venv"
    say "python3 -m venv failed; installing Debian's python3-venv"
    apt_install python3-venv || die "cannot create a venv (need python3-venv)"
    "$python" -m venv "$venv"
  fi
fi
say "installing $req"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
"$venv/bin/python" - <<'PY'
import importlib

for name in ("tritonclient.http", "tritonclient.grpc", "tritonclient.utils", "numpy", "gevent",
             "geventhttpclient", "pytest", "mypy"):
    importlib.import_module(name)
PY
"$venv/bin/ruff" --version >/dev/null

# --- perf_analyzer ------------------------------------------------------------------------------------------
# The system's Debian archive address, so nothing here names a host of its own.
debian_mirror() {
  local uri=${DEBIAN_MIRROR:-}
  if [[ -z $uri ]]; then
    uri=$(grep -hE '^[[:space:]]*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null |
      awk '{print $2}' | grep -v -- '-security' | head -n1 || true)
  fi
  if [[ -z $uri ]]; then
    uri=$(grep -hE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      grep -oE '[a-z]+://[^ ]+' | grep -v -- '-security' | head -n1 || true)
  fi
  [[ -n $uri ]] || return 1
  echo "${uri%/}"
}

# Unpacks Debian 13's libc6, libstdc++6 and libgcc-s1 into $1, using a private apt state (the system's apt
# configuration and package database stay untouched).
fetch_debian13_runtime() {
  local rt=$1 work mirror
  mirror=$(debian_mirror) || die "no Debian archive configured in /etc/apt (set DEBIAN_MIRROR)"
  work=$(mktemp -d)
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$work/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/none"
    -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "Dir::State::status=/dev/null"
    -o "APT::Architectures::=amd64" -o "APT::Sandbox::User=$(id -un)" -o "Debug::NoLocking=1")
  apt-get "${opts[@]}" -qq update
  (cd "$work/debs" && apt-get "${opts[@]}" -qq download libc6 libstdc++6 libgcc-s1)
  rm -rf "$rt"
  mkdir -p "$rt"
  local deb
  for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$rt"; done
  rm -rf "$work"
}

install_perf_analyzer() {
  local arch plat opt=$venv/opt tmp bin pa_key pa_stamp=$venv/opt/.perf-analyzer-stamp
  pa_key=$(cat "$pa_req" "$self" | sha256sum | cut -d' ' -f1)
  if [[ -f $pa_stamp && "$(cat "$pa_stamp")" == "$pa_key" ]] && "$venv/bin/perf_analyzer" --version >/dev/null 2>&1; then
    say "perf_analyzer is up to date"
    return 0
  fi
  arch=$(uname -m)
  [[ $arch == x86_64 ]] || {
    say "warning: perf_analyzer is pinned for x86_64 only (this is $arch); skipping it"
    return 0
  }
  plat=manylinux_2_38_$arch
  tmp=$(mktemp -d)
  "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform "$plat" --require-hashes -r "$pa_req" -d "$tmp"
  rm -rf "$opt/perf_analyzer"
  mkdir -p "$opt/perf_analyzer"
  "$venv/bin/python" -m zipfile -e "$tmp"/perf_analyzer-*.whl "$opt/perf_analyzer"
  rm -rf "$tmp"
  bin=$opt/perf_analyzer/perf_analyzer/bin/perf_analyzer
  chmod +x "$bin"

  local wrapper=$venv/bin/perf_analyzer
  if "$bin" --version >/dev/null 2>&1; then
    say "perf_analyzer runs natively"
    cat >"$wrapper" <<'SH'
#!/usr/bin/env bash
# Generated by scripts/setup-python.sh: Triton's perf_analyzer (PyPI wheel, unpacked into .venv/opt).
d="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$d/opt/perf_analyzer/perf_analyzer/bin/perf_analyzer" "$@"
SH
  else
    say "perf_analyzer needs a newer glibc/libstdc++ than this system's; fetching Debian 13's"
    command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
      die "perf_analyzer needs glibc >= 2.38 and this is not a Debian system to fetch it from"
    local rt=$opt/debian13-runtime
    fetch_debian13_runtime "$rt"
    local loader=$rt/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
    local libpath=$rt/usr/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu
    # The binary also links the system's OpenSSL 3 and zlib.
    local missing
    missing=$("$loader" --library-path "$libpath" --list "$bin" 2>&1 | grep 'not found' || true)
    if [[ -n $missing ]]; then
      say "installing the shared libraries perf_analyzer links: $missing"
      apt_install libssl3 zlib1g || die "perf_analyzer lacks: $missing"
    fi
    cat >"$wrapper" <<'SH'
#!/usr/bin/env bash
# Generated by scripts/setup-python.sh: Triton's perf_analyzer (PyPI wheel, unpacked into .venv/opt), run by
# the loader of a private Debian 13 glibc because the system's glibc is older than the binary needs.
d="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rt="$d/opt/debian13-runtime/usr/lib/x86_64-linux-gnu"
exec "$rt/ld-linux-x86-64.so.2" --library-path "$rt:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu" \
  --argv0 perf_analyzer "$d/opt/perf_analyzer/perf_analyzer/bin/perf_analyzer" "$@"
SH
  fi
  chmod +x "$wrapper"
  "$wrapper" --version >/dev/null 2>&1 || die "perf_analyzer was installed but does not start"
  echo "$pa_key" >"$pa_stamp"
  say "$("$wrapper" --version 2>&1 | head -n1) -> $wrapper"
}

if [[ -n ${NEREID_SKIP_PERF_ANALYZER:-} ]]; then
  say "NEREID_SKIP_PERF_ANALYZER set; not provisioning perf_analyzer"
else
  install_perf_analyzer
fi

echo "$key" >"$stamp"
say "ready: $venv ($("$venv/bin/python" --version), tritonclient $("$venv/bin/python" -c \
  'import importlib.metadata as m; print(m.version("tritonclient"))'))"
