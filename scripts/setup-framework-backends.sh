#!/usr/bin/env bash
# The venvs of Nereid's framework backends for the compatibility suite (test/compat/test_openvino_backend.py,
# test_pytorch_backend.py, test_tensorflow_backend.py): `node bin/nereid.js backends install NAME` for each,
# the documented command (docs/backends.md), which installs python/backends/NAME/requirements.txt into
# .cache/backends/NAME-<sha256(requirements.txt)[:12]>/ and does nothing when that venv is already complete,
# so a second run costs nothing and an edited requirements.txt gets a new venv.
#
# Measured on the project's 2-core VM: openvino 75 MB downloaded, 278 MB installed, ~20 s; pytorch 3.0 GB
# downloaded (PyPI's torch wheel and the CUDA wheels it requires; PyPI has no CPU-only torch), 5.6 GB
# installed, ~2.5 min; tensorflow (tensorflow-cpu) 320 MB downloaded, 1.6 GB installed, ~75 s.
# NEREID_TEST_BACKENDS (default "openvino pytorch tensorflow") chooses which; an empty value
# installs none, and the tests of a backend that is not installed skip saying how to install it. A backend is
# left out (exit 0, saying why) only when the disk cannot hold it; any other failure fails the setup.
# With a file argument, the names of the backends that are installed are written to it, one a line
# (scripts/test.sh passes them to the tests as NEREID_REQUIRE_BACKENDS).
set -euo pipefail
installed_list=${1:-/dev/null}
: >"$installed_list"
cd "$(dirname "$0")/.."

# Free space a backend's venv needs, in MB (its installed size plus pip's unpacking room).
declare -A needs=([openvino]=1024 [pytorch]=12288 [tensorflow]=4096)

root=${NEREID_BACKEND_VENVS:-.cache/backends}
mkdir -p "$root"
for name in ${NEREID_TEST_BACKENDS-openvino pytorch tensorflow}; do
  free=$(df -Pm "$root" | awk 'NR == 2 { print $4 }')
  need=${needs[$name]:-1024}
  if [[ $free -lt $need ]]; then
    echo "setup-framework-backends: $name left out: $free MB free in $root, its venv needs about $need MB"
    continue
  fi
  echo "setup-framework-backends: $name"
  node bin/nereid.js backends install "$name"
  echo "$name" >>"$installed_list"
done
