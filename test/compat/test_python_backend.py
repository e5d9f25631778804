"""Python-backend models (a model.py run in Nereid's stub process) through the real tritonclient.http and
tritonclient.grpc: add_sub_python (FP32 values), simple_identity (BYTES, including non-ASCII, empty and
non-UTF-8 elements, batches and a tensor large enough for the /dev/shm path), repeat_int32_python streamed
over gRPC (decoupled: every response, the final flag and the response count), python_raises (the suite's own
model, model_repo.TEST_PYTHON_MODELS: execute raising, and a per-request TritonError), metadata and config,
statistics, and perf_analyzer.

Expected values, codes and texts are what Triton 2.51's Python backend (scripts/setup-triton.sh) answers to
the same requests on the same models; where Nereid differs the test says so in an xfail.
"""

from __future__ import annotations

import asyncio
import csv
import queue
import re
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from grpc_stream import Stream
from model_repo import PYTHON_RAISES_ERROR_MESSAGE, PYTHON_RAISES_MESSAGE, require_ready
from test_perf_analyzer import _perf_analyzer, _server_count

PROTOCOLS = ["http", "grpc"]
# python_raises' only instance: Triton names a Python model's errors after the stub, `<model>_<group>_<index>`
RAISES_INSTANCE = "python_raises_0_0"


@pytest.fixture(autouse=True)
def _python_models_ready(example_models: dict[str, Any]) -> None:
    for model in ("add_sub_python", "simple_identity", "repeat_int32_python", "python_raises"):
        require_ready(example_models, model)


def _api(protocol: str, client: Any, grpc: Any) -> tuple[Any, Any]:
    return (httpclient, client) if protocol == "http" else (grpcclient, grpc)


def _tensor(module: Any, name: str, data: npt.NDArray[Any], datatype: str, binary: bool = True) -> Any:
    tensor = module.InferInput(name, list(data.shape), datatype)
    if module is httpclient:
        tensor.set_data_from_numpy(data, binary_data=binary)
    else:
        tensor.set_data_from_numpy(data)
    return tensor


def _raises(call: Any, *args: Any, **kwargs: Any) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as info:
        call(*args, **kwargs)
    return info.value


def _status(protocol: str, err: InferenceServerException, http: str, grpc: str) -> None:
    assert err.status() == (http if protocol == "http" else f"StatusCode.{grpc}"), err


# --- add_sub_python ---------------------------------------------------------------------------------------


def _add_sub_values() -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    a = np.array([1.5, -2.25, 3.0e30, 0.1], dtype=np.float32)
    b = np.array([0.5, 4.0, -1.0e30, -0.2], dtype=np.float32)
    return a, b


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_add_sub_python_values(protocol: str, client: Any, grpc: Any) -> None:
    module, c = _api(protocol, client, grpc)
    a, b = _add_sub_values()
    inputs = [_tensor(module, "INPUT0", a, "FP32"), _tensor(module, "INPUT1", b, "FP32")]
    result = c.infer("add_sub_python", inputs, request_id="as1")
    # the model computes in float32 with numpy, so the answers are exactly numpy's
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
    assert result.as_numpy("OUTPUT0").dtype == np.float32
    response = result.get_response(as_json=True) if protocol == "grpc" else result.get_response()
    assert response["model_name"] == "add_sub_python"
    assert response["model_version"] == "1"
    assert response["id"] == "as1"
    outputs = {o["name"]: o for o in response["outputs"]}
    assert outputs["OUTPUT0"]["datatype"] == "FP32"
    assert [int(d) for d in outputs["OUTPUT0"]["shape"]] == [4]


def test_add_sub_python_json_tensors(client: Any) -> None:
    a, b = _add_sub_values()
    inputs = [
        _tensor(httpclient, "INPUT0", a, "FP32", binary=False),
        _tensor(httpclient, "INPUT1", b, "FP32", binary=False),
    ]
    outputs = [httpclient.InferRequestedOutput(n, binary_data=False) for n in ("OUTPUT0", "OUTPUT1")]
    result = client.infer("add_sub_python", inputs, outputs=outputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_add_sub_python_requested_output_only(protocol: str, client: Any, grpc: Any) -> None:
    module, c = _api(protocol, client, grpc)
    a, b = _add_sub_values()
    inputs = [_tensor(module, "INPUT0", a, "FP32"), _tensor(module, "INPUT1", b, "FP32")]
    result = c.infer("add_sub_python", inputs, outputs=[module.InferRequestedOutput("OUTPUT1")])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
    assert result.as_numpy("OUTPUT0") is None


def test_add_sub_python_over_grpc_aio(server: Any) -> None:
    async def body() -> list[Any]:
        c = aioclient.InferenceServerClient(url=server.url("grpc"))
        try:
            calls = []
            for i in range(8):
                a = np.full(4, i, dtype=np.float32)
                inputs = [
                    _tensor(grpcclient, "INPUT0", a, "FP32"),
                    _tensor(grpcclient, "INPUT1", np.ones(4, dtype=np.float32), "FP32"),
                ]
                calls.append(c.infer("add_sub_python", inputs, request_id=f"aio{i}"))
            return list(await asyncio.wait_for(asyncio.gather(*calls), timeout=60))
        finally:
            await c.close()

    for i, result in enumerate(asyncio.run(body())):
        assert result.get_response().id == f"aio{i}"
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.full(4, i + 1, dtype=np.float32))
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), np.full(4, i - 1, dtype=np.float32))


# --- simple_identity (BYTES) ------------------------------------------------------------------------------


def _bytes(rows: list[list[bytes]]) -> npt.NDArray[np.object_]:
    return np.array(rows, dtype=np.object_)


def _identity(protocol: str, client: Any, grpc: Any, data: npt.NDArray[np.object_]) -> Any:
    module, c = _api(protocol, client, grpc)
    result = c.infer("simple_identity", [_tensor(module, "INPUT0", data, "BYTES")])
    out = result.as_numpy("OUTPUT0")
    assert out is not None
    assert out.dtype == np.object_
    return out


BYTES_CASES = {
    "non-ascii": _bytes([["héllo".encode(), "日本語".encode(), "🙂".encode(), b"plain"]]),
    "empty-strings": _bytes([[b"", b"", b"x", b""]]),
    "nul-and-non-utf8": _bytes([[b"\x00", b"a\x00b", b"\xff\xfe", b"\x80"]]),
    "batch-2": _bytes([[b"row0", b"zwei", b""], [b"", "été".encode(), b"row1"]]),
    "batch-8": _bytes([[f"r{i}-{'é' * i}".encode(), b""] for i in range(8)]),
    # 8 x 3 elements of about 20 KB: the tensor crosses to the stub through /dev/shm (>= 64 KiB), not inline
    "over-shm-threshold": _bytes([[("ü" * 10000 + f"{i}.{j}").encode() for j in range(3)] for i in range(8)]),
    "zero-elements": np.zeros((1, 0), dtype=np.object_),
}


@pytest.mark.parametrize("case", list(BYTES_CASES))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_simple_identity_bytes(protocol: str, case: str, client: Any, grpc: Any) -> None:
    data = BYTES_CASES[case]
    out = _identity(protocol, client, grpc, data)
    assert out.shape == data.shape
    assert out.tolist() == data.tolist()


def test_simple_identity_json_strings(client: Any) -> None:
    # KServe JSON carries BYTES as strings: non-ASCII text and empty strings round-trip as text
    data = np.array([["héllo", "", "日本", "a b"]], dtype=np.object_)
    tensor = _tensor(httpclient, "INPUT0", data, "BYTES", binary=False)
    result = client.infer(
        "simple_identity", [tensor], outputs=[httpclient.InferRequestedOutput("OUTPUT0", binary_data=False)]
    )
    assert result.get_response()["outputs"][0]["data"] == ["héllo", "", "日本", "a b"]
    assert result.as_numpy("OUTPUT0").tolist() == [["héllo", "", "日本", "a b"]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_simple_identity_batch_over_max(protocol: str, client: Any, grpc: Any) -> None:
    module, c = _api(protocol, client, grpc)
    err = _raises(c.infer, "simple_identity", [_tensor(module, "INPUT0", _bytes([[b"x"]] * 9), "BYTES")])
    _status(protocol, err, "400", "INVALID_ARGUMENT")
    assert "inference request batch-size must be <= 8 for 'simple_identity'" in str(err.message())


# --- repeat_int32_python (decoupled) over a gRPC stream ----------------------------------------------------


def _repeat(values: list[int], delays: list[int] | None = None, wait: int = 0) -> list[Any]:
    delays = [0] * len(values) if delays is None else delays
    return [
        _tensor(grpcclient, "IN", np.array(values, dtype=np.int32), "INT32"),
        _tensor(grpcclient, "DELAY", np.array(delays, dtype=np.uint32), "UINT32"),
        _tensor(grpcclient, "WAIT", np.array([wait], dtype=np.uint32), "UINT32"),
    ]


def _final(result: Any) -> bool:
    params = result.get_response().parameters
    assert "triton_final_response" in params, "every streamed response carries triton_final_response"
    return bool(params["triton_final_response"].bool_param)


def _out_idx(result: Any) -> tuple[int, int]:
    return int(result.as_numpy("OUT")[0]), int(result.as_numpy("IDX")[0])


def test_repeat_int32_python_every_response_then_empty_final(grpc: Any, stream: Stream) -> None:
    values = [7, -3, 2**31 - 1, 0, -(2**31), 11]
    grpc.async_stream_infer(
        "repeat_int32_python",
        _repeat(values, [3, 0, 2, 0, 1, 0]),
        request_id="rep",
        enable_empty_final_response=True,
    )
    results = stream.results(len(values) + 1)
    data, last = results[:-1], results[-1]
    assert [_out_idx(r) for r in data] == [(v, i) for i, v in enumerate(values)]
    for r in data:
        response = r.get_response()
        assert response.id == "rep"
        assert response.model_name == "repeat_int32_python"
        assert response.model_version == "1"
        assert [o.name for o in response.outputs] == ["OUT", "IDX"]
        assert r.as_numpy("OUT").dtype == np.int32
        assert r.as_numpy("IDX").dtype == np.uint32
        assert _final(r) is False
    # the request's end: one response with no outputs and the final flag (Triton leaves its version empty)
    response = last.get_response()
    assert _final(last) is True
    assert response.id == "rep"
    assert response.model_name == "repeat_int32_python"
    assert response.model_version == ""
    assert len(response.outputs) == 0
    with pytest.raises(queue.Empty):
        stream.answers.get(timeout=0.3)


def test_repeat_int32_python_without_empty_final_response(grpc: Any, stream: Stream) -> None:
    # Without enable_empty_final_response the flag-only final response is not sent at all: the client gets
    # exactly one response per element, none of them final. A second request, sent once those arrived and
    # asking for the empty final, shows that nothing more came for the first.
    grpc.async_stream_infer("repeat_int32_python", _repeat([5, 6, 7]), request_id="plain")
    plain = stream.results(3)
    assert [r.get_response().id for r in plain] == ["plain"] * 3
    assert [_out_idx(r) for r in plain] == [(5, 0), (6, 1), (7, 2)]
    assert [_final(r) for r in plain] == [False, False, False]
    grpc.async_stream_infer(
        "repeat_int32_python", _repeat([9]), request_id="marker", enable_empty_final_response=True
    )
    marker = stream.results(2)
    assert [r.get_response().id for r in marker] == ["marker", "marker"]
    assert [_final(r) for r in marker] == [False, True]
    with pytest.raises(queue.Empty):
        stream.answers.get(timeout=0.3)


def test_repeat_int32_python_zero_responses(grpc: Any, stream: Stream) -> None:
    grpc.async_stream_infer(
        "repeat_int32_python", _repeat([]), request_id="none", enable_empty_final_response=True
    )
    (only,) = stream.results(1)
    assert only.get_response().id == "none"
    assert _final(only) is True
    assert len(only.get_response().outputs) == 0


def test_repeat_int32_python_requests_in_turn(grpc: Any, stream: Stream) -> None:
    counts = {"a": 3, "b": 1, "c": 4}
    for rid, n in counts.items():
        values = [100 * (ord(rid) - ord("a")) + i for i in range(n)]
        grpc.async_stream_infer(
            "repeat_int32_python", _repeat(values), request_id=rid, enable_empty_final_response=True
        )
    seen: dict[str, list[Any]] = {rid: [] for rid in counts}
    for result in stream.results(sum(counts.values()) + len(counts)):
        rid = result.get_response().id
        assert not (seen[rid] and _final(seen[rid][-1])), f"a response for {rid} after its final one"
        seen[rid].append(result)
    for rid, n in counts.items():
        base = 100 * (ord(rid) - ord("a"))
        assert [_final(r) for r in seen[rid]] == [False] * n + [True], rid
        assert [_out_idx(r) for r in seen[rid][:-1]] == [(base + i, i) for i in range(n)]


def test_repeat_int32_python_model_error_in_band(grpc: Any, stream: Stream) -> None:
    # the model answers a DELAY of the wrong length with a TritonError sent with the final flag: the client
    # gets that error in the stream and nothing more for the request; the stream goes on
    grpc.async_stream_infer(
        "repeat_int32_python", _repeat([1, 2], [0]), request_id="bad", enable_empty_final_response=True
    )
    result, error = stream.next()
    assert result is None
    assert isinstance(error, InferenceServerException)
    assert error.message() == "DELAY must have as many elements as IN"
    grpc.async_stream_infer(
        "repeat_int32_python", _repeat([4]), request_id="ok", enable_empty_final_response=True
    )
    good, last = stream.results(2)
    assert good.get_response().id == "ok"
    assert _out_idx(good) == (4, 0)
    assert _final(last) is True


def test_repeat_int32_python_over_grpc_aio(server: Any) -> None:
    # grpc.aio's stream_infer has no enable_empty_final_response: the client gets one response per element,
    # none final, and once it has sent its last request the stream ends after the request's last response
    async def body() -> list[tuple[Any, Any]]:
        c = aioclient.InferenceServerClient(url=server.url("grpc"))

        async def requests() -> AsyncIterator[dict[str, Any]]:
            yield {
                "model_name": "repeat_int32_python",
                "inputs": _repeat([21, 22, 23], [5, 5, 5]),
                "request_id": "aio",
            }

        try:
            return [answer async for answer in c.stream_infer(requests())]
        finally:
            await c.close()

    got = asyncio.run(asyncio.wait_for(body(), timeout=60))
    assert all(error is None for _, error in got), got
    results = [result for result, _ in got]
    assert [r.get_response().id for r in results] == ["aio"] * 3
    assert [_out_idx(r) for r in results] == [(21, 0), (22, 1), (23, 2)]
    assert [_final(r) for r in results] == [False, False, False]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_repeat_int32_python_refused_outside_a_stream(protocol: str, client: Any, grpc: Any) -> None:
    module, c = _api(protocol, client, grpc)
    inputs = [
        _tensor(module, "IN", np.array([1], dtype=np.int32), "INT32"),
        _tensor(module, "DELAY", np.array([0], dtype=np.uint32), "UINT32"),
        _tensor(module, "WAIT", np.array([0], dtype=np.uint32), "UINT32"),
    ]
    err = _raises(c.infer, "repeat_int32_python", inputs)
    if protocol == "http":
        assert "HTTP end point doesn't support models with decoupled transaction policy" in str(err.message())
    else:
        _status(protocol, err, "", "UNIMPLEMENTED")
        assert "ModelInfer RPC doesn't support models with decoupled transaction policy" in str(err.message())


# --- python_raises: a model that fails --------------------------------------------------------------------


def _raises_input(module: Any, values: list[float]) -> list[Any]:
    return [_tensor(module, "INPUT0", np.array(values, dtype=np.float32), "FP32")]


# Triton's text: the stub's prefix, `Type: message`, then the model's frames, each line ending in "\n".
# Intended differences (docs/errors.md): the prefix also names the model and its version, and the frames are
# those in the model's own files, relative to the model folder (Triton shows every frame's absolute path).
RAISED_PREFIX = (
    f"Failed to process the request(s) for model 'python_raises' version 1 instance '{RAISES_INSTANCE}', "
    "message: "
)
RAISED_TEXT = re.compile(
    re.escape(RAISED_PREFIX)
    + rf"ValueError: {PYTHON_RAISES_MESSAGE}: -1\.0\n\nAt:\n  1/model\.py\(12\): execute\n"
)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_execute_raising_fails_the_request_and_the_model_serves_on(
    protocol: str, client: Any, grpc: Any, server: Any
) -> None:
    module, c = _api(protocol, client, grpc)
    err = _raises(c.infer, "python_raises", _raises_input(module, [1.0, -1.0]))
    _status(protocol, err, "500", "INTERNAL")
    message = str(err.message())
    assert message.startswith("Failed to process the request(s) for model "), "Triton's prefix"
    assert message.startswith(RAISED_PREFIX + f"ValueError: {PYTHON_RAISES_MESSAGE}: -1.0\n\nAt:\n"), message
    assert "\n  1/model.py(12): execute\n" in message
    # the same stub answers the next request; other Python models are unaffected
    result = c.infer("python_raises", _raises_input(module, [1.5, 2.0]))
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.array([3.0, 4.0], dtype=np.float32))
    a, b = _add_sub_values()
    inputs = [_tensor(module, "INPUT0", a, "FP32"), _tensor(module, "INPUT1", b, "FP32")]
    np.testing.assert_array_equal(c.infer("add_sub_python", inputs).as_numpy("OUTPUT0"), a + b)
    assert c.is_model_ready("python_raises") is True
    assert c.is_server_live() is True
    assert f"Stub process '{RAISES_INSTANCE}' is unhealthy" not in server.log_text()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_execute_raising_text_has_tritons_shape(protocol: str, client: Any, grpc: Any) -> None:
    module, c = _api(protocol, client, grpc)
    err = _raises(c.infer, "python_raises", _raises_input(module, [-1.0]))
    assert RAISED_TEXT.fullmatch(str(err.message())), repr(err.message())


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_per_request_triton_error(protocol: str, client: Any, grpc: Any) -> None:
    # a response carrying pb_utils.TritonError(message, INVALID_ARG) fails just that request, with the
    # model's message unchanged and the error's code
    module, c = _api(protocol, client, grpc)
    err = _raises(c.infer, "python_raises", _raises_input(module, [float("nan")]))
    _status(protocol, err, "400", "INVALID_ARGUMENT")
    assert err.message() == PYTHON_RAISES_ERROR_MESSAGE
    result = c.infer("python_raises", _raises_input(module, [0.25]))
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.array([0.5], dtype=np.float32))


def test_execute_raising_in_a_stream_is_in_band(grpc: Any, stream: Stream) -> None:
    grpc.async_stream_infer("python_raises", _raises_input(grpcclient, [-1.0]), request_id="boom")
    grpc.async_stream_infer("python_raises", _raises_input(grpcclient, [2.0]), request_id="after")
    result, error = stream.next()
    assert result is None
    assert isinstance(error, InferenceServerException)
    assert f"ValueError: {PYTHON_RAISES_MESSAGE}: -1.0" in str(error.message())
    (after,) = stream.results(1)
    assert after.get_response().id == "after"
    np.testing.assert_array_equal(after.as_numpy("OUTPUT0"), np.array([4.0], dtype=np.float32))
    assert _final(after) is True


# --- metadata and configuration ---------------------------------------------------------------------------


def _fp32_io(names: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"name": n, "datatype": "FP32", "shape": [4]} for n in names]


def test_python_model_metadata(client: Any, grpc: Any) -> None:
    expected = {
        "name": "add_sub_python",
        "versions": ["1"],
        "platform": "python",
        "inputs": _fp32_io(("INPUT0", "INPUT1")),
        "outputs": _fp32_io(("OUTPUT0", "OUTPUT1")),
    }
    assert client.get_model_metadata("add_sub_python") == expected
    over_grpc = grpc.get_model_metadata("add_sub_python", as_json=True)
    for io in ("inputs", "outputs"):
        for tensor in over_grpc[io]:
            tensor["shape"] = [int(d) for d in tensor["shape"]]
    assert over_grpc == expected
    # a batching Python model reports the batch dimension as -1
    identity = client.get_model_metadata("simple_identity")
    assert identity["platform"] == "python"
    assert identity["inputs"] == [{"name": "INPUT0", "datatype": "BYTES", "shape": [-1, -1]}]
    assert identity["outputs"] == [{"name": "OUTPUT0", "datatype": "BYTES", "shape": [-1, -1]}]


def test_python_model_config(client: Any, grpc: Any) -> None:
    config = client.get_model_config("add_sub_python")
    assert config["name"] == "add_sub_python"
    assert config["backend"] == "python"
    assert config["platform"] == ""
    assert config["max_batch_size"] == 0
    assert config["default_model_filename"] == "add_sub_python.py"
    assert config["instance_group"] == [
        {
            "name": "add_sub_python_0",
            "kind": "KIND_CPU",
            "count": 1,
            "gpus": [],
            "secondary_devices": [],
            "profile": [],
            "passive": False,
            "host_policy": "",
        }
    ]
    assert [(i["name"], i["data_type"], i["dims"]) for i in config["input"]] == [
        ("INPUT0", "TYPE_FP32", [4]),
        ("INPUT1", "TYPE_FP32", [4]),
    ]
    assert "model_transaction_policy" not in config
    repeat = client.get_model_config("repeat_int32_python")
    assert repeat["model_transaction_policy"] == {"decoupled": True}
    assert repeat["default_model_filename"] == "repeat_int32_python.py"
    over_grpc = grpc.get_model_config("repeat_int32_python").config
    assert over_grpc.backend == "python"
    assert over_grpc.model_transaction_policy.decoupled is True
    assert [(o.name, list(o.dims)) for o in over_grpc.output] == [("OUT", [1]), ("IDX", [1])]
    raises = grpc.get_model_config("python_raises").config
    assert raises.backend == "python"
    assert raises.default_model_filename == "model.py"
    assert [g.name for g in raises.instance_group] == ["python_raises_0"]


# --- statistics -------------------------------------------------------------------------------------------


def _stats(client: Any, model: str) -> dict[str, int]:
    (entry,) = client.get_inference_statistics(model_name=model)["model_stats"]
    assert entry["name"] == model
    assert entry["version"] == "1"
    return {
        "inference_count": entry["inference_count"],
        "execution_count": entry["execution_count"],
        "success": entry["inference_stats"]["success"]["count"],
        "fail": entry["inference_stats"]["fail"]["count"],
        "batch_executions": sum(b["compute_infer"]["count"] for b in entry["batch_stats"]),
        "last_inference": entry["last_inference"],
    }


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in before if k != "last_inference"}


def _delta_when(client: Any, model: str, before: dict[str, int], expected: dict[str, int]) -> dict[str, int]:
    """The counters' movement since `before`, read again for up to a second until it is `expected`: Triton's
    Python backend reports a batch's statistics just after sending its responses, so a client can read them
    a moment before they move."""
    deadline = time.monotonic() + 1.0
    while True:
        delta = _delta(before, _stats(client, model))
        if delta == expected or time.monotonic() > deadline:
            return delta
        time.sleep(0.02)


def test_statistics_count_python_inferences(client: Any, grpc: Any) -> None:
    before = _stats(client, "add_sub_python")
    a, b = _add_sub_values()
    for module, c in ((httpclient, client), (grpcclient, grpc), (httpclient, client)):
        c.infer(
            "add_sub_python", [_tensor(module, "INPUT0", a, "FP32"), _tensor(module, "INPUT1", b, "FP32")]
        )
    expected = {"inference_count": 3, "execution_count": 3, "success": 3, "fail": 0, "batch_executions": 3}
    assert _delta_when(client, "add_sub_python", before, expected) == expected
    after = _stats(client, "add_sub_python")
    assert after["last_inference"] >= before["last_inference"]
    assert after["last_inference"] > 0
    over_grpc = grpc.get_inference_statistics("add_sub_python", as_json=True)["model_stats"][0]
    assert int(over_grpc["inference_count"]) == after["inference_count"]
    assert int(over_grpc["execution_count"]) == after["execution_count"]


def test_statistics_count_a_streamed_decoupled_request_once(grpc: Any, client: Any, stream: Stream) -> None:
    before = _stats(client, "repeat_int32_python")
    grpc.async_stream_infer(
        "repeat_int32_python", _repeat([1, 2, 3, 4]), request_id="st", enable_empty_final_response=True
    )
    results = stream.results(5)
    assert _final(results[-1]) is True
    expected = {"inference_count": 1, "execution_count": 1, "success": 1, "fail": 0, "batch_executions": 1}
    assert _delta_when(client, "repeat_int32_python", before, expected) == expected


def test_statistics_count_a_raising_execute_as_failed(client: Any) -> None:
    before = _stats(client, "python_raises")
    _raises(client.infer, "python_raises", _raises_input(httpclient, [-1.0]))
    deadline = time.monotonic() + 1.0
    while (delta := _delta(before, _stats(client, "python_raises")))["fail"] == 0:
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert (delta["fail"], delta["success"], delta["inference_count"]) == (1, 0, 0)


def test_statistics_count_a_raising_execute_as_an_execution(client: Any) -> None:
    before = _stats(client, "python_raises")
    _raises(client.infer, "python_raises", _raises_input(httpclient, [-1.0]))
    expected = {"inference_count": 0, "execution_count": 1, "success": 0, "fail": 1, "batch_executions": 1}
    assert _delta_when(client, "python_raises", before, expected) == expected


def test_statistics_count_a_triton_error_response_as_triton_does(client: Any) -> None:
    before = _stats(client, "python_raises")
    _raises(client.infer, "python_raises", _raises_input(httpclient, [float("nan")]))
    expected = {"inference_count": 1, "execution_count": 1, "success": 1, "fail": 0, "batch_executions": 1}
    assert _delta_when(client, "python_raises", before, expected) == expected


# --- perf_analyzer ----------------------------------------------------------------------------------------


@pytest.mark.perf_analyzer
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_perf_analyzer_profiles_add_sub_python(server: Any, tmp_path: Path, protocol: str) -> None:
    report = tmp_path / "report.csv"
    # A fixed request count rather than time windows: even with -p 1000 -s 100, a busy machine now and then
    # keeps perf_analyzer from calling three windows stable, and it exits 2. This checks that perf_analyzer
    # can profile a Python model through Nereid, not how fast it is (bench/python.ts does that).
    requests, concurrency = 200, 2
    command = [
        _perf_analyzer(),
        "-m", "add_sub_python",
        "-i", protocol,
        "-u", server.url(protocol),
        "--concurrency-range", str(concurrency),
        "--request-count", str(requests),
        "-f", str(report),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert f"Request count: {requests}" in output, output
    throughput = re.search(r"^\s*Throughput: ([\d.]+) infer/sec", output, re.MULTILINE)
    assert throughput, output
    assert float(throughput.group(1)) > 0, output
    # perf_analyzer may read the final statistics with up to `concurrency` requests still in flight
    # (test_perf_analyzer.py)
    succeeded = _server_count(output, "Successful request count")
    assert requests - concurrency <= succeeded <= requests, output
    assert _server_count(output, "Inference count") == succeeded, output
    with report.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1, rows
    assert int(rows[0]["Concurrency"]) == concurrency
    assert float(rows[0]["Inferences/Second"]) > 0
