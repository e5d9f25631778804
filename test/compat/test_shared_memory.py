"""System shared memory with Triton's own client helpers (tritonclient.utils.shared_memory: shm_open, mmap)
over HTTP and gRPC: create regions, register them, run `simple` and `simple_string` with inputs and outputs
in the regions, read the outputs back from the client's own mapping, unregister, destroy. The session
server runs with --allow-client-shm=true."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException, serialize_byte_tensor, serialized_byte_size

PROTOCOLS = ("http", "grpc")


def _key(name: str) -> str:
    # unique per process so parallel runs on one machine never share an object
    return f"/nereid_compat_{os.getpid()}_{name}"


class Regions:
    """Regions made in one test, always destroyed (and unregistered) at the end."""

    def __init__(self) -> None:
        self.handles: list[Any] = []

    def create(self, name: str, size: int) -> tuple[Any, str]:
        key = _key(name)
        handle = shm.create_shared_memory_region(name, key, size)
        self.handles.append(handle)
        return handle, key

    def destroy(self) -> None:
        for handle in self.handles:
            shm.destroy_shared_memory_region(handle)


@pytest.fixture
def regions(client: Any, grpc: Any) -> Iterator[Regions]:
    r = Regions()
    try:
        yield r
    finally:
        client.unregister_system_shared_memory()
        r.destroy()
    assert client.get_system_shared_memory_status() == []
    assert grpc.get_system_shared_memory_status(as_json=True) == {}


def _api(protocol: str, client: Any, grpc: Any) -> tuple[Any, Any]:
    return (client, httpclient) if protocol == "http" else (grpc, grpcclient)


def _status_names(protocol: str, c: Any) -> set[str]:
    if protocol == "http":
        return {r["name"] for r in c.get_system_shared_memory_status()}
    return set(c.get_system_shared_memory_status(as_json=True).get("regions", {}))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_simple_through_shared_memory(protocol: str, client: Any, grpc: Any, regions: Regions) -> None:
    c, lib = _api(protocol, client, grpc)
    in0 = np.arange(16, dtype=np.int32)
    in1 = np.full(16, 5, dtype=np.int32)
    size = in0.nbytes
    inp, in_key = regions.create("input_data", 2 * size)
    out, out_key = regions.create("output_data", 2 * size)
    shm.set_shared_memory_region(inp, [in0])
    shm.set_shared_memory_region(inp, [in1], offset=size)
    c.register_system_shared_memory("input_data", in_key, 2 * size)
    c.register_system_shared_memory("output_data", out_key, 2 * size)
    assert _status_names(protocol, c) == {"input_data", "output_data"}
    if protocol == "http":
        (status,) = c.get_system_shared_memory_status("input_data")
        assert status["key"] == in_key
        assert status["byte_size"] == 2 * size
    else:
        status = c.get_system_shared_memory_status("input_data").regions["input_data"]
        assert status.key == in_key
        assert status.byte_size == 2 * size

    inputs = [lib.InferInput("INPUT0", [1, 16], "INT32"), lib.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_shared_memory("input_data", size)
    inputs[1].set_shared_memory("input_data", size, offset=size)
    outputs = [lib.InferRequestedOutput("OUTPUT0"), lib.InferRequestedOutput("OUTPUT1")]
    outputs[0].set_shared_memory("output_data", size)
    outputs[1].set_shared_memory("output_data", size, offset=size)
    result = c.infer("simple", inputs, outputs=outputs)

    out0 = result.get_output("OUTPUT0")
    # the bytes went to the region, not into the response
    if protocol == "http":
        shape = out0["shape"]
        assert "data" not in out0
        assert "binary_data_size" not in out0.get("parameters", {})
    else:
        shape = list(out0.shape)
        assert out0.parameters["shared_memory_region"].string_param == "output_data"
        assert all(len(raw) == 0 for raw in result.get_response().raw_output_contents)
    assert shape == [1, 16]
    sums = shm.get_contents_as_numpy(out, np.int32, shape)
    diffs = shm.get_contents_as_numpy(out, np.int32, shape, offset=size)
    np.testing.assert_array_equal(sums, (in0 + in1).reshape(1, 16))
    np.testing.assert_array_equal(diffs, (in0 - in1).reshape(1, 16))

    # a second request reuses the registered regions with new input bytes
    shm.set_shared_memory_region(inp, [np.full(16, 100, dtype=np.int32)])
    c.infer("simple", inputs, outputs=outputs)
    np.testing.assert_array_equal(shm.get_contents_as_numpy(out, np.int32, shape), np.full((1, 16), 105))

    c.unregister_system_shared_memory("input_data")
    assert _status_names(protocol, c) == {"output_data"}
    with pytest.raises(InferenceServerException) as gone:
        c.infer("simple", inputs, outputs=outputs)
    assert "Unable to find shared memory region: 'input_data'" in str(gone.value.message())
    if protocol == "grpc":
        assert gone.value.status() == "StatusCode.NOT_FOUND"
    c.unregister_system_shared_memory()
    assert _status_names(protocol, c) == set()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_inputs_in_shared_memory_outputs_in_response(
    protocol: str, client: Any, grpc: Any, regions: Regions
) -> None:
    c, lib = _api(protocol, client, grpc)
    data = np.arange(32, dtype=np.int32).reshape(2, 16)
    inp, key = regions.create("mixed_in", data.nbytes)
    shm.set_shared_memory_region(inp, [data])
    c.register_system_shared_memory("mixed_in", key, data.nbytes)
    inputs = [lib.InferInput("INPUT0", [2, 16], "INT32"), lib.InferInput("INPUT1", [2, 16], "INT32")]
    inputs[0].set_shared_memory("mixed_in", data.nbytes)
    inputs[1].set_data_from_numpy(np.ones((2, 16), dtype=np.int32))
    result = c.infer("simple", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data + 1)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), data - 1)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_string_tensors_through_shared_memory(
    protocol: str, client: Any, grpc: Any, regions: Regions
) -> None:
    c, lib = _api(protocol, client, grpc)
    in0 = np.array([str(i).encode() for i in range(16)], dtype=np.object_).reshape(1, 16)
    in1 = np.array([b"2"] * 16, dtype=np.object_).reshape(1, 16)
    s0 = serialize_byte_tensor(in0)
    s1 = serialize_byte_tensor(in1)
    size0 = serialized_byte_size(s0)
    size1 = serialized_byte_size(s1)
    in_size = size0 + size1
    out_size = 2 * 256  # room for 16 numbers as length-prefixed strings, per output
    inp, in_key = regions.create("str_in", in_size)
    out, out_key = regions.create("str_out", out_size)
    shm.set_shared_memory_region(inp, [s0, s1])
    c.register_system_shared_memory("str_in", in_key, in_size)
    c.register_system_shared_memory("str_out", out_key, out_size)
    inputs = [lib.InferInput("INPUT0", [1, 16], "BYTES"), lib.InferInput("INPUT1", [1, 16], "BYTES")]
    inputs[0].set_shared_memory("str_in", size0)
    inputs[1].set_shared_memory("str_in", size1, offset=size0)
    outputs = [lib.InferRequestedOutput("OUTPUT0"), lib.InferRequestedOutput("OUTPUT1")]
    outputs[0].set_shared_memory("str_out", 256)
    outputs[1].set_shared_memory("str_out", 256, offset=256)
    c.infer("simple_string", inputs, outputs=outputs)
    sums = shm.get_contents_as_numpy(out, np.object_, [1, 16])
    diffs = shm.get_contents_as_numpy(out, np.object_, [1, 16], offset=256)
    assert [int(v) for v in sums.flat] == [i + 2 for i in range(16)]
    assert [int(v) for v in diffs.flat] == [i - 2 for i in range(16)]


def test_register_errors(client: Any, grpc: Any, regions: Regions) -> None:
    _handle, key = regions.create("twice", 64)
    grpc.register_system_shared_memory("twice", key, 64)
    with pytest.raises(InferenceServerException) as again:
        grpc.register_system_shared_memory("twice", key, 64)
    assert again.value.status() == "StatusCode.ALREADY_EXISTS"
    assert "shared memory region 'twice' already in manager" in str(again.value.message())
    with pytest.raises(InferenceServerException) as again_http:
        client.register_system_shared_memory("twice", key, 64)
    assert again_http.value.status() == "400"

    with pytest.raises(InferenceServerException) as too_big:
        grpc.register_system_shared_memory("too_big", key, 128)
    assert too_big.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert "failed to register shared memory region 'too_big': invalid args" in str(too_big.value.message())

    with pytest.raises(InferenceServerException) as missing:
        client.register_system_shared_memory("missing", _key("never_created"), 64)
    assert "Unable to open shared memory region" in str(missing.value.message())
    assert _status_names("grpc", grpc) == {"twice"}


def test_output_region_too_small(client: Any, grpc: Any, regions: Regions) -> None:
    _out, key = regions.create("small_out", 32)
    grpc.register_system_shared_memory("small_out", key, 32)
    inputs = [
        grpcclient.InferInput("INPUT0", [1, 16], "INT32"),
        grpcclient.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    for tensor in inputs:
        tensor.set_data_from_numpy(np.ones((1, 16), dtype=np.int32))
    output = grpcclient.InferRequestedOutput("OUTPUT0")
    output.set_shared_memory("small_out", 32)
    with pytest.raises(InferenceServerException) as info:
        grpc.infer("simple", inputs, outputs=[output])
    assert "should be at least 64 bytes to hold the results" in str(info.value.message())
    assert client.is_server_live() is True
