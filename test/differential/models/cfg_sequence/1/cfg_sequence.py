"""cfg_sequence: OUTPUTi = INPUTi for every output the config declares, whatever the dtype; an optional
input that was not sent gives no output."""

from __future__ import annotations

import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        self.pairs = [(o["name"].replace("OUTPUT", "INPUT"), o["name"]) for o in config["output"]]

    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            outputs = []
            for input_name, output_name in self.pairs:
                tensor = pb_utils.get_input_tensor_by_name(request, input_name)
                if tensor is not None:
                    outputs.append(pb_utils.Tensor(output_name, tensor.as_numpy()))
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
