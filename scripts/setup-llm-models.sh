#!/usr/bin/env bash
# Makes the GGUF models the llamacpp backend's tests load (docs/llm.md): a cached venv with the `gguf`
# package from PyPI (pins below) runs scripts/make_tiny_gguf.py, which writes a tiny llama-architecture
# model with random weights from a fixed seed. Everything lives in .cache/llm-models/<key>/, keyed by the
# pins, the generator and this script, so a repeat run returns at once and a change makes a new folder.
# Prints nothing else on success but its progress lines; the model's path is
# .cache/llm-models/current/tiny-llama.gguf (a symbolic link to the keyed folder). Beside it, from the same
# weights: tiny-llama-chat.gguf (a chat template in its metadata, CHAT_TEMPLATE below) and tiny-embed.gguf
# (mean pooling: an embedding model), for the OpenAI frontend's tests; and tiny-swa.gguf, a Gemma 3
# architecture model with a 16-token sliding window (the prefix reuse's sliding-window path).
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
# A ChatML-like template that also renders tool calls and tool results (test/compat/test_llamacpp_openai.py);
# the newline is written as a string because chat templates render with trim_blocks.
CHAT_TEMPLATE='{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}</tool_call>{% endfor %}{% endif %}{{ "\n" }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}'

if [[ -f $dir/tiny-llama.gguf && -f $dir/tiny-llama-chat.gguf && -f $dir/tiny-embed.gguf && -f $dir/tiny-swa.gguf &&
  -f $dir/.done ]]; then
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
say "writing $dir/tiny-llama-chat.gguf and $dir/tiny-embed.gguf"
"$dir/venv/bin/python" "$generator" "$dir/tiny-llama-chat.gguf" --chat-template "$CHAT_TEMPLATE"
"$dir/venv/bin/python" "$generator" "$dir/tiny-embed.gguf" --pooling mean
say "writing $dir/tiny-swa.gguf"
"$dir/venv/bin/python" "$generator" "$dir/tiny-swa.gguf" --sliding-window 16 --context 4096
touch "$dir/.done"
ln -sfn "$key" "$root/current"
say "ready: $root/current/tiny-llama.gguf"
