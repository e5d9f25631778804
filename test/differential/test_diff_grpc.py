"""Triton vs Nereid over gRPC, through the real tritonclient.grpc: metadata, configs and the repository index
as the client decodes them, inference results, and the status code and message of bad requests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from diff_servers import Pair
from diff_wire import relative_to_model_folder
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

LOADED = [
    "add_sub",
    "add_sub_batched",
    "identity_bytes",
    "cfg_batching",
    "cfg_instances",
    "cfg_io",
    "cfg_sequence",
    "cfg_versions",
    "ensemble_add_sub",
]
A = np.array([1.0, 2.5, -3.0, 4.25], dtype=np.float32)
A_INT = A.astype(np.int32)
NINE = np.zeros((9, 1), np.int32)


def _input(name: str, datatype: str, data: np.ndarray[Any, Any]) -> Any:
    tensor = grpcclient.InferInput(name, list(data.shape), datatype)
    tensor.set_data_from_numpy(data)
    return tensor


def _outcome(call: Callable[[Any], Any], client: Any) -> tuple[str, Any]:
    try:
        return "OK", call(client)
    except InferenceServerException as err:
        return str(err.status()), str(err.message())


def test_server_metadata(clients: tuple[Any, Any]) -> None:
    triton, nereid = (c.get_server_metadata(as_json=True) for c in clients)
    assert sorted(triton) == sorted(nereid) == ["extensions", "name", "version"]
    assert set(nereid["extensions"]) <= set(triton["extensions"])
    # --id, default "triton", as simple_grpc_health_metadata.py expects.
    assert nereid["name"] == triton["name"] == "triton"


def test_server_metadata_key_says_nereid(pair: Pair) -> None:
    """Nereid's responses carry the `server` metadata key (nereid/<version>); Triton's do not."""
    found: dict[str, str | None] = {}
    for name, port in (("triton", pair.triton.grpc_port), ("nereid", pair.nereid.grpc_port)):
        # grpcio itself, as tritonclient imports it (typed Any: neither ships type information).
        with grpcclient.grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            reply, call = stub.ServerMetadata.with_call(service_pb2.ServerMetadataRequest())
            assert reply.name == "triton"
            found[name] = dict(call.initial_metadata()).get("server")
    assert found["triton"] is None
    assert (found["nereid"] or "").startswith("nereid/")


def test_health(clients: tuple[Any, Any]) -> None:
    triton, nereid = clients
    assert (nereid.is_server_live(), nereid.is_server_ready()) == (
        triton.is_server_live(),
        triton.is_server_ready(),
    )
    for model in [*LOADED, "broken_init", "nope"]:
        assert nereid.is_model_ready(model) == triton.is_model_ready(model), model


@pytest.mark.parametrize("model", LOADED)
def test_model_metadata(clients: tuple[Any, Any], model: str) -> None:
    triton, nereid = (c.get_model_metadata(model, as_json=True) for c in clients)
    assert nereid == triton


@pytest.mark.parametrize("model", LOADED)
def test_model_config(clients: tuple[Any, Any], model: str) -> None:
    triton, nereid = (c.get_model_config(model, as_json=True)["config"] for c in clients)
    # ModelEnsembling.max_inflight_requests is newer than Triton 2.51 (see test_diff_config.py); it is 0
    # here, which protobuf's JSON leaves out anyway.
    assert nereid == triton


def test_repository_index(clients: tuple[Any, Any]) -> None:
    triton, nereid = (c.get_model_repository_index(as_json=True)["models"] for c in clients)
    key: Callable[[dict[str, str]], tuple[str, str]] = lambda e: (e["name"], e.get("version", ""))  # noqa: E731
    t = {key(e): e for e in triton}
    n = {key(e): e for e in nereid}
    # invalid_config: Triton lists the name only, Nereid a version 1 (the bug in test_diff_server.py).
    t.pop(("invalid_config", ""), None)
    n.pop(("invalid_config", "1"), None)
    for entry in (t[("broken_init", "1")], n[("broken_init", "1")]):
        entry["reason"] = entry["reason"].rstrip("\n")  # Triton's traceback ends in a newline
    # Nereid names the model's file relative to its folder (test_diff_server.py says why).
    broken = t[("broken_init", "1")]
    broken["reason"] = relative_to_model_folder(broken["reason"], "broken_init")
    assert n == t


def test_inference(clients: tuple[Any, Any]) -> None:
    inputs = [_input("INPUT0", "FP32", A), _input("INPUT1", "FP32", A * 2)]
    triton, nereid = (c.infer("add_sub", inputs, request_id="g1") for c in clients)
    for name in ("OUTPUT0", "OUTPUT1"):
        assert np.array_equal(nereid.as_numpy(name), triton.as_numpy(name))
    t, n = triton.get_response(as_json=True), nereid.get_response(as_json=True)
    assert {k: n.get(k) for k in ("id", "model_name", "model_version")} == {
        k: t.get(k) for k in ("id", "model_name", "model_version")
    }


def test_inference_bytes(clients: tuple[Any, Any]) -> None:
    data = np.array([[b"a", b"\x00\xff", "héllo".encode()]], dtype=np.object_)
    triton, nereid = (c.infer("identity_bytes", [_input("INPUT0", "BYTES", data)]) for c in clients)
    assert nereid.as_numpy("OUTPUT0").tolist() == triton.as_numpy("OUTPUT0").tolist() == data.tolist()


ERRORS: list[Any] = [
    ("unknown model", lambda c: c.infer("nope", [_input("INPUT0", "FP32", A)]), ""),
    ("unknown version", lambda c: c.infer("add_sub", [_input("INPUT0", "FP32", A)], model_version="9"), ""),
    ("model that failed to load", lambda c: c.infer("broken_init", [_input("INPUT0", "FP32", A[:1])]), ""),
    (
        "wrong shape",
        lambda c: c.infer("add_sub", [_input("INPUT0", "FP32", A[:3]), _input("INPUT1", "FP32", A)]),
        "",
    ),
    (
        "wrong dtype",
        lambda c: c.infer("add_sub", [_input("INPUT0", "INT32", A_INT), _input("INPUT1", "FP32", A)]),
        "",
    ),
    ("missing input", lambda c: c.infer("add_sub", [_input("INPUT0", "FP32", A)]), ""),
    (
        "duplicate input",
        lambda c: c.infer(
            "add_sub", [_input("INPUT0", "FP32", A), _input("INPUT0", "FP32", A), _input("INPUT1", "FP32", A)]
        ),
        "",
    ),
    (
        "unknown input",
        lambda c: c.infer("add_sub", [_input("INPUT0", "FP32", A), _input("INPUT9", "FP32", A)]),
        "",
    ),
    (
        "unknown requested output",
        lambda c: c.infer(
            "add_sub",
            [_input("INPUT0", "FP32", A), _input("INPUT1", "FP32", A)],
            outputs=[grpcclient.InferRequestedOutput("OUTPUT9")],
        ),
        "",
    ),
    (
        "batch larger than max_batch_size",
        lambda c: c.infer(
            "add_sub_batched",
            [_input("INPUT0", "INT32", NINE), _input("INPUT1", "INT32", NINE)],
        ),
        "",
    ),
    ("unknown model metadata", lambda c: c.get_model_metadata("nope"), ""),
    ("unknown model config", lambda c: c.get_model_config("nope"), ""),
    (
        "statistics of an unknown model",
        lambda c: c.get_inference_statistics("nope"),
        "",
    ),
]


@pytest.mark.parametrize(
    ("call", "bug"),
    [
        pytest.param(call, bug, id=label, marks=[pytest.mark.xfail(strict=True, reason=bug)] if bug else [])
        for label, call, bug in ERRORS
    ],
)
def test_error(clients: tuple[Any, Any], call: Callable[[Any], Any], bug: str) -> None:
    triton, nereid = (_outcome(call, c) for c in clients)
    assert triton[0] != "OK"
    assert nereid == triton


def test_duplicate_output(clients: tuple[Any, Any]) -> None:
    """Triton 2.51 accepts a repeated output name; Nereid refuses it as newer Triton does (PR #8741,
    INVALID_ARGUMENT "output '<name>' already exists in request"; Triton's QA matches that substring, so
    the '[request id: <id>] ' prefix is not compared)."""

    def call(c: Any) -> Any:
        outputs = [grpcclient.InferRequestedOutput("OUTPUT0"), grpcclient.InferRequestedOutput("OUTPUT0")]
        return c.infer("add_sub", [_input("INPUT0", "FP32", A), _input("INPUT1", "FP32", A)], outputs=outputs)

    triton, nereid = (_outcome(call, c) for c in clients)
    assert triton[0] == "OK"
    assert nereid[0] == "StatusCode.INVALID_ARGUMENT"
    assert "output 'OUTPUT0' already exists in request" in nereid[1]
