"""Bad requests through tritonclient.http raise InferenceServerException with Triton's HTTP status and
message wording, and the server stays live afterwards."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


def _simple_inputs(
    shape: list[int], datatype: str = "INT32", names: tuple[str, ...] = ("INPUT0", "INPUT1")
) -> list[Any]:
    dtype = {"INT32": np.int32, "FP32": np.float32}[datatype]
    inputs = []
    for name in names:
        tensor = httpclient.InferInput(name, shape, datatype)
        tensor.set_data_from_numpy(np.ones(shape, dtype=dtype))
        inputs.append(tensor)
    return inputs


def _raises(call: Any, *args: Any, **kwargs: Any) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as info:
        call(*args, **kwargs)
    return info.value


@pytest.fixture(autouse=True)
def _server_stays_live(client: Any) -> Any:
    yield
    assert client.is_server_live() is True


# Triton's model lifecycle answers an unknown model with NOT_FOUND, which its HTTP server maps to 404
# (HttpCodeFromError); the message is prefixed "Request for unknown model: ".
def test_unknown_model(client: Any) -> None:
    err = _raises(client.infer, "no_such_model", _simple_inputs([1, 16]))
    assert err.status() == "404"
    assert "Request for unknown model: 'no_such_model' is not found" in str(err.message())


def test_unknown_model_metadata(client: Any) -> None:
    err = _raises(client.get_model_metadata, "no_such_model")
    assert "Request for unknown model" in str(err.message())
    assert err.status() == "404"


def test_unknown_version(client: Any) -> None:
    err = _raises(client.infer, "simple", _simple_inputs([1, 16]), model_version="7")
    assert err.status() == "404"
    assert "simple" in str(err.message())


def test_wrong_shape(client: Any) -> None:
    err = _raises(client.infer, "simple", _simple_inputs([1, 15]))
    assert err.status() == "400"
    assert "unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,15]" in str(
        err.message()
    )


def test_wrong_datatype(client: Any) -> None:
    err = _raises(client.infer, "simple", _simple_inputs([1, 16], "FP32"))
    assert err.status() == "400"
    message = str(err.message())
    assert "data-type is 'FP32'" in message
    assert "expects 'INT32'" in message


def test_batch_too_large(client: Any) -> None:
    err = _raises(client.infer, "simple", _simple_inputs([9, 16]))
    assert err.status() == "400"
    assert "inference request batch-size must be <= 8 for 'simple'" in str(err.message())


def test_missing_input(client: Any) -> None:
    err = _raises(client.infer, "simple", _simple_inputs([1, 16], names=("INPUT0",)))
    assert err.status() == "400"
    message = str(err.message())
    assert "expected 2 inputs but got 1 inputs for model 'simple'" in message
    assert "INPUT1" in message


def test_unknown_input(client: Any) -> None:
    err = _raises(client.infer, "simple", _simple_inputs([1, 16], names=("INPUT0", "INPUT1", "INPUT9")))
    assert err.status() == "400"
    assert "INPUT9" in str(err.message())


def test_unknown_output(client: Any) -> None:
    err = _raises(
        client.infer,
        "simple",
        _simple_inputs([1, 16]),
        outputs=[httpclient.InferRequestedOutput("OUTPUT9")],
    )
    assert err.status() == "400"
    assert "OUTPUT9" in str(err.message())


def test_unbatched_model_rejects_batch_dim(client: Any) -> None:
    image = np.zeros((1, 3, 224, 224), dtype=np.float32)
    tensor = httpclient.InferInput("data_0", list(image.shape), "FP32")
    tensor.set_data_from_numpy(image)
    err = _raises(client.infer, "densenet_onnx", [tensor])
    assert err.status() == "400"
    assert "unexpected shape for input 'data_0' for model 'densenet_onnx'" in str(err.message())
