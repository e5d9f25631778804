"""tritonclient.grpc.aio (grpcio's asyncio stack, a different HTTP/2 client path than the sync client):
metadata, configuration, concurrent inference, bidirectional streaming (ordered and decoupled), errors and
the settings rpcs. Each test runs its own event loop, since the client binds to the loop it was made on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import numpy as np
import pytest
import tritonclient.grpc.aio as aioclient
from tritonclient.grpc import InferInput, InferRequestedOutput
from tritonclient.utils import InferenceServerException

from model_repo import BUNDLED_MODELS, require_ready

T = TypeVar("T")


def _run(server: Any, body: Callable[[Any], Awaitable[T]]) -> T:
    async def main() -> T:
        c = aioclient.InferenceServerClient(url=server.url("grpc"))
        try:
            return await asyncio.wait_for(body(c), timeout=60)
        finally:
            await c.close()

    return asyncio.run(main())


def _simple(i: int, shape: tuple[int, int] = (1, 16)) -> list[Any]:
    inputs = [InferInput("INPUT0", list(shape), "INT32"), InferInput("INPUT1", list(shape), "INT32")]
    inputs[0].set_data_from_numpy(np.full(shape, i, dtype=np.int32))
    inputs[1].set_data_from_numpy(np.ones(shape, dtype=np.int32))
    return inputs


def test_aio_health_metadata_config(server: Any, client: Any, package_version: str) -> None:
    async def body(c: Any) -> None:
        assert await c.is_server_live() is True
        assert await c.is_server_ready() is True
        assert await c.is_model_ready("simple") is True
        assert (await c.get_server_metadata(as_json=True))["version"] == package_version
        for model in BUNDLED_MODELS:
            metadata = await c.get_model_metadata(model, as_json=True)
            http = client.get_model_metadata(model)
            assert [i["name"] for i in metadata["inputs"]] == [i["name"] for i in http["inputs"]]
            assert [[int(d) for d in i["shape"]] for i in metadata["inputs"]] == [
                i["shape"] for i in http["inputs"]
            ]
            config = (await c.get_model_config(model)).config
            assert config.name == model
            assert config.max_batch_size == client.get_model_config(model)["max_batch_size"]
        index = await c.get_model_repository_index(as_json=True)
        assert set(BUNDLED_MODELS) <= {m["name"] for m in index["models"]}

    _run(server, body)


def test_aio_concurrent_infer(server: Any) -> None:
    async def body(c: Any) -> list[Any]:
        calls = [c.infer("simple", _simple(i, (2, 16)), request_id=f"a{i}") for i in range(24)]
        return list(await asyncio.gather(*calls))

    results = _run(server, body)
    for i, result in enumerate(results):
        assert result.get_response().id == f"a{i}"
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.full((2, 16), i + 1))
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), np.full((2, 16), i - 1))


def test_aio_classification_and_error(server: Any) -> None:
    async def body(c: Any) -> tuple[Any, InferenceServerException]:
        image = np.zeros((3, 224, 224), dtype=np.float32)
        tensor = InferInput("data_0", [3, 224, 224], "FP32")
        tensor.set_data_from_numpy(image)
        result = await c.infer(
            "densenet_onnx", [tensor], outputs=[InferRequestedOutput("fc6_1", class_count=2)]
        )
        with pytest.raises(InferenceServerException) as info:
            await c.infer("simple", _simple(0, (1, 17)))
        return result, info.value

    result, error = _run(server, body)
    assert result.as_numpy("fc6_1").shape == (2,)
    assert error.status() == "StatusCode.INVALID_ARGUMENT"
    assert "unexpected shape for input 'INPUT0' for model 'simple'" in str(error.message())


def test_aio_stream_in_order(server: Any) -> None:
    async def requests() -> AsyncIterator[dict[str, Any]]:
        for i in range(12):
            yield {"model_name": "simple", "inputs": _simple(i), "request_id": f"r{i}"}

    async def body(c: Any) -> list[tuple[Any, Any]]:
        return [answer async for answer in c.stream_infer(requests())]

    answers = _run(server, body)
    assert len(answers) == 12
    for i, (result, error) in enumerate(answers):
        assert error is None, error
        assert result.get_response().id == f"r{i}"
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.full((1, 16), i + 1))


def test_aio_stream_decoupled(server: Any, example_models: dict[str, Any]) -> None:
    require_ready(example_models, "square_int32")

    async def requests() -> AsyncIterator[dict[str, Any]]:
        for n in (2, 3):
            tensor = InferInput("IN", [1], "INT32")
            tensor.set_data_from_numpy(np.array([n], dtype=np.int32))
            yield {"model_name": "square_int32", "inputs": [tensor], "request_id": f"sq{n}"}

    async def body(c: Any) -> list[tuple[Any, Any]]:
        # the stream ends (OK) once the request iterator is done and every request was answered
        return [answer async for answer in c.stream_infer(requests())]

    answers = _run(server, body)
    by_id: dict[str, list[int]] = {}
    for result, error in answers:
        assert error is None, error
        response = result.get_response()
        by_id.setdefault(response.id, []).append(int(result.as_numpy("OUT")[0]))
    # no empty final responses were asked for, so only the n data responses arrive
    assert by_id == {"sq2": [2, 2], "sq3": [3, 3, 3]}


def test_aio_settings_and_statistics(server: Any) -> None:
    async def body(c: Any) -> tuple[Any, Any, Any]:
        await c.infer("simple", _simple(5))
        stats = await c.get_inference_statistics("simple", as_json=True)
        logs = await c.get_log_settings(as_json=True)
        trace = await c.get_trace_settings(as_json=True)
        return stats, logs, trace

    stats, logs, trace = _run(server, body)
    assert int(stats["model_stats"][0]["inference_stats"]["success"]["count"]) >= 1
    assert set(logs["settings"]) >= {
        "log_info",
        "log_warning",
        "log_error",
        "log_verbose_level",
        "log_format",
    }
    assert "trace_level" in trace["settings"]
