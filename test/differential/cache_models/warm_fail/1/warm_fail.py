"""warm_fail: answers every request with an error (Triton's L0_warmup failing_infer), so its warmup fails."""

from __future__ import annotations

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        error = pb_utils.TritonError("An Error Occurred")
        return [pb_utils.InferenceResponse(error=error) for _ in requests]
