"""Triton vs Nereid: inference over HTTP with the same Python models and the same request bytes, JSON and
binary. Outputs are compared by name, datatype, shape and value; where both answer in binary the whole
body must be byte-identical.

JSON numbers are compared as values: Triton prints an integral float as 3.0 and Nereid (JavaScript's
number formatting) as 3, which every JSON reader takes for the same number.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from diff_servers import Pair
from diff_wire import BinaryInput, Reply, bytes_tensor, infer_binary, infer_json, output_array, tensor_json

F = [1.0, 2.5, -3.0, 4.25]


def _f32(values: list[float]) -> bytes:
    return np.array(values, dtype=np.float32).tobytes()


@dataclass(frozen=True)
class Infer:
    id: str
    model: str
    body: bytes
    headers: dict[str, str]
    outputs: list[str]
    version: str = ""

    @property
    def path(self) -> str:
        version = f"/versions/{self.version}" if self.version else ""
        return f"/v2/models/{self.model}{version}/infer"


def _json(case_id: str, model: str, inputs: list[dict[str, Any]], expect: list[str], **fields: Any) -> Infer:
    """A JSON request; `fields` are extra top-level request fields (id, parameters, outputs), except
    `version`, which picks the model version."""
    version = fields.pop("version", "")
    body = infer_json(inputs, **fields)
    return Infer(case_id, model, body, {"Content-Type": "application/json"}, expect, version)


def _bin(
    case_id: str,
    model: str,
    inputs: list[BinaryInput],
    expect: list[str],
    requested: list[dict[str, Any]] | None = None,
) -> Infer:
    body, headers = infer_binary(inputs, requested)
    return Infer(case_id, model, body, headers, expect)


CASES = [
    _json(
        "add_sub JSON",
        "add_sub",
        [tensor_json("INPUT0", "FP32", [4], F), tensor_json("INPUT1", "FP32", [4], [0.5] * 4)],
        ["OUTPUT0", "OUTPUT1"],
    ),
    _json(
        "add_sub JSON in, binary out, with a request id",
        "add_sub",
        [tensor_json("INPUT0", "FP32", [4], F), tensor_json("INPUT1", "FP32", [4], [0.5] * 4)],
        ["OUTPUT0", "OUTPUT1"],
        id="req-7",
        parameters={"binary_data_output": True},
    ),
    _bin(
        "add_sub binary in, one output requested in binary",
        "add_sub",
        [BinaryInput("INPUT0", "FP32", [4], _f32(F)), BinaryInput("INPUT1", "FP32", [4], _f32([1.0] * 4))],
        ["OUTPUT1"],
        [{"name": "OUTPUT1", "parameters": {"binary_data": True}}],
    ),
    _bin(
        "add_sub binary in, JSON out",
        "add_sub",
        [BinaryInput("INPUT0", "FP32", [4], _f32(F)), BinaryInput("INPUT1", "FP32", [4], _f32([1.0] * 4))],
        ["OUTPUT0", "OUTPUT1"],
    ),
    _json(
        "add_sub one output requested in JSON",
        "add_sub",
        [tensor_json("INPUT0", "FP32", [4], F), tensor_json("INPUT1", "FP32", [4], F)],
        ["OUTPUT0"],
        outputs=[{"name": "OUTPUT0"}],
    ),
    _json(
        "add_sub_batched batch of 2",
        "add_sub_batched",
        [
            tensor_json("INPUT0", "INT32", [2, 3], [1, 2, 3, 4, 5, 6]),
            tensor_json("INPUT1", "INT32", [2, 3], [6, 5, 4, 3, 2, 1]),
        ],
        ["OUTPUT0", "OUTPUT1"],
    ),
    _bin(
        "add_sub_batched binary batch of 3, length 5",
        "add_sub_batched",
        [
            BinaryInput("INPUT0", "INT32", [3, 5], np.arange(15, dtype=np.int32).tobytes()),
            BinaryInput("INPUT1", "INT32", [3, 5], np.full(15, -7, dtype=np.int32).tobytes()),
        ],
        ["OUTPUT0", "OUTPUT1"],
        [{"name": "OUTPUT0", "parameters": {"binary_data": True}}, {"name": "OUTPUT1"}],
    ),
    _json(
        "identity_bytes JSON strings",
        "identity_bytes",
        [tensor_json("INPUT0", "BYTES", [1, 3], ["a", "", "héllo"])],
        ["OUTPUT0"],
    ),
    _bin(
        "identity_bytes binary strings",
        "identity_bytes",
        [BinaryInput("INPUT0", "BYTES", [2, 1], bytes_tensor([b"ab", b"xyz"]))],
        ["OUTPUT0"],
    ),
    _json(
        "ensemble_add_sub",
        "ensemble_add_sub",
        [tensor_json("A", "FP32", [4], F), tensor_json("B", "FP32", [4], [1.0, 2.0, 3.0, 4.0])],
        ["TWICE_A", "TWICE_B"],
    ),
    _json(
        "cfg_versions version 3",
        "cfg_versions",
        [tensor_json("INPUT0", "UINT8", [2, 2], [1, 2, 3, 255])],
        ["OUTPUT0"],
        version="3",
    ),
    _bin(
        "cfg_io: FP16 with reshape, optional input left out",
        "cfg_io",
        [
            BinaryInput("INPUT0", "FP16", [1, 2, 2], np.array([1, 2, 3, 4], dtype=np.float16).tobytes()),
            BinaryInput("INPUT2", "INT8", [1, 3], np.array([1, -2, 3], dtype=np.int8).tobytes()),
        ],
        ["OUTPUT0", "OUTPUT2"],
        # Triton refuses to send FP16 as JSON (Nereid would send it binary unasked); OUTPUT1 is not asked
        # for, as the model makes none without INPUT1 (see test_requested_output_not_produced).
        [{"name": "OUTPUT0", "parameters": {"binary_data": True}}, {"name": "OUTPUT2"}],
    ),
    _bin(
        "cfg_io: optional BOOL input given",
        "cfg_io",
        [
            BinaryInput("INPUT0", "FP16", [2, 2, 2], np.arange(8, dtype=np.float16).tobytes()),
            BinaryInput("INPUT1", "BOOL", [2, 1], np.array([True, False]).tobytes()),
            BinaryInput("INPUT2", "INT8", [2, 1], np.array([5, 6], dtype=np.int8).tobytes()),
        ],
        ["OUTPUT0", "OUTPUT1", "OUTPUT2"],
        [
            {"name": "OUTPUT0", "parameters": {"binary_data": True}},
            {"name": "OUTPUT1"},
            {"name": "OUTPUT2", "parameters": {"binary_data": True}},
        ],
    ),
    _json(
        "cfg_sequence start of a sequence",
        "cfg_sequence",
        [tensor_json("INPUT0", "INT32", [1, 1], [7])],
        ["OUTPUT0"],
        parameters={"sequence_id": 5, "sequence_start": True, "sequence_end": True},
    ),
    _json(
        "cfg_instances INT64",
        "cfg_instances",
        [tensor_json("INPUT0", "INT64", [2, 2], [1, -2, 2**40, -(2**40)])],
        ["OUTPUT0"],
    ),
    _json(
        "cfg_batching with a priority",
        "cfg_batching",
        [tensor_json("INPUT0", "FP32", [1, 3], [0.25, 0.5, 0.75])],
        ["OUTPUT0"],
        parameters={"priority": 1},
    ),
]


def _header(reply: Reply) -> dict[str, Any]:
    length = reply.headers.get("inference-header-content-length")
    body = reply.body[: int(length)] if length is not None else reply.body
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def _described(reply: Reply) -> dict[str, tuple[str, list[int]]]:
    return {o["name"]: (o["datatype"], o["shape"]) for o in _header(reply)["outputs"]}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_inference_matches(pair: Pair, case: Infer) -> None:
    triton, nereid = pair.send("POST", case.path, case.body, case.headers)
    assert (triton.status, nereid.status) == (200, 200), f"Triton {triton}, Nereid {nereid}"
    t, n = _header(triton), _header(nereid)
    assert {k: n.get(k) for k in ("id", "model_name", "model_version")} == {
        k: t.get(k) for k in ("id", "model_name", "model_version")
    }
    assert sorted(_described(triton)) == sorted(case.outputs)
    assert _described(nereid) == _described(triton)
    for name in case.outputs:
        a, b = output_array(triton, name), output_array(nereid, name)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), name
        assert np.array_equal(a, b), f"{name}: Triton {a!r}, Nereid {b!r}"
    assert nereid.headers["content-type"] == triton.headers["content-type"]
    if "inference-header-content-length" in triton.headers:
        assert nereid.body == triton.body


def test_output_order_follows_the_request_or_the_config(pair: Pair) -> None:
    case = CASES[0]
    triton, nereid = pair.send("POST", case.path, case.body, case.headers)
    names: Callable[[Reply], list[str]] = lambda r: [o["name"] for o in _header(r)["outputs"]]  # noqa: E731
    assert names(nereid) == names(triton) == ["OUTPUT0", "OUTPUT1"]


def test_ensemble_response_extras(pair: Pair) -> None:
    """Triton 2.51 answers an ensemble with a top-level `parameters` object that repeats sequence_id,
    sequence_start and sequence_end twice (the same key twice in one JSON object) and its outputs in hash
    order. Nereid sends neither, on purpose: the request had no such parameters, and a JSON object with
    repeated keys is not one clients should have to read. Only the outputs are compared above."""
    case = next(c for c in CASES if c.model == "ensemble_add_sub")
    triton, nereid = pair.send("POST", case.path, case.body, case.headers)
    assert b'"sequence_id":0' in triton.body
    assert "parameters" not in _header(nereid)


def test_non_utf8_bytes_output(pair: Pair) -> None:
    """A BYTES output that is not UTF-8, requested without binary_data: Triton writes the raw bytes into the
    JSON string (not valid UTF-8 JSON); Nereid sends that output in binary instead (lossless, valid, read by
    every Triton client), on purpose (src/frontends/http/infer-codec.ts encodeInferResponse). The values are
    the same."""
    body, headers = infer_binary(
        [BinaryInput("INPUT0", "BYTES", [1, 2], bytes_tensor([b"\x00\xff", b"xyz"]))]
    )
    triton, nereid = pair.send("POST", "/v2/models/identity_bytes/infer", body, headers)
    assert (triton.status, nereid.status) == (200, 200)
    assert triton.headers["content-type"] == "application/json"
    assert nereid.headers["content-type"] == "application/octet-stream"
    n = output_array(nereid, "OUTPUT0")
    assert n.tolist() == [[b"\x00\xff", b"xyz"]]
    # Triton's JSON text has \u0000 for the NUL and the raw 0xff byte.
    assert b'"data":["\\u0000\xff","xyz"]' in triton.body


def test_requested_output_not_produced(pair: Pair) -> None:
    """A requested output the model does not make (cfg_io makes no OUTPUT1 without INPUT1): Triton's Python
    backend sends the outputs the model made and leaves the others out (200); so does Nereid."""
    body, headers = infer_binary(
        [
            BinaryInput("INPUT0", "FP16", [1, 2, 2], np.array([1, 2, 3, 4], dtype=np.float16).tobytes()),
            BinaryInput("INPUT2", "INT8", [1, 3], np.array([1, -2, 3], dtype=np.int8).tobytes()),
        ],
        [{"name": "OUTPUT0", "parameters": {"binary_data": True}}, {"name": "OUTPUT1"}, {"name": "OUTPUT2"}],
    )
    triton, nereid = pair.send("POST", "/v2/models/cfg_io/infer", body, headers)
    assert triton.status == 200
    assert sorted(_described(triton)) == ["OUTPUT0", "OUTPUT2"]
    assert nereid.status == 200, str(nereid)
    assert nereid.body == triton.body


def test_fp16_output_without_binary(pair: Pair) -> None:
    """An FP16 output asked for without binary_data: Triton refuses the request (400, 'sending FP16 data via
    JSON is not supported'); Nereid sends that output in binary instead, on purpose
    (src/frontends/http/infer-codec.ts encodeInferResponse: outputs with no JSON form go binary)."""
    body, headers = infer_binary(
        [
            BinaryInput("INPUT0", "FP16", [1, 2, 2], np.array([1, 2, 3, 4], dtype=np.float16).tobytes()),
            BinaryInput("INPUT2", "INT8", [1, 3], np.array([1, -2, 3], dtype=np.int8).tobytes()),
        ],
        [{"name": "OUTPUT0"}],
    )
    triton, nereid = pair.send("POST", "/v2/models/cfg_io/infer", body, headers)
    assert triton.status == 400
    assert "sending FP16 data via JSON is not supported" in triton.error()
    assert nereid.status == 200
    assert output_array(nereid, "OUTPUT0").tolist() == [[1.0, 2.0, 3.0, 4.0]]


def test_bytes_are_carried_exactly(pair: Pair) -> None:
    """Every byte value, NUL included, alone and all together, through a Python model: both servers hand
    the model exactly the bytes sent and send back exactly what it returned (byte-identical replies). This
    is the comparison behind docs/onnxruntime.md "Which BYTES elements pass": Triton's Python backend and
    Nereid's carry any bytes; only onnxruntime-node's string tensors cannot (they refuse what is not
    UTF-8)."""
    elements = [bytes([b]) for b in range(256)] + [bytes(range(256)), b"", b"\xff\xfe\x00tail"]
    body, headers = infer_binary(
        [BinaryInput("INPUT0", "BYTES", [1, len(elements)], bytes_tensor(elements))],
        [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
    )
    triton, nereid = pair.send("POST", "/v2/models/identity_bytes/infer", body, headers)
    assert (triton.status, nereid.status) == (200, 200), f"Triton {triton}, Nereid {nereid}"
    assert output_array(triton, "OUTPUT0").tolist() == [elements]
    assert nereid.body == triton.body
