"""bad_outputs, by MODE: ok (OUT and EXTRA as the config says) | dtype (OUT as INT64, the config says
TYPE_INT32) | shape (OUT with shape [2], the config says [1]) | undeclared (also an output 'OUTPUT' the
config does not declare) | only_undeclared (nothing but 'OUTPUT') | missing (EXTRA left out) | and OUT made
from other numpy arrays than the config's INT32 [1]: fp64, fp16, bool, bytes (an object array of bytes),
fixed_bytes (a numpy bytes_ array), unicode (a numpy str_ array), object_int (an object array of ints),
complex (complex64, no Triton type), scalar (a 0-d array), empty (shape [0]), transposed (a non-contiguous
[2,2] view), big_endian (INT32 in big-endian byte order)."""

from __future__ import annotations

from typing import Any

import numpy as np

import triton_python_backend_utils as pb_utils

_OTHER_ARRAYS: dict[str, Any] = {
    "fp64": lambda: np.array([1.5], dtype=np.float64),
    "fp16": lambda: np.array([1.5], dtype=np.float16),
    "bool": lambda: np.array([True]),
    "bytes": lambda: np.array([b"one"], dtype=np.object_),
    "fixed_bytes": lambda: np.array([b"one"]),
    "unicode": lambda: np.array(["one"]),
    "object_int": lambda: np.array([1], dtype=np.object_),
    "complex": lambda: np.array([1 + 2j], dtype=np.complex64),
    "scalar": lambda: np.array(7, dtype=np.int32),
    "empty": lambda: np.zeros([0], dtype=np.int32),
    "transposed": lambda: np.arange(4, dtype=np.int32).reshape(2, 2).T,
    "big_endian": lambda: np.array([1], dtype=">i4"),
}


def _outputs(mode: str) -> list[pb_utils.Tensor]:
    out = pb_utils.Tensor("OUT", np.array([1], dtype=np.int32))
    extra = pb_utils.Tensor("EXTRA", np.array([2], dtype=np.int32))
    wrong = pb_utils.Tensor("OUTPUT", np.array([3], dtype=np.int32))
    if mode in _OTHER_ARRAYS:
        return [pb_utils.Tensor("OUT", _OTHER_ARRAYS[mode]()), extra]
    if mode == "dtype":
        return [pb_utils.Tensor("OUT", np.array([1], dtype=np.int64)), extra]
    if mode == "shape":
        return [pb_utils.Tensor("OUT", np.array([1, 2], dtype=np.int32)), extra]
    if mode == "undeclared":
        return [out, extra, wrong]
    if mode == "only_undeclared":
        return [wrong]
    if mode == "missing":
        return [out]
    return [out, extra]


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            mode_tensor = pb_utils.get_input_tensor_by_name(request, "MODE")
            assert mode_tensor is not None, "MODE is a required input"
            mode = mode_tensor.as_numpy()[0].decode()
            responses.append(pb_utils.InferenceResponse(output_tensors=_outputs(mode)))
        return responses
