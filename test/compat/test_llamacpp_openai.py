"""The OpenAI API on a real GGUF model (docs/openai.md) through the real `openai` Python package: JSON
schema output that parses and validates, log probs (chat, completions, streaming), tool calls (`required`,
a named function, the round trip back through the GGUF's chat template), embeddings on a GGUF embedding
model, and the 400s for combinations a model cannot honour. The models are the tiny GGUFs the test setup
writes (scripts/setup-llm-models.sh); no generated text is hard-coded: outputs are checked by their
shape, parsed against the schema asked for, or compared with another request that must give the same.
Schemas use enums and booleans with a bounded max_tokens (the random tiny model would write strings and
unbounded numbers until max_tokens).
"""

from __future__ import annotations

import json
import math
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from nereid_server import MODEL_REPOSITORY, REPO_ROOT, NereidServer, start_server

MODELS = REPO_ROOT / ".cache" / "llm-models" / "current"
TINY, CHAT, EMBED, TOY = "tiny", "tiny_chat", "tiny_embed", "toy_llm"
SETTINGS = {"context_size": 1536, "parallel_sequences": 2, "threads": 1, "batch_size": 128}
EMBED_CONFIG = """backend: "llamacpp"
max_batch_size: 0
input [{ name: "text_input" data_type: TYPE_STRING dims: [1] }]
output [
  { name: "embedding" data_type: TYPE_FP32 dims: [-1] },
  { name: "num_input_tokens" data_type: TYPE_UINT32 dims: [1] }
]
"""
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "colour": {"type": "string", "enum": ["blue", "green", "red"]},
        "ok": {"type": "boolean"},
        "size": {"enum": ["small", "large"]},
    },
    "required": ["colour", "ok", "size"],
    "additionalProperties": False,
}
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"enum": ["Paris", "Oslo"]}, "metric": {"type": "boolean"}},
            "required": ["city", "metric"],
        },
    },
}
TIME: Any = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {
            "type": "object",
            "properties": {"zone": {"enum": ["UTC", "CET"]}},
            "required": ["zone"],
        },
    },
}
ASK: Any = [{"role": "user", "content": "What is the weather in Paris?"}]


def _model(repo: Any, name: str, gguf: str, config: str = 'backend: "llamacpp"\n') -> None:
    version = repo / name / "1"
    version.mkdir(parents=True)
    (repo / name / "config.pbtxt").write_text(config)
    shutil.copy(MODELS / gguf, version / "model.gguf")
    (version / "model.json").write_text(json.dumps(SETTINGS))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NereidServer]:
    for f in ("tiny-llama.gguf", "tiny-llama-chat.gguf", "tiny-embed.gguf"):
        if not (MODELS / f).exists():
            pytest.fail(f"{MODELS / f} is missing: scripts/setup-llm-models.sh writes it (npm test runs it)")
    repo = tmp_path_factory.mktemp("llamacpp_openai_repo")
    _model(repo, TINY, "tiny-llama.gguf")
    _model(repo, CHAT, "tiny-llama-chat.gguf")
    _model(repo, EMBED, "tiny-embed.gguf", EMBED_CONFIG)
    shutil.copytree(MODEL_REPOSITORY / TOY, repo / TOY)
    log = tmp_path_factory.mktemp("llamacpp_openai_log") / "server.log"
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


def _check(doc: Any) -> None:
    """`doc` is what SCHEMA allows."""
    assert set(doc) == {"colour", "ok", "size"}
    assert doc["colour"] in ("blue", "green", "red")
    assert isinstance(doc["ok"], bool)
    assert doc["size"] in ("small", "large")


def test_json_schema_output_parses_and_validates(client: openai.OpenAI) -> None:
    seen = set()
    for seed in (1, 2, 3):
        r = client.chat.completions.create(
            model=TINY,
            messages=ASK,
            max_tokens=60,
            temperature=1.5,
            seed=seed,
            response_format={"type": "json_schema", "json_schema": {"name": "thing", "schema": SCHEMA}},
        )
        assert r.choices[0].finish_reason == "stop"
        doc = json.loads(r.choices[0].message.content or "")
        _check(doc)
        seen.add(json.dumps(doc, sort_keys=True))
    # Sampling still chooses within the grammar: three seeds do not all give one answer by chance alone
    # often, but one answer is allowed; what must hold is that each is valid.
    assert len(seen) >= 1
    streamed = client.chat.completions.create(
        model=TINY,
        messages=ASK,
        max_tokens=60,
        temperature=0,
        stream=True,
        response_format={"type": "json_schema", "json_schema": {"name": "thing", "schema": SCHEMA}},
    )
    _check(json.loads("".join(c.choices[0].delta.content or "" for c in streamed if c.choices)))


def test_json_object_on_completions(client: openai.OpenAI) -> None:
    r = client.completions.create(
        model=TINY,
        prompt="the blue river",
        max_tokens=40,
        temperature=0,
        extra_body={"response_format": {"type": "json_object"}},
    )
    text = r.choices[0].text
    assert text.lstrip().startswith("{")
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(text), dict)


def test_chat_logprobs_real_and_streamed(client: openai.OpenAI) -> None:
    kw: Any = {
        "model": TINY,
        "messages": ASK,
        "max_tokens": 8,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": 3,
    }
    r = client.chat.completions.create(**kw)
    lp = r.choices[0].logprobs
    assert lp is not None
    assert lp.content is not None
    assert len(lp.content) == 8 == (r.usage.completion_tokens if r.usage else -1)
    assert "".join(t.token for t in lp.content) == r.choices[0].message.content
    for t in lp.content:
        assert t.logprob <= 0
        assert len(t.top_logprobs) == 3
        assert [a.logprob for a in t.top_logprobs] == sorted(
            (a.logprob for a in t.top_logprobs), reverse=True
        )
        # Greedy: the token taken is the most likely one.
        assert t.top_logprobs[0].token == t.token
        assert math.isclose(t.top_logprobs[0].logprob, t.logprob)
        assert t.bytes == list(t.token.encode())
    streamed = list(client.chat.completions.create(**kw, stream=True))
    entries = [
        e
        for c in streamed
        if c.choices and c.choices[0].logprobs
        for e in c.choices[0].logprobs.content or []
    ]
    assert [(e.token, round(e.logprob, 4)) for e in entries] == [
        (t.token, round(t.logprob, 4)) for t in lp.content
    ]
    plain = client.chat.completions.create(model=TINY, messages=ASK, max_tokens=8, temperature=0)
    assert plain.choices[0].logprobs is None
    assert plain.choices[0].message.content == r.choices[0].message.content


def test_completion_logprobs(client: openai.OpenAI) -> None:
    r = client.completions.create(
        model=TINY, prompt="the quiet stone", max_tokens=6, temperature=0.7, seed=3, logprobs=2
    )
    lp = r.choices[0].logprobs
    assert lp is not None
    assert lp.tokens is not None
    assert lp.token_logprobs is not None
    assert lp.top_logprobs is not None
    assert lp.text_offset is not None
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 6
    assert all(v <= 0 for v in lp.token_logprobs)
    assert all(len(t) <= 2 for t in lp.top_logprobs)
    assert lp.text_offset[0] == 0
    assert "".join(lp.tokens) == r.choices[0].text


def test_tool_choice_required_and_named(client: openai.OpenAI) -> None:
    r = client.chat.completions.create(
        model=TINY, messages=ASK, tools=[WEATHER, TIME], tool_choice="required", max_tokens=200, temperature=0
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls
    for call in choice.message.tool_calls:
        assert call.type == "function"
        assert call.id.startswith("call_")
        args = json.loads(call.function.arguments)
        if call.function.name == "get_weather":
            assert args["city"] in ("Paris", "Oslo")
            assert isinstance(args["metric"], bool)
        else:
            assert call.function.name == "get_time"
            assert args["zone"] in ("UTC", "CET")
    named = client.chat.completions.create(
        model=TINY,
        messages=ASK,
        tools=[WEATHER, TIME],
        tool_choice={"type": "function", "function": {"name": "get_time"}},
        max_tokens=120,
        temperature=0,
    )
    calls: Any = named.choices[0].message.tool_calls
    assert calls
    assert len(calls) == 1
    assert calls[0].function.name == "get_time"
    assert json.loads(calls[0].function.arguments)["zone"] in ("UTC", "CET")
    assert named.choices[0].message.content is None


def test_tool_calls_stream(client: openai.OpenAI) -> None:
    kw: Any = {
        "model": TINY,
        "messages": ASK,
        "tools": [WEATHER],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "max_tokens": 150,
        "temperature": 0,
    }
    whole = client.chat.completions.create(**kw)
    assert whole.choices[0].message.tool_calls
    assert len(whole.choices[0].message.tool_calls) == 1
    chunks = list(client.chat.completions.create(**kw, stream=True))
    deltas = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert len(deltas) == 1
    assert deltas[0].function is not None
    assert deltas[0].function.name == "get_weather"
    assert json.loads(deltas[0].function.arguments or "") == json.loads(
        whole.choices[0].message.tool_calls[0].function.arguments
    )
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [
        "tool_calls"
    ]


def test_tool_round_trip_through_the_gguf_template(client: openai.OpenAI) -> None:
    first = client.chat.completions.create(
        model=CHAT, messages=ASK, tools=[WEATHER], tool_choice="required", max_tokens=150, temperature=0
    )
    calls: Any = first.choices[0].message.tool_calls
    assert calls
    call = calls[0]
    result = "sunny, 21 degrees"
    history: Any = [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": result},
    ]
    second = client.chat.completions.create(
        model=CHAT, messages=history, tools=[WEATHER], tool_choice="none", max_tokens=6, temperature=0
    )
    assert second.choices[0].finish_reason == "length"
    # The GGUF's template (scripts/setup-llm-models.sh) renders the call and the result: the same prompt
    # written out by hand gives the same greedy text and the same prompt tokens on /v1/completions.
    args = json.dumps(json.loads(call.function.arguments))
    prompt = (
        "<s><|user|>What is the weather in Paris?\n"
        f'<|assistant|><tool_call>{{"name": "{call.function.name}", "arguments": {args}}}</tool_call>\n'
        f"<|tool|>{result}\n<|assistant|>"
    )
    by_hand = client.completions.create(model=CHAT, prompt=prompt, max_tokens=6, temperature=0)
    assert second.choices[0].message.content == by_hand.choices[0].text
    assert second.usage is not None
    assert by_hand.usage is not None
    assert second.usage.prompt_tokens == by_hand.usage.prompt_tokens


def test_chat_template_from_gguf_metadata(client: openai.OpenAI) -> None:
    """tiny_chat's folder has no template file: its GGUF's tokenizer.chat_template renders the prompt."""
    chat = client.chat.completions.create(model=CHAT, messages=ASK, max_tokens=6, temperature=0)
    by_hand = client.completions.create(
        model=CHAT,
        prompt="<s><|user|>What is the weather in Paris?\n<|assistant|>",
        max_tokens=6,
        temperature=0,
    )
    fallback = client.completions.create(
        model=CHAT, prompt="user: What is the weather in Paris?\nassistant:", max_tokens=6, temperature=0
    )
    assert chat.choices[0].message.content == by_hand.choices[0].text
    assert chat.usage
    assert by_hand.usage
    assert fallback.usage
    assert chat.usage.prompt_tokens == by_hand.usage.prompt_tokens != fallback.usage.prompt_tokens


def test_embeddings_on_a_gguf_embedding_model(client: openai.OpenAI) -> None:
    texts = ["the blue river", "a quiet machine", "the blue river"]
    r = client.embeddings.create(model=EMBED, input=texts)
    vectors = [d.embedding for d in r.data]
    assert [len(v) for v in vectors] == [64, 64, 64]  # the tiny model's embedding width
    assert vectors[0] == vectors[2]
    assert vectors[0] != vectors[1]
    assert all(math.isfinite(x) for v in vectors for x in v)
    assert r.usage.prompt_tokens > 0
    again = client.embeddings.create(model=EMBED, input="the blue river")
    assert again.data[0].embedding == vectors[0]


def _generate(server: NereidServer, sampling: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    body = json.dumps(
        {
            "text_input": "the blue",
            "exclude_input_in_output": True,
            "sampling_parameters": json.dumps(sampling),
        }
    ).encode()
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/{TINY}/generate", data=body, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_guided_decoding_through_generate(server: NereidServer) -> None:
    """The sampling_parameters field the frontend fills, as any vLLM-interface client sends it."""
    status, reply = _generate(
        server, {"max_tokens": 60, "temperature": 0, "guided_decoding": {"json": SCHEMA}}
    )
    assert status == 200, reply
    _check(json.loads(reply["text_output"]))
    status, reply = _generate(server, {"max_tokens": 5, "guided_decoding": {"choice": ["yes", "no"]}})
    assert status == 200, reply
    assert reply["text_output"] in ("yes", "no"), reply
    status, reply = _generate(server, {"max_tokens": 5, "guided_decoding": {"regex": "a+"}})
    assert status == 400
    assert "regex" in reply["error"]
    # anyOf (what Pydantic writes for Optional) is honoured, not collapsed to one branch.
    either = {
        "type": "object",
        "properties": {"v": {"anyOf": [{"type": "boolean"}, {"enum": ["x"]}]}},
        "required": ["v"],
    }
    values = set()
    for seed in range(6):
        status, reply = _generate(
            server, {"max_tokens": 40, "temperature": 2, "seed": seed, "guided_decoding": {"json": either}}
        )
        assert status == 200, reply
        values.add(json.loads(reply["text_output"])["v"])
    assert values <= {True, False, "x"}
    assert values
    status, reply = _generate(
        server, {"max_tokens": 5, "guided_decoding": {"json": {"type": "string", "pattern": "a+"}}}
    )
    assert status == 400
    assert "'pattern' is not supported" in reply["error"]


def test_unsupported_combinations_are_400(client: openai.OpenAI) -> None:
    fmt: Any = {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA}}
    with pytest.raises(openai.BadRequestError, match="cannot honour response_format"):
        client.chat.completions.create(model=TOY, messages=ASK, response_format=fmt, max_tokens=5)
    with pytest.raises(openai.BadRequestError, match="cannot honour logprobs"):
        client.chat.completions.create(model=TOY, messages=ASK, logprobs=True, max_tokens=5)
    with pytest.raises(openai.BadRequestError, match="cannot honour tool_choice"):
        client.chat.completions.create(
            model=TOY, messages=ASK, tools=[WEATHER], tool_choice="required", max_tokens=5
        )
    with pytest.raises(openai.BadRequestError, match="cannot be combined"):
        client.chat.completions.create(
            model=TINY,
            messages=ASK,
            tools=[WEATHER],
            tool_choice="required",
            response_format=fmt,
            max_tokens=5,
        )
    with pytest.raises(openai.BadRequestError, match="which 'tools' does not have"):
        client.chat.completions.create(
            model=TINY,
            messages=ASK,
            tools=[WEATHER],
            tool_choice={"type": "function", "function": {"name": "nope"}},
        )
    with pytest.raises(openai.BadRequestError, match="top_logprobs"):
        client.chat.completions.create(model=TINY, messages=ASK, top_logprobs=2, max_tokens=5)
    with pytest.raises(openai.BadRequestError, match="must name JSON types"):
        client.chat.completions.create(
            model=TINY,
            messages=ASK,
            max_tokens=5,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {"type": "nonsense"}},
            },
        )
    with pytest.raises(openai.BadRequestError, match=r"not an embedding|does not serve embeddings"):
        client.embeddings.create(model=TINY, input="a")
