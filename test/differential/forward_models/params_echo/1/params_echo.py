"""params_echo: PARAMS is the request's parameters() JSON text, exactly as the backend hands it over."""

from __future__ import annotations

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            text: str = request.parameters()
            out = pb_utils.Tensor("PARAMS", np.array([text.encode()], dtype=np.object_))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
