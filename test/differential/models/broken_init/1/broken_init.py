"""broken_init: fails to load, on purpose, with a recognisable message."""

from __future__ import annotations

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        raise pb_utils.TritonModelException("broken_init refuses to load")

    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        return []
