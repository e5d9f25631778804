"""bls_add_sub: calls add_sub through BLS, passing its request's trace so the child joins the trace."""

from __future__ import annotations

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            inputs = [pb_utils.get_input_tensor_by_name(request, n) for n in ("INPUT0", "INPUT1")]
            child = pb_utils.InferenceRequest(
                model_name="add_sub",
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=[t for t in inputs if t is not None],
                trace=request.trace(),
            )
            answer = child.exec()
            if answer.has_error():
                responses.append(pb_utils.InferenceResponse(error=answer.error()))
                continue
            responses.append(pb_utils.InferenceResponse(output_tensors=answer.output_tensors()))
        return responses
