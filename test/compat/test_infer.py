"""Inference through tritonclient.http on the bundled models, with tensors sent and received both as JSON
and as binary data (the binary tensor data extension), results checked with numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import tritonclient.http as httpclient

from model_repo import model_spec

RNG = np.random.default_rng(20240611)


def _inputs(arrays: dict[str, npt.NDArray[Any]], datatype: str, binary: bool) -> list[Any]:
    inputs = []
    for name, array in arrays.items():
        tensor = httpclient.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(array, binary_data=binary)
        inputs.append(tensor)
    return inputs


def _outputs(names: list[str], binary: bool) -> list[Any]:
    return [httpclient.InferRequestedOutput(name, binary_data=binary) for name in names]


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
@pytest.mark.parametrize("batch", [1, 8])
def test_simple_add_sub(client: Any, binary: bool, batch: int) -> None:
    in0 = RNG.integers(-1000, 1000, size=(batch, 16), dtype=np.int32)
    in1 = RNG.integers(-1000, 1000, size=(batch, 16), dtype=np.int32)
    result = client.infer(
        "simple",
        _inputs({"INPUT0": in0, "INPUT1": in1}, "INT32", binary),
        outputs=_outputs(["OUTPUT0", "OUTPUT1"], binary),
        request_id=f"simple-{batch}-{binary}",
    )
    out0 = result.as_numpy("OUTPUT0")
    out1 = result.as_numpy("OUTPUT1")
    assert out0.dtype == np.int32
    assert out0.shape == (batch, 16)
    np.testing.assert_array_equal(out0, in0 + in1)
    np.testing.assert_array_equal(out1, in0 - in1)

    response = result.get_response()
    assert response["model_name"] == "simple"
    assert response["model_version"] == "1"
    assert response["id"] == f"simple-{batch}-{binary}"
    for output in response["outputs"]:
        assert output["datatype"] == "INT32"
        assert output["shape"] == [batch, 16]
        if binary:
            assert output["parameters"]["binary_data_size"] == batch * 16 * 4
            assert "data" not in output
        else:
            assert len(output["data"]) == batch * 16


def test_simple_all_outputs_when_none_requested(client: Any) -> None:
    in0 = np.arange(16, dtype=np.int32).reshape(1, 16)
    in1 = np.ones((1, 16), dtype=np.int32)
    result = client.infer("simple", _inputs({"INPUT0": in0, "INPUT1": in1}, "INT32", True))
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), in0 + 1)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), in0 - 1)


def test_simple_only_the_requested_output(client: Any) -> None:
    in0 = np.full((1, 16), 7, dtype=np.int32)
    in1 = np.full((1, 16), 2, dtype=np.int32)
    result = client.infer(
        "simple",
        _inputs({"INPUT0": in0, "INPUT1": in1}, "INT32", False),
        outputs=_outputs(["OUTPUT1"], False),
    )
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), np.full((1, 16), 5, dtype=np.int32))
    assert result.as_numpy("OUTPUT0") is None
    assert [o["name"] for o in result.get_response()["outputs"]] == ["OUTPUT1"]


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_simple_int8(client: Any, binary: bool) -> None:
    in0 = RNG.integers(-60, 60, size=(2, 16), dtype=np.int8)
    in1 = RNG.integers(-60, 60, size=(2, 16), dtype=np.int8)
    result = client.infer(
        "simple_int8",
        _inputs({"INPUT0": in0, "INPUT1": in1}, "INT8", binary),
        outputs=_outputs(["OUTPUT0", "OUTPUT1"], binary),
    )
    out0 = result.as_numpy("OUTPUT0")
    assert out0.dtype == np.int8
    np.testing.assert_array_equal(out0, in0 + in1)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), in0 - in1)


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_simple_string(client: Any, binary: bool) -> None:
    a = RNG.integers(-5000, 5000, size=(2, 16))
    b = RNG.integers(-5000, 5000, size=(2, 16))
    in0 = np.array([str(v).encode() for v in a.flat], dtype=np.object_).reshape(2, 16)
    in1 = np.array([str(v).encode() for v in b.flat], dtype=np.object_).reshape(2, 16)
    result = client.infer(
        "simple_string",
        _inputs({"INPUT0": in0, "INPUT1": in1}, "BYTES", binary),
        outputs=_outputs(["OUTPUT0", "OUTPUT1"], binary),
    )
    out0 = result.as_numpy("OUTPUT0")
    out1 = result.as_numpy("OUTPUT1")
    assert out0.shape == (2, 16)
    assert out0.dtype == np.object_
    # JSON BYTES come back as str, binary ones as bytes; both must be decimal numbers
    sums = np.array([int(v) for v in out0.flat]).reshape(2, 16)
    diffs = np.array([int(v) for v in out1.flat]).reshape(2, 16)
    np.testing.assert_array_equal(sums, a + b)
    np.testing.assert_array_equal(diffs, a - b)
    for output in result.get_response()["outputs"]:
        assert output["datatype"] == "BYTES"


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_identity_fp32_variable_length(client: Any, binary: bool) -> None:
    for length in (1, 5, 300):
        data = RNG.standard_normal((3, length)).astype(np.float32)
        result = client.infer(
            "identity_fp32",
            _inputs({"INPUT0": data}, "FP32", binary),
            outputs=_outputs(["OUTPUT0"], binary),
        )
        out = result.as_numpy("OUTPUT0")
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, data)


def test_add_sub_fp32(client: Any) -> None:
    spec = model_spec("add_sub_fp32")
    names = sorted(t.name for t in spec.inputs)
    assert len(names) == 2
    first = spec.input(names[0])
    dims = [4 if d < 0 else d for d in first.dims]
    shape = ([2] if spec.max_batch_size > 0 else []) + dims
    in0 = RNG.standard_normal(shape).astype(np.float32)
    in1 = RNG.standard_normal(shape).astype(np.float32)
    result = client.infer("add_sub_fp32", _inputs({names[0]: in0, names[1]: in1}, "FP32", True))
    out_names = sorted(t.name for t in spec.outputs)
    np.testing.assert_allclose(result.as_numpy(out_names[0]), in0 + in1, rtol=1e-6)
    np.testing.assert_allclose(result.as_numpy(out_names[1]), in0 - in1, rtol=1e-6)


def test_binary_request_json_response_mix(client: Any) -> None:
    in0 = np.arange(32, dtype=np.int32).reshape(2, 16)
    in1 = np.arange(32, dtype=np.int32).reshape(2, 16) * 3
    inputs = [
        httpclient.InferInput("INPUT0", [2, 16], "INT32"),
        httpclient.InferInput("INPUT1", [2, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(in0, binary_data=True)
    inputs[1].set_data_from_numpy(in1, binary_data=False)
    result = client.infer(
        "simple",
        inputs,
        outputs=[
            httpclient.InferRequestedOutput("OUTPUT0", binary_data=False),
            httpclient.InferRequestedOutput("OUTPUT1", binary_data=True),
        ],
    )
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), in0 + in1)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), in0 - in1)
    outputs = {o["name"]: o for o in result.get_response()["outputs"]}
    assert "data" in outputs["OUTPUT0"]
    assert outputs["OUTPUT1"]["parameters"]["binary_data_size"] == 2 * 16 * 4


def test_async_infer_concurrent(server: Any) -> None:
    c = httpclient.InferenceServerClient(url=server.http_url, concurrency=4)
    try:
        pending = []
        expected = []
        for i in range(16):
            in0 = np.full((1, 16), i, dtype=np.int32)
            in1 = np.arange(16, dtype=np.int32).reshape(1, 16)
            pending.append(c.async_infer("simple", _inputs({"INPUT0": in0, "INPUT1": in1}, "INT32", True)))
            expected.append(in0 + in1)
        for request, want in zip(pending, expected, strict=True):
            np.testing.assert_array_equal(request.get_result().as_numpy("OUTPUT0"), want)
    finally:
        c.close()
