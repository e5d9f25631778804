"""Nereid's `openvino` backend, a Python-based backend (docs/backends.md#openvino): the models Triton's
OpenVINO backend serves, on the OpenVINO runtime that `npx nereid backends install openvino` puts in this
backend's venv, on CPU.

- `1/model.xml` + `model.bin` (OpenVINO IR), or `model.onnx` (read by OpenVINO's ONNX frontend); another
  file with `default_model_filename` (`model.onnx`, `model.pdmodel`, `model.tflite`, `model.saved_model`).
- Inputs and outputs are matched by the model's tensor names. Missing `input`/`output` entries are filled
  from the model (auto-complete, as Triton's backend does), and so is max_batch_size when every tensor has
  a dynamic dim 0 and the config gives none (then dynamic batching is turned on).
- With max_batch_size > 0 dim 0 of every input is made dynamic (unless SKIP_OV_DYNAMIC_BATCHSIZE), and the
  requests of one execute run as one batch over it; a model whose batch stays static gets batches of
  exactly its size (ENABLE_BATCH_PADDING pads smaller ones).
- Parameters: NUM_STREAMS, PERFORMANCE_HINT, INFERENCE_NUM_THREADS (default: this machine's cores divided
  among the model's instances), COMPILATION_NUM_THREADS, HINT_BF16, CPU_EXTENSION_PATH,
  SKIP_OV_DYNAMIC_BATCHSIZE, ENABLE_BATCH_PADDING, RESHAPE_IO_LAYERS.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import numpy.typing as npt

import triton_python_backend_utils as pb_utils
from nereid_stub import frameworks
from nereid_stub.dtypes import TRITON_STRING_TO_NUMPY
from nereid_stub.frameworks import ConfigError

_MODEL_FILES = ("model.xml", "model.onnx")
_OTHER_FILES = ("model.pdmodel", "model.tflite", "model.saved_model")
# OpenVINO element type names (Type.get_type_name()) to Triton's config types.
_ELEMENT_TYPES: dict[str, str] = {
    "boolean": "TYPE_BOOL",
    "u8": "TYPE_UINT8",
    "u16": "TYPE_UINT16",
    "u32": "TYPE_UINT32",
    "u64": "TYPE_UINT64",
    "i8": "TYPE_INT8",
    "i16": "TYPE_INT16",
    "i32": "TYPE_INT32",
    "i64": "TYPE_INT64",
    "f16": "TYPE_FP16",
    "f32": "TYPE_FP32",
    "f64": "TYPE_FP64",
}
# The numpy type of each numeric Triton type (BYTES outputs are left as the model gives them).
_NUMPY: dict[str, Any] = {k: v for k, v in TRITON_STRING_TO_NUMPY.items() if k != "TYPE_STRING"}
_HINTS = ("LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT")
# Triton's default-max-batch-size, what auto-complete gives a model that batches.
_DEFAULT_MAX_BATCH_SIZE = 4


def _model_path(folder: str, config: dict[str, Any]) -> str:
    name = str(config.get("default_model_filename") or "")
    if name:
        if name not in _MODEL_FILES + _OTHER_FILES or os.path.basename(name) != name:
            raise ConfigError(
                f"default_model_filename '{name}' is not one the openvino backend reads: "
                f"{', '.join(_MODEL_FILES + _OTHER_FILES)}"
            )
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            raise ConfigError(f"unable to find '{path}'")
        return path
    for candidate in _MODEL_FILES:
        path = os.path.join(folder, candidate)
        if os.path.isfile(path):
            return path
    raise ConfigError(f"unable to find model.xml (with model.bin) or model.onnx in '{folder}'")


def _port_name(port: Any) -> str:
    return str(port.get_any_name())


def _port_dims(port: Any) -> list[int]:
    shape = port.get_partial_shape()
    if shape.rank.is_dynamic:
        raise ConfigError(f"tensor '{_port_name(port)}' has a dynamic rank; give its dims in config.pbtxt")
    return [int(d.get_length()) if d.is_static else -1 for d in shape]


def _port_type(port: Any) -> str:
    name = str(port.get_element_type().get_type_name())
    triton = _ELEMENT_TYPES.get(name)
    if triton is None:
        raise ConfigError(f"tensor '{_port_name(port)}' has element type {name}, which Nereid cannot carry")
    return triton


def _read(core: Any, path: str) -> Any:
    if path.endswith(".xml"):
        weights = path[:-4] + ".bin"
        return core.read_model(path, weights) if os.path.isfile(weights) else core.read_model(path)
    return core.read_model(path)


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config: Any) -> Any:
        config = auto_complete_model_config.as_dict()
        have_inputs = bool(frameworks.config_tensors(config, "input"))
        have_outputs = bool(frameworks.config_tensors(config, "output"))
        if have_inputs and have_outputs and int(config.get("max_batch_size", 0) or 0) > 0:
            return auto_complete_model_config
        import openvino

        folder = pb_utils.get_model_dir()
        model = _read(openvino.Core(), _model_path(folder, config))
        ports = list(model.inputs) + list(model.outputs)
        batching = int(config.get("max_batch_size", 0) or 0)
        if batching == 0 and not have_inputs and not have_outputs:
            every = [_port_dims(p) for p in ports]
            if every and all(len(d) >= 1 and d[0] == -1 for d in every):
                auto_complete_model_config.set_max_batch_size(_DEFAULT_MAX_BATCH_SIZE)
                if "sequence_batching" not in config and "dynamic_batching" not in config:
                    auto_complete_model_config.set_dynamic_batching()
                batching = _DEFAULT_MAX_BATCH_SIZE
        for kind, port_list, present in (
            ("input", model.inputs, have_inputs),
            ("output", model.outputs, have_outputs),
        ):
            if present:
                continue
            for port in port_list:
                dims = _port_dims(port)
                if batching > 0:
                    dims = dims[1:]
                scalar_rows = batching > 0 and not dims
                entry = {"name": _port_name(port), "data_type": _port_type(port), "dims": dims or [1]}
                if kind == "input":
                    auto_complete_model_config.add_input(entry)
                else:
                    auto_complete_model_config.add_output(entry)
                if scalar_rows:
                    # One value per batch row: dims [1] reshaped to [] (config dims cannot be empty).
                    for added in auto_complete_model_config.as_dict()[kind]:
                        if added.get("name") == entry["name"]:
                            added["reshape"] = {"shape": []}
        return auto_complete_model_config

    def initialize(self, args: dict[str, str]) -> None:
        config: dict[str, Any] = json.loads(args["model_config"])
        self.name = str(config.get("name", args.get("model_name", "")))
        try:
            self._setup(args, config, frameworks.parameters(config))
        except ConfigError as e:
            raise pb_utils.TritonModelException(f"openvino model '{self.name}': {e}") from e

    def _properties(self, config: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
        props: dict[str, Any] = {}
        threads = frameworks.count(params, "INFERENCE_NUM_THREADS", minimum=0)
        self.threads = threads if threads else frameworks.fair_threads(config)
        props["INFERENCE_NUM_THREADS"] = self.threads
        compile_threads = frameworks.count(params, "COMPILATION_NUM_THREADS", minimum=0)
        if compile_threads:
            props["COMPILATION_NUM_THREADS"] = compile_threads
        streams = params.get("NUM_STREAMS", "").strip()
        if streams:
            if streams.upper() in ("AUTO", "NUMA"):
                props["NUM_STREAMS"] = streams.upper()
            else:
                props["NUM_STREAMS"] = frameworks.count(params, "NUM_STREAMS")
        hint = params.get("PERFORMANCE_HINT", "").strip().upper()
        if hint:
            if hint not in _HINTS:
                raise ConfigError(f"PERFORMANCE_HINT must be one of {', '.join(_HINTS)}, got '{hint}'")
            props["PERFORMANCE_HINT"] = hint
        if frameworks.flag(params, "HINT_BF16", False):
            props["INFERENCE_PRECISION_HINT"] = "bf16"
        return props

    def _setup(self, args: dict[str, str], config: dict[str, Any], params: dict[str, str]) -> None:
        props = self._properties(config, params)
        frameworks.limit_native_pools(self.threads)
        import openvino

        core = openvino.Core()
        extension = params.get("CPU_EXTENSION_PATH", "").strip()
        if extension:
            core.add_extension(extension)
        folder = os.path.join(args["model_repository"], args["model_version"])
        path = _model_path(folder, config)
        model = _read(core, path)
        self.max_batch = int(config.get("max_batch_size", 0) or 0)
        self.inputs = {str(e["name"]): e for e in frameworks.config_tensors(config, "input")}
        self.outputs = {str(e["name"]): e for e in frameworks.config_tensors(config, "output")}
        model_inputs = {_port_name(p): p for p in model.inputs}
        model_outputs: dict[str, Any] = {}
        for port in model.outputs:
            for alias in port.get_names():
                model_outputs[str(alias)] = port
        for name in self.inputs:
            if not any(name in p.get_names() for p in model.inputs):
                raise ConfigError(
                    f"input '{name}' is not an input of the model (its inputs: {sorted(model_inputs)})"
                )
        for name in self.outputs:
            if name not in model_outputs:
                raise ConfigError(
                    f"output '{name}' is not an output of the model (its outputs: {sorted(model_outputs)})"
                )
        shapes: dict[str, Any] = {}
        reshape_io = frameworks.flag(params, "RESHAPE_IO_LAYERS", False)
        skip_dynamic = frameworks.flag(params, "SKIP_OV_DYNAMIC_BATCHSIZE", False)
        for port in model.inputs:
            dims = _port_dims(port)
            entry = next((e for n, e in self.inputs.items() if n in port.get_names()), None)
            if reshape_io and entry is not None:
                dims = ([-1] if self.max_batch > 0 else []) + [int(d) for d in entry.get("dims", [])]
            if self.max_batch > 0 and not skip_dynamic and dims:
                dims = [-1, *dims[1:]]
            shapes[_port_name(port)] = openvino.PartialShape(dims)
        try:
            model.reshape({model_inputs[n]: s for n, s in shapes.items()})
        except Exception as e:
            if reshape_io:
                raise ConfigError(f"the model cannot take the config's shapes: {e}") from e
            pb_utils.Logger.log_warn(
                f"openvino model '{self.name}': its inputs keep their shapes (dynamic batch refused: {e})"
            )
        self.static_batch = None
        if self.max_batch > 0:
            first = [_port_dims(p)[0] for p in model.inputs if _port_dims(p)]
            if first and all(d > 0 for d in first) and len(set(first)) == 1:
                self.static_batch = first[0]
        self.pad = frameworks.flag(params, "ENABLE_BATCH_PADDING", False)
        self.compiled = core.compile_model(model, "CPU", props)
        self.request = self.compiled.create_infer_request()
        self.output_ports = {name: model_outputs[name] for name in self.outputs}
        self.port_of_input = {
            name: next(_port_name(p) for p in model.inputs if name in p.get_names()) for name in self.inputs
        }
        # What the compiled model reports it uses (the tests and the oversubscription bench read this line).
        applied = {key: self.compiled.get_property(key) for key in ("INFERENCE_NUM_THREADS", "NUM_STREAMS")}
        pb_utils.Logger.log_verbose(
            f"openvino model '{self.name}': {path}, threads {applied['INFERENCE_NUM_THREADS']} "
            f"streams {applied['NUM_STREAMS']}, batch "
            f"{'static ' + str(self.static_batch) if self.static_batch else 'dynamic'}"
        )

    def _infer(self, inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        feed = {self.port_of_input[name]: np.ascontiguousarray(array) for name, array in inputs.items()}
        results = self.request.infer(feed)
        out: dict[str, npt.NDArray[Any]] = {}
        for name, port in self.output_ports.items():
            array = np.asarray(results[self.compiled.output(_port_name(port))])
            want = _NUMPY.get(str(self.outputs[name].get("data_type", "")))
            out[name] = array.astype(want, copy=False) if want is not None else array
        return out

    def _run(self, inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        static = self.static_batch
        if static is None or self.max_batch == 0:
            return self._infer(inputs)
        rows = int(next(iter(inputs.values())).shape[0]) if inputs else 0
        if rows == static:
            return self._infer(inputs)
        if rows < static and self.pad:
            padded = {
                n: np.concatenate([a, np.repeat(a[-1:], static - rows, axis=0)]) for n, a in inputs.items()
            }
            return {n: a[:rows] for n, a in self._infer(padded).items()}
        if rows % static == 0:
            parts = [
                self._infer({n: a[i : i + static] for n, a in inputs.items()}) for i in range(0, rows, static)
            ]
            return {n: np.concatenate([p[n] for p in parts]) for n in self.output_ports}
        raise ValueError(
            f"the model takes batches of exactly {static} and got {rows}; set ENABLE_BATCH_PADDING to pad"
        )

    def execute(self, requests: list[Any]) -> list[Any]:
        return frameworks.execute(requests, self.inputs, self._run, self.max_batch > 0, "OpenVINO")
