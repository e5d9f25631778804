"""The model repository extension in explicit mode through tritonclient.http: unload and load (readiness
flips, inference follows), and load with a `config` override. Every test leaves its model loaded with its
on-disk configuration, because the server is shared by the whole session."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from model_repo import model_spec


def _eventually(predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _infer_int8(client: Any) -> Any:
    data = np.arange(16, dtype=np.int8).reshape(1, 16)
    inputs = [
        httpclient.InferInput("INPUT0", [1, 16], "INT8"),
        httpclient.InferInput("INPUT1", [1, 16], "INT8"),
    ]
    inputs[0].set_data_from_numpy(data)
    inputs[1].set_data_from_numpy(data)
    return client.infer("simple_int8", inputs)


def _infer_identity(client: Any, batch: int) -> Any:
    data = np.ones((batch, 4), dtype=np.float32)
    tensor = httpclient.InferInput("INPUT0", [batch, 4], "FP32")
    tensor.set_data_from_numpy(data)
    return client.infer("identity_fp32", [tensor])


def _index_state(client: Any, model: str) -> str | None:
    for entry in client.get_model_repository_index():
        if entry["name"] == model:
            state = entry["state"]
            assert isinstance(state, str)
            return state
    return None


def test_unload_then_load(client: Any) -> None:
    model = "simple_int8"
    assert client.is_model_ready(model) is True
    try:
        client.unload_model(model)
        assert _eventually(lambda: client.is_model_ready(model) is False), "model still ready after unload"
        assert _index_state(client, model) == "UNAVAILABLE"
        with pytest.raises(InferenceServerException) as unloaded:
            _infer_int8(client)
        assert "Request for unknown model" in str(unloaded.value.message())
        # the server itself stays live; with strict readiness it is not ready while a model is unloaded
        assert client.is_server_live() is True
    finally:
        client.load_model(model)
    assert client.is_model_ready(model) is True
    assert _index_state(client, model) == "READY"
    result = _infer_int8(client)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.arange(16, dtype=np.int8).reshape(1, 16) * 2)
    assert client.is_server_ready() is True


def test_load_of_a_loaded_model_reloads_it(client: Any) -> None:
    client.load_model("simple_int8")
    assert client.is_model_ready("simple_int8") is True
    _infer_int8(client)


def test_load_with_config_override(client: Any) -> None:
    model = "identity_fp32"
    on_disk = model_spec(model).max_batch_size
    assert on_disk == 8
    override = client.get_model_config(model)
    override["max_batch_size"] = 4
    try:
        client.load_model(model, config=json.dumps(override))
        assert client.is_model_ready(model) is True
        assert client.get_model_config(model)["max_batch_size"] == 4
        _infer_identity(client, 4)
        with pytest.raises(InferenceServerException) as too_big:
            _infer_identity(client, 5)
        assert too_big.value.status() == "400"
        assert "batch-size must be <= 4" in str(too_big.value.message())
    finally:
        # a load without a config reads the repository again
        client.load_model(model)
    assert client.get_model_config(model)["max_batch_size"] == on_disk
    _infer_identity(client, on_disk)


def test_load_unknown_model_fails(client: Any) -> None:
    with pytest.raises(InferenceServerException):
        client.load_model("no_such_model")
    assert client.is_server_live() is True


def test_load_with_invalid_config_override_fails_and_keeps_serving(client: Any) -> None:
    with pytest.raises(InferenceServerException):
        client.load_model("simple_int8", config="{ this is not json")
    assert client.is_server_live() is True
    _infer_int8(client)
