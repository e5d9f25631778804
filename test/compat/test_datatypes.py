"""Every Triton datatype through the real clients, on a second server whose repository is built from
test/fixtures/models/identity_<dtype>.onnx with no config.pbtxt at all, so each model's configuration comes
from auto-complete. Values include each type's extremes; HTTP sends them as JSON and as binary tensors, gRPC
as raw contents. BF16 is loaded separately: onnxruntime-node cannot run it, and the server must say so."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from nereid_server import ENTRY, REPO_ROOT, NereidServer, node_executable, start_server

FIXTURES = REPO_ROOT / "test" / "fixtures" / "models"

# KServe datatype -> numpy dtype, for the identity_<name>.onnx fixtures
DATATYPES: dict[str, Any] = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
    "BYTES": np.object_,
}
JSON_UNSUPPORTED = {"FP16"}  # KServe JSON has no FP16/BF16 form


def _model(datatype: str) -> str:
    return f"identity_{datatype.lower()}"


def _values(datatype: str) -> npt.NDArray[Any]:
    """A [2, 5] tensor with the type's extremes in it."""
    dtype = DATATYPES[datatype]
    if datatype == "BOOL":
        flat: list[Any] = [True, False, False, True, True, False, True, False, False, False]
    elif datatype == "BYTES":
        # onnxruntime-node carries strings as JS strings and stops at NUL (test/fixtures/models/README.md)
        flat = [b"", b"a", b"hello world", "\u00e9t\u00e9".encode(), "\u65e5\u672c".encode()] * 2
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        flat = [info.min, info.max, 0, 1, info.max - 1, info.min + 1, 7, 42, info.max // 3, info.min // 3]
    else:
        finfo = np.finfo(dtype)
        flat = [
            0.0,
            -0.0,
            1.5,
            -2.25,
            float(finfo.max),
            float(finfo.min),
            float(finfo.tiny),
            3.0,
            1e-3,
            100.0,
        ]
    return np.array(flat, dtype=dtype).reshape(2, 5)


@pytest.fixture(scope="module")
def dtype_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NereidServer]:
    if node_executable() is None:
        pytest.skip("node is not installed")
    if not ENTRY.exists():
        pytest.fail(f"{ENTRY} does not exist")
    root = tmp_path_factory.mktemp("dtypes")
    repository = root / "repository"
    for source in sorted(FIXTURES.glob("identity_*.onnx")):
        version = repository / source.stem / "1"
        version.mkdir(parents=True)
        shutil.copyfile(source, version / "model.onnx")
    for datatype in DATATYPES:
        assert (repository / _model(datatype)).is_dir(), f"{FIXTURES} has no {_model(datatype)}.onnx"
    flags = [
        f"--model-repository={repository}",
        "--http-port=0",
        "--grpc-port=0",
        "--metrics-port=0",
        "--model-control-mode=explicit",
        *(f"--load-model={_model(d)}" for d in DATATYPES),
    ]
    running = start_server(flags, root / "server.log")
    try:
        yield running
    finally:
        code = running.stop()
        assert code == 0, f"server exited with code {code} after SIGTERM; log:\n{running.log_tail()}"


@pytest.fixture(scope="module")
def http(dtype_server: NereidServer) -> Iterator[Any]:
    c = httpclient.InferenceServerClient(url=dtype_server.http_url, network_timeout=60.0)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def grpc_dt(dtype_server: NereidServer) -> Iterator[Any]:
    c = grpcclient.InferenceServerClient(url=dtype_server.url("grpc"))
    try:
        yield c
    finally:
        c.close()


def _check(out: npt.NDArray[Any], want: npt.NDArray[Any], datatype: str, signed_zero: bool = True) -> None:
    assert out.shape == want.shape
    if datatype == "BYTES":
        # JSON BYTES come back as str, binary ones as bytes
        got = [v.encode() if isinstance(v, str) else bytes(v) for v in out.flat]
        assert got == list(want.flat)
    else:
        assert out.dtype == want.dtype, (out.dtype, want.dtype)
        np.testing.assert_array_equal(out, want)
        if signed_zero and np.issubdtype(want.dtype, np.floating):  # -0.0 keeps its sign
            assert np.array_equal(np.signbit(out), np.signbit(want))


@pytest.mark.parametrize("datatype", DATATYPES)
def test_auto_completed_config(http: Any, grpc_dt: Any, datatype: str) -> None:
    model = _model(datatype)
    config = http.get_model_config(model)
    config_type = "TYPE_STRING" if datatype == "BYTES" else f"TYPE_{datatype}"
    assert config["name"] == model
    assert config["platform"] == "onnxruntime_onnx"
    assert config["backend"] == "onnxruntime"
    assert config["max_batch_size"] > 0, "a symbolic first dimension auto-completes to a batching model"
    assert [(t["name"], t["data_type"], t["dims"]) for t in config["input"]] == [
        ("INPUT0", config_type, [-1])
    ]
    assert [(t["name"], t["data_type"], t["dims"]) for t in config["output"]] == [
        ("OUTPUT0", config_type, [-1])
    ]
    assert config["instance_group"]
    grpc_config = grpc_dt.get_model_config(model).config
    assert grpc_config.max_batch_size == config["max_batch_size"]
    assert grpc_config.input[0].data_type == grpcclient.model_config_pb2.DataType.Value(config_type)
    metadata = grpc_dt.get_model_metadata(model, as_json=True)
    assert metadata["inputs"] == [{"name": "INPUT0", "datatype": datatype, "shape": ["-1", "-1"]}]


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
@pytest.mark.parametrize("datatype", DATATYPES)
def test_http_identity(http: Any, datatype: str, binary: bool) -> None:
    data = _values(datatype)
    tensor = httpclient.InferInput("INPUT0", list(data.shape), datatype)
    output = httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary)
    if not binary and datatype in JSON_UNSUPPORTED:
        # the client may refuse FP16 as JSON itself; if it sends it, the server must refuse it
        try:
            tensor.set_data_from_numpy(data, binary_data=False)
        except InferenceServerException:
            return
        with pytest.raises(InferenceServerException) as info:
            http.infer(_model(datatype), [tensor], outputs=[output])
        assert info.value.status() == "400"
        return
    tensor.set_data_from_numpy(data, binary_data=binary)
    result = http.infer(_model(datatype), [tensor], outputs=[output])
    # the sign of -0.0 in JSON output has its own test below
    _check(result.as_numpy("OUTPUT0"), data, datatype, signed_zero=binary)
    (meta,) = result.get_response()["outputs"]
    assert meta["datatype"] == datatype
    assert meta["shape"] == [2, 5]


@pytest.mark.parametrize("datatype", DATATYPES)
def test_grpc_identity(grpc_dt: Any, datatype: str) -> None:
    data = _values(datatype)
    tensor = grpcclient.InferInput("INPUT0", list(data.shape), datatype)
    tensor.set_data_from_numpy(data)
    result = grpc_dt.infer(_model(datatype), [tensor])
    _check(result.as_numpy("OUTPUT0"), data, datatype)
    (meta,) = result.get_response().outputs
    assert meta.datatype == datatype
    assert list(meta.shape) == [2, 5]


@pytest.mark.parametrize("datatype", ["FP32", "FP64"])
def test_http_json_output_keeps_negative_zero(http: Any, datatype: str) -> None:
    data = np.array([[-0.0, 0.0, -1.0]], dtype=DATATYPES[datatype])
    tensor = httpclient.InferInput("INPUT0", [1, 3], datatype)
    tensor.set_data_from_numpy(data, binary_data=True)
    output = httpclient.InferRequestedOutput("OUTPUT0", binary_data=False)
    out = http.infer(_model(datatype), [tensor], outputs=[output]).as_numpy("OUTPUT0")
    assert list(np.signbit(out).flat) == [True, False, True]


def test_bf16_is_refused_with_a_reason(http: Any, grpc_dt: Any, dtype_server: NereidServer) -> None:
    model = "identity_bf16"
    if not (FIXTURES / f"{model}.onnx").exists():
        pytest.skip(f"{FIXTURES} has no {model}.onnx")
    failure: InferenceServerException | None = None
    try:
        grpc_dt.load_model(model)
    except InferenceServerException as err:
        failure = err
    if failure is not None:
        # onnxruntime-node 1.x has no bfloat16 tensors; the load must fail cleanly, say why, and use
        # Triton's wording and code for a version that did not load
        message = str(failure.message())
        assert failure.status() == "StatusCode.INVALID_ARGUMENT"
        assert f"load failed for model '{model}': version 1 is at UNAVAILABLE state" in message
        assert "BF16" in message or "bfloat16" in message
        index = {m["name"]: m for m in http.get_model_repository_index()}
        assert index[model]["state"] == "UNAVAILABLE"
        assert "BF16" in index[model]["reason"] or "bfloat16" in index[model]["reason"]
        assert http.is_server_live() is True
        return
    # if a future onnxruntime-node runs BF16, the values must round-trip exactly
    data = np.array([[1.0, -2.0, 0.5, 3.0, 0.0]], dtype=np.float32)
    tensor = grpcclient.InferInput("INPUT0", [1, 5], "BF16")
    tensor.set_data_from_numpy(data)
    result = grpc_dt.infer(model, [tensor])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
