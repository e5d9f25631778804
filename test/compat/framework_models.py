"""Makes the framework backends' test models with the framework itself, and the framework's own answers.

Run by the backend's venv interpreter (it imports torch or openvino, which the suite's .venv has not):

    <venv>/bin/python test/compat/framework_models.py pytorch OUT
    <venv>/bin/python test/compat/framework_models.py openvino OUT   (OUT/onnx/model.onnx made beforehand)

writes OUT/models/<model>/{config.pbtxt,1/<file>} and OUT/expected/<model>.npz: for each request i of the
test, `in<i>_<input>` and `out<i>_<output>`, what the framework computes for those inputs called directly.
The requests have different batch sizes, so sent together they exercise the dynamic batcher's joining and
splitting over dim 0.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

# Rows per request: sent at once, the batcher joins some of them (max_batch_size 8).
REQUEST_ROWS = (1, 3, 2, 4, 1, 2)
FEATURES = 4


def _rng_inputs(seed: int, names: list[str], dtype: Any = np.float32) -> list[dict[str, npt.NDArray[Any]]]:
    rng = np.random.default_rng(seed)
    return [
        {name: rng.standard_normal((rows, FEATURES)).astype(dtype) for name in names} for rows in REQUEST_ROWS
    ]


def _write(
    out: Path,
    name: str,
    config: str,
    requests: list[dict[str, npt.NDArray[Any]]],
    answer: Callable[[dict[str, npt.NDArray[Any]]], dict[str, npt.NDArray[Any]]],
    per_row: frozenset[str] = frozenset(),
) -> None:
    folder = out / "models" / name
    (folder / "1").mkdir(parents=True, exist_ok=True)
    (folder / "config.pbtxt").write_text(config, encoding="utf-8")
    arrays: dict[str, npt.NDArray[Any]] = {}
    for i, inputs in enumerate(requests):
        for key, value in inputs.items():
            arrays[f"in{i}_{key}"] = value
        for key, value in answer(inputs).items():
            arrays[f"out{i}_{key}"] = value
    # An output of one value per row is declared dims [1] reshaped to []: the client sees [rows, 1].
    per_row = per_row | set(
        re.findall(r'output \{ name: "([^"]+)"[^}]*dims: \[ 1 \] reshape \{ shape: \[ \] \}', config)
    )
    for key in list(arrays):
        if key.startswith("out") and key.split("_", 1)[1] in per_row:
            arrays[key] = arrays[key].reshape(-1, 1)
    (out / "expected").mkdir(parents=True, exist_ok=True)
    np.savez(out / "expected" / f"{name}.npz", **arrays)  # type: ignore[arg-type]


def _batched(max_batch: int = 8) -> str:
    return f"max_batch_size: {max_batch}\ndynamic_batching {{ max_queue_delay_microseconds: 20000 }}\n"


def _io(kind: str, name: str, dtype: str, dims: str) -> str:
    if dims == "":
        # One value per batch row: config dims cannot be empty, so [1] reshaped to [] (as Triton's docs do).
        return f'{kind} {{ name: "{name}" data_type: {dtype} dims: [ 1 ] reshape {{ shape: [ ] }} }}\n'
    return f'{kind} {{ name: "{name}" data_type: {dtype} dims: [ {dims} ] }}\n'


def pytorch_models(out: Path) -> None:
    import torch

    torch.manual_seed(0)
    warnings.simplefilter("ignore", FutureWarning)  # torch.jit is deprecated from 2.15 on; still served

    class DictOut(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(FEATURES, 3)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
            return {"sum": x + y, "scaled": torch.tanh(self.linear(x * y))}

    class TupleOut(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(FEATURES, 5)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            logits = self.linear(x)
            return logits, torch.softmax(logits, dim=1), torch.argmax(logits, dim=1)

    class DictIn(torch.nn.Module):  # type: ignore[misc]
        def forward(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
            return inputs["a"] * 2.0 - inputs["b"]

    class Exported(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(FEATURES, 2)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
            return {"sum": x + y, "proj": self.linear(x - y)}

    def call(module: Any, names: list[str], result_names: list[str]) -> Any:
        def answer(inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
            with torch.no_grad():
                result = module(*[torch.from_numpy(inputs[n]) for n in names])
            if isinstance(result, dict):
                return {k: v.numpy() for k, v in result.items()}
            if isinstance(result, tuple):
                return {k: v.numpy() for k, v in zip(result_names, result, strict=True)}
            return {result_names[0]: result.numpy()}

        return answer

    scripted = torch.jit.script(DictOut().eval())
    (out / "models" / "ts_scripted_dict" / "1").mkdir(parents=True, exist_ok=True)
    scripted.save(str(out / "models" / "ts_scripted_dict" / "1" / "model.pt"))
    _write(
        out,
        "ts_scripted_dict",
        'platform: "pytorch_libtorch"\n'
        + _batched()
        + "instance_group { count: 2 kind: KIND_CPU }\n"
        + _io("input", "x", "TYPE_FP32", str(FEATURES))
        + _io("input", "y", "TYPE_FP32", str(FEATURES))
        + _io("output", "scaled", "TYPE_FP32", "3")
        + _io("output", "sum", "TYPE_FP32", str(FEATURES)),
        _rng_inputs(1, ["x", "y"]),
        call(scripted, ["x", "y"], []),
    )

    example = torch.zeros(2, FEATURES)
    traced = torch.jit.trace(TupleOut().eval(), (example,))
    (out / "models" / "ts_traced_tuple" / "1").mkdir(parents=True, exist_ok=True)
    traced.save(str(out / "models" / "ts_traced_tuple" / "1" / "model.pt"))
    # Outputs listed out of their index order: OUTPUT__<i> is the tuple's element i, wherever it is listed.
    _write(
        out,
        "ts_traced_tuple",
        'backend: "pytorch"\n'
        + _batched()
        + 'parameters { key: "INFERENCE_MODE" value { string_value: "true" } }\n'
        + 'parameters { key: "INTRA_OP_THREAD_COUNT" value { string_value: "3" } }\n'
        + "instance_group { count: 1 kind: KIND_CPU }\n"
        + _io("input", "INPUT__0", "TYPE_FP32", str(FEATURES))
        + _io("output", "OUTPUT__2", "TYPE_INT64", "")
        + _io("output", "OUTPUT__0", "TYPE_FP32", "5")
        + _io("output", "OUTPUT__1", "TYPE_FP32", "5"),
        _rng_inputs(2, ["INPUT__0"]),
        call(traced, ["INPUT__0"], ["OUTPUT__0", "OUTPUT__1", "OUTPUT__2"]),
    )

    dict_in = torch.jit.script(DictIn().eval())
    (out / "models" / "ts_dict_input" / "1").mkdir(parents=True, exist_ok=True)
    dict_in.save(str(out / "models" / "ts_dict_input" / "1" / "model.pt"))

    def dict_answer(inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        with torch.no_grad():
            result = dict_in({k: torch.from_numpy(v) for k, v in inputs.items()})
        return {"OUTPUT__0": result.numpy()}

    _write(
        out,
        "ts_dict_input",
        'platform: "pytorch_libtorch"\n'
        + _batched()
        + 'parameters { key: "DISABLE_OPTIMIZED_EXECUTION" value { string_value: "true" } }\n'
        + _io("input", "a", "TYPE_FP32", str(FEATURES))
        + _io("input", "b", "TYPE_FP32", str(FEATURES))
        + _io("output", "OUTPUT__0", "TYPE_FP32", str(FEATURES)),
        _rng_inputs(3, ["a", "b"]),
        dict_answer,
    )

    module = Exported().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(
        module,
        (torch.zeros(2, FEATURES), torch.zeros(2, FEATURES)),
        dynamic_shapes=({0: batch}, {0: batch}),
    )
    (out / "models" / "exported_program" / "1").mkdir(parents=True, exist_ok=True)
    torch.export.save(program, str(out / "models" / "exported_program" / "1" / "model.pt2"))
    loaded = torch.export.load(str(out / "models" / "exported_program" / "1" / "model.pt2")).module()

    def exported_answer(inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        with torch.no_grad():
            result = loaded(torch.from_numpy(inputs["ARGS[0]"]), torch.from_numpy(inputs["y"]))
        return {"RESULT[sum]": result["sum"].numpy(), "OUTPUT__1": result["proj"].numpy()}

    # Names by Triton's PT2 rules: a call-spec path (ARGS[0], RESULT[sum]), an ordinal (OUTPUT__1), and a
    # forward argument's own name (y).
    _write(
        out,
        "exported_program",
        'platform: "torch_aoti"\n'
        + _batched()
        + _io("input", "ARGS[0]", "TYPE_FP32", str(FEATURES))
        + _io("input", "y", "TYPE_FP32", str(FEATURES))
        + _io("output", "RESULT[sum]", "TYPE_FP32", str(FEATURES))
        + _io("output", "OUTPUT__1", "TYPE_FP32", "2"),
        _rng_inputs(4, ["ARGS[0]", "y"]),
        exported_answer,
    )


def openvino_models(out: Path) -> None:
    import openvino

    onnx_file = out / "onnx" / "model.onnx"
    core = openvino.Core()
    converted = openvino.convert_model(str(onnx_file))
    for name in ("openvino_ir", "openvino_autocomplete"):
        (out / "models" / name / "1").mkdir(parents=True, exist_ok=True)
        openvino.save_model(converted, str(out / "models" / name / "1" / "model.xml"))
    (out / "models" / "openvino_onnx" / "1").mkdir(parents=True, exist_ok=True)
    (out / "models" / "openvino_onnx" / "1" / "model.onnx").write_bytes(onnx_file.read_bytes())
    compiled = core.compile_model(
        core.read_model(str(out / "models" / "openvino_ir" / "1" / "model.xml")), "CPU"
    )

    def answer(inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        result = compiled.create_infer_request().infer({"x": inputs["x"]})
        return {"y": np.asarray(result["y"]), "cls": np.asarray(result["cls"])}

    requests = _rng_inputs(5, ["x"])
    full = (
        'backend: "openvino"\n'
        + _batched()
        + 'parameters { key: "NUM_STREAMS" value { string_value: "1" } }\n'
        + 'parameters { key: "PERFORMANCE_HINT" value { string_value: "LATENCY" } }\n'
        + 'parameters { key: "INFERENCE_NUM_THREADS" value { string_value: "1" } }\n'
        + _io("input", "x", "TYPE_FP32", str(FEATURES))
        + _io("output", "y", "TYPE_FP32", "3")
        + _io("output", "cls", "TYPE_INT64", "")
    )
    _write(out, "openvino_ir", full, requests, answer)
    # No inputs, outputs or max_batch_size: auto-complete fills them from the model.
    _write(
        out,
        "openvino_autocomplete",
        'backend: "openvino"\ninstance_group { count: 2 kind: KIND_CPU }\n',
        requests,
        answer,
        per_row=frozenset({"cls"}),  # auto-complete declares it dims [1] reshaped to []
    )
    _write(
        out,
        "openvino_onnx",
        full.replace('backend: "openvino"\n', 'backend: "openvino"\ndefault_model_filename: "model.onnx"\n'),
        requests,
        answer,
    )


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("pytorch", "openvino"):
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[2])
    (pytorch_models if argv[1] == "pytorch" else openvino_models)(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
