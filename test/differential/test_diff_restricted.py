"""Triton vs Nereid started with the same --http-restricted-api / --grpc-restricted-protocol and
header-forward flags: for a request of every category, over HTTP (raw bytes) and gRPC (tritonclient), the
answer without the header, with a wrong value and with the right one; the command lines both refuse, with
the same words; and the parameters a Python model sees of forwarded headers and metadata.

This module starts its own pair (the session's `pair` has no restrictions): a repository of add_sub and
params_echo, which answers with its request.parameters() text.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from diff_servers import MODELS, NEREID, TRITON, Pair, node_executable, triton_available
from tritonclient.utils import InferenceServerException

from conftest import start_pair

# Every category restricted, in four groups (HTTP keys in mixed case: header names are case-insensitive).
HTTP_GROUPS = {
    "health,metadata": ("H-Key", "h-val"),
    "inference": ("Infer-Key", "ik"),
    "shared-memory,model-config": ("s-key", "s=val:1"),
    "model-repository,statistics,trace,logging": ("Admin-Key", "Secret"),
}
GRPC_GROUPS = {
    "health,metadata": ("h-key", "h-val"),
    "inference": ("infer-key", "ik"),
    "shared-memory,model-config": ("s-key", "s=val:1"),
    "model-repository,statistics,trace,logging": ("admin-key", "Secret"),
}
FLAGS = [
    "--model-control-mode=explicit",
    "--load-model=*",
    *(f"--http-restricted-api={c}:{k}={v}" for c, (k, v) in HTTP_GROUPS.items()),
    *(f"--grpc-restricted-protocol={c}:{k}={v}" for c, (k, v) in GRPC_GROUPS.items()),
    "--http-header-forward-pattern=^x-fwd-",
    "--grpc-header-forward-pattern=^x-fwd-",
]


def _required(groups: dict[str, tuple[str, str]], prefix: str) -> dict[str, tuple[str, str]]:
    return {c: (prefix + k, v) for cs, (k, v) in groups.items() for c in cs.split(",")}


HTTP_REQUIRED = _required(HTTP_GROUPS, "")
GRPC_REQUIRED = _required(GRPC_GROUPS, "triton-grpc-protocol-")


@pytest.fixture(scope="module")
def restricted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    work: Path = tmp_path_factory.mktemp("restricted")
    repository = work / "models"
    shutil.copytree(MODELS / "add_sub", repository / "add_sub", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        Path(__file__).resolve().parent / "forward_models" / "params_echo",
        repository / "params_echo",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    yield from start_pair(work, repository, FLAGS)


# ---- HTTP ----


def _send(port: int, method: str, path: str, body: bytes | None, headers: list[tuple[str, str]]) -> Any:
    """One request with the headers exactly as listed (case kept, repeats as separate lines)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for name, value in [*headers, ("Content-Length", str(len(body or b"")))]:
            conn.putheader(name, value)
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _http(pair: Pair, method: str, path: str, body: bytes | None, headers: list[tuple[str, str]]) -> Any:
    return (
        _send(pair.triton.http_port, method, path, body, headers),
        _send(pair.nereid.http_port, method, path, body, headers),
    )


ADD_SUB = json.dumps(
    {
        "inputs": [
            {"name": "INPUT0", "shape": [4], "datatype": "FP32", "data": [1, 2, 3, 4]},
            {"name": "INPUT1", "shape": [4], "datatype": "FP32", "data": [1, 1, 1, 1]},
        ]
    }
).encode()

# One request per category (several for some), each one Triton and Nereid answer alike once allowed. (Not
# shared-memory register/unregister: Triton 2.51 allows client shared memory, Nereid follows the newer
# Triton that needs --allow-client-shm, a flag 2.51 refuses; the restriction itself comes first either way.)
HTTP_CASES = [
    ("health", "GET", "/v2/health/live", None),
    ("health", "GET", "/v2/models/add_sub/ready", None),
    ("metadata", "GET", "/v2/models/add_sub", None),
    ("inference", "POST", "/v2/models/add_sub/infer", ADD_SUB),
    ("shared-memory", "GET", "/v2/systemsharedmemory/status", None),
    ("model-config", "GET", "/v2/models/add_sub/config", None),
    ("model-repository", "POST", "/v2/repository/index", b"{}"),
    ("model-repository", "POST", "/v2/repository/models/add_sub/load", b"{}"),
    ("statistics", "GET", "/v2/models/add_sub/stats", None),
    ("trace", "GET", "/v2/trace/setting", None),
    ("logging", "GET", "/v2/logging", None),
]


@pytest.mark.parametrize(("category", "method", "path", "body"), HTTP_CASES)
def test_http_category(restricted: Pair, category: str, method: str, path: str, body: bytes | None) -> None:
    header, value = HTTP_REQUIRED[category]
    for headers in ([], [(header, value + "x")], [(header, value.swapcase())], [("Other-Key", value)]):
        (t_status, t_body), (n_status, n_body) = _http(restricted, method, path, body, headers)
        assert t_status == 403, (headers, t_body)
        assert (n_status, json.loads(n_body)) == (t_status, json.loads(t_body)), headers
    for name in (header, header.lower(), header.upper()):
        (t_status, t_body), (n_status, n_body) = _http(restricted, method, path, body, [(name, value)])
        assert t_status != 403, t_body
        assert n_status == t_status, (name, t_body, n_body)
        if t_status != 200:
            assert json.loads(n_body) == json.loads(t_body)


def test_http_generate_is_inference(restricted: Pair) -> None:
    (t_status, t_body), (n_status, n_body) = _http(
        restricted, "POST", "/v2/models/add_sub/generate", b"{}", []
    )
    assert (
        (n_status, json.loads(n_body))
        == (t_status, json.loads(t_body))
        == (
            403,
            {"error": "This API is restricted, expecting header 'Infer-Key'"},
        )
    )


def test_http_restriction_comes_before_the_verb(restricted: Pair) -> None:
    (t, n) = _http(restricted, "DELETE", "/v2/health/live", None, [])
    assert t[0] == n[0] == 403
    (t, n) = _http(restricted, "DELETE", "/v2/health/live", None, [("H-Key", "h-val")])
    assert t[0] == n[0] == 405
    assert json.loads(n[1]) == json.loads(t[1])


@pytest.mark.parametrize(
    ("values", "status"), [(["Secret", "other"], 200), (["other", "Secret"], 403)], ids=["first", "second"]
)
def test_http_first_of_repeated_headers_decides(restricted: Pair, values: list[str], status: int) -> None:
    (t, n) = _http(restricted, "GET", "/v2/logging", None, [("Admin-Key", v) for v in values])
    assert t[0] == n[0] == status


def _params_http(port: int, headers: list[tuple[str, str]], parameters: dict[str, Any]) -> Any:
    body = json.dumps(
        {
            "inputs": [{"name": "INPUT0", "shape": [1], "datatype": "FP32", "data": [1]}],
            "parameters": parameters,
        }
    ).encode()
    status, reply = _send(port, "POST", "/v2/models/params_echo/infer", body, [("Infer-Key", "ik"), *headers])
    assert status == 200, reply
    return json.loads(json.loads(reply)["outputs"][0]["data"][0])


def test_http_forwarded_headers_reach_the_model(restricted: Pair) -> None:
    headers = [
        ("X-Fwd-Upper", "U"),
        ("x-fwd-a", "header"),
        ("x-fwd-b", "one"),
        ("x-fwd-b", "two"),
        ("x-other", "not forwarded"),
        ("my-x-fwd-c", "not forwarded"),
    ]
    parameters = {"x-fwd-a": "body", "n": 5, "flag": True}
    triton = _params_http(restricted.triton.http_port, headers, parameters)
    nereid = _params_http(restricted.nereid.http_port, headers, parameters)
    # Triton passes repeats and the body's same-named parameter on as duplicate JSON keys; json.loads keeps
    # the last, the header's, which is what Nereid passes.
    assert (
        nereid == triton == {"x-fwd-a": "header", "n": 5, "flag": True, "X-Fwd-Upper": "U", "x-fwd-b": "two"}
    )


# ---- gRPC ----


@pytest.fixture(scope="module")
def clients(restricted: Pair) -> Iterator[tuple[Any, Any]]:
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{restricted.triton.grpc_port}")
    nereid = grpcclient.InferenceServerClient(f"127.0.0.1:{restricted.nereid.grpc_port}")
    try:
        yield triton, nereid
    finally:
        triton.close()
        nereid.close()


def _add_sub_inputs() -> list[Any]:
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        tensor = grpcclient.InferInput(name, [4], "FP32")
        tensor.set_data_from_numpy(np.array([1, 2, 3, 4], dtype=np.float32))
        inputs.append(tensor)
    return inputs


Call = Callable[[Any, dict[str, str]], Any]

GRPC_CASES: list[tuple[str, str, Call]] = [
    ("health", "ServerLive", lambda c, h: c.is_server_live(headers=h)),
    ("health", "ModelReady", lambda c, h: c.is_model_ready("add_sub", headers=h)),
    ("metadata", "ServerMetadata", lambda c, h: c.get_server_metadata(headers=h) is not None),
    ("metadata", "ModelMetadata", lambda c, h: c.get_model_metadata("add_sub", headers=h, as_json=True)),
    (
        "inference",
        "ModelInfer",
        lambda c, h: c.infer("add_sub", _add_sub_inputs(), headers=h).as_numpy("OUTPUT0").tolist(),
    ),
    (
        "shared-memory",
        "SystemSharedMemoryStatus",
        lambda c, h: c.get_system_shared_memory_status(headers=h, as_json=True),
    ),
    ("model-config", "ModelConfig", lambda c, h: c.get_model_config("add_sub", headers=h) is not None),
    ("model-repository", "RepositoryIndex", lambda c, h: c.get_model_repository_index(headers=h) is not None),
    ("model-repository", "RepositoryModelLoad", lambda c, h: c.load_model("add_sub", headers=h)),
    (
        "statistics",
        "ModelStatistics",
        lambda c, h: c.get_inference_statistics("add_sub", headers=h) is not None,
    ),
    ("trace", "TraceSetting", lambda c, h: c.get_trace_settings(headers=h) is not None),
    ("logging", "LogSettings", lambda c, h: c.get_log_settings(headers=h) is not None),
]


def _outcome(call: Call, client: Any, headers: dict[str, str]) -> tuple[str, Any]:
    try:
        return "OK", call(client, headers)
    except InferenceServerException as err:
        return str(err.status()), str(err.message())


@pytest.mark.parametrize(("category", "rpc", "call"), GRPC_CASES, ids=[c[1] for c in GRPC_CASES])
def test_grpc_category(clients: tuple[Any, Any], category: str, rpc: str, call: Call) -> None:
    triton, nereid = clients
    key, value = GRPC_REQUIRED[category]
    bare = key.removeprefix("triton-grpc-protocol-")
    for headers in ({}, {key: value + "x"}, {key: value.swapcase()}, {bare: value}):
        t = _outcome(call, triton, headers)
        assert t == ("StatusCode.UNAVAILABLE", f"This protocol is restricted, expecting header '{key}'"), (
            headers
        )
        assert _outcome(call, nereid, headers) == t, headers
    t = _outcome(call, triton, {key: value})
    assert t[0] == "OK", t
    assert _outcome(call, nereid, {key: value}) == t


def _stream(
    client: Any, headers: dict[str, str], parameters: dict[str, Any] | None = None
) -> tuple[Any, Any]:
    """One request on a new stream: (PARAMS text or None, error text or None)."""
    answers: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)), headers=headers)
    try:
        tensor = grpcclient.InferInput("INPUT0", [1], "FP32")
        tensor.set_data_from_numpy(np.array([1], dtype=np.float32))
        # A stream that already ended raises here; its error is in the queue.
        with contextlib.suppress(InferenceServerException):
            client.async_stream_infer("params_echo", [tensor], parameters=parameters)
        result, error = answers.get(timeout=60)
    finally:
        client.stop_stream()
    if error is not None:
        return None, str(error)
    return result.as_numpy("PARAMS")[0].decode(), None


def test_grpc_stream_is_inference(clients: tuple[Any, Any]) -> None:
    triton, nereid = (_stream(c, {}) for c in clients)
    assert (
        nereid
        == triton
        == (
            None,
            "[StatusCode.UNAVAILABLE] This protocol is restricted, expecting header "
            "'triton-grpc-protocol-infer-key'",
        )
    )


FORWARD_METADATA = {
    "triton-grpc-protocol-infer-key": "ik",
    "x-fwd-a": "header",
    "x-fwd-c": "c",
    "x-other": "no",
}


def test_grpc_forwarded_metadata_reaches_the_model(clients: tuple[Any, Any]) -> None:
    def params(client: Any) -> Any:
        tensor = grpcclient.InferInput("INPUT0", [1], "FP32")
        tensor.set_data_from_numpy(np.array([1], dtype=np.float32))
        result = client.infer(
            "params_echo", [tensor], headers=FORWARD_METADATA, parameters={"x-fwd-a": "body", "n": 5}
        )
        return json.loads(result.as_numpy("PARAMS")[0])

    triton, nereid = (params(c) for c in clients)
    assert nereid == triton == {"x-fwd-a": "header", "n": 5, "x-fwd-c": "c"}


def test_grpc_stream_forwards_its_metadata(clients: tuple[Any, Any]) -> None:
    (t_text, t_err), (n_text, n_err) = (_stream(c, FORWARD_METADATA, {"x-fwd-c": "body"}) for c in clients)
    assert t_err is None, t_err
    assert n_err is None, n_err
    assert json.loads(n_text) == json.loads(t_text) == {"x-fwd-a": "header", "x-fwd-c": "c"}


# ---- command lines both refuse ----

REFUSED = [
    ["--http-restricted-api=foo:a=b"],
    ["--http-restricted-api=health"],
    ["--http-restricted-api=health:a="],
    ["--http-restricted-api=:a=b"],
    ["--http-restricted-api=health,,metadata:a=b"],
    ["--http-restricted-api=Health:a=b"],
    ["--http-restricted-api=health:a=b", "--http-restricted-api=health:a=b"],
    ["--http-restricted-api=health,health:a=b"],
    ["--grpc-restricted-protocol=shm:a=b"],
    ["--grpc-restricted-protocol=inference:k"],
    ["--grpc-restricted-protocol=trace:a=b", "--grpc-restricted-protocol=logging,trace:c=d"],
]


@pytest.mark.parametrize("flags", REFUSED, ids=[" ".join(f) for f in REFUSED])
def test_refused_command_lines(tmp_path: Path, flags: list[str]) -> None:
    if not triton_available() or node_executable() is None:
        pytest.skip("needs Triton and node")
    common = [f"--model-repository={tmp_path}", "--allow-metrics=false", "--http-port=1", "--grpc-port=2"]
    triton = subprocess.run([str(TRITON), *common, *flags], capture_output=True, text=True, timeout=60)
    nereid = subprocess.run(
        [str(node_executable()), str(NEREID), *common, *flags], capture_output=True, text=True, timeout=60
    )
    assert triton.returncode != 0
    assert nereid.returncode != 0
    # Triton prints its usage, then the error; Nereid the error alone, after "error: ".
    triton_error = triton.stderr.strip().splitlines()[-1].strip()
    assert nereid.stderr.strip() == f"error: {triton_error}"
