"""bad_outputs, by MODE: ok (OUT and EXTRA as the config says) | dtype (OUT as INT64, the config says
TYPE_INT32) | shape (OUT with shape [2], the config says [1]) | undeclared (also an output 'OUTPUT' the
config does not declare) | only_undeclared (nothing but 'OUTPUT') | missing (EXTRA left out)."""

from __future__ import annotations

import numpy as np

import triton_python_backend_utils as pb_utils


def _outputs(mode: str) -> list[pb_utils.Tensor]:
    out = pb_utils.Tensor("OUT", np.array([1], dtype=np.int32))
    extra = pb_utils.Tensor("EXTRA", np.array([2], dtype=np.int32))
    wrong = pb_utils.Tensor("OUTPUT", np.array([3], dtype=np.int32))
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
