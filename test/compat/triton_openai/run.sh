#!/usr/bin/env bash
# Runs Triton's OpenAI-frontend tests (python/openai/tests of the server repository) against Nereid, with
# only their harness (conftest.py, utils.py) replaced by the two files beside this script.
#   test/compat/triton_openai/run.sh <triton-server-checkout> [pytest args...]
# Their test files are copied to a temporary folder, never into this repository. The model is the one
# their tests use without vLLM or TensorRT-LLM: tests/test_models/mock_llm, as backend "tensorrtllm"
# (their name for the per-tensor request format a Python model takes). Needs pytest-asyncio, requests
# and openai in the Python that runs it ($PYTHON, default python3). Results: docs/openai.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
triton="$1"
shift
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$triton/python/openai/tests" "$work/tests"
cp "$here/conftest.py" "$work/tests/conftest.py"
cp "$here/utils.py" "$work/tests/utils.py"
cd "$work"
NEREID_ROOT="$root" TEST_BACKEND="${TEST_BACKEND:-tensorrtllm}" TEST_MODEL="${TEST_MODEL:-mock_llm}" \
  TEST_MODEL_REPOSITORY="${TEST_MODEL_REPOSITORY:-$work/tests/test_models}" \
  "${PYTHON:-python3}" -m pytest -p no:cacheprovider "${@:-tests}"
