"""The datatype table of the child side: KServe/Triton datatype names, Triton's numeric codes (the
TRITONSERVER_DataType values `pb_utils` uses), numpy dtypes, and the BYTES wire form (each element a
4-byte little-endian length followed by its bytes), with Triton's (de)serialisation helpers."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import numpy.typing as npt

# name -> Triton code; numpy dtype per code (BYTES is np.object_; BF16 has no numpy type).
NAME_TO_CODE: dict[str, int] = {
    "BOOL": 1,
    "UINT8": 2,
    "UINT16": 3,
    "UINT32": 4,
    "UINT64": 5,
    "INT8": 6,
    "INT16": 7,
    "INT32": 8,
    "INT64": 9,
    "FP16": 10,
    "FP32": 11,
    "FP64": 12,
    "BYTES": 13,
    "BF16": 14,
}
CODE_TO_NAME: dict[int, str] = {code: name for name, code in NAME_TO_CODE.items()}

_CODE_TO_NUMPY: dict[int, Any] = {
    1: np.bool_,
    2: np.uint8,
    3: np.uint16,
    4: np.uint32,
    5: np.uint64,
    6: np.int8,
    7: np.int16,
    8: np.int32,
    9: np.int64,
    10: np.float16,
    11: np.float32,
    12: np.float64,
    13: np.object_,
}

# Fixed element sizes by name (0 = variable, BYTES).
ITEM_SIZE: dict[str, int] = {
    "BOOL": 1,
    "UINT8": 1,
    "UINT16": 2,
    "UINT32": 4,
    "UINT64": 8,
    "INT8": 1,
    "INT16": 2,
    "INT32": 4,
    "INT64": 8,
    "FP16": 2,
    "FP32": 4,
    "FP64": 8,
    "BYTES": 0,
    "BF16": 2,
}

TRITON_STRING_TO_NUMPY: dict[str, Any] = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

_LENGTH = struct.Struct("<I")


def _bfloat16() -> Any:
    """ml_dtypes' bfloat16 when it is installed (it is not a numpy type of its own)."""
    try:
        import ml_dtypes  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return ml_dtypes.bfloat16


def triton_to_numpy_type(data_type: int) -> Any:
    """Triton datatype code -> numpy type; None for unknown codes (and BF16 without ml_dtypes)."""
    if data_type == 14:
        return _bfloat16()
    return _CODE_TO_NUMPY.get(data_type)


_DTYPE_TO_CODE: dict[np.dtype[Any], int] = {np.dtype(t): c for c, t in _CODE_TO_NUMPY.items() if c != 13}


def numpy_to_triton_type(data_type: Any) -> int | None:
    """numpy dtype or type -> Triton datatype code; None when Triton has no such type."""
    try:
        dt = data_type if isinstance(data_type, np.dtype) else np.dtype(data_type)
    except TypeError:
        return None
    code = _DTYPE_TO_CODE.get(dt)
    if code is not None:
        return code
    if dt.kind in ("O", "S"):
        return 13
    if dt.byteorder == ">":
        return _DTYPE_TO_CODE.get(dt.newbyteorder("="))
    bf16 = _bfloat16()
    if bf16 is not None and dt == np.dtype(bf16):
        return 14
    return None


def triton_string_to_numpy(triton_type_string: str) -> Any:
    return TRITON_STRING_TO_NUMPY[triton_type_string]


def _element_bytes(obj: Any) -> bytes:
    if isinstance(obj, bytes):
        return obj
    if isinstance(obj, (bytearray, memoryview)):
        return bytes(obj)
    if isinstance(obj, np.bytes_):
        return bytes(obj)
    return str(obj).encode("utf-8")


def serialize_bytes(array: npt.NDArray[Any]) -> bytes:
    """Elements of an object/bytes/str array in C order, each as u32-LE length + bytes."""
    parts: list[bytes] = []
    pack = _LENGTH.pack
    for obj in array.reshape(-1, order="C"):
        b = _element_bytes(obj)
        parts.append(pack(len(b)))
        parts.append(b)
    return b"".join(parts)


def serialize_byte_tensor(input_tensor: npt.NDArray[Any]) -> bytes | tuple[()] | None:
    """Triton's helper: () for an empty tensor, None for a non-BYTES dtype, else the serialised bytes."""
    if input_tensor.size == 0:
        return ()
    if input_tensor.dtype == np.object_ or input_tensor.dtype.type == np.bytes_:
        return serialize_bytes(input_tensor)
    return None


def deserialize_bytes_tensor(encoded_tensor: bytes | bytearray | memoryview) -> npt.NDArray[np.object_]:
    """u32-LE length-prefixed elements -> 1-D np.object_ array of bytes. Raises ValueError on bad framing."""
    view = memoryview(encoded_tensor).cast("B")
    out: list[bytes] = []
    offset = 0
    end = len(view)
    unpack = _LENGTH.unpack_from
    while offset < end:
        if offset + 4 > end:
            raise ValueError("malformed BYTES tensor: truncated element length")
        (length,) = unpack(view, offset)
        offset += 4
        if offset + length > end:
            raise ValueError("malformed BYTES tensor: element length exceeds the data")
        out.append(bytes(view[offset : offset + length]))
        offset += length
    result = np.empty(len(out), dtype=np.object_)
    result[:] = out
    return result
