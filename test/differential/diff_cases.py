"""The bad requests the differential suite sends to both servers, one table: each case names the request,
the HTTP status Triton answers and a substring of Triton's error text (both checked against Triton too,
so the table can't drift from the real server), and, where Nereid differs on purpose (status, wording, a
newer Triton) or by a known bug, why.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

from diff_wire import BinaryInput, infer_binary, infer_json, tensor_json

FOUR = [1.0, 2.0, 3.0, 4.0]


def _fp32(values: list[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _add_sub_json(**changes: object) -> bytes:
    """add_sub's good JSON request with some top-level fields replaced."""
    body: dict[str, object] = {
        "inputs": [
            tensor_json("INPUT0", "FP32", [4], FOUR),
            tensor_json("INPUT1", "FP32", [4], FOUR),
        ]
    }
    body.update(changes)
    return json.dumps(body).encode()


JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class Case:
    id: str
    path: str
    body: bytes
    status: int  # what Triton answers
    triton_says: str  # a substring of Triton's error text
    headers: dict[str, str] = field(default_factory=lambda: dict(JSON))
    method: str = "POST"
    # Why Nereid's wording differs, for a difference we keep; Nereid's text must then contain
    # triton_says or nereid_says.
    wording_differs: str = ""
    nereid_says: str = ""
    # Where Nereid answers another status on purpose: that status, and why.
    nereid_status: int = 0
    status_differs: str = ""
    # Where Nereid follows a newer Triton than the 2.51 this suite runs: what the newer one answers, and
    # the change that made it so. Nereid is checked against these instead.
    newer_status: int = 0
    newer_says: str = ""
    newer_because: str = ""
    # A Nereid bug, with where it lives: the case is an expected failure until it is fixed.
    nereid_bug: str = ""


def _binary(
    delta: int = 0, raw: bytes | None = None, shape: list[int] | None = None
) -> tuple[bytes, dict[str, str]]:
    a = raw if raw is not None else _fp32(FOUR)
    return infer_binary(
        [BinaryInput("INPUT0", "FP32", shape or [4], a), BinaryInput("INPUT1", "FP32", [4], _fp32(FOUR))],
        header_length_delta=delta,
    )


_short_binary, _short_binary_headers = _binary(raw=_fp32(FOUR[:3]))
_long_header, _long_header_headers = _binary(delta=10_000)
_cut_header, _cut_header_headers = _binary(delta=-5)

# Intended: a request body that is not JSON, or JSON that does not fit the request schema, is the client's
# fault, so Nereid answers 400 (docs/http.md, "Limits"). Triton answers 500 only because its TritonJson
# errors are TRITONSERVER_ERROR_INTERNAL (still so in current http_server.cc; Triton's QA asserts the 500
# for negative dims: test_negative_dimensions in qa/L0_http/http_test.py).
_JSON_400 = (
    "Nereid answers 400 for a body that is not valid request JSON, on purpose (docs/http.md); Triton's "
    "500 comes from TritonJson errors being INTERNAL"
)

_COUNT_WORDING = (
    "Nereid gives the counts instead of TritonJson's 'Shape does not match true shape' (docs/http.md, "
    "'Tensor data in JSON')"
)

_TOO_BIG = (
    b'{"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 1e400]}, '
    b'{"name": "INPUT1", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]}]}'
)

# rapidjson's (1.1.0) refusals, each with its GetParseError_En text and byte offset.
_MALFORMED_JSON: list[tuple[str, bytes, str]] = [
    ("end inside an object", b'{"a": 1', "Missing a comma or '}' after an object member. at 7"),
    ("trailing comma", b'{"a": [1,]}', "Invalid value. at 9"),
    ("member without a name", b'{"a": 1,}', "Missing a name for object member. at 8"),
    ("member without a colon", b'{"a" 1}', "Missing a colon after a name of object member. at 5"),
    ("end inside a string", b'{"a": "xy', "Missing a closing quotation mark in string. at 9"),
    ("control character in a string", b'{"a": "x\ny"}', "Invalid escape character in string. at 8"),
    ("bad escape", b'{"a": "x\\q"}', "Invalid escape character in string. at 8"),
    ("bad hex escape", b'{"a": "\\u00g0"}', "Incorrect hex digit after \\u escape in string. at 7"),
    ("unpaired high surrogate", b'{"a": "\\ud800"}', "The surrogate pair in string is invalid. at 7"),
    ("misspelled literal", b'{"a": tru}', "Invalid value. at 9"),
    ("fraction without digits", b'{"a": 1.}', "Miss fraction part in number. at 8"),
    ("exponent without digits", b'{"a": 1e+}', "Miss exponent in number. at 9"),
    # Nereid's JSON.parse fast path takes it as Infinity; FP tensor data sends it to the exact parser.
    (
        "number too big for a double in FP32 data",
        _TOO_BIG,
        f"Number too big to be stored in double. at {_TOO_BIG.index(b'1e400')}",
    ),
    ("offset in bytes", '{"\u00e9": x}'.encode(), "Invalid value. at 7"),
    ("value after the root", b"{} {}", "The document root must not be followed by other values. at 3"),
    ("whitespace only", b" \n", "The document is empty. at 2"),
]

# What rapidjson takes beyond JSON (and JSON.parse does not): Triton then looks for `inputs`.
_RAPIDJSON_TAKES: list[tuple[str, bytes]] = [
    ("byte order mark", b"\xef\xbb\xbf{}"),
    ("NUL byte after the document", b"{}\x00 junk"),
    ("NaN and Infinity", b'{"a": [NaN, -Infinity, Inf, -NaN]}'),
    ("lone low surrogate", b'{"a": "\\udc00"}'),
]

CASES: list[Case] = [
    Case(
        "unknown model",
        "/v2/models/nope/infer",
        _add_sub_json(),
        404,
        "Request for unknown model: 'nope' is not found",
    ),
    Case(
        "unknown version",
        "/v2/models/add_sub/versions/9/infer",
        _add_sub_json(),
        404,
        "Request for unknown model: 'add_sub' version 9 is not found",
    ),
    Case(
        "version on disk but not in the version policy",
        "/v2/models/cfg_versions/versions/2/infer",
        infer_json([tensor_json("INPUT0", "UINT8", [1, 2], [1, 2])]),
        404,
        "Request for unknown model: 'cfg_versions' version 2 is not found",
    ),
    Case(
        "model that failed to load",
        "/v2/models/broken_init/infer",
        infer_json([tensor_json("INPUT0", "FP32", [1], [1.0])]),
        404,
        "Request for unknown model: 'broken_init' has no available versions",
    ),
    Case(
        "wrong shape",
        "/v2/models/add_sub/infer",
        infer_json([tensor_json("INPUT0", "FP32", [3], FOUR[:3]), tensor_json("INPUT1", "FP32", [4], FOUR)]),
        400,
        "unexpected shape for input 'INPUT0' for model 'add_sub'. Expected [4], got [3]. ",
    ),
    Case(
        "batched model without the batch dimension",
        "/v2/models/add_sub_batched/infer",
        infer_json(
            [
                tensor_json("INPUT0", "INT32", [4], [1, 2, 3, 4]),
                tensor_json("INPUT1", "INT32", [4], [1, 2, 3, 4]),
            ]
        ),
        400,
        "' for model 'add_sub_batched'. Expected [-1,-1], got [4]. NOTE: Setting a non-zero max_batch_size",
        wording_differs="Triton names whichever input its hash map yields first (INPUT1 here), Nereid the "
        "first in the request; the rest of the text is the same",
    ),
    Case(
        "batch larger than max_batch_size",
        "/v2/models/add_sub_batched/infer",
        infer_json(
            [
                tensor_json("INPUT0", "INT32", [9, 1], list(range(9))),
                tensor_json("INPUT1", "INT32", [9, 1], list(range(9))),
            ]
        ),
        400,
        "inference request batch-size must be <= 8 for 'add_sub_batched'",
    ),
    Case(
        "wrong dtype",
        "/v2/models/add_sub/infer",
        infer_json(
            [tensor_json("INPUT0", "INT32", [4], [1, 2, 3, 4]), tensor_json("INPUT1", "FP32", [4], FOUR)]
        ),
        400,
        "inference input 'INPUT0' data-type is 'INT32', but model 'add_sub' expects 'FP32'",
    ),
    Case(
        "unknown datatype name",
        "/v2/models/add_sub/infer",
        infer_json([tensor_json("INPUT0", "FP33", [4], FOUR), tensor_json("INPUT1", "FP32", [4], FOUR)]),
        400,
        "invalid datatype for input INPUT0",
        wording_differs="Nereid appends the datatype it got (\" (got 'FP33')\") to Triton's text",
    ),
    Case(
        "JSON data shorter than the shape",
        "/v2/models/add_sub/infer",
        infer_json([tensor_json("INPUT0", "FP32", [4], FOUR[:3]), tensor_json("INPUT1", "FP32", [4], FOUR)]),
        500,
        "Unable to parse 'data': Shape does not match true shape of 'data' field",
        nereid_status=400,
        status_differs=_JSON_400,
        wording_differs=_COUNT_WORDING,
        nereid_says="unexpected number of elements in 'data' for input 'INPUT0': shape [4] has 4 elements",
    ),
    Case(
        "JSON data longer than the shape",
        "/v2/models/add_sub/infer",
        infer_json(
            [tensor_json("INPUT0", "FP32", [4], [*FOUR, 5.0]), tensor_json("INPUT1", "FP32", [4], FOUR)]
        ),
        500,
        "Unable to parse 'data': Shape does not match true shape of 'data' field",
        nereid_status=400,
        status_differs=_JSON_400,
        wording_differs=_COUNT_WORDING,
        nereid_says="unexpected number of elements in 'data' for input 'INPUT0': shape [4] has 4 elements",
    ),
    Case(
        "JSON data of the wrong kind",
        "/v2/models/add_sub/infer",
        infer_json(
            [
                tensor_json("INPUT0", "FP32", [4], ["a", "b", "c", "d"]),
                tensor_json("INPUT1", "FP32", [4], FOUR),
            ]
        ),
        500,
        "Unable to parse 'data': attempt to access JSON non-number as double",
        nereid_status=400,
        status_differs=_JSON_400,
        wording_differs="Nereid names the input and the element and says what it expected",
        nereid_says="Unable to parse 'data' for input 'INPUT0': element 0 is \"a\", expected a number",
    ),
    Case(
        "binary input of the wrong byte size",
        "/v2/models/add_sub/infer",
        _short_binary,
        400,
        "input byte size mismatch for input 'INPUT0' for model 'add_sub'. Expected 16, got 12",
        headers=_short_binary_headers,
    ),
    Case(
        "missing input",
        "/v2/models/add_sub/infer",
        infer_json([tensor_json("INPUT0", "FP32", [4], FOUR)]),
        400,
        "expected 2 inputs but got 1 inputs for model 'add_sub'. Got input(s) ['INPUT0'], but missing "
        "required input(s) ['INPUT1']. Please provide all required input(s).",
    ),
    Case(
        "unknown input in place of a required one",
        "/v2/models/add_sub/infer",
        infer_json([tensor_json("INPUT0", "FP32", [4], FOUR), tensor_json("INPUT9", "FP32", [4], FOUR)]),
        400,
        "unexpected inference input 'INPUT9' for model 'add_sub'",
    ),
    Case(
        "one input too many",
        "/v2/models/add_sub/infer",
        infer_json(
            [
                tensor_json("INPUT0", "FP32", [4], FOUR),
                tensor_json("INPUT1", "FP32", [4], FOUR),
                tensor_json("INPUT9", "FP32", [4], FOUR),
            ]
        ),
        400,
        "expected 2 inputs but got 3 inputs for model 'add_sub'. Got input(s) [",
        wording_differs="Triton lists the inputs in hash order (and, with nothing missing, prints "
        "'missing required input(s) ]'); only the start is compared",
    ),
    Case(
        "duplicate input",
        "/v2/models/add_sub/infer",
        infer_json(
            [
                tensor_json("INPUT0", "FP32", [4], FOUR),
                tensor_json("INPUT0", "FP32", [4], FOUR),
                tensor_json("INPUT1", "FP32", [4], FOUR),
            ]
        ),
        400,
        "input 'INPUT0' already exists in request",
    ),
    Case(
        "unknown requested output",
        "/v2/models/add_sub/infer",
        _add_sub_json(outputs=[{"name": "OUTPUT9"}]),
        400,
        "unexpected inference output 'OUTPUT9' for model 'add_sub'",
    ),
    Case(
        "duplicate requested output",
        "/v2/models/add_sub/infer",
        _add_sub_json(outputs=[{"name": "OUTPUT0"}, {"name": "OUTPUT0"}]),
        200,
        "",
        newer_status=400,
        newer_says="output 'OUTPUT0' already exists in request",
        newer_because="Triton 2.51 answers once per name; Triton's PR #8741 (April 2026, "
        "test_duplicate_output_names) rejects a repeated output name over HTTP and gRPC",
    ),
    Case(
        "malformed JSON",
        "/v2/models/add_sub/infer",
        b'{"inputs": [',
        500,
        "failed to parse the request JSON buffer: Invalid value. at 12",
        nereid_status=400,
        status_differs=_JSON_400,
    ),
    *[
        Case(
            f"malformed JSON: {label}",
            "/v2/models/add_sub/infer",
            body,
            500,
            f"failed to parse the request JSON buffer: {says}",
            nereid_status=400,
            status_differs=_JSON_400,
        )
        for label, body, says in _MALFORMED_JSON
    ],
    *[
        Case(
            f"JSON rapidjson takes: {label}",
            "/v2/models/add_sub/infer",
            body,
            500,
            "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'",
            nereid_status=400,
            status_differs=_JSON_400,
        )
        for label, body in _RAPIDJSON_TAKES
    ],
    Case(
        "JSON that is not an object",
        "/v2/models/add_sub/infer",
        b"[1, 2]",
        500,
        "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'",
        nereid_status=400,
        status_differs=_JSON_400,
    ),
    Case(
        "no inputs field",
        "/v2/models/add_sub/infer",
        b"{}",
        500,
        "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'",
        nereid_status=400,
        status_differs=_JSON_400,
    ),
    Case(
        "empty body",
        "/v2/models/add_sub/infer",
        b"",
        400,
        "Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'add_sub' model",
    ),
    Case(
        "empty body to a one-input model",
        "/v2/models/cfg_batching/infer",
        b"",
        400,
        "input byte size mismatch for input 'raw_input' for model 'cfg_batching'. Expected 12, got 0",
        wording_differs="In a raw request Triton's per-input checks name the input by the frontend's "
        "placeholder 'raw_input'; Nereid names the model's input (docs/http.md, 'Raw binary requests')",
        nereid_says="[request id: <id_unknown>] input byte size mismatch for input 'INPUT0' for model "
        "'cfg_batching'. Expected 12, got 0",
    ),
    Case(
        "binary header length past the end of the body",
        "/v2/models/add_sub/infer",
        _long_header,
        400,
        "inference header size should be in range (0, 232), got: 10200",
        headers=_long_header_headers,
    ),
    Case(
        "binary header length that cuts the JSON",
        "/v2/models/add_sub/infer",
        _cut_header,
        500,
        "failed to parse the request JSON buffer: Missing a comma or '}' after an object member. at 195",
        headers=_cut_header_headers,
        nereid_status=400,
        status_differs=_JSON_400,
    ),
    Case(
        "binary header length not a number",
        "/v2/models/add_sub/infer",
        _add_sub_json(),
        400,
        "Raw request must only have 1 input",
        headers={**JSON, "Inference-Header-Content-Length": "abc"},
        newer_status=400,
        newer_says="Unable to parse Inference-Header-Content-Length, got: abc",
        newer_because="Triton 2.51 reads an unparsable length as 0 (a raw request); current "
        "http_server.cc GetInferenceHeaderLength catches std::stoi's invalid_argument and says so",
    ),
    Case(
        "binary header length negative",
        "/v2/models/add_sub/infer",
        _binary()[0],
        400,
        "inference header size should be in range (0, 232), got: -5",
        headers={**_binary()[1], "Inference-Header-Content-Length": "-5"},
    ),
    Case(
        "binary header length followed by text",
        "/v2/models/add_sub/infer",
        _binary()[0],
        200,
        "",
        headers={
            **_binary()[1],
            "Inference-Header-Content-Length": _binary()[1]["Inference-Header-Content-Length"] + "abc",
        },
    ),
    Case(
        "binary header length beyond int",
        "/v2/models/add_sub/infer",
        _binary()[0],
        400,
        "inference header size should be in range (0, 232), got: 99999999999",
        headers={**_binary()[1], "Inference-Header-Content-Length": "99999999999"},
        newer_status=400,
        newer_says="Unable to parse Inference-Header-Content-Length, value is out of range "
        "[ -2147483648, 2147483647 ], got: 99999999999",
        newer_because="Triton 2.51's std::atoi wraps the value to an int (here one out of range, but "
        "4294967296 would be 0, a raw request); current http_server.cc GetInferenceHeaderLength catches "
        "std::stoi's out_of_range and says so (QA test_inference_header_content_length_out_of_range)",
    ),
    Case(
        "negative shape dimension",
        "/v2/models/add_sub_batched/infer",
        infer_json(
            [
                tensor_json("INPUT0", "INT32", [1, -4], [1, 2, 3, 4]),
                tensor_json("INPUT1", "INT32", [1, 4], [1, 2, 3, 4]),
            ]
        ),
        500,
        "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
        nereid_status=400,
        status_differs=_JSON_400,
    ),
    Case(
        "ensemble input of the wrong shape",
        "/v2/models/ensemble_add_sub/infer",
        infer_json([tensor_json("A", "FP32", [2], FOUR[:2]), tensor_json("B", "FP32", [4], FOUR)]),
        400,
        "unexpected shape for input 'A' for model 'ensemble_add_sub'. Expected [4], got [2]. ",
    ),
    Case(
        "statistics of an unknown model",
        "/v2/models/nope/stats",
        b"",
        400,
        "requested model 'nope' is not available",
        method="GET",
    ),
    Case(
        "statistics of a model that failed to load",
        "/v2/models/broken_init/stats",
        b"",
        400,
        "requested model 'broken_init' is not available",
        method="GET",
    ),
    Case(
        "statistics of an unknown version",
        "/v2/models/add_sub/versions/9/stats",
        b"",
        400,
        "requested model version is not available for model 'add_sub'",
        method="GET",
    ),
    Case(
        "load of a model that is not in the repository",
        "/v2/repository/models/nope/load",
        b"",
        500,
        "failed to load 'nope', failed to poll from model repository",
        wording_differs="Nereid appends what the poll found (': failed to poll model ...: model not found in "
        "any model repository.'); Triton only logs it",
        # Triton's 500 by default; 404 with --load-error-status=client-error (docs/from-triton.md).
    ),
    Case("unload of a model that is not loaded", "/v2/repository/models/nope/unload", b"", 200, ""),
    Case(
        "load with a config override that is not JSON",
        "/v2/repository/models/invalid_config/load",
        b'{"parameters": {"config": "{bad"}}',
        500,
        "failed to load 'invalid_config', failed to poll from model repository",
        wording_differs="Nereid appends the reason (': Invalid config override: ...')",
        # Triton's 500 by default, which its QA test_load_oversized_file_parameter and the client example
        # simple_grpc_model_control.py expect; 400 with --load-error-status=client-error.
    ),
    Case(
        "trace settings naming the trace file",
        "/v2/trace/setting",
        b'{"trace_file": "/tmp/written-by-a-client.json"}',
        501,
        "trace file location can not be updated through network protocol",
    ),
    Case(
        "a model's trace settings clearing the trace file",
        "/v2/models/add_sub/trace/setting",
        b'{"trace_file": null}',
        501,
        "trace file location can not be updated through network protocol",
    ),
    Case(
        "trace level on with no trace file",
        "/v2/trace/setting",
        b'{"trace_level": ["TIMESTAMPS"]}',
        400,
        "Attempting to set invalid trace setting :trace file name is not given",
    ),
    Case("GET on infer", "/v2/models/add_sub/infer", b"", 405, "Method Not Allowed", method="GET"),
    Case("unknown path", "/v2/nothing/here", b"", 404, "Not Found", method="GET"),
]
