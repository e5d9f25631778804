"""warm_add_sub: the sum and the difference of its two inputs, in the output dtypes the config names."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        self.dtypes: dict[str, Any] = {}
        for name in ("OUTPUT0", "OUTPUT1"):
            output = pb_utils.get_output_config_by_name(config, name)
            if output is None:
                raise pb_utils.TritonModelException(f"the model config has no output {name}")
            self.dtypes[name] = pb_utils.triton_string_to_numpy(output["data_type"])

    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            if in0 is None or in1 is None:
                error = pb_utils.TritonError("INPUT0 and INPUT1 are required")
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            a: np.ndarray[Any, Any] = in0.as_numpy()
            b: np.ndarray[Any, Any] = in1.as_numpy()
            outputs = [
                pb_utils.Tensor("OUTPUT0", (a + b).astype(self.dtypes["OUTPUT0"])),
                pb_utils.Tensor("OUTPUT1", (a - b).astype(self.dtypes["OUTPUT1"])),
            ]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
