"""Makes the framework backends' test models with the framework itself, and the framework's own answers.

Run by the backend's venv interpreter (it imports torch or openvino, which the suite's .venv has not):

    <venv>/bin/python test/compat/framework_models.py pytorch OUT
    <venv>/bin/python test/compat/framework_models.py openvino OUT   (OUT/onnx/model.onnx made beforehand)
    <venv>/bin/python test/compat/framework_models.py tensorflow OUT
    <venv>/bin/python test/compat/framework_models.py silero OUT       (openvino's venv; OUT/onnx/model.onnx
                                                                       is the silero-vad package's ONNX file)

writes OUT/models/<model>/{config.pbtxt,1/<file>} and OUT/expected/<model>.npz: for each request i of the
test, `in<i>_<input>` and `out<i>_<output>`, what the framework computes for those inputs called directly.
The requests have different batch sizes, so sent together they exercise the dynamic batcher's joining and
splitting over dim 0.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import re
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

# Rows per request: sent at once, the batcher joins some of them (max_batch_size 8).
REQUEST_ROWS = (1, 3, 2, 4, 1, 2)
FEATURES = 4
# Compiled AOTInductor packages, kept across runs (gitignored): compiling one takes minutes.
AOTI_CACHE = Path(__file__).resolve().parents[2] / ".cache" / "aoti-packages"


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
    import shutil

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

    # An AOTInductor package (compiled, cached in AOTI_CACHE), answered by torch's own loader of it.
    package, eager = _aoti_package(torch, AOTI_CACHE)
    (out / "models" / "aoti_package" / "1").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(package, out / "models" / "aoti_package" / "1" / "model.pt2")
    runner = torch._inductor.aoti_load_package(str(package))

    def aoti_answer(inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        with torch.no_grad():
            args = (torch.from_numpy(inputs["ARGS[0]"]), torch.from_numpy(inputs["INPUT__1"]))
            first, second = runner(*args)
            # The compiled code computes what the module does (a stale or wrong package fails here).
            for compiled, reference in zip((first, second), eager(*args), strict=True):
                np.testing.assert_allclose(compiled.numpy(), reference.numpy(), rtol=1e-5, atol=1e-6)
        return {"RESULT[0]": first.numpy(), "OUTPUT__1": second.numpy()}

    # Names by Triton's PT2 rules: call-spec paths (ARGS[0], RESULT[0]) and ordinals (INPUT__1, OUTPUT__1).
    _write(
        out,
        "aoti_package",
        'platform: "torch_aoti"\n'
        + _batched()
        + _io("input", "ARGS[0]", "TYPE_FP32", str(FEATURES))
        + _io("input", "INPUT__1", "TYPE_FP32", str(FEATURES))
        + _io("output", "RESULT[0]", "TYPE_FP32", str(FEATURES))
        + _io("output", "OUTPUT__1", "TYPE_FP32", "3"),
        _rng_inputs(8, ["ARGS[0]", "INPUT__1"]),
        aoti_answer,
    )


def _aoti_package(torch: Any, cache: Path) -> tuple[Path, Any]:
    """An AOTInductor package of a two-input, tuple-output module with a dynamic batch dim, compiled once per
    torch version and source of this function (the cache key), then reused: compiling takes minutes.
    Returns the package and the eager module it was compiled from."""

    class AotiTuple(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            weight = (torch.arange(FEATURES * 3, dtype=torch.float32).reshape(FEATURES, 3) - 5.0) / 7.0
            self.register_buffer("weight", weight)

        def forward(self, x: Any, y: Any) -> tuple[Any, Any]:
            return x * y + 1.0, torch.relu((x - y) @ self.weight)

    # The key is the syntax tree of this function, so comments and formatting do not force a new compile.
    source = ast.dump(ast.parse(textwrap.dedent(inspect.getsource(_aoti_package)))).encode("utf-8")
    key = f"{torch.__version__}-{hashlib.sha256(source).hexdigest()[:16]}"
    package = cache / key / "model.pt2"
    module = AotiTuple().eval()
    if package.is_file():
        return package, module
    package.parent.mkdir(parents=True, exist_ok=True)
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(
        module,
        (torch.zeros(2, FEATURES), torch.zeros(2, FEATURES)),
        dynamic_shapes=({0: batch}, {0: batch}),
    )
    partial = package.with_name(f"model.{os.getpid()}.pt2")
    torch._inductor.aoti_compile_and_package(program, package_path=str(partial))
    os.replace(partial, package)  # whole or absent: a run stopped mid-compile leaves no broken cache entry
    return package, module


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


def tensorflow_models(out: Path) -> None:
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    weights = ((np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0) / 7.0).astype(np.float32)

    class TwoSignatures(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.w = tf.Variable(weights)

        @tf.function(input_signature=[tf.TensorSpec([None, FEATURES], tf.float32, name="x")])  # type: ignore[untyped-decorator]
        def classify(self, x: Any) -> dict[str, Any]:
            mm = tf.matmul(x, self.w)
            return {"y": tf.nn.relu(mm), "cls": tf.argmax(mm, axis=1)}

        @tf.function(  # type: ignore[untyped-decorator]
            input_signature=[
                tf.TensorSpec([None, FEATURES], tf.float32, name="a"),
                tf.TensorSpec([None, FEATURES], tf.int32, name="b"),
            ]
        )
        def scale(self, a: Any, b: Any) -> dict[str, Any]:
            return {"out": tf.cast(a, tf.float64) * 2.0 + tf.cast(b, tf.float64), "count": b * 3}

    class Strings(tf.Module):  # type: ignore[misc]
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.string, name="text")])  # type: ignore[untyped-decorator]
        def serve(self, text: Any) -> dict[str, Any]:
            return {"upper": tf.strings.upper(text), "length": tf.strings.length(text)}

    module = TwoSignatures()
    saved = out / "savedmodels" / "two"
    tf.saved_model.save(
        module, str(saved), signatures={"serving_default": module.classify, "scale": module.scale}
    )
    strings = Strings()
    saved_strings = out / "savedmodels" / "strings"
    tf.saved_model.save(strings, str(saved_strings), signatures={"serving_default": strings.serve})
    loaded = tf.saved_model.load(str(saved))
    loaded_strings = tf.saved_model.load(str(saved_strings))

    def answer(signature: str) -> Callable[[dict[str, npt.NDArray[Any]]], dict[str, npt.NDArray[Any]]]:
        function = (loaded_strings if signature == "strings" else loaded).signatures[
            "serving_default" if signature == "strings" else signature
        ]

        def run(inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
            result = function(**{k: tf.constant(v) for k, v in inputs.items()})
            # Strings as fixed-width bytes ('S'): np.savez cannot keep object arrays without pickling.
            return {
                k: v.numpy().astype("S") if v.dtype == tf.string else v.numpy() for k, v in result.items()
            }

        return run

    def place(name: str, source: Path) -> None:
        import shutil

        shutil.copytree(source, out / "models" / name / "1" / "model.savedmodel")

    requests = _rng_inputs(6, ["x"])
    place("tf_default", saved)
    _write(
        out,
        "tf_default",
        'platform: "tensorflow_savedmodel"\n'
        + _batched()
        + "instance_group { count: 2 kind: KIND_CPU }\n"
        + _io("input", "x", "TYPE_FP32", str(FEATURES))
        + _io("output", "y", "TYPE_FP32", "3")
        + _io("output", "cls", "TYPE_INT64", ""),
        requests,
        answer("serving_default"),
    )
    rng = np.random.default_rng(7)
    scale_requests = [
        {
            "a": rng.standard_normal((rows, FEATURES)).astype(np.float32),
            "b": rng.integers(-50, 50, (rows, FEATURES)).astype(np.int32),
        }
        for rows in REQUEST_ROWS
    ]
    place("tf_scale", saved)
    _write(
        out,
        "tf_scale",
        'platform: "tensorflow_savedmodel"\n'
        + _batched()
        + 'parameters { key: "TF_SIGNATURE_DEF" value { string_value: "scale" } }\n'
        + 'parameters { key: "TF_NUM_INTRA_THREADS" value { string_value: "1" } }\n'
        + 'parameters { key: "TF_NUM_INTER_THREADS" value { string_value: "1" } }\n'
        + "instance_group { count: 1 kind: KIND_CPU }\n"
        + _io("input", "a", "TYPE_FP32", str(FEATURES))
        + _io("input", "b", "TYPE_INT32", str(FEATURES))
        + _io("output", "out", "TYPE_FP64", str(FEATURES))
        + _io("output", "count", "TYPE_INT32", str(FEATURES)),
        scale_requests,
        answer("scale"),
    )
    # Nothing but the platform: auto-complete fills inputs, outputs, max_batch_size and dynamic batching.
    place("tf_autocomplete", saved)
    _write(
        out,
        "tf_autocomplete",
        'platform: "tensorflow_savedmodel"\ninstance_group { count: 1 kind: KIND_CPU }\n',
        requests,
        answer("serving_default"),
        per_row=frozenset({"cls"}),
    )
    words = [b"nereid", b"triton", b"", b"\xc3\xa9t\xc3\xa9", b"savedmodel", b"a b"]
    string_requests = [
        {"text": np.array([[words[(i + j) % 6], words[(i + 2 * j + 1) % 6]] for j in range(rows)], dtype="S")}
        for i, rows in enumerate(REQUEST_ROWS)
    ]
    place("tf_strings", saved_strings)
    _write(
        out,
        "tf_strings",
        'backend: "tensorflow"\n'
        + _batched()
        + "instance_group { count: 1 kind: KIND_CPU }\n"
        + _io("input", "text", "TYPE_STRING", "2")
        + _io("output", "upper", "TYPE_STRING", "2")
        + _io("output", "length", "TYPE_INT32", "2"),
        string_requests,
        answer("strings"),
    )


def silero_models(out: Path) -> None:
    """Silero VAD, a third-party model (the ONNX file the `silero-vad` PyPI package ships for OpenVINO):
    `input` [1, 576] (64 samples of context + 512 new ones at 16 kHz) and `state` [2, 1, 128] in, the
    speech probability `output` [1, 1] and `stateN` out. Each request carries the state OpenVINO returned
    for the one before, as a streaming caller does; the signal is tones and noise made here."""
    import os

    import openvino

    onnx_file = out / "onnx" / "model.onnx"
    (out / "models" / "silero_vad" / "1").mkdir(parents=True, exist_ok=True)
    (out / "models" / "silero_vad" / "1" / "model.onnx").write_bytes(onnx_file.read_bytes())
    core = openvino.Core()
    threads = len(os.sched_getaffinity(0))  # what the served instance gets (one instance: every core)
    compiled = core.compile_model(core.read_model(str(onnx_file)), "CPU", {"INFERENCE_NUM_THREADS": threads})
    rng = np.random.default_rng(11)
    t = np.arange(16000 * 2) / 16000.0
    signal = (0.3 * np.sin(2 * np.pi * 220 * t) * (t > 0.5) + 0.01 * rng.standard_normal(t.shape)).astype(
        np.float32
    )
    requests: list[dict[str, npt.NDArray[Any]]] = []
    outputs: list[dict[str, npt.NDArray[Any]]] = []
    state = np.zeros((2, 1, 128), dtype=np.float32)
    context = np.zeros(64, dtype=np.float32)
    for i in range(len(REQUEST_ROWS)):
        chunk = signal[i * 4096 : i * 4096 + 512]  # chunks spread over the signal: silence, then tone
        x = np.concatenate([context, chunk]).reshape(1, 576).astype(np.float32)
        result = compiled.create_infer_request().infer({"input": x, "state": state})
        requests.append({"input": x, "state": state})
        outputs.append({"output": np.asarray(result["output"]), "stateN": np.asarray(result["stateN"])})
        state = np.asarray(result["stateN"]).copy()
        context = chunk[-64:]
    answers = iter(outputs)
    # Backend and file only: auto-complete fills inputs and outputs from the model (static shapes, no batch).
    config = 'backend: "openvino"\ndefault_model_filename: "model.onnx"\n'
    _write(out, "silero_vad", config, requests, lambda _: next(answers))


MAKERS: dict[str, Callable[[Path], None]] = {
    "pytorch": pytorch_models,
    "openvino": openvino_models,
    "tensorflow": tensorflow_models,
    "silero": silero_models,
}


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in MAKERS:
        print(__doc__, file=sys.stderr)
        return 2
    MAKERS[argv[1]](Path(argv[2]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
