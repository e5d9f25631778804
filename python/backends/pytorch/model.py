"""Nereid's `pytorch` backend, a Python-based backend (docs/backends.md#pytorch): the models Triton's PyTorch
backend serves, on the PyTorch that `npx nereid backends install pytorch` puts in this backend's venv.

- `platform: "pytorch_libtorch"` (or `backend: "pytorch"`): a TorchScript `model.pt` (torch.jit.load).
  Inputs are matched as Triton's backend matches them: by the forward signature's argument names when every
  configured input is one, else by `<name>__<index>` (INPUT__0, ...), else in config order; a model whose
  forward takes one `Dict[str, Tensor]` gets the inputs by name as that dict. Outputs: a tensor, a tuple (or
  list) of them, or - beyond Triton - a dict, by `<name>__<index>` or config order (a dict's outputs by key).
- `platform: "torch_aoti"`: a `model.pt2`, an exported program (torch.export.save) or an AOTInductor package.
  Names follow Triton's PT2 conventions: `INPUT__<i>`/`OUTPUT__<i>` by position in the flattened call
  spec, or `ARGS[i]`, `ARGS[i][key]`, `KWARGS[key]` and `RESULT`, `RESULT[i]`, `RESULT[key]`; a top-level
  tensor argument may also be named as in forward.
- With max_batch_size > 0 the requests of one execute run as one batch over dim 0.
- Parameters: INFERENCE_MODE (default true), DISABLE_OPTIMIZED_EXECUTION, ENABLE_JIT_EXECUTOR,
  ENABLE_JIT_PROFILING, ENABLE_TENSOR_FUSER, INTRA_OP_THREAD_COUNT (alias NUM_THREADS),
  INTER_OP_THREAD_COUNT (alias NUM_INTEROP_THREADS). Thread counts default to this machine's cores divided
  among the model's instances. GPU-only ones are accepted with a warning.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

import triton_python_backend_utils as pb_utils
from nereid_stub import frameworks
from nereid_stub.frameworks import ConfigError

# GPU-only or not applicable to a CPU stub: accepted (a Triton config keeps loading) with a warning.
_IGNORED = ("ENABLE_NVFUSER", "ENABLE_WEIGHT_SHARING", "ENABLE_CACHE_CLEANING", "DISABLE_CUDNN")
_REFUSED = ("TORCH_COMPILE_OPTIONAL_PARAMETERS",)
_DELIMITER = "__"

_TORCH_DTYPES: dict[str, str] = {
    "TYPE_BOOL": "bool",
    "TYPE_UINT8": "uint8",
    "TYPE_INT8": "int8",
    "TYPE_INT16": "int16",
    "TYPE_INT32": "int32",
    "TYPE_INT64": "int64",
    "TYPE_FP16": "float16",
    "TYPE_FP32": "float32",
    "TYPE_FP64": "float64",
    "TYPE_STRING": "",  # a List[str] in and out, 1-D only (Triton's rule)
}


def _named_index(name: str) -> int | None:
    """The index of a `<name>__<index>` name, or None."""
    at = name.find(_DELIMITER)
    if at < 0:
        return None
    digits = name[at + len(_DELIMITER) :]
    return int(digits) if digits.isdigit() else None


def _all_named_index(names: list[str]) -> bool:
    return all(_named_index(n) is not None for n in names)


def _log_warn(message: str) -> None:
    pb_utils.Logger.log_warn(message)


def _model_file(args: dict[str, str], config: dict[str, Any], aoti: bool) -> str:
    folder = os.path.join(args["model_repository"], args["model_version"])
    name = str(config.get("default_model_filename") or "")
    if not name:
        name = "model.pt2" if aoti else "model.pt"
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        raise ConfigError(f"unable to find '{path}' for model '{config.get('name', '')}'")
    return path


def _output_index_map(config: dict[str, Any], results: list[str] | None) -> dict[str, int | str]:
    names = frameworks.names(frameworks.config_tensors(config, "output"))
    if not names:
        raise ConfigError("model configuration must contain at least one output, none were specified.")
    out: dict[str, int | str] = {}
    if results is not None and all(n in results for n in names):
        return {n: results.index(n) for n in names}
    named = _all_named_index(names)
    for i, name in enumerate(names):
        index = _named_index(name) if named else i
        out[name] = index if index is not None else i
    return out


class _TorchScript:
    """A TorchScript module and how Triton's naming rules map the config onto its forward."""

    def __init__(self, torch: Any, path: str, config: dict[str, Any]) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch >= 2.15: TorchScript is deprecated
            self.module = torch.jit.load(path, map_location="cpu")
        self.module.eval()
        self.torch = torch
        arguments = list(self.module.forward.schema.arguments)
        if arguments and arguments[0].type.kind() == "ClassType":
            arguments = arguments[1:]
        self.dict_input = len(arguments) == 1 and arguments[0].type.kind() == "DictType"
        entries = frameworks.config_tensors(config, "input")
        names = frameworks.names(entries)
        if not names:
            raise ConfigError("model configuration must contain at least one input, none were specified.")
        self.inputs: dict[str, int | str] = {}
        if self.dict_input:
            self.inputs = {n: n for n in names}
            return
        if any(a.type.kind() == "DictType" for a in arguments):
            raise ConfigError(
                "Multiple inputs of kind DictType were detected. Only a single input of type "
                "Dict(str, Tensor) is supported."
            )
        for a in arguments:
            if a.type.kind() not in ("TensorType", "ListType"):
                raise ConfigError(
                    f"An input of type '{a.type}' was detected in the model. Only a single input of type "
                    "Dict(str, Tensor) or input(s) of type Tensor are supported."
                )
        if len(arguments) != len(names):
            raise ConfigError(
                f"unable to load model '{config.get('name', '')}', configuration expects {len(names)} "
                f"inputs, model provides {len(arguments)}"
            )
        arg_names = [a.name for a in arguments]
        if all(n in arg_names for n in names):
            self.inputs = {n: arg_names.index(n) for n in names}
        elif _all_named_index(names):
            self.inputs = {n: int(_named_index(n) or 0) for n in names}
            for n, i in self.inputs.items():
                if int(i) >= len(arguments):
                    raise ConfigError(
                        f"input '{n}' names argument {i}; the model's forward takes {len(arguments)}"
                    )
        else:
            _log_warn(
                f"inputs of model '{config.get('name', '')}' are neither input arguments to the model nor do "
                "they follow the <name>__<index> naming convention. Falling back to enforcing strict "
                "ordering from model configuration."
            )
            self.inputs = {n: i for i, n in enumerate(names)}
        self.arg_count = len(arguments)

    def outputs(self, config: dict[str, Any]) -> dict[str, int | str]:
        return _output_index_map(config, None)

    def __call__(self, values: dict[str, Any]) -> Any:
        if self.dict_input:
            return self.module.forward({k: v for k, v in values.items()})
        ordered: list[Any] = [None] * self.arg_count
        for name, value in values.items():
            ordered[int(self.inputs[name])] = value
        return self.module.forward(*ordered)


def _path_name(prefix: str, keys: tuple[Any, ...]) -> str:
    text = prefix
    for key in keys:
        for attr in ("idx", "key", "name"):
            if hasattr(key, attr):
                text += f"[{getattr(key, attr)}]"
                break
    return text


class _Exported:
    """An exported program (torch.export) or AOTInductor package, called with its flattened call spec."""

    def __init__(self, torch: Any, path: str, config: dict[str, Any]) -> None:
        from torch.utils import _pytree as pytree

        self.torch = torch
        self.pytree = pytree
        self.call: Callable[..., Any]
        forward_names: list[str] = []
        try:
            program = torch.export.load(path)
            self.call = program.module()
            in_spec, out_spec = program.call_spec.in_spec, program.call_spec.out_spec
            signature = program.module_call_graph[0].signature if program.module_call_graph else None
            forward_names = list(getattr(signature, "forward_arg_names", None) or [])
        except Exception as export_error:
            try:
                runner = torch._inductor.aoti_load_package(path)
            except Exception:
                raise ConfigError(
                    f"'{path}' is neither an exported program nor an AOTInductor package: {export_error}"
                ) from export_error
            in_text, out_text = runner.loader.get_call_spec()
            in_spec, out_spec = pytree.treespec_loads(in_text), pytree.treespec_loads(out_text)
            self.call = runner
        self.in_spec, self.out_spec = in_spec, out_spec
        leaves = pytree.tree_flatten_with_path(
            pytree.tree_unflatten(list(range(in_spec.num_leaves)), in_spec)
        )
        self.input_paths: list[str] = []
        aliases: dict[str, int] = {}
        for position, (path_keys, _) in enumerate(leaves[0]):
            kind = "ARGS" if getattr(path_keys[0], "idx", 0) == 0 else "KWARGS"
            rest = tuple(path_keys[1:])
            self.input_paths.append(_path_name(kind, rest))
            if kind == "ARGS" and len(rest) == 1:
                i = int(getattr(rest[0], "idx", -1))
                if 0 <= i < len(forward_names):
                    aliases[forward_names[i]] = position
            if kind == "KWARGS" and len(rest) == 1:
                aliases[str(getattr(rest[0], "key", ""))] = position
        names = frameworks.names(frameworks.config_tensors(config, "input"))
        if not names:
            raise ConfigError("model configuration must contain at least one input, none were specified.")
        if len(names) != len(self.input_paths):
            raise ConfigError(
                f"unable to load model '{config.get('name', '')}', configuration expects {len(names)} "
                f"inputs, model provides {len(self.input_paths)}"
            )
        self.inputs: dict[str, int | str] = {}
        for i, name in enumerate(names):
            if name in self.input_paths:
                self.inputs[name] = self.input_paths.index(name)
            elif name in aliases:
                self.inputs[name] = aliases[name]
            elif name.startswith("INPUT__") and _named_index(name) is not None:
                self.inputs[name] = int(_named_index(name) or 0)
            else:
                self.inputs[name] = i
        out_leaves = pytree.tree_flatten_with_path(
            pytree.tree_unflatten(list(range(out_spec.num_leaves)), out_spec)
        )
        self.result_paths = [_path_name("RESULT", tuple(p)) for p, _ in out_leaves[0]]

    def outputs(self, config: dict[str, Any]) -> dict[str, int | str]:
        return _output_index_map(config, self.result_paths)

    def __call__(self, values: dict[str, Any]) -> Any:
        flat: list[Any] = [None] * len(self.input_paths)
        for name, value in values.items():
            flat[int(self.inputs[name])] = value
        args, kwargs = self.pytree.tree_unflatten(flat, self.in_spec)
        result = self.call(*args, **kwargs)
        return list(self.pytree.tree_leaves(result))


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config: dict[str, Any] = json.loads(args["model_config"])
        self.name = str(config.get("name", args.get("model_name", "")))
        params = frameworks.parameters(config)
        try:
            self._setup(args, config, params)
        except ConfigError as e:
            raise pb_utils.TritonModelException(f"pytorch model '{self.name}': {e}") from e

    def _setup(self, args: dict[str, str], config: dict[str, Any], params: dict[str, str]) -> None:
        for key in _IGNORED:
            if key in params:
                _log_warn(f"pytorch model '{self.name}': parameter {key} has no effect on CPU; ignored")
        for key in _REFUSED:
            if key in params:
                _log_warn(f"pytorch model '{self.name}': parameter {key} is not supported by Nereid; ignored")
        fair = frameworks.fair_threads(config)
        intra = frameworks.count(params, "INTRA_OP_THREAD_COUNT") or frameworks.count(params, "NUM_THREADS")
        inter = frameworks.count(params, "INTER_OP_THREAD_COUNT") or frameworks.count(
            params, "NUM_INTEROP_THREADS"
        )
        self.intra_threads = intra or fair
        self.inter_threads = inter or fair
        frameworks.limit_native_pools(self.intra_threads)
        import torch

        self.torch = torch
        torch.set_num_threads(self.intra_threads)
        try:
            torch.set_num_interop_threads(self.inter_threads)
        except RuntimeError as e:  # only before any inter-op work has started; a fresh stub has done none
            _log_warn(f"pytorch model '{self.name}': INTER_OP_THREAD_COUNT not applied: {e}")
        self.inference_mode = frameworks.flag(params, "INFERENCE_MODE", True)
        if frameworks.flag(params, "DISABLE_OPTIMIZED_EXECUTION", False):
            torch._C._set_graph_executor_optimize(False)
        if "ENABLE_JIT_EXECUTOR" in params:
            torch._C._jit_set_profiling_executor(frameworks.flag(params, "ENABLE_JIT_EXECUTOR", True))
        if "ENABLE_JIT_PROFILING" in params:
            torch._C._jit_set_profiling_mode(frameworks.flag(params, "ENABLE_JIT_PROFILING", True))
        if "ENABLE_TENSOR_FUSER" in params:
            torch._C._jit_set_texpr_fuser_enabled(frameworks.flag(params, "ENABLE_TENSOR_FUSER", True))
        platform = str(config.get("platform") or "")
        aoti = platform == "torch_aoti"
        if not platform and not config.get("default_model_filename"):
            folder = os.path.join(args["model_repository"], args["model_version"])
            aoti = not os.path.isfile(os.path.join(folder, "model.pt")) and os.path.isfile(
                os.path.join(folder, "model.pt2")
            )
        path = _model_file(args, config, aoti)
        self.model: _TorchScript | _Exported = (
            _Exported(torch, path, config) if aoti else _TorchScript(torch, path, config)
        )
        self.input_types = {
            str(e["name"]): str(e.get("data_type", "")) for e in frameworks.config_tensors(config, "input")
        }
        self.output_types = {
            str(e["name"]): str(e.get("data_type", "")) for e in frameworks.config_tensors(config, "output")
        }
        for kind, types in (("input", self.input_types), ("output", self.output_types)):
            for name, dtype in types.items():
                if dtype not in _TORCH_DTYPES:
                    raise ConfigError(f"unsupported datatype {dtype} for {kind} '{name}'")
        self.outputs = self.model.outputs(config)
        self.batching = int(config.get("max_batch_size", 0) or 0) > 0
        # What the framework reports it uses (the tests and the oversubscription bench read this line).
        pb_utils.Logger.log_verbose(
            f"pytorch model '{self.name}': {path}, threads intra-op {torch.get_num_threads()} "
            f"inter-op {torch.get_num_interop_threads()}, inference mode {self.inference_mode}"
        )

    # --- execute ------------------------------------------------------------------------------------------

    def _to_torch(self, name: str, array: npt.NDArray[Any]) -> Any:
        if self.input_types.get(name) == "TYPE_STRING":
            if array.ndim != 1:
                raise ValueError(
                    f"input '{name}': a BYTES input of a PyTorch model must be 1-D (a List[str])"
                )
            return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in array.tolist()]
        return self.torch.from_numpy(np.ascontiguousarray(array))

    def _from_torch(self, name: str, value: Any) -> npt.NDArray[Any]:
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return np.array([v.encode("utf-8") for v in value], dtype=np.object_)
        if not isinstance(value, self.torch.Tensor):
            raise ValueError(f"output '{name}' is a {type(value).__name__}, not a tensor or a List[str]")
        array: npt.NDArray[Any] = value.detach().cpu().numpy()
        want = self.output_types.get(name, "")
        expected = _TORCH_DTYPES.get(want, "")
        if expected and array.dtype != np.dtype(expected):
            raise ValueError(
                f"unexpected datatype {array.dtype} for inference output '{name}', expecting {want}"
            )
        return array

    def _pick(self, results: Any, name: str) -> Any:
        where = self.outputs[name]
        if isinstance(results, dict):
            if name in results:
                return results[name]
            values = list(results.values())
            if isinstance(where, int) and where < len(values):
                return values[where]
            raise ValueError(f"the model's dict output has no key '{name}' (keys: {sorted(results)})")
        if isinstance(results, list | tuple) and not all(isinstance(v, str) for v in results):
            if isinstance(where, int) and where < len(results):
                return results[where]
            raise ValueError(f"output '{name}' is result {where}, the model returned {len(results)}")
        if where in (0, name):
            return results
        raise ValueError(f"output '{name}' is result {where}, the model returned one")

    def _run(self, inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        values = {name: self._to_torch(name, array) for name, array in inputs.items()}
        guard = self.torch.inference_mode() if self.inference_mode else self.torch.no_grad()
        with guard:
            results = self.model(values)
            return {name: self._from_torch(name, self._pick(results, name)) for name in self.outputs}

    def execute(self, requests: list[Any]) -> list[Any]:
        return frameworks.execute(requests, self.input_types, self._run, self.batching, "PyTorch")
