"""The OpenAI-compatible API (/v1, docs/openai.md) as the real `openai` Python package sees it, against a
running Nereid serving the bundled toy_llm (a deterministic streaming text model) and a toy embedding
model. No expected text is hard-coded: streamed output is compared with the non-streamed output of the
same request, stop sequences with the unstopped output, embeddings with the vector the test computes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import re
import shutil
import struct
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from nereid_server import MODEL_REPOSITORY, REPO_ROOT, NereidServer, start_server

MODEL = "toy_llm"
EMBED = "embed_ts"
MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "What is machine learning?"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NereidServer]:
    repo = tmp_path_factory.mktemp("openai_repo")
    shutil.copytree(MODEL_REPOSITORY / MODEL, repo / MODEL)
    shutil.copytree(REPO_ROOT / "test" / "fixtures" / "javascript" / EMBED, repo / EMBED)
    log = tmp_path_factory.mktemp("openai_log") / "server.log"
    running = start_server(
        [
            f"--model-repository={repo}",
            "--http-port=0",
            "--grpc-port=0",
            "--metrics-port=0",
            "--http-address=127.0.0.1",
        ],
        log,
    )
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def client(server: NereidServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def aclient(server: NereidServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


def test_models_list_and_retrieve(client: openai.OpenAI) -> None:
    ids = [m.id for m in client.models.list()]
    assert MODEL in ids
    assert EMBED in ids
    model = client.models.retrieve(MODEL)
    assert model.id == MODEL
    assert model.object == "model"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no_such_model")


def test_completion(client: openai.OpenAI) -> None:
    first = client.completions.create(model=MODEL, prompt="What is machine learning?")
    again = client.completions.create(model=MODEL, prompt="What is machine learning?")
    choice = first.choices[0]
    assert choice.text != ""
    assert choice.finish_reason == "stop"
    assert again.choices[0].text == choice.text  # the toy model is deterministic
    assert first.usage is not None
    assert first.usage.prompt_tokens == 4  # the prompt's words, as the model counts them
    assert first.usage.completion_tokens == len(choice.text.split())
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens


def test_completion_max_tokens_is_length(client: openai.OpenAI) -> None:
    c = client.completions.create(model=MODEL, prompt="hello", max_tokens=3)
    assert len(c.choices[0].text.split()) == 3
    assert c.choices[0].finish_reason == "length"


def test_completion_echo(client: openai.OpenAI) -> None:
    plain = client.completions.create(model=MODEL, prompt="Tell me")
    echoed = client.completions.create(model=MODEL, prompt="Tell me", echo=True)
    assert echoed.choices[0].text == "Tell me " + plain.choices[0].text


def test_chat_completion(client: openai.OpenAI) -> None:
    chat = client.chat.completions.create(model=MODEL, messages=MESSAGES)
    msg = chat.choices[0].message
    assert msg.role == "assistant"
    assert msg.content
    assert chat.choices[0].finish_reason == "stop"
    assert chat.usage is not None
    assert chat.usage.prompt_tokens > 0
    assert chat.usage.completion_tokens > 0


def test_chat_prompt_goes_through_the_models_template(client: openai.OpenAI) -> None:
    """Different conversations with the same last message make different prompts (the template sees
    every message), so the toy model, which hashes its prompt, may answer differently; the system
    message must at least change the prompt's token count."""
    plain = client.chat.completions.create(model=MODEL, messages=MESSAGES)
    with_system = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "system", "content": "Be brief and kind."}, *MESSAGES],
    )
    assert plain.usage is not None
    assert with_system.usage is not None
    # toy_llm's chat_template.jinja: '<|role|>\ncontent\n' per message, then '<|assistant|>\n'.
    assert with_system.usage.prompt_tokens == plain.usage.prompt_tokens + 1 + 4


def test_chat_streaming_equals_non_streaming(client: openai.OpenAI) -> None:
    whole = client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=64)
    stream = client.chat.completions.create(
        model=MODEL,
        messages=MESSAGES,
        max_tokens=64,
        stream=True,
    )
    pieces: list[str] = []
    roles: list[str] = []
    finishes: list[str] = []
    for chunk in stream:
        delta = chunk.choices[0].delta
        if delta.role:
            roles.append(delta.role)
        if delta.content:
            pieces.append(delta.content)
        if chunk.choices[0].finish_reason is not None:
            finishes.append(chunk.choices[0].finish_reason)
        assert chunk.usage is None
    assert roles == ["assistant"]
    assert len(pieces) > 1
    assert "".join(pieces) == whole.choices[0].message.content
    assert finishes == [whole.choices[0].finish_reason]


def test_completion_streaming_with_usage(client: openai.OpenAI) -> None:
    whole = client.completions.create(model=MODEL, prompt="Say something", max_tokens=8)
    stream = client.completions.create(
        model=MODEL, prompt="Say something", max_tokens=8, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == whole.choices[0].text
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert whole.usage is not None
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert chunks[-1].usage.prompt_tokens == whole.usage.prompt_tokens


@pytest.mark.parametrize("stop", [" is", ["xyz", ","], "e"])
@pytest.mark.parametrize("stream", [False, True])
def test_stop_sequences(client: openai.OpenAI, stop: str | list[str], stream: bool) -> None:
    prompt = "Tell me about foxes"
    full = client.completions.create(model=MODEL, prompt=prompt, max_tokens=64).choices[0].text
    stops = [stop] if isinstance(stop, str) else stop
    cut = min((full.find(s) for s in stops if s in full), default=-1)
    if stream:
        chunks = client.completions.create(model=MODEL, prompt=prompt, max_tokens=64, stop=stop, stream=True)
        text = "".join(c.choices[0].text for c in chunks)
    else:
        text = client.completions.create(model=MODEL, prompt=prompt, max_tokens=64, stop=stop).choices[0].text
    expected = full if cut < 0 else full[:cut]
    assert text == expected
    assert not any(s in text for s in stops)


def test_unknown_model(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="no_such_model", messages=MESSAGES)
    assert info.value.status_code == 404
    body = info.value.body
    assert isinstance(body, dict)
    assert body["code"] == "model_not_found"
    assert body["param"] == "model"


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"temperature": 5.0}, "temperature"),
        ({"n": 2}, "n"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"logit_bias": {"1": 1}}, "logit_bias"),
    ],
)
def test_bad_request(client: openai.OpenAI, kwargs: dict[str, object], param: str) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model=MODEL, prompt="x", **kwargs)  # type: ignore[call-overload]
    assert info.value.status_code == 400
    body = info.value.body
    assert isinstance(body, dict)
    assert body["type"] == "invalid_request_error"
    assert body["param"] == param


def test_bad_request_missing_messages(server: NereidServer) -> None:
    req = urllib.request.Request(
        f"http://{server.http_url}/v1/chat/completions",
        data=b'{"model": "toy_llm"}',
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req)
    assert info.value.code == 400
    assert json.loads(info.value.read())["error"]["param"] == "messages"


def _cancelled_count(server: NereidServer) -> float:
    text = urllib.request.urlopen(f"http://{server.url('metrics')}/metrics").read().decode()
    m = re.search(r'^toy_llm_cancelled_requests_total\{model="toy_llm"\} (\S+)$', text, re.MULTILINE)
    return float(m.group(1)) if m else 0.0


def test_cancellation_mid_stream_reaches_the_model(client: openai.OpenAI, server: NereidServer) -> None:
    before = _cancelled_count(server)
    stream = client.chat.completions.create(
        model=MODEL,
        messages=MESSAGES,
        max_tokens=100_000,
        stream=True,
        extra_body={"ignore_eos": True, "delay_ms": 20},
    )
    received = 0
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            received += 1
        if received == 3:
            break
    stream.close()  # closes the connection mid-stream
    # Wait for the event (the model counting the cancel); the deadline only bounds a broken run.
    deadline = time.monotonic() + 60
    while _cancelled_count(server) < before + 1:
        assert time.monotonic() < deadline, "the model never saw the cancellation"
        time.sleep(0.1)


def test_many_concurrent_streams(aclient: openai.AsyncOpenAI) -> None:
    prompts = [f"Question number {i}?" for i in range(24)]

    async def one(prompt: str) -> tuple[str, str]:
        whole = await aclient.completions.create(model=MODEL, prompt=prompt, max_tokens=20)
        stream = await aclient.completions.create(model=MODEL, prompt=prompt, max_tokens=20, stream=True)
        text = "".join([c.choices[0].text async for c in stream])
        return whole.choices[0].text, text

    async def run() -> list[tuple[str, str]]:
        return await asyncio.gather(*(one(p) for p in prompts))

    results = asyncio.run(run())
    assert len(results) == len(prompts)
    for whole, streamed in results:
        assert streamed == whole
        assert whole != ""


def _expected_embedding(text: str) -> list[float]:
    v = [0.0] * 8
    for ch in text:
        v[ord(ch) % 8] += 1
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


def test_embeddings(client: openai.OpenAI) -> None:
    texts = ["hello world", "a b c"]
    r = client.embeddings.create(model=EMBED, input=texts)
    assert [d.index for d in r.data] == [0, 1]
    for d, text in zip(r.data, texts, strict=True):
        assert d.embedding == pytest.approx(_expected_embedding(text), rel=1e-6)
    assert r.usage is not None
    assert r.usage.prompt_tokens == 2 + 3


def test_embeddings_base64(server: NereidServer) -> None:
    req = urllib.request.Request(
        f"http://{server.http_url}/v1/embeddings",
        data=json.dumps({"model": EMBED, "input": "abc", "encoding_format": "base64"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    doc = json.loads(urllib.request.urlopen(req).read())
    raw = base64.b64decode(doc["data"][0]["embedding"])
    values = list(struct.unpack("<8f", raw))
    assert values == pytest.approx(_expected_embedding("abc"), rel=1e-6)


def test_embeddings_from_a_generation_model_is_a_bad_request(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model=MODEL, input="x")


def test_generation_from_an_embedding_model_is_a_bad_request(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model=EMBED, prompt="x")


def test_server_keeps_serving_after_errors(client: openai.OpenAI) -> None:
    for _ in range(3):
        with pytest.raises(openai.BadRequestError):
            client.completions.create(model=MODEL, prompt="")
    assert client.completions.create(model=MODEL, prompt="still there?").choices[0].text
