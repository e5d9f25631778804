"""Triton vs Nereid: CUDA shared memory on a machine without a GPU, over HTTP and gRPC. Both answer the
calls Triton's *_shm*_client.py examples and reuse_infer_objects_client.py make first (status, unregister
one or all) the same way, check register requests the same way, and refuse a well-formed register; the
region names they share with system shared memory behave alike.

Intended differences (docs/shared-memory.md): a well-formed register is refused with the same status,
but Nereid says why ("GPUs not supported", the words of Triton's build without GPU support) where Triton's
GPU build says "invalid args" and logs the CUDA driver's reason; and a register body that fails TritonJson's
checks is a 400 on Nereid (Triton: 500, see _JSON_400 in diff_cases.py), with Triton's text.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from diff_servers import Pair
from diff_wire import Reply
from tritonclient.utils import InferenceServerException

HANDLE = base64.b64encode(bytes(64)).decode()
GOOD: dict[str, Any] = {"raw_handle": {"b64": HANDLE}, "device_id": 0, "byte_size": 64}


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


@pytest.fixture(scope="module")
def system_region(pair: Pair) -> Iterator[str]:
    """A system shared-memory region registered on both servers under the same name."""
    name = "diff_sys"
    key = f"/nereid_diff_cuda_{os.getpid()}"
    path = Path("/dev/shm") / key.lstrip("/")
    path.write_bytes(bytes(64))
    body = _json({"key": key, "offset": 0, "byte_size": 64})
    try:
        triton, nereid = pair.send("POST", f"/v2/systemsharedmemory/region/{name}/register", body)
        assert (triton.status, nereid.status) == (200, 200), f"Triton {triton}, Nereid {nereid}"
        yield name
    finally:
        pair.send("POST", f"/v2/systemsharedmemory/region/{name}/unregister")
        path.unlink(missing_ok=True)


def _same(triton: Reply, nereid: Reply) -> None:
    assert nereid.status == triton.status, f"Triton {triton}, Nereid {nereid}"
    if triton.body:
        assert nereid.json() == triton.json()
    else:
        assert nereid.body == b""


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v2/cudasharedmemory/status"),
        ("GET", "/v2/cudasharedmemory/region/never/status"),
        ("POST", "/v2/cudasharedmemory/unregister"),
        ("POST", "/v2/cudasharedmemory/region/never/unregister"),
        ("POST", "/v2/cudasharedmemory/register"),
    ],
)
def test_cuda_status_and_unregister(pair: Pair, method: str, path: str) -> None:
    _same(*pair.send(method, path))


@pytest.mark.parametrize(
    ("body", "triton_status"),
    [
        pytest.param({}, 400, id="no raw_handle"),
        pytest.param({**GOOD, "raw_handle": {"b64": "AAAA"}}, 400, id="short handle"),
        pytest.param({"raw_handle": {"b64": HANDLE}, "device_id": 0}, 500, id="no byte_size"),
        pytest.param({"raw_handle": {"b64": HANDLE}, "byte_size": 64}, 500, id="no device_id"),
        pytest.param({**GOOD, "raw_handle": {}}, 500, id="no b64"),
        pytest.param({**GOOD, "raw_handle": {"b64": 5}}, 500, id="b64 not a string"),
        pytest.param({**GOOD, "device_id": -1}, 500, id="negative id"),
    ],
)
def test_malformed_register(pair: Pair, body: dict[str, Any], triton_status: int) -> None:
    triton, nereid = pair.send("POST", "/v2/cudasharedmemory/region/c/register", _json(body))
    assert triton.status == triton_status, str(triton)
    assert nereid.status == 400, str(nereid)
    assert nereid.error() == triton.error()


def test_register_needs_a_gpu(pair: Pair) -> None:
    triton, nereid = pair.send(
        "POST",
        "/v2/cudasharedmemory/region/c/register",
        _json(GOOD),
    )
    assert triton.status == nereid.status == 400
    assert triton.error() == "failed to register shared memory region: invalid args"
    assert nereid.error() == "failed to register CUDA shared memory region: 'c', GPUs not supported"
    _same(*pair.send("GET", "/v2/cudasharedmemory/status"))


def test_names_are_shared_with_system_regions(pair: Pair, system_region: str) -> None:
    name = system_region
    _same(*pair.send("GET", f"/v2/cudasharedmemory/region/{name}/status"))
    triton, nereid = pair.send("POST", f"/v2/cudasharedmemory/region/{name}/register", _json(GOOD))
    assert triton.status == 400
    assert triton.error() == f"shared memory region '{name}' already in manager"
    _same(triton, nereid)
    # Unregistering CUDA regions, one by this name or all, leaves the system region alone.
    _same(*pair.send("POST", f"/v2/cudasharedmemory/region/{name}/unregister"))
    _same(*pair.send("POST", "/v2/cudasharedmemory/unregister"))
    triton, nereid = pair.send("GET", "/v2/systemsharedmemory/status")
    assert [r["name"] for r in nereid.json()] == [r["name"] for r in triton.json()] == [name]


# --- gRPC, through the real tritonclient.grpc ------------------------------------------------------------


def _outcome(call: Callable[[Any], Any], client: Any) -> tuple[str, Any]:
    try:
        return "OK", call(client)
    except InferenceServerException as err:
        return str(err.status()), str(err.message())


GRPC_CALLS: list[Any] = [
    pytest.param(lambda c: c.get_cuda_shared_memory_status(as_json=True), id="status"),
    pytest.param(lambda c: c.get_cuda_shared_memory_status("never", as_json=True), id="status of one"),
    pytest.param(lambda c: c.unregister_cuda_shared_memory(), id="unregister all"),
    pytest.param(lambda c: c.unregister_cuda_shared_memory("never"), id="unregister one"),
]


@pytest.mark.parametrize("call", GRPC_CALLS)
def test_grpc_cuda_calls(clients: tuple[Any, Any], call: Callable[[Any], Any]) -> None:
    triton, nereid = (_outcome(call, c) for c in clients)
    assert nereid == triton


def test_grpc_register(clients: tuple[Any, Any], system_region: str) -> None:
    def register(name: str) -> Callable[[Any], Any]:
        return lambda c: c.register_cuda_shared_memory(name, bytes(64), 0, 64)

    triton, nereid = (_outcome(register("c"), c) for c in clients)
    assert triton == ("StatusCode.INVALID_ARGUMENT", "failed to register shared memory region: invalid args")
    assert nereid == (
        "StatusCode.INVALID_ARGUMENT",
        "failed to register CUDA shared memory region: 'c', GPUs not supported",
    )
    triton, nereid = (_outcome(register(system_region), c) for c in clients)
    assert triton[0] == "StatusCode.ALREADY_EXISTS"
    assert nereid == triton
    status = (_outcome(lambda c: c.get_cuda_shared_memory_status(system_region), c) for c in clients)
    triton, nereid = status
    assert triton[0] == "StatusCode.NOT_FOUND"
    assert nereid == triton
