"""Raw HTTP for the differential suite: the same bytes go to Triton and to Nereid, and what comes back is
compared as it arrived (status, headers, body), so no client library can hide a difference by normalising
it. Also builds KServe v2 inference bodies, JSON and binary (Triton's binary tensor extension).
"""

from __future__ import annotations

import http.client
import json
import re
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

# datatype -> numpy dtype, for the tensors the suite sends and reads back
NUMPY_DTYPES: dict[str, Any] = {
    "BOOL": np.bool_,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
}


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def error(self) -> str:
        """The `error` text of a Triton error body ("" when the body is not one)."""
        try:
            data = json.loads(self.body)
        except ValueError:
            return ""
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            return str(data["error"])
        return ""

    def __str__(self) -> str:
        return f"{self.status} {self.body[:400]!r}"


def request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> Reply:
    """One request on a fresh loopback connection (a server that closes after an error can't poison the
    next request)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


def tensor_json(name: str, datatype: str, shape: list[int], data: Any) -> dict[str, Any]:
    return {"name": name, "datatype": datatype, "shape": shape, "data": data}


def infer_json(
    inputs: list[dict[str, Any]], outputs: list[dict[str, Any]] | None = None, **extra: Any
) -> bytes:
    body: dict[str, Any] = {"inputs": inputs, **extra}
    if outputs is not None:
        body["outputs"] = outputs
    return json.dumps(body).encode()


@dataclass(frozen=True)
class BinaryInput:
    name: str
    datatype: str
    shape: list[int]
    raw: bytes


def bytes_tensor(items: list[bytes]) -> bytes:
    """Triton's BYTES serialisation: each element as a 4-byte little-endian length and its bytes."""
    return b"".join(struct.pack("<I", len(item)) + item for item in items)


def infer_binary(
    inputs: list[BinaryInput],
    outputs: list[dict[str, Any]] | None = None,
    header_length_delta: int = 0,
) -> tuple[bytes, dict[str, str]]:
    """A binary-extension request: JSON header, then each input's raw bytes in order. The header length
    announced can be made wrong on purpose with header_length_delta."""
    header: dict[str, Any] = {
        "inputs": [
            {
                "name": i.name,
                "datatype": i.datatype,
                "shape": i.shape,
                "parameters": {"binary_data_size": len(i.raw)},
            }
            for i in inputs
        ]
    }
    if outputs is not None:
        header["outputs"] = outputs
    head = json.dumps(header).encode()
    body = head + b"".join(i.raw for i in inputs)
    return body, {
        "Inference-Header-Content-Length": str(len(head) + header_length_delta),
        "Content-Type": "application/octet-stream",
    }


def split_binary_reply(reply: Reply) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The JSON header of an inference reply and, for outputs sent as binary, their raw bytes by name."""
    length_text = reply.headers.get("inference-header-content-length")
    if length_text is None:
        return json.loads(reply.body), {}
    length = int(length_text)
    header: dict[str, Any] = json.loads(reply.body[:length])
    raw: dict[str, bytes] = {}
    offset = length
    for output in header.get("outputs", []):
        size = output.get("parameters", {}).get("binary_data_size")
        if size is not None:
            raw[output["name"]] = reply.body[offset : offset + int(size)]
            offset += int(size)
    return header, raw


def output_array(reply: Reply, name: str) -> np.ndarray[Any, Any]:
    """One output of an inference reply as a numpy array (JSON data or binary), shaped as announced."""
    header, raw = split_binary_reply(reply)
    for output in header["outputs"]:
        if output["name"] != name:
            continue
        shape = [int(d) for d in output["shape"]]
        datatype = output["datatype"]
        if name in raw:
            if datatype == "BYTES":
                return np.array(_split_bytes(raw[name]), dtype=np.object_).reshape(shape)
            return np.frombuffer(raw[name], dtype=NUMPY_DTYPES[datatype]).reshape(shape)
        if datatype == "BYTES":
            return np.array(
                [d.encode() if isinstance(d, str) else d for d in output["data"]], dtype=np.object_
            ).reshape(shape)
        return np.array(output["data"], dtype=NUMPY_DTYPES[datatype]).reshape(shape)
    raise KeyError(f"no output {name} in {header}")


def _split_bytes(raw: bytes) -> list[bytes]:
    items: list[bytes] = []
    offset = 0
    while offset < len(raw):
        (length,) = struct.unpack_from("<I", raw, offset)
        offset += 4
        items.append(raw[offset : offset + length])
        offset += length
    return items


def differences(triton: Any, nereid: Any, path: str = "") -> list[str]:
    """Every place two JSON documents differ, as 'path: triton=... nereid=...' lines (lists compared by
    position)."""
    out: list[str] = []
    if isinstance(triton, dict) and isinstance(nereid, dict):
        for key in sorted(set(triton) | set(nereid)):
            where = f"{path}.{key}"
            if key not in nereid:
                out.append(f"{where}: only Triton has it = {json.dumps(triton[key])[:300]}")
            elif key not in triton:
                out.append(f"{where}: only Nereid has it = {json.dumps(nereid[key])[:300]}")
            else:
                out.extend(differences(triton[key], nereid[key], where))
    elif isinstance(triton, list) and isinstance(nereid, list) and len(triton) == len(nereid):
        for index, (a, b) in enumerate(zip(triton, nereid, strict=True)):
            out.extend(differences(a, b, f"{path}[{index}]"))
    elif triton != nereid or type(triton) is not type(nereid):
        out.append(f"{path or '.'}: Triton={json.dumps(triton)[:300]} Nereid={json.dumps(nereid)[:300]}")
    return out


def relative_to_model_folder(text: str, model: str) -> str:
    """Triton's text with `<absolute path>/<model>/` dropped, as Nereid writes paths in load errors: relative
    to the model folder, so a client never learns where the server keeps its files (docs/security.md)."""
    return re.sub(rf"/\S*?/{re.escape(model)}/", "", text)
