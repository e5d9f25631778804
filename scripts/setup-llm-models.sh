#!/usr/bin/env bash
# Makes the GGUF models the llamacpp backend's tests load (docs/llm.md): a cached venv with the `gguf`
# package from PyPI (pins below) runs scripts/make_tiny_gguf.py, which writes a tiny llama-architecture
# model with random weights from a fixed seed. Everything lives in .cache/llm-models/<key>/, keyed by the
# pins, the generator and this script, so a repeat run returns at once and a change makes a new folder.
# Prints nothing else on success but its progress lines; the model's path is
# .cache/llm-models/current/tiny-llama.gguf (a symbolic link to the keyed folder).
#
# Env: PYTHON (interpreter for the venv, default python3).
set -euo pipefail

self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
cd "$(dirname "$self")/.."

python=${PYTHON:-python3}
pins=(gguf==0.19.0 numpy==2.4.6 PyYAML==6.0.4 tqdm==4.70.1 requests==2.34.2)
generator=scripts/make_tiny_gguf.py
root=.cache/llm-models

say() { echo "setup-llm-models: $*"; }

key=$( (printf '%s\n' "${pins[@]}" && cat "$generator" "$self") | sha256sum | cut -c1-16)
dir=$root/$key
if [[ -f $dir/tiny-llama.gguf && -f $dir/.done ]]; then
  ln -sfn "$key" "$root/current"
  say "$dir is up to date"
  exit 0
fi

rm -rf "$dir"
mkdir -p "$dir"
say "creating the gguf venv in $dir/venv"
"$python" -m venv "$dir/venv"
"$dir/venv/bin/python" -m pip install -q --disable-pip-version-check "${pins[@]}"
say "writing $dir/tiny-llama.gguf"
"$dir/venv/bin/python" "$generator" "$dir/tiny-llama.gguf"
touch "$dir/.done"
ln -sfn "$key" "$root/current"
say "ready: $root/current/tiny-llama.gguf"
