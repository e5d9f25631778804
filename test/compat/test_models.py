"""Model metadata and model configuration through tritonclient.http, checked against each bundled model's
config.pbtxt (parsed with Triton's ModelConfig protobuf) and against the I/O Triton's examples have."""

from __future__ import annotations

from typing import Any

import pytest

from model_repo import BUNDLED_MODELS, model_spec

# Triton's example models as clients know them: (max_batch_size, inputs, outputs), tensors as
# (name, KServe datatype, dims). add_sub_fp32 is checked against its config.pbtxt only.
KNOWN_IO: dict[str, tuple[int, list[tuple[str, str, list[int]]], list[tuple[str, str, list[int]]]]] = {
    "simple": (
        8,
        [("INPUT0", "INT32", [16]), ("INPUT1", "INT32", [16])],
        [("OUTPUT0", "INT32", [16]), ("OUTPUT1", "INT32", [16])],
    ),
    "simple_int8": (
        8,
        [("INPUT0", "INT8", [16]), ("INPUT1", "INT8", [16])],
        [("OUTPUT0", "INT8", [16]), ("OUTPUT1", "INT8", [16])],
    ),
    "simple_string": (
        8,
        [("INPUT0", "BYTES", [16]), ("INPUT1", "BYTES", [16])],
        [("OUTPUT0", "BYTES", [16]), ("OUTPUT1", "BYTES", [16])],
    ),
    "densenet_onnx": (0, [("data_0", "FP32", [3, 224, 224])], [("fc6_1", "FP32", [1000])]),
    "densenet_batched": (8, [("data_0", "FP32", [3, 224, 224])], [("fc6_1", "FP32", [1000])]),
    "identity_fp32": (8, [("INPUT0", "FP32", [-1])], [("OUTPUT0", "FP32", [-1])]),
}


@pytest.mark.parametrize("model", sorted(KNOWN_IO))
def test_config_pbtxt_has_the_io_clients_expect(model: str) -> None:
    spec = model_spec(model)
    max_batch_size, inputs, outputs = KNOWN_IO[model]
    assert spec.name == model
    assert spec.max_batch_size == max_batch_size
    assert [(t.name, t.datatype, list(t.dims)) for t in spec.inputs] == inputs
    assert [(t.name, t.datatype, list(t.dims)) for t in spec.outputs] == outputs


@pytest.mark.parametrize("model", BUNDLED_MODELS)
def test_model_metadata_matches_config_pbtxt(client: Any, model: str) -> None:
    spec = model_spec(model)
    metadata = client.get_model_metadata(model)
    assert metadata["name"] == model
    assert metadata["versions"] == ["1"]
    assert isinstance(metadata["platform"], str)
    assert metadata["platform"]
    got_inputs = [(t["name"], t["datatype"], t["shape"]) for t in metadata["inputs"]]
    want_inputs = [(t.name, t.datatype, spec.metadata_shape(t)) for t in spec.inputs]
    assert sorted(got_inputs) == sorted(want_inputs)
    got_outputs = [(t["name"], t["datatype"], t["shape"]) for t in metadata["outputs"]]
    want_outputs = [(t.name, t.datatype, spec.metadata_shape(t)) for t in spec.outputs]
    assert sorted(got_outputs) == sorted(want_outputs)
    # the versioned form answers the same
    assert client.get_model_metadata(model, model_version="1") == metadata


@pytest.mark.parametrize("model", BUNDLED_MODELS)
def test_model_config_matches_config_pbtxt(client: Any, model: str) -> None:
    spec = model_spec(model)
    config = client.get_model_config(model)
    assert config["name"] == model
    assert config["max_batch_size"] == spec.max_batch_size
    served_inputs = {t["name"]: t for t in config["input"]}
    assert set(served_inputs) == {t.name for t in spec.inputs}
    for want in spec.inputs:
        got = served_inputs[want.name]
        assert got["data_type"] == want.config_type
        assert got["dims"] == list(want.dims), "dims must be JSON numbers, as Triton sends them"
    served_outputs = {t["name"]: t for t in config["output"]}
    assert set(served_outputs) == {t.name for t in spec.outputs}
    for want in spec.outputs:
        got = served_outputs[want.name]
        assert got["data_type"] == want.config_type
        assert got["dims"] == list(want.dims), "dims must be JSON numbers, as Triton sends them"
        if want.label_filename:
            assert got["label_filename"] == want.label_filename
    # a fully completed config names its backend or platform and has instance groups
    assert config.get("backend") or config.get("platform")
    assert config["instance_group"], "auto-complete fills instance_group"
    assert client.get_model_config(model, model_version="1") == config
