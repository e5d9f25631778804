"""The same server through tritonclient.grpc: health, metadata and configuration (checked field by field
against the HTTP answers), inference with raw tensor contents, classification, model control, statistics
and Triton's gRPC status codes."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from google.protobuf import json_format
from tritonclient.grpc import model_config_pb2
from tritonclient.utils import InferenceServerException

from model_repo import BUNDLED_MODELS, labels, model_spec


def _simple_inputs(shape: list[int], dtype: Any = np.int32, datatype: str = "INT32") -> list[Any]:
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        tensor = grpcclient.InferInput(name, shape, datatype)
        tensor.set_data_from_numpy(np.ones(shape, dtype=dtype))
        inputs.append(tensor)
    return inputs


def _raises(call: Any, *args: Any, **kwargs: Any) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as info:
        call(*args, **kwargs)
    return info.value


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths where two JSON-like values differ, for a readable failure."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                out.append(f"{path}.{key}: only in {'first' if key in a else 'second'}")
            else:
                out.extend(_diff(a[key], b[key], f"{path}.{key}"))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} entries"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


def test_health_and_server_metadata(grpc: Any, client: Any, package_version: str) -> None:
    assert grpc.is_server_live() is True
    assert grpc.is_server_ready() is True
    assert grpc.is_model_ready("simple") is True
    assert grpc.is_model_ready("simple", model_version="1") is True
    assert grpc.is_model_ready("no_such_model") is False
    metadata = grpc.get_server_metadata(as_json=True)
    assert metadata["version"] == package_version
    http = client.get_server_metadata()
    assert metadata["name"] == http["name"]
    assert metadata["extensions"] == http["extensions"]


@pytest.mark.parametrize("model", BUNDLED_MODELS)
def test_model_metadata_matches_http(grpc: Any, client: Any, model: str) -> None:
    got = grpc.get_model_metadata(model, as_json=True)
    want = client.get_model_metadata(model)
    # proto JSON prints int64 as strings; otherwise the two answers are the same document
    for tensors in (got["inputs"], got["outputs"]):
        for tensor in tensors:
            assert all(isinstance(d, str) for d in tensor["shape"]), tensor
            tensor["shape"] = [int(d) for d in tensor["shape"]]
    assert got == want, _diff(got, want)
    typed = grpc.get_model_metadata(model, model_version="1")
    assert typed.name == model
    assert list(typed.versions) == ["1"]


@pytest.mark.parametrize("model", BUNDLED_MODELS)
def test_model_config_matches_http_field_by_field(grpc: Any, client: Any, model: str) -> None:
    http_json = client.get_model_config(model)
    # Every key the HTTP answer has must be a ModelConfig field (no ignore_unknown_fields), with a value of
    # the field's type; the parsed message must equal what gRPC sent.
    from_http = json_format.ParseDict(http_json, model_config_pb2.ModelConfig())
    from_grpc = grpc.get_model_config(model).config
    as_json = grpc.get_model_config(model, as_json=True)["config"]
    http_view = json_format.MessageToDict(from_http, preserving_proto_field_name=True)
    assert as_json == http_view, _diff(as_json, http_view)
    assert from_grpc == from_http
    spec = model_spec(model)
    assert from_grpc.name == model
    assert from_grpc.max_batch_size == spec.max_batch_size
    assert [(t.name, list(t.dims)) for t in from_grpc.input] == [(t.name, list(t.dims)) for t in spec.inputs]
    # int64 fields print as strings in proto JSON, int32 ones as numbers (what Triton's clients expect)
    assert as_json["input"][0]["dims"] == [str(d) for d in spec.inputs[0].dims]
    if spec.max_batch_size:
        assert as_json["max_batch_size"] == spec.max_batch_size


def test_infer_simple(grpc: Any) -> None:
    in0 = np.arange(32, dtype=np.int32).reshape(2, 16)
    in1 = np.full((2, 16), 3, dtype=np.int32)
    inputs = [
        grpcclient.InferInput("INPUT0", [2, 16], "INT32"),
        grpcclient.InferInput("INPUT1", [2, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(in0)
    inputs[1].set_data_from_numpy(in1)
    result = grpc.infer("simple", inputs, request_id="g1")
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), in0 + in1)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), in0 - in1)
    response = result.get_response()
    assert response.id == "g1"
    assert response.model_name == "simple"
    assert response.model_version == "1"
    assert [o.name for o in response.outputs] == ["OUTPUT0", "OUTPUT1"]
    assert list(response.outputs[0].shape) == [2, 16]


def test_infer_only_the_requested_output(grpc: Any) -> None:
    inputs = _simple_inputs([1, 16])
    result = grpc.infer("simple", inputs, outputs=[grpcclient.InferRequestedOutput("OUTPUT1")])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), np.zeros((1, 16), dtype=np.int32))
    assert result.as_numpy("OUTPUT0") is None


def test_infer_simple_int8_and_add_sub_fp32(grpc: Any) -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(-60, 60, size=(3, 16), dtype=np.int8)
    b = rng.integers(-60, 60, size=(3, 16), dtype=np.int8)
    inputs = [
        grpcclient.InferInput("INPUT0", [3, 16], "INT8"),
        grpcclient.InferInput("INPUT1", [3, 16], "INT8"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = grpc.infer("simple_int8", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)

    spec = model_spec("add_sub_fp32")
    names = sorted(t.name for t in spec.inputs)
    dims = [4 if d < 0 else d for d in spec.input(names[0]).dims]
    shape = ([2] if spec.max_batch_size > 0 else []) + dims
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)
    tensors = [grpcclient.InferInput(n, shape, "FP32") for n in names]
    tensors[0].set_data_from_numpy(x)
    tensors[1].set_data_from_numpy(y)
    out = grpc.infer("add_sub_fp32", tensors)
    out_names = sorted(t.name for t in spec.outputs)
    np.testing.assert_allclose(out.as_numpy(out_names[0]), x + y, rtol=1e-6)
    np.testing.assert_allclose(out.as_numpy(out_names[1]), x - y, rtol=1e-6)


def test_infer_simple_string(grpc: Any) -> None:
    in0 = np.array([str(i).encode() for i in range(16)], dtype=np.object_).reshape(1, 16)
    in1 = np.array([b"1"] * 16, dtype=np.object_).reshape(1, 16)
    inputs = [
        grpcclient.InferInput("INPUT0", [1, 16], "BYTES"),
        grpcclient.InferInput("INPUT1", [1, 16], "BYTES"),
    ]
    inputs[0].set_data_from_numpy(in0)
    inputs[1].set_data_from_numpy(in1)
    result = grpc.infer("simple_string", inputs)
    assert [int(v) for v in result.as_numpy("OUTPUT0").flat] == [i + 1 for i in range(16)]
    assert [int(v) for v in result.as_numpy("OUTPUT1").flat] == [i - 1 for i in range(16)]


def test_identity_fp32_large_tensor(grpc: Any) -> None:
    data = np.random.default_rng(9).standard_normal((1, 153600)).astype(np.float32)  # 600 KB
    tensor = grpcclient.InferInput("INPUT0", [1, 153600], "FP32")
    tensor.set_data_from_numpy(data)
    np.testing.assert_array_equal(grpc.infer("identity_fp32", [tensor]).as_numpy("OUTPUT0"), data)


def test_classification(grpc: Any) -> None:
    image = np.random.default_rng(3).uniform(-1, 1, (3, 224, 224)).astype(np.float32)
    tensor = grpcclient.InferInput("data_0", [3, 224, 224], "FP32")
    tensor.set_data_from_numpy(image)
    result = grpc.infer(
        "densenet_onnx", [tensor], outputs=[grpcclient.InferRequestedOutput("fc6_1", class_count=3)]
    )
    entries = [e.decode() for e in result.as_numpy("fc6_1")]
    assert len(entries) == 3
    names = labels("densenet_onnx", model_spec("densenet_onnx").output("fc6_1").label_filename)
    scores = []
    for entry in entries:
        score, index, label = entry.split(":", 2)
        assert names[int(index)] == label
        scores.append(float(score))
    assert scores == sorted(scores, reverse=True)


# --- model control ----------------------------------------------------------------------------------------


def _index(grpc: Any) -> dict[str, Any]:
    return {m["name"]: m for m in grpc.get_model_repository_index(as_json=True)["models"]}


def test_unload_and_load_over_grpc(grpc: Any) -> None:
    model = "simple_int8"
    try:
        grpc.unload_model(model)
        assert grpc.is_model_ready(model) is False
        assert _index(grpc)[model]["state"] == "UNAVAILABLE"
        inputs = _simple_inputs([1, 16], np.int8, "INT8")
        err = _raises(grpc.infer, model, inputs)
        assert err.status() == "StatusCode.NOT_FOUND"
        assert f"Request for unknown model: '{model}'" in str(err.message())
    finally:
        grpc.load_model(model)
    assert grpc.is_model_ready(model) is True
    assert _index(grpc)[model]["state"] == "READY"
    result = grpc.infer(model, _simple_inputs([1, 16], np.int8, "INT8"))
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.full((1, 16), 2, dtype=np.int8))


def test_load_with_config_override_over_grpc(grpc: Any) -> None:
    model = "identity_fp32"
    override = grpc.get_model_config(model, as_json=True)["config"]
    override["max_batch_size"] = 2
    tensor = grpcclient.InferInput("INPUT0", [3, 4], "FP32")
    tensor.set_data_from_numpy(np.ones((3, 4), dtype=np.float32))
    try:
        grpc.load_model(model, config=json.dumps(override))
        assert grpc.get_model_config(model).config.max_batch_size == 2
        err = _raises(grpc.infer, model, [tensor])
        assert err.status() == "StatusCode.INVALID_ARGUMENT"
        assert "batch-size must be <= 2" in str(err.message())
    finally:
        grpc.load_model(model)
    assert grpc.get_model_config(model).config.max_batch_size == model_spec(model).max_batch_size
    np.testing.assert_array_equal(grpc.infer(model, [tensor]).as_numpy("OUTPUT0"), np.ones((3, 4)))


def test_repository_index(grpc: Any, client: Any) -> None:
    index = _index(grpc)
    for model in BUNDLED_MODELS:
        assert index[model]["state"] == "READY", index[model]
        assert index[model]["version"] == "1"
    http = {m["name"]: m for m in client.get_model_repository_index()}
    assert {n: m["state"] for n, m in index.items()} == {n: m.get("state") for n, m in http.items()}


# --- statistics -------------------------------------------------------------------------------------------


def test_statistics_move_and_match_http(grpc: Any, client: Any) -> None:
    def stats() -> Any:
        answer = grpc.get_inference_statistics("simple", model_version="1")
        assert len(answer.model_stats) == 1
        return answer.model_stats[0]

    before = stats()
    for _ in range(4):
        grpc.infer("simple", _simple_inputs([3, 16]))
    after = stats()
    assert after.name == "simple"
    assert after.version == "1"
    assert after.inference_count - before.inference_count == 12
    assert after.inference_stats.success.count - before.inference_stats.success.count == 4
    assert after.inference_stats.success.ns > before.inference_stats.success.ns
    assert 1 <= after.execution_count - before.execution_count <= 4
    assert after.last_inference >= before.last_inference
    assert after.last_inference > 0

    # the same numbers through HTTP (nothing ran in between)
    http = client.get_inference_statistics(model_name="simple", model_version="1")["model_stats"][0]
    as_json = json_format.MessageToDict(after, preserving_proto_field_name=True)
    assert int(as_json["inference_count"]) == http["inference_count"]
    assert int(as_json["execution_count"]) == http["execution_count"]
    assert int(as_json["inference_stats"]["success"]["count"]) == http["inference_stats"]["success"]["count"]
    assert int(as_json["inference_stats"]["success"]["ns"]) == http["inference_stats"]["success"]["ns"]

    every = grpc.get_inference_statistics(as_json=True)
    assert set(BUNDLED_MODELS) <= {m["name"] for m in every["model_stats"]}


# --- error statuses ---------------------------------------------------------------------------------------


def test_error_wrong_shape(grpc: Any) -> None:
    err = _raises(grpc.infer, "simple", _simple_inputs([1, 15]))
    assert err.status() == "StatusCode.INVALID_ARGUMENT"
    assert "unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,15]" in str(
        err.message()
    )


def test_error_wrong_datatype(grpc: Any) -> None:
    err = _raises(grpc.infer, "simple", _simple_inputs([1, 16], np.float32, "FP32"))
    assert err.status() == "StatusCode.INVALID_ARGUMENT"
    assert "data-type is 'FP32'" in str(err.message())
    assert "expects 'INT32'" in str(err.message())


def test_error_batch_too_large(grpc: Any) -> None:
    err = _raises(grpc.infer, "simple", _simple_inputs([9, 16]))
    assert err.status() == "StatusCode.INVALID_ARGUMENT"
    assert "inference request batch-size must be <= 8 for 'simple'" in str(err.message())


def test_error_duplicate_output(grpc: Any) -> None:
    outputs = [grpcclient.InferRequestedOutput("OUTPUT0"), grpcclient.InferRequestedOutput("OUTPUT0")]
    err = _raises(grpc.infer, "simple", _simple_inputs([1, 16]), outputs=outputs)
    assert err.status() == "StatusCode.INVALID_ARGUMENT"
    assert "output 'OUTPUT0' already exists in request" in str(err.message())


def test_error_unknown_model_and_version(grpc: Any) -> None:
    err = _raises(grpc.infer, "no_such_model", _simple_inputs([1, 16]))
    assert err.status() == "StatusCode.NOT_FOUND"
    assert "Request for unknown model: 'no_such_model' is not found" in str(err.message())
    for call in (grpc.get_model_metadata, grpc.get_model_config):
        err = _raises(call, "no_such_model")
        assert err.status() == "StatusCode.NOT_FOUND", call
    # Triton's statistics call answers an unknown model with INVALID_ARG, not NOT_FOUND
    err = _raises(grpc.get_inference_statistics, "no_such_model")
    assert err.status() == "StatusCode.INVALID_ARGUMENT"
    assert "requested model 'no_such_model' is not available" in str(err.message())
    err = _raises(grpc.get_model_metadata, "simple", model_version="7")
    assert err.status() == "StatusCode.NOT_FOUND"
    assert "'simple' version 7" in str(err.message())


def test_error_load_unknown_model(grpc: Any) -> None:
    # Triton answers a model it cannot find in any repository with INTERNAL "failed to load ..."; so does
    # Nereid by default (--load-error-status=client-error answers NOT_FOUND: docs/from-triton.md).
    err = _raises(grpc.load_model, "no_such_model")
    assert err.status() == "StatusCode.INTERNAL"
    assert "failed to load 'no_such_model'" in str(err.message())
    assert grpc.is_server_live() is True


def test_cuda_shared_memory_as_triton_without_a_gpu(grpc: Any) -> None:
    """What Triton's *_cudashm_client.py examples and reuse_infer_objects_client.py call first: status and
    unregister work (no regions), register needs a GPU."""
    assert grpc.get_cuda_shared_memory_status(as_json=True) == {}
    grpc.unregister_cuda_shared_memory()
    grpc.unregister_cuda_shared_memory("never_registered")
    err = _raises(grpc.get_cuda_shared_memory_status, "never_registered")
    assert err.status() == "StatusCode.NOT_FOUND"
    assert err.message() == "Unable to find cuda shared memory region: 'never_registered'"
    err = _raises(grpc.register_cuda_shared_memory, "c", b"\0" * 64, 0, 64)
    assert err.status() == "StatusCode.INVALID_ARGUMENT"
    assert err.message() == "failed to register CUDA shared memory region: 'c', GPUs not supported"


def test_server_live_after_errors(grpc: Any) -> None:
    assert grpc.is_server_live() is True
    assert grpc.is_server_ready() is True


def test_every_loaded_model_config_matches_http(
    grpc: Any, client: Any, example_models: dict[str, dict[str, Any]]
) -> None:
    """Sequence, ensemble, decoupled and python models carry config fields the bundled seven do not
    (sequence_batching, ensemble_scheduling, model_transaction_policy, parameters): gRPC must encode those
    the same way too."""
    mismatches: dict[str, list[str]] = {}
    compared = set()
    for model, entry in sorted(example_models.items()):
        if entry.get("state") != "READY":
            continue
        compared.add(model)
        from_http = json_format.ParseDict(client.get_model_config(model), model_config_pb2.ModelConfig())
        from_grpc = grpc.get_model_config(model).config
        if from_grpc != from_http:
            mismatches[model] = _diff(
                json_format.MessageToDict(from_grpc, preserving_proto_field_name=True),
                json_format.MessageToDict(from_http, preserving_proto_field_name=True),
            )
    assert not mismatches, mismatches
    assert set(BUNDLED_MODELS) <= compared
