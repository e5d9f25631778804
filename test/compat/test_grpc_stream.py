"""ModelStreamInfer through tritonclient.grpc's start_stream / async_stream_infer: ordered answers for a
non-decoupled model, in-band and stream-ending errors, and the decoupled examples (square_int32,
repeat_int32) with their final-response flags."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from grpc_stream import Stream
from model_repo import require_ready


def _final(result: Any) -> bool:
    params = result.get_response().parameters
    assert "triton_final_response" in params, "every streamed response carries triton_final_response"
    return bool(params["triton_final_response"].bool_param)


def _simple(i: int) -> list[Any]:
    inputs = [
        grpcclient.InferInput("INPUT0", [1, 16], "INT32"),
        grpcclient.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(np.full((1, 16), i, dtype=np.int32))
    inputs[1].set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
    return inputs


def _square(n: int) -> list[Any]:
    tensor = grpcclient.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([n], dtype=np.int32))
    return [tensor]


def _repeat(values: list[int], delays: list[int], wait: int = 0) -> list[Any]:
    tensors = [
        grpcclient.InferInput("IN", [len(values)], "INT32"),
        grpcclient.InferInput("DELAY", [len(delays)], "UINT32"),
        grpcclient.InferInput("WAIT", [1], "UINT32"),
    ]
    tensors[0].set_data_from_numpy(np.array(values, dtype=np.int32))
    tensors[1].set_data_from_numpy(np.array(delays, dtype=np.uint32))
    tensors[2].set_data_from_numpy(np.array([wait], dtype=np.uint32))
    return tensors


def test_stream_answers_in_request_order(grpc: Any, stream: Stream) -> None:
    for i in range(20):
        grpc.async_stream_infer("simple", _simple(i), request_id=f"s{i}")
    for i, result in enumerate(stream.results(20)):
        assert result.get_response().id == f"s{i}"
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0")[0], np.arange(16) + i)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1")[0], i - np.arange(16))
        assert _final(result) is True


def test_stream_error_in_band_and_stream_goes_on(grpc: Any, stream: Stream) -> None:
    bad = [
        grpcclient.InferInput("INPUT0", [1, 15], "INT32"),
        grpcclient.InferInput("INPUT1", [1, 15], "INT32"),
    ]
    for tensor in bad:
        tensor.set_data_from_numpy(np.zeros((1, 15), dtype=np.int32))
    grpc.async_stream_infer("simple", bad, request_id="bad")
    grpc.async_stream_infer("simple", _simple(1), request_id="good")
    result, error = stream.next()
    assert result is None
    assert isinstance(error, InferenceServerException)
    assert "unexpected shape for input 'INPUT0' for model 'simple'" in str(error.message())
    (good,) = stream.results(1)
    assert good.get_response().id == "good"


def test_stream_error_ends_stream_with_status_when_asked(grpc: Any) -> None:
    # triton_grpc_error: true makes the first error end the stream with a real gRPC status
    s = Stream(grpc, headers={"triton_grpc_error": "true"})
    try:
        grpc.async_stream_infer("no_such_model", _simple(0), request_id="x")
        result, error = s.next()
        assert result is None
        assert isinstance(error, InferenceServerException)
        assert error.status() == "StatusCode.NOT_FOUND"
        assert "Request for unknown model: 'no_such_model'" in str(error.message())
    finally:
        grpc.stop_stream()


def test_decoupled_square_int32(grpc: Any, stream: Stream, example_models: dict[str, Any]) -> None:
    require_ready(example_models, "square_int32")
    grpc.async_stream_infer("square_int32", _square(4), request_id="sq4", enable_empty_final_response=True)
    results = stream.results(5)
    for result in results[:4]:
        assert result.get_response().id == "sq4"
        np.testing.assert_array_equal(result.as_numpy("OUT"), np.array([4], dtype=np.int32))
        assert _final(result) is False
    last = results[4]
    assert last.get_response().id == "sq4"
    assert _final(last) is True
    assert len(last.get_response().outputs) == 0
    assert stream.answers.empty()


def test_decoupled_square_int32_zero_responses(
    grpc: Any, stream: Stream, example_models: dict[str, Any]
) -> None:
    require_ready(example_models, "square_int32")
    grpc.async_stream_infer("square_int32", _square(0), request_id="sq0", enable_empty_final_response=True)
    (only,) = stream.results(1)
    assert _final(only) is True
    assert len(only.get_response().outputs) == 0


def test_decoupled_interleaved_requests(grpc: Any, stream: Stream, example_models: dict[str, Any]) -> None:
    require_ready(example_models, "square_int32")
    counts = {"a": 3, "b": 1, "c": 5}
    for rid, n in counts.items():
        grpc.async_stream_infer("square_int32", _square(n), request_id=rid, enable_empty_final_response=True)
    seen: dict[str, list[bool]] = {rid: [] for rid in counts}
    for result in stream.results(sum(counts.values()) + len(counts)):
        rid = result.get_response().id
        final = _final(result)
        assert not (seen[rid] and seen[rid][-1]), f"response for {rid} after its final one"
        seen[rid].append(final)
        if not final:
            assert int(result.as_numpy("OUT")[0]) == counts[rid]
    for rid, n in counts.items():
        assert seen[rid] == [False] * n + [True], (rid, seen[rid])


def test_decoupled_repeat_int32(grpc: Any, stream: Stream, example_models: dict[str, Any]) -> None:
    require_ready(example_models, "repeat_int32")
    values = [7, -3, 11, 0]
    grpc.async_stream_infer(
        "repeat_int32", _repeat(values, [5, 1, 5, 1]), request_id="rep", enable_empty_final_response=True
    )
    results = stream.results(len(values) + 1)
    got = [(int(r.as_numpy("OUT")[0]), int(r.as_numpy("IDX")[0])) for r in results[:-1]]
    assert got == [(v, i) for i, v in enumerate(values)]
    assert [_final(r) for r in results] == [False] * len(values) + [True]


def test_decoupled_model_refused_by_unary_infer(
    grpc: Any, client: Any, example_models: dict[str, Any]
) -> None:
    require_ready(example_models, "square_int32")
    with pytest.raises(InferenceServerException) as info:
        grpc.infer("square_int32", _square(2))
    assert info.value.status() == "StatusCode.UNIMPLEMENTED"
    assert "ModelInfer RPC doesn't support models with decoupled transaction policy" in str(
        info.value.message()
    )
    assert grpc.get_model_config("square_int32").config.model_transaction_policy.decoupled is True
    tensor = httpclient.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([2], dtype=np.int32))
    with pytest.raises(InferenceServerException) as http_info:
        client.infer("square_int32", [tensor])
    assert "HTTP end point doesn't support models with decoupled transaction policy" in str(
        http_info.value.message()
    )
