"""Sixteen responses per request from execute itself, then the final flag (decoupled streaming)."""

from __future__ import annotations

import numpy as np

import triton_python_backend_utils as pb_utils

RESPONSES = 16


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> None:
        for request in requests:
            tensor = pb_utils.get_input_tensor_by_name(request, "IN")
            assert tensor is not None  # a required input
            value = tensor.as_numpy()
            sender = request.get_response_sender()
            for i in range(RESPONSES):
                out = pb_utils.Tensor("OUT", (value + i).astype(np.int32))
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
