#!/usr/bin/env bash
# Provisions the real Triton Inference Server for the differential suite (test/differential) into
# .venv-triton: tritonserver 2.51.0 and its Python backend, unpacked from PyTriton's wheel (pins and hash in
# test/differential/triton-pins.txt), plus a venv with numpy that the backend's stub runs models in.
# Writes .venv-triton/bin/tritonserver, a wrapper that points the server at its backends and the stub at
# the venv. Idempotent: a stamp keyed by the pin file, this script and the interpreter makes a repeat run
# return at once. When Triton can't be had here (no registry or network, not x86_64 Linux, glibc < 2.35, a
# Python the wheel has no stub for) it prints `setup-triton: skipped: <why>` and exits 0 without installing,
# and the suite skips; anything else that goes wrong is an error (exit 1).
#
# Needs x86_64 Linux with glibc >= 2.35 (the wheel is manylinux_2_35), bash, and a CPython 3.8-3.13 with a
# shared libpython (the stub links libpython3.X.so.1.0); as root on Debian/Ubuntu, a distribution Python's
# missing libpython3.X package is installed with apt.
#
# Env: PYTHON (interpreter for the venv, default python3), NEREID_TRITON_VENV (default .venv-triton).
set -euo pipefail

self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
cd "$(dirname "$self")/.."

venv=${NEREID_TRITON_VENV:-.venv-triton}
python=${PYTHON:-python3}
pins=test/differential/triton-pins.txt
stamp=$venv/.nereid-setup-stamp

say() { echo "setup-triton: $*"; }
die() {
  echo "setup-triton: error: $*" >&2
  exit 1
}
skip() {
  say "skipped: $*"
  exit 0
}

[[ $(uname -s) == Linux && $(uname -m) == x86_64 ]] || skip "PyTriton's tritonserver is built for x86_64 Linux only"
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null || true)
glibc=${glibc#glibc }
if [[ ! $glibc =~ ^2\.([0-9]+) ]] || ((BASH_REMATCH[1] < 35)); then
  skip "the wheel is built for glibc >= 2.35, this system has ${glibc:-no glibc}"
fi

pyinfo=$("$python" - <<'PY'
import sys, sysconfig
print(f"{sys.version_info[0]}.{sys.version_info[1]}")
print(sysconfig.get_config_var("Py_ENABLE_SHARED") or 0)
print(sysconfig.get_config_var("LIBDIR") or "")
print(sysconfig.get_config_var("INSTSONAME") or "")
print(sys.base_prefix)
PY
) || die "cannot run $python"
mapfile -t py <<<"$pyinfo"
pyver=${py[0]} shared=${py[1]} libdir=${py[2]} soname=${py[3]} base_prefix=${py[4]}
case $pyver in 3.8 | 3.9 | 3.10 | 3.11 | 3.12 | 3.13) ;; *) skip "the wheel has backend stubs for Python 3.8-3.13, not $pyver" ;; esac

key=$(cat "$pins" "$self" | sha256sum | cut -d' ' -f1)-$pyver-$(command -v "$python")
if [[ -f $stamp && "$(cat "$stamp")" == "$key" && -x $venv/bin/tritonserver ]]; then
  say "$venv is up to date"
  exit 0
fi

# The stub dlopens libpython through the dynamic loader: it must be the interpreter the venv was made from,
# found via LD_LIBRARY_PATH (or the system's default path for a distribution Python). Debian's python3.X
# does not pull in its shared library package; as root it is installed here.
if [[ $shared == 1 && -n $soname && ! -e $libdir/$soname && $base_prefix == /usr && $(id -u) == 0 ]] &&
  command -v apt-get >/dev/null; then
  say "installing libpython$pyver (apt) for the backend stub"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "libpython$pyver" >/dev/null || skip "could not install libpython$pyver with apt"
fi
if [[ $shared != 1 || ! -e $libdir/$soname ]]; then
  die "$python ($pyver) has no shared libpython (Py_ENABLE_SHARED=$shared); set PYTHON to one that has"
fi

wheel_pin=$(grep -E '^nvidia-pytriton==' "$pins")
numpy_pin=$(grep -E '^numpy==' "$pins")

if [[ ! -x $venv/bin/python ]]; then
  say "creating $venv with $("$python" --version 2>&1)"
  "$python" -m venv "$venv" || die "$python -m venv failed (Debian: apt-get install python3-venv)"
fi
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "$numpy_pin"; then
  skip "could not install $numpy_pin into $venv"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "$wheel_pin" >"$tmp/req.txt"
say "downloading ${wheel_pin%% *} (about 55 MB)"
if ! "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --platform manylinux_2_35_x86_64 --require-hashes -r "$tmp/req.txt" -d "$tmp/dl"; then
  skip "could not download ${wheel_pin%% *}"
fi

# The wheel's layout is kept whole: its binaries find their bundled libraries through $ORIGIN-relative
# RPATHs (pytriton/tritonserver/bin -> ../../../nvidia_pytriton.libs).
opt=$venv/opt/pytriton
rm -rf "$opt"
mkdir -p "$opt"
"$venv/bin/python" -m zipfile -e "$tmp"/dl/nvidia_pytriton-*.whl "$opt"
tsdir=$(cd "$opt/pytriton/tritonserver" && pwd)
chmod +x "$tsdir/bin/tritonserver"
# The backend looks for its stub beside libtriton_python.so; the wheel keeps one per Python version.
install -m 0755 "$tsdir/python_backend_stubs/$pyver/triton_python_backend_stub" "$tsdir/backends/python/"

# PATH: the embedded interpreter finds its prefix by looking up python3 on PATH, so the venv's bin goes
# first (as PyTriton does) and the models see the venv's numpy. LD_LIBRARY_PATH: the venv interpreter's own
# libpython for the stub.
wrapper=$venv/bin/tritonserver
cat >"$wrapper" <<SH
#!/usr/bin/env bash
# Generated by scripts/setup-triton.sh: Triton Inference Server from PyTriton's wheel (.venv-triton/opt).
d="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")/.." && pwd)"
ts="\$d/opt/pytriton/pytriton/tritonserver"
export PATH="\$d/bin:\$PATH"
export LD_LIBRARY_PATH="$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "\$ts/bin/tritonserver" --backend-directory="\$ts/backends" --cache-directory="\$ts/caches" "\$@"
SH
chmod +x "$wrapper"

# --help exits 1 after printing the usage; a loader failure prints no usage.
usage=$("$wrapper" --help 2>&1 || true)
[[ $usage == *--model-repository* ]] ||
  die "tritonserver was unpacked but does not start (it needs glibc >= 2.35): ${usage:0:300}"
missing=$(LD_LIBRARY_PATH=$libdir ldd "$tsdir/backends/python/triton_python_backend_stub" | grep 'not found' || true)
[[ -z $missing ]] || die "the Python backend stub lacks: $missing"
"$venv/bin/python" -c 'import numpy' || die "numpy does not import in $venv"

echo "$key" >"$stamp"
say "ready: $wrapper (tritonserver 2.51.0, python backend, stub for Python $pyver)"
