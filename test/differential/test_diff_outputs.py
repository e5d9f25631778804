"""Triton vs Nereid: a Python model whose answer breaks its own config (models/bad_outputs): an output as
another datatype or with another shape than the config's, an output the config does not declare, a
requested output left out. Triton's core checks only an output's name, after the Python backend has pruned
the names the request did not ask for, so each of these is answered 200 with what the model made; Nereid
answers the same by default (and logs a warning once; --strict-model-outputs=true fails such requests,
tested in test/integration/model-errors.test.ts).

The output OUT (INT32 [1] in the config) is also made from other numpy arrays (OTHER_ARRAYS): both servers
send each as the model made it, byte for byte in binary, over HTTP and gRPC; an array Triton has no type
for (complex64) fails the request with Triton's `NumPy dtype is not supported.`. Two arrays Triton refuses
the same way Nereid takes on purpose (NEREID_TAKES)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from diff_servers import Pair
from diff_wire import Reply, split_binary_reply
from tritonclient.utils import InferenceServerException

MODES = ["ok", "dtype", "shape", "undeclared", "only_undeclared", "missing"]
# OUT made from another numpy array than the config's INT32 [1] (models/bad_outputs/1/bad_outputs.py).
OTHER_ARRAYS = [
    "fp64",
    "fp16",
    "bool",
    "bytes",
    "fixed_bytes",
    "object_int",
    "scalar",
    "empty",
    "transposed",
    "complex",
]
# Arrays Triton's pb_utils.Tensor refuses (`NumPy dtype is not supported.`: numpy_to_triton_type in
# python_backend's pb_stub_utils.cc matches only native-order numeric dtypes, object_ and bytes_) and
# Nereid's takes on purpose (python/nereid_stub/api.py): a str_ array goes out as UTF-8 BYTES, a big-endian
# one in native order. Each is sent as a well-formed tensor of its datatype; docs/security.md.
NEREID_TAKES = {"unicode": ("BYTES", [b"one"]), "big_endian": ("INT32", [1])}
TRITON_NUMPY_REFUSAL = "TritonModelException: NumPy dtype is not supported."


def _body(mode: str, outputs: list[str] | None, binary: bool = False) -> bytes:
    tensor = {"name": "MODE", "datatype": "BYTES", "shape": [1], "data": [mode]}
    request: dict[str, Any] = {"inputs": [tensor]}
    if outputs is not None:
        request["outputs"] = [{"name": n} for n in outputs]
    if binary:
        request["parameters"] = {"binary_data_output": True}
    return json.dumps(request).encode()


def _answer(reply: Any) -> tuple[int, list[tuple[str, str, list[int], list[int]]]]:
    if reply.status != 200:
        return reply.status, []
    outputs = reply.json().get("outputs", [])
    return 200, sorted((o["name"], o["datatype"], o["shape"], o.get("data")) for o in outputs)


def _model_message(error: str) -> str:
    """The model's own part of a Python model's error: after `message: `, before the traceback. (The
    prefix names the model as each server does, the traceback its files: docs/errors.md.)"""
    return error.split("message: ", 1)[-1].split("\n\nAt:", 1)[0]


@pytest.mark.parametrize("requested", [None, ["OUT", "EXTRA"], ["OUT"]], ids=["all", "both", "out"])
@pytest.mark.parametrize("mode", MODES)
def test_model_breaks_its_config(pair: Pair, mode: str, requested: list[str] | None) -> None:
    triton, nereid = pair.send(
        "POST", "/v2/models/bad_outputs/infer", _body(mode, requested), {"Content-Type": "application/json"}
    )
    assert triton.status == 200, f"Triton answered {triton}"
    assert _answer(nereid) == _answer(triton), f"Triton {triton}, Nereid {nereid}"


def _infer(pair: Pair, mode: str, binary: bool) -> tuple[Reply, Reply]:
    return pair.send(
        "POST",
        "/v2/models/bad_outputs/infer",
        _body(mode, None, binary),
        {"Content-Type": "application/json"},
    )


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
@pytest.mark.parametrize("mode", OTHER_ARRAYS)
def test_output_from_another_array(pair: Pair, mode: str, binary: bool) -> None:
    if mode == "fp16" and not binary:
        pytest.skip("FP16 in JSON: Triton refuses it, Nereid sends it binary (test_diff_infer.py)")
    triton, nereid = _infer(pair, mode, binary)
    assert nereid.status == triton.status, f"Triton {triton}, Nereid {nereid}"
    if triton.status != 200:
        assert mode == "complex", f"Triton {triton}"
        assert triton.status == 500
        assert _model_message(triton.error()) == TRITON_NUMPY_REFUSAL
        # Nereid's text starts with Triton's and names the dtype.
        assert _model_message(nereid.error()).startswith(TRITON_NUMPY_REFUSAL), nereid.error()
        assert "complex64" in nereid.error()
        return
    # Header (names, datatypes, shapes, JSON data, binary sizes) and every binary byte the same.
    assert split_binary_reply(nereid) == split_binary_reply(triton)


@pytest.mark.parametrize("mode", sorted(NEREID_TAKES))
def test_arrays_nereid_takes_and_triton_refuses(pair: Pair, mode: str) -> None:
    triton, nereid = _infer(pair, mode, False)
    assert triton.status == 500, f"Triton {triton}"
    assert _model_message(triton.error()) == TRITON_NUMPY_REFUSAL
    datatype, data = NEREID_TAKES[mode]
    assert nereid.status == 200, f"Nereid {nereid}"
    out = next(o for o in nereid.json()["outputs"] if o["name"] == "OUT")
    assert (out["datatype"], out["shape"]) == (datatype, [1])
    assert [d.encode() if isinstance(d, str) else d for d in out["data"]] == data


def _values(array: np.ndarray[Any, Any]) -> Any:
    """Raw bytes of a numeric array, the elements of a BYTES one (tobytes would give its pointers)."""
    return array.tolist() if array.dtype == np.object_ else array.tobytes()


def _grpc_answer(client: Any, mode: str) -> Any:
    tensor = grpcclient.InferInput("MODE", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([mode.encode()], dtype=np.object_))
    try:
        result = client.infer("bad_outputs", [tensor])
    except InferenceServerException as err:
        return str(err.status()), _model_message(str(err.message()))
    response = result.get_response()
    return sorted(
        (o.name, o.datatype, list(o.shape), _values(result.as_numpy(o.name))) for o in response.outputs
    )


@pytest.mark.parametrize("mode", ["dtype", "shape", "only_undeclared", "missing", *OTHER_ARRAYS])
def test_grpc(clients: tuple[Any, Any], mode: str) -> None:
    triton, nereid = (_grpc_answer(c, mode) for c in clients)
    if isinstance(triton, tuple):
        assert triton == ("StatusCode.INTERNAL", TRITON_NUMPY_REFUSAL)
        assert isinstance(nereid, tuple), nereid
        assert nereid[0] == triton[0], nereid
        assert nereid[1].startswith(TRITON_NUMPY_REFUSAL), nereid
        return
    assert nereid == triton
