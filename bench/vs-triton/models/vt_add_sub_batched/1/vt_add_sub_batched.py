"""vt_add_sub for a batching model: each request of the batch is answered on its own, as in Triton's
add_sub example (the dynamic batcher hands the model several requests, not one stacked tensor)."""

from __future__ import annotations

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            assert in0 is not None  # the config makes both inputs required
            assert in1 is not None
            a, b = in0.as_numpy(), in1.as_numpy()
            out = [pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", a - b)]
            responses.append(pb_utils.InferenceResponse(output_tensors=out))
        return responses
