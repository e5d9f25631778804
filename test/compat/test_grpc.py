"""The same server through tritonclient.grpc: health, metadata, inference with raw tensor contents, and
classification. Skipped, with the reason shown, only while the source tree has no gRPC frontend at all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from model_repo import labels, model_spec
from nereid_server import REPO_ROOT

GRPC_FRONTEND = REPO_ROOT / "src" / "frontends" / "grpc"


@pytest.fixture(scope="module")
def grpc(server: Any) -> Iterator[Any]:
    if not GRPC_FRONTEND.is_dir():
        pytest.skip(f"this tree has no gRPC frontend yet ({GRPC_FRONTEND.relative_to(REPO_ROOT)} is missing)")
    port = server.wait_for("grpc", timeout=10.0)
    assert port is not None, (
        f"the server did not announce 'Started GRPCInferenceService'\n{server.log_tail()}"
    )
    c = grpcclient.InferenceServerClient(url=f"localhost:{port}")
    try:
        yield c
    finally:
        c.close()


def test_health_and_metadata(grpc: Any, package_version: str) -> None:
    assert grpc.is_server_live() is True
    assert grpc.is_server_ready() is True
    assert grpc.is_model_ready("simple") is True
    metadata = grpc.get_server_metadata(as_json=True)
    assert metadata["version"] == package_version
    model = grpc.get_model_metadata("simple", as_json=True)
    assert model["name"] == "simple"
    assert [i["shape"] for i in model["inputs"]] == [["-1", "16"], ["-1", "16"]]  # int64 in proto JSON
    config = grpc.get_model_config("simple", as_json=True)["config"]
    assert config["max_batch_size"] == model_spec("simple").max_batch_size


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
    assert result.get_response().id == "g1"


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
    for entry in entries:
        _score, index, label = entry.split(":", 2)
        assert names[int(index)] == label


def test_error_status(grpc: Any) -> None:
    inputs = [
        grpcclient.InferInput("INPUT0", [1, 15], "INT32"),
        grpcclient.InferInput("INPUT1", [1, 15], "INT32"),
    ]
    for tensor in inputs:
        tensor.set_data_from_numpy(np.ones((1, 15), dtype=np.int32))
    with pytest.raises(InferenceServerException) as info:
        grpc.infer("simple", inputs)
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert "unexpected shape for input 'INPUT0' for model 'simple'" in str(info.value.message())
