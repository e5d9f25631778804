"""What the bundled repository's files say, read independently of the server: config.pbtxt parsed with
Triton's own ModelConfig protobuf (shipped inside tritonclient) and the label files. The suite compares the
server's answers against these.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from nereid_server import MODEL_REPOSITORY

# The models the bundled repository must offer (names and I/O as Triton's examples have them).
BUNDLED_MODELS = (
    "simple",
    "simple_int8",
    "simple_string",
    "densenet_onnx",
    "densenet_batched",
    "add_sub_fp32",
    "identity_fp32",
)


@dataclass(frozen=True)
class TensorSpec:
    name: str
    datatype: str  # KServe name: INT32, FP32, BYTES, ...
    config_type: str  # model_config.proto enum name: TYPE_INT32, TYPE_STRING, ...
    dims: tuple[int, ...]
    label_filename: str = ""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    max_batch_size: int
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    path: Path

    def input(self, name: str) -> TensorSpec:
        return next(t for t in self.inputs if t.name == name)

    def output(self, name: str) -> TensorSpec:
        return next(t for t in self.outputs if t.name == name)

    def metadata_shape(self, tensor: TensorSpec) -> list[int]:
        """The shape model metadata reports: a leading -1 for batching models."""
        return ([-1] if self.max_batch_size > 0 else []) + list(tensor.dims)


def _kserve_name(config_type: str) -> str:
    name = config_type.removeprefix("TYPE_")
    return "BYTES" if name == "STRING" else name


def _tensor(t: model_config_pb2.ModelInput | model_config_pb2.ModelOutput) -> TensorSpec:
    config_type = model_config_pb2.DataType.Name(t.data_type)
    label = t.label_filename if isinstance(t, model_config_pb2.ModelOutput) else ""
    return TensorSpec(t.name, _kserve_name(config_type), config_type, tuple(int(d) for d in t.dims), label)


@cache
def model_spec(name: str) -> ModelSpec:
    path = MODEL_REPOSITORY / name
    config = text_format.Parse(
        (path / "config.pbtxt").read_text(encoding="utf-8"), model_config_pb2.ModelConfig()
    )
    return ModelSpec(
        name=config.name or name,
        max_batch_size=int(config.max_batch_size),
        inputs=tuple(_tensor(t) for t in config.input),
        outputs=tuple(_tensor(t) for t in config.output),
        path=path,
    )


@cache
def labels(model: str, filename: str) -> tuple[str, ...]:
    return tuple((MODEL_REPOSITORY / model / filename).read_text(encoding="utf-8").splitlines())


def require_ready(index: dict[str, dict[str, Any]], model: str) -> None:
    """Skips when `model` was not in the server's repository index at startup (an example other work has
    not added yet); fails, with the server's reason, when it was there but did not load."""
    entry = index.get(model)
    if entry is None:
        pytest.skip(f"examples/model_repository has no {model} in this tree")
    assert entry.get("state") == "READY", f"{model} is in the repository but not ready: {entry}"


# --- Python models the suite adds ---------------------------------------------------------------------------
# Written into a temporary repository at session start (conftest.py serves it next to examples/, which stays
# as shipped). Each entry: model name -> (config.pbtxt, 1/model.py).

PYTHON_RAISES_MESSAGE = "python_raises refuses negative input"
PYTHON_RAISES_ERROR_MESSAGE = "python_raises takes no NaN"

_PYTHON_RAISES_CONFIG = """\
name: "python_raises"
backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""

# OUTPUT0 = 2 * INPUT0. A negative value makes execute raise (every request of the batch fails and the stub
# must live on); a NaN fails just that request through a TritonError response with code INVALID_ARG.
_PYTHON_RAISES_MODEL = f'''\
import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            if (data < 0).any():
                raise ValueError("{PYTHON_RAISES_MESSAGE}: " + str(float(data.min())))
            if np.isnan(data).any():
                code = pb_utils.TritonError.INVALID_ARG
                error = pb_utils.TritonError("{PYTHON_RAISES_ERROR_MESSAGE}", code)
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", data * 2)]))
        return responses
'''

TEST_PYTHON_MODELS: dict[str, tuple[str, str]] = {
    "python_raises": (_PYTHON_RAISES_CONFIG, _PYTHON_RAISES_MODEL),
}


def write_test_models(root: Path) -> Path:
    """Writes TEST_PYTHON_MODELS under `root` as a Triton model repository; returns `root`."""
    for name, (config, model) in TEST_PYTHON_MODELS.items():
        version = root / name / "1"
        version.mkdir(parents=True, exist_ok=True)
        (root / name / "config.pbtxt").write_text(config, encoding="utf-8")
        (version / "model.py").write_text(model, encoding="utf-8")
    return root
