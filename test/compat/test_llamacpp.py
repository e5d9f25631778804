"""The llamacpp backend (docs/llm.md) through real clients: tritonclient's gRPC stream (ModelStreamInfer)
on the vLLM tensor interface, and the real `openai` Python package on /v1. The model is the tiny GGUF the
test setup writes (scripts/setup-llm-models.sh); no expected text is hard-coded: streamed text is compared
with the non-streamed text of the same greedy request, and seeded samples with each other.
"""

from __future__ import annotations

import json
import queue
import shutil
from collections.abc import Iterator
from typing import Any

import numpy as np
import openai
import pytest
import tritonclient.grpc as grpcclient

from nereid_server import REPO_ROOT, NereidServer, start_server

TINY = REPO_ROOT / ".cache" / "llm-models" / "current" / "tiny-llama.gguf"
MODEL = "tiny"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NereidServer]:
    if not TINY.exists():
        pytest.fail(f"{TINY} is missing: scripts/setup-llm-models.sh writes it (npm test runs it)")
    repo = tmp_path_factory.mktemp("llamacpp_repo")
    version = repo / MODEL / "1"
    version.mkdir(parents=True)
    (repo / MODEL / "config.pbtxt").write_text('backend: "llamacpp"\n')
    shutil.copy(TINY, version / "model.gguf")
    settings = {"context_size": 256, "parallel_sequences": 2, "threads": 1, "batch_size": 128}
    (version / "model.json").write_text(json.dumps(settings))
    log = tmp_path_factory.mktemp("llamacpp_log") / "server.log"
    running = start_server(
        [
            f"--model-repository={repo}",
            "--http-port=0",
            "--grpc-port=0",
            "--metrics-port=0",
            "--http-address=127.0.0.1",
            "--grpc-address=127.0.0.1",
        ],
        log,
    )
    try:
        yield running
    finally:
        running.stop()


def _inputs(prompt: str, stream: bool, sampling: dict[str, Any]) -> list[Any]:
    text = grpcclient.InferInput("text_input", [1], "BYTES")
    text.set_data_from_numpy(np.array([prompt.encode()], dtype=np.object_))
    flag = grpcclient.InferInput("stream", [1], "BOOL")
    flag.set_data_from_numpy(np.array([stream], dtype=bool))
    params = grpcclient.InferInput("sampling_parameters", [1], "BYTES")
    params.set_data_from_numpy(np.array([json.dumps(sampling).encode()], dtype=np.object_))
    exclude = grpcclient.InferInput("exclude_input_in_output", [1], "BOOL")
    exclude.set_data_from_numpy(np.array([True], dtype=bool))
    count = grpcclient.InferInput("return_num_output_tokens", [1], "BOOL")
    count.set_data_from_numpy(np.array([True], dtype=bool))
    return [text, flag, params, exclude, count]


def _stream(
    server: NereidServer, prompt: str, stream: bool, sampling: dict[str, Any]
) -> tuple[str, int, int]:
    """Text, output tokens and responses of one request over a gRPC stream."""
    answers: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client = grpcclient.InferenceServerClient(server.url("grpc"))
    try:
        client.start_stream(callback=lambda result, error: answers.put((result, error)))
        client.async_stream_infer(MODEL, _inputs(prompt, stream, sampling), enable_empty_final_response=True)
        text, tokens, responses = "", 0, 0
        while True:
            result, error = answers.get(timeout=60)
            assert error is None, error
            response = result.get_response()
            if response.outputs:
                responses += 1
                text += b"".join(result.as_numpy("text_output").tolist()).decode()
                tokens += int(result.as_numpy("num_output_tokens")[0])
            if response.parameters["triton_final_response"].bool_param:
                return text, tokens, responses
    finally:
        client.stop_stream()
        client.close()


def test_grpc_stream_equals_one_response(server: NereidServer) -> None:
    greedy = {"temperature": 0, "max_tokens": 20}
    whole, tokens, responses = _stream(server, "the green light", False, greedy)
    assert (tokens, responses) == (20, 1)
    streamed, stream_tokens, stream_responses = _stream(server, "the green light", True, greedy)
    assert streamed == whole
    assert stream_tokens == 20
    assert stream_responses > 1


def test_grpc_seeded_sampling_repeats(server: NereidServer) -> None:
    sampled = {"temperature": 3, "seed": 11, "max_tokens": 16}
    first, _, _ = _stream(server, "a small stone", True, sampled)
    second, _, _ = _stream(server, "a small stone", True, sampled)
    assert first == second


@pytest.fixture(scope="module")
def client(server: NereidServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


def test_openai_chat_streamed_and_not(client: openai.OpenAI) -> None:
    messages: list[Any] = [{"role": "user", "content": "Tell me about the river."}]
    chat = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=10, temperature=0)
    content = chat.choices[0].message.content or ""
    assert content
    assert chat.usage is not None
    assert chat.usage.completion_tokens == 10
    pieces = client.chat.completions.create(
        model=MODEL, messages=messages, max_tokens=10, temperature=0, stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in pieces if c.choices) == content


def test_openai_seed_and_errors(client: openai.OpenAI) -> None:
    def sample() -> str:
        r = client.completions.create(model=MODEL, prompt="the quiet", max_tokens=8, temperature=2, seed=5)
        return r.choices[0].text

    assert sample() == sample()
    with pytest.raises(openai.BadRequestError, match="over the limit"):
        client.completions.create(model=MODEL, prompt="the quiet", max_tokens=5000)
