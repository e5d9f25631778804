"""Calls vt_add_sub through BLS for every request and answers with its outputs."""

from __future__ import annotations

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            inner = pb_utils.InferenceRequest(
                model_name="vt_add_sub",
                inputs=request.inputs(),
                requested_output_names=["OUTPUT0", "OUTPUT1"],
            )
            result = inner.exec()
            if result.has_error():
                responses.append(pb_utils.InferenceResponse(error=result.error()))
            else:
                responses.append(pb_utils.InferenceResponse(output_tensors=result.output_tensors()))
        return responses
