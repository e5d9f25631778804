"""TensorRT-LLM's `inflight_batcher_llm` repository on the llamacpp backend, through real clients.

The repository is test/fixtures/inflight_batcher_llm/models (preprocessing → tensorrt_llm → postprocessing
as `ensemble`, and the `tensorrt_llm_bls` Python BLS model) with TensorRT-LLM's tensor names; only the
`tensorrt_llm` model's backend is changed, to llamacpp with the tiny GGUF the test setup writes
(scripts/setup-llm-models.sh). Its ${...} placeholders are filled here the way that repository's
fill_template.py fills them. The Python models tokenize with the local tokenizer in
test/fixtures/inflight_batcher_llm/tokenizer (the GGUF's own vocabulary). No expected text is hard-coded:
the ensemble, the BLS model, the bare tensorrt_llm model (token ids in, decoded here) and a vLLM-interface
model on the same GGUF (llama.cpp's own tokenizer) must all answer the same greedy text, over HTTP
generate and over gRPC streaming (tritonclient).
"""

from __future__ import annotations

import json
import queue
import re
import shutil
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from nereid_server import REPO_ROOT, NereidServer, start_server

TINY = REPO_ROOT / ".cache" / "llm-models" / "current" / "tiny-llama.gguf"
FIXTURE = REPO_ROOT / "test" / "fixtures" / "inflight_batcher_llm"
MODELS = ("preprocessing", "tensorrt_llm", "postprocessing", "ensemble", "tensorrt_llm_bls")
PROMPT = "the quiet river and the stone"
MAX_TOKENS = 16


def _fill(text: str, values: dict[str, str]) -> str:
    filled = re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], text)
    assert re.search(r"\$\{\w+\}", filled) is None
    return filled


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not TINY.exists():
        pytest.fail(f"{TINY} is missing: scripts/setup-llm-models.sh writes it (npm test runs it)")
    root = tmp_path_factory.mktemp("inflight_batcher_llm")
    tokenizer = root / "tokenizer"
    shutil.copytree(FIXTURE / "tokenizer", tokenizer)
    shutil.copy(TINY, tokenizer / "tokenizer.gguf")
    models = root / "models"
    values = {
        "triton_max_batch_size": "4",
        "max_queue_delay_microseconds": "0",
        "decoupled_mode": "true",
        "tokenizer_dir": str(tokenizer),
        "add_special_tokens": "true",
        "skip_special_tokens": "true",
        "preprocessing_instance_count": "1",
        "postprocessing_instance_count": "1",
        "bls_instance_count": "1",
        "accumulate_tokens": "false",
        "tensorrt_llm_model_name": "tensorrt_llm",
        "exclude_input_in_output": "true",
    }
    for name in MODELS:
        shutil.copytree(FIXTURE / "models" / name, models / name)
        config = models / name / "config.pbtxt"
        config.write_text(_fill(config.read_text(), values))
    engine = {"context_size": 256, "parallel_sequences": 2, "threads": 1, "batch_size": 128}
    # The fixture's tensorrt_llm has no version folder in git (the real repository's holds the engine).
    (models / "tensorrt_llm" / "1").mkdir(exist_ok=True)
    shutil.copy(TINY, models / "tensorrt_llm" / "1" / "model.gguf")
    (models / "tensorrt_llm" / "1" / "model.json").write_text(json.dumps(engine))
    # The same GGUF behind Triton's vLLM-backend interface: text in, llama.cpp's own tokenizer.
    (models / "text" / "1").mkdir(parents=True)
    (models / "text" / "config.pbtxt").write_text('backend: "llamacpp"\n')
    shutil.copy(TINY, models / "text" / "1" / "model.gguf")
    (models / "text" / "1" / "model.json").write_text(json.dumps(engine))
    return root


@pytest.fixture(scope="module")
def server(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NereidServer]:
    log = tmp_path_factory.mktemp("inflight_batcher_llm_log") / "server.log"
    running = start_server(
        [
            f"--model-repository={repo / 'models'}",
            "--http-port=0",
            "--grpc-port=0",
            "--metrics-port=0",
            "--http-address=127.0.0.1",
            "--grpc-address=127.0.0.1",
        ],
        log,
    )
    try:
        ready = _post(running, "/v2/repository/index", {})
        states = {m["name"]: m.get("state") for m in ready}
        assert all(states.get(m) == "READY" for m in (*MODELS, "text")), (states, running.log_tail())
        yield running
    finally:
        running.stop()


def _post(server: NereidServer, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"http://{server.http_url}{path}", data=json.dumps(body).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def _generate(server: NereidServer, model: str, body: dict[str, Any]) -> Any:
    try:
        return _post(server, f"/v2/models/{model}/generate", body)
    except urllib.error.HTTPError as err:
        return {"status": err.code, **json.loads(err.read())}


@pytest.fixture(scope="module")
def tokenizer(repo: Path) -> Any:
    sys.path.insert(0, str(repo / "tokenizer"))
    from gguf_tokenizer import Tokenizer  # type: ignore[import-not-found]  # copied into tokenizer_dir above

    return Tokenizer(str(repo / "tokenizer" / "tokenizer.gguf"))


def _tensor(name: str, value: np.ndarray, datatype: str) -> Any:
    t = grpcclient.InferInput(name, list(value.shape), datatype)
    t.set_data_from_numpy(value)
    return t


def _stream(server: NereidServer, model: str, inputs: list[Any]) -> list[Any]:
    """Every response of one request over a gRPC stream, up to the final flag (errors raise)."""
    answers: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client = grpcclient.InferenceServerClient(server.url("grpc"))
    try:
        client.start_stream(callback=lambda result, error: answers.put((result, error)))
        client.async_stream_infer(model, inputs, enable_empty_final_response=True)
        results = []
        while True:
            result, error = answers.get(timeout=120)
            if error is not None:
                raise AssertionError(str(error))
            if result.get_response().outputs:
                results.append(result)
            if result.get_response().parameters["triton_final_response"].bool_param:
                return results
    finally:
        client.stop_stream()
        client.close()


def _text_inputs(prompt: str, stream: bool, extra: list[Any] | None = None) -> list[Any]:
    return [
        _tensor("text_input", np.array([[prompt.encode()]], dtype=np.object_), "BYTES"),
        _tensor("max_tokens", np.array([[MAX_TOKENS]], dtype=np.int32), "INT32"),
        _tensor("stream", np.array([[stream]], dtype=bool), "BOOL"),
        *(extra or []),
    ]


def _joined(results: list[Any]) -> str:
    return "".join(b"".join(r.as_numpy("text_output").reshape(-1).tolist()).decode() for r in results)


@pytest.fixture(scope="module")
def reference(server: NereidServer) -> str:
    """The greedy text of the vLLM-interface model: llama.cpp tokenizes and detokenizes the prompt."""
    sampling = json.dumps({"temperature": 0, "max_tokens": MAX_TOKENS})
    reply = _generate(
        server,
        "text",
        {"text_input": PROMPT, "sampling_parameters": sampling, "exclude_input_in_output": True},
    )
    text: str = reply["text_output"]
    assert len(text) >= MAX_TOKENS
    return text


def _bare_ids(server: NereidServer, tokenizer: Any) -> list[int]:
    """The generated ids of the bare tensorrt_llm model for PROMPT, tokenized by the local tokenizer."""
    ids = tokenizer.encode(PROMPT)
    inputs = [
        _tensor("input_ids", np.array([ids], dtype=np.int32), "INT32"),
        _tensor("input_lengths", np.array([[len(ids)]], dtype=np.int32), "INT32"),
        _tensor("request_output_len", np.array([[MAX_TOKENS]], dtype=np.int32), "INT32"),
    ]
    [result] = _stream(server, "tensorrt_llm", inputs)
    out = result.as_numpy("output_ids")
    assert out.shape == (1, 1, MAX_TOKENS)  # exclude_input_in_output: true in its config
    assert result.as_numpy("sequence_length").reshape(-1).tolist() == [MAX_TOKENS]
    generated: list[int] = out.reshape(-1).tolist()
    return generated


def test_local_tokenizer_agrees_with_llama_cpp(server: NereidServer, tokenizer: Any, reference: str) -> None:
    ids = tokenizer.encode(PROMPT)
    assert ids[0] == tokenizer.bos_id
    assert tokenizer.decode(ids) == " " + PROMPT
    assert tokenizer.decode(_bare_ids(server, tokenizer)) == reference


@pytest.mark.parametrize("model", ["ensemble", "tensorrt_llm_bls"])
def test_http_generate_answers_the_bare_models_text(server: NereidServer, model: str, reference: str) -> None:
    reply = _generate(server, model, {"text_input": PROMPT, "max_tokens": MAX_TOKENS})
    assert reply.get("text_output") == reference, reply


@pytest.mark.parametrize("model", ["ensemble", "tensorrt_llm_bls"])
def test_grpc_stream_sends_the_same_text_token_by_token(
    server: NereidServer, model: str, reference: str
) -> None:
    whole = _stream(server, model, _text_inputs(PROMPT, False))
    assert len(whole) == 1
    assert _joined(whole) == reference
    pieces = _stream(server, model, _text_inputs(PROMPT, True))
    assert len(pieces) == MAX_TOKENS
    assert _joined(pieces) == reference


def test_stop_words_and_log_probs_pass_through_the_pipeline(
    server: NereidServer, tokenizer: Any, reference: str
) -> None:
    ids = _bare_ids(server, tokenizer)
    # A generated token that is one character with no space: the stop word that tokenizes to it alone.
    at = next(
        i
        for i in range(2, len(ids))
        if len(tokenizer.pieces[ids[i]]) == 1 and tokenizer.pieces[ids[i]] != "\u2581"
    )
    stop = tokenizer.pieces[ids[at]]
    expected = tokenizer.decode(ids[: ids.index(ids[at]) + 1])
    assert expected != reference
    assert reference.startswith(expected)
    body = {"text_input": PROMPT, "max_tokens": MAX_TOKENS, "stop_words": [stop], "return_log_probs": True}
    for model in ("ensemble", "tensorrt_llm_bls"):
        reply = _generate(server, model, body)
        assert reply.get("text_output") == expected, (model, stop, reply)
        log_probs = np.array(reply["output_log_probs"], dtype=float).reshape(-1)
        assert (log_probs <= 0).all(), (model, reply)
        assert (log_probs < 0).any(), (model, reply)


def test_inputs_the_cpu_engine_cannot_honour_are_refused_through_the_ensemble(server: NereidServer) -> None:
    for extra, reason in (({"beam_width": 2}, "beam_width"), ({"lora_task_id": 3}, "LoRA")):
        for model in ("ensemble", "tensorrt_llm_bls"):
            if model == "tensorrt_llm_bls" and "lora_task_id" in extra:
                continue  # the BLS model has no LoRA input
            reply = _generate(server, model, {"text_input": PROMPT, "max_tokens": 4, **extra})
            assert reply.get("status") == 400 or "error" in reply, (model, reply)
            assert reason in reply["error"], (model, reply)


def test_seed_and_min_tokens_reach_the_engine_through_the_ensemble(server: NereidServer) -> None:
    # TensorRT-LLM's newer names (seed, min_tokens) as the ensemble maps them; sampled, not greedy.
    def sample(seed: int) -> str:
        body = {"text_input": PROMPT, "max_tokens": 8, "top_k": 50, "temperature": 3.0, "seed": seed}
        reply = _generate(server, "ensemble", {**body, "min_tokens": 4})
        text: str = reply.get("text_output", "")
        assert text, reply
        return text

    assert sample(7) == sample(7)
    assert sample(7) != sample(8)
