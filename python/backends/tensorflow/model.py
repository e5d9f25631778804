"""Nereid's `tensorflow` backend, a Python-based backend (docs/backends.md#tensorflow): the SavedModels
Triton's TensorFlow backend serves, on the TensorFlow (`tensorflow-cpu`) that `npx nereid backends install
tensorflow` puts in this backend's venv. Triton deprecated its TensorFlow backend in release 25.03; this
one lets such a repository keep loading unchanged.

- `platform: "tensorflow_savedmodel"` (or `backend: "tensorflow"`): `1/model.savedmodel/`, a SavedModel
  folder (`default_model_filename` names another). The meta graph of tag TF_GRAPH_TAG (default `serve`) and
  its signature TF_SIGNATURE_DEF (default `serving_default`) are served; the config's inputs and outputs
  are the signature's keys, as in Triton.
- Auto-complete, as Triton's backend: missing inputs/outputs are filled from the signature (name, type,
  dims), and max_batch_size becomes 4 (with dynamic batching) when every tensor of the signature has a
  variable dim 0 and the config gives none.
- With max_batch_size > 0 the requests of one execute run as one batch over dim 0.
- Types: every numeric type numpy has, BOOL, and STRING (TYPE_STRING, BYTES on the wire).
- Parameters: TF_SIGNATURE_DEF, TF_GRAPH_TAG, TF_NUM_INTRA_THREADS, TF_NUM_INTER_THREADS (both default to
  this machine's cores divided among the model's instances), TF_USE_PER_SESSION_THREADS and
  MAX_SESSION_SHARE_COUNT (accepted: each instance is a process of its own); `--backend-config=tensorflow,
  version=2` (1 is refused), allow-soft-placement and gpu-memory-fraction (no effect on CPU).
- `platform: "tensorflow_graphdef"` (TF1 frozen graphs) is refused with a message saying to export a
  SavedModel; TF_INIT_OPS_FILE, a GraphDef-only parameter, likewise.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import numpy.typing as npt

import triton_python_backend_utils as pb_utils
from nereid_stub import frameworks
from nereid_stub.frameworks import ConfigError

_DEFAULT_FILE = "model.savedmodel"
_DEFAULT_SIGNATURE = "serving_default"
_DEFAULT_TAG = "serve"
# Triton's default-max-batch-size, what auto-complete gives a signature that batches.
_DEFAULT_MAX_BATCH_SIZE = 4
# TensorFlow dtype names (tf.DType.name) to Triton's config types.
_TF_TO_TRITON: dict[str, str] = {
    "bool": "TYPE_BOOL",
    "uint8": "TYPE_UINT8",
    "uint16": "TYPE_UINT16",
    "uint32": "TYPE_UINT32",
    "uint64": "TYPE_UINT64",
    "int8": "TYPE_INT8",
    "int16": "TYPE_INT16",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "float16": "TYPE_FP16",
    "float32": "TYPE_FP32",
    "float64": "TYPE_FP64",
    "string": "TYPE_STRING",
}
# Accepted for Triton configs' sake; each Nereid instance is its own process with its own session.
_NO_EFFECT = ("TF_USE_PER_SESSION_THREADS", "MAX_SESSION_SHARE_COUNT")


def _model_path(folder: str, config: dict[str, Any]) -> str:
    platform = str(config.get("platform") or "")
    if platform == "tensorflow_graphdef" or str(config.get("default_model_filename") or "").endswith(
        ".graphdef"
    ):
        raise ConfigError(
            "TensorFlow GraphDef models (tensorflow_graphdef, model.graphdef) are not served by Nereid: "
            "export the model as a SavedModel (tf.saved_model.save) to 1/model.savedmodel/ and set "
            'platform: "tensorflow_savedmodel"'
        )
    name = str(config.get("default_model_filename") or "") or _DEFAULT_FILE
    if os.path.basename(name) != name:
        raise ConfigError(f"default_model_filename '{name}' must name a folder inside the version folder")
    path = os.path.join(folder, name)
    if not os.path.isdir(path):
        raise ConfigError(f"unable to find the SavedModel folder '{path}'")
    if not any(os.path.isfile(os.path.join(path, f)) for f in ("saved_model.pb", "saved_model.pbtxt")):
        raise ConfigError(f"'{path}' is not a SavedModel: it holds no saved_model.pb")
    return path


def _signature_of(path: str, tag: str, signature: str) -> Any:
    """The SignatureDef `signature` of the meta graph tagged `tag`, read from saved_model.pb (as Triton reads
    it, without running the model)."""
    from tensorflow.core.protobuf import saved_model_pb2
    from tensorflow.python.lib.io import file_io

    proto = saved_model_pb2.SavedModel()
    pb = os.path.join(path, "saved_model.pb")
    try:
        if os.path.isfile(pb):
            proto.ParseFromString(file_io.read_file_to_string(pb, binary_mode=True))
        else:
            from google.protobuf import text_format

            text_format.Parse(file_io.read_file_to_string(os.path.join(path, "saved_model.pbtxt")), proto)
    except Exception as e:
        raise ConfigError(f"unable to read the SavedModel '{path}': {e}") from e
    tags_seen: list[list[str]] = []
    for meta in proto.meta_graphs:
        tags = list(meta.meta_info_def.tags)
        tags_seen.append(tags)
        if tag in tags:
            if signature not in meta.signature_def:
                known = sorted(k for k in meta.signature_def if not k.startswith("__"))
                raise ConfigError(
                    f"the SavedModel has no signature '{signature}' (TF_SIGNATURE_DEF); its signatures: "
                    f"{', '.join(known) or 'none'}"
                )
            return meta.signature_def[signature]
    raise ConfigError(
        f"the SavedModel has no meta graph tagged '{tag}' (TF_GRAPH_TAG); its tags: {tags_seen or 'none'}"
    )


def _tensor_type(name: str, info: Any) -> str:
    import tensorflow as tf

    dtype = tf.dtypes.as_dtype(info.dtype).name
    triton = _TF_TO_TRITON.get(dtype)
    if triton is None:
        raise ConfigError(f"signature tensor '{name}' has type {dtype}, which Nereid cannot carry")
    return triton


def _tensor_dims(info: Any) -> list[int] | None:
    """The tensor's dims (-1 for a variable one), or None when its rank is unknown."""
    if info.tensor_shape.unknown_rank:
        return None
    return [int(d.size) if d.size >= 0 else -1 for d in info.tensor_shape.dim]


def _config_dims(entry: dict[str, Any]) -> list[int]:
    reshape = entry.get("reshape")
    if isinstance(reshape, dict):
        return [int(d) for d in reshape.get("shape", [])]
    return [int(d) for d in entry.get("dims", [])]


def _backend_config(args: dict[str, str]) -> dict[str, str]:
    try:
        raw = json.loads(args.get("backend_config") or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config: Any) -> Any:
        config = auto_complete_model_config.as_dict()
        have_inputs = bool(frameworks.config_tensors(config, "input"))
        have_outputs = bool(frameworks.config_tensors(config, "output"))
        if have_inputs and have_outputs and int(config.get("max_batch_size", 0) or 0) > 0:
            return auto_complete_model_config
        params = frameworks.parameters(config)
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        path = _model_path(pb_utils.get_model_dir(), config)
        signature = _signature_of(
            path,
            params.get("TF_GRAPH_TAG", "").strip() or _DEFAULT_TAG,
            params.get("TF_SIGNATURE_DEF", "").strip() or _DEFAULT_SIGNATURE,
        )
        tensors = {
            "input": sorted(signature.inputs.items()),
            "output": sorted(signature.outputs.items()),
        }
        batching = int(config.get("max_batch_size", 0) or 0)
        if batching == 0 and not have_inputs and not have_outputs:
            every = [_tensor_dims(info) for pairs in tensors.values() for _, info in pairs]
            if every and all(d is not None and len(d) >= 1 and d[0] == -1 for d in every):
                auto_complete_model_config.set_max_batch_size(_DEFAULT_MAX_BATCH_SIZE)
                if "sequence_batching" not in config and "dynamic_batching" not in config:
                    auto_complete_model_config.set_dynamic_batching()
                batching = _DEFAULT_MAX_BATCH_SIZE
        for kind, present in (("input", have_inputs), ("output", have_outputs)):
            if present:
                continue
            for name, info in tensors[kind]:
                dims = _tensor_dims(info)
                if dims is None:
                    raise ConfigError(
                        f"signature tensor '{name}' has an unknown rank; give its dims in config"
                    )
                if batching > 0:
                    dims = dims[1:]
                entry = {"name": name, "data_type": _tensor_type(name, info), "dims": dims or [1]}
                if kind == "input":
                    auto_complete_model_config.add_input(entry)
                else:
                    auto_complete_model_config.add_output(entry)
                if not dims:
                    # A scalar (per row): dims [1] reshaped to [] (config dims cannot be empty).
                    for added in auto_complete_model_config.as_dict()[kind]:
                        if added.get("name") == name:
                            added["reshape"] = {"shape": []}
        return auto_complete_model_config

    def initialize(self, args: dict[str, str]) -> None:
        config: dict[str, Any] = json.loads(args["model_config"])
        self.name = str(config.get("name", args.get("model_name", "")))
        try:
            self._setup(args, config, frameworks.parameters(config))
        except ConfigError as e:
            raise pb_utils.TritonModelException(f"tensorflow model '{self.name}': {e}") from e

    def _threads(self, config: dict[str, Any], params: dict[str, str]) -> tuple[int, int]:
        fair = frameworks.fair_threads(config)
        intra = frameworks.count(params, "TF_NUM_INTRA_THREADS", minimum=0)
        inter = frameworks.count(params, "TF_NUM_INTER_THREADS", minimum=0)
        # Absent: the fair share. 0: TensorFlow's own choice (every core), as in Triton.
        return (fair if intra is None else intra), (fair if inter is None else inter)

    def _setup(self, args: dict[str, str], config: dict[str, Any], params: dict[str, str]) -> None:
        backend = _backend_config(args)
        version = backend.get("version", "2").strip()
        if version != "2":
            raise ConfigError(f"--backend-config=tensorflow,version={version}: only TensorFlow 2 is served")
        if params.get("TF_INIT_OPS_FILE", "").strip():
            raise ConfigError("TF_INIT_OPS_FILE is for GraphDef models, which Nereid does not serve")
        for key in _NO_EFFECT:
            if key in params:
                pb_utils.Logger.log_info(
                    f"tensorflow model '{self.name}': {key} has no effect (each instance is its own process "
                    "with its own session)"
                )
        for key in ("allow-soft-placement", "gpu-memory-fraction"):
            if key in backend:
                pb_utils.Logger.log_warn(f"tensorflow: --backend-config {key} has no effect on CPU; ignored")
        intra, inter = self._threads(config, params)
        frameworks.limit_native_pools(intra or frameworks.usable_cores())
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        folder = os.path.join(args["model_repository"], args["model_version"])
        path = _model_path(folder, config)
        tag = params.get("TF_GRAPH_TAG", "").strip() or _DEFAULT_TAG
        signature_name = params.get("TF_SIGNATURE_DEF", "").strip() or _DEFAULT_SIGNATURE
        signature = _signature_of(path, tag, signature_name)
        import tensorflow as tf

        self.tf = tf
        # Before any op runs (a fresh stub has run none): the pools are made on first use.
        tf.config.threading.set_intra_op_parallelism_threads(intra)
        tf.config.threading.set_inter_op_parallelism_threads(inter)
        self.max_batch = int(config.get("max_batch_size", 0) or 0)
        self.inputs = self._check(config, "input", dict(signature.inputs))
        self.outputs = self._check(config, "output", dict(signature.outputs))
        try:
            self.loaded = tf.saved_model.load(path, tags=[tag])
        except Exception as e:
            raise ConfigError(
                f"unable to load the SavedModel '{path}': {str(e).strip().splitlines()[0]}"
            ) from e
        self.function = self.loaded.signatures[signature_name]
        self.input_dtypes = {name: tf.dtypes.as_dtype(signature.inputs[name].dtype) for name in self.inputs}
        # What TensorFlow reports it uses (the tests read this line).
        pb_utils.Logger.log_verbose(
            f"tensorflow model '{self.name}': {path}, signature {signature_name}, threads intra-op "
            f"{tf.config.threading.get_intra_op_parallelism_threads()} inter-op "
            f"{tf.config.threading.get_inter_op_parallelism_threads()}"
        )

    def _check(self, config: dict[str, Any], kind: str, tensors: dict[str, Any]) -> dict[str, str]:
        """The config's `kind` tensors (name → Triton type), each checked against the signature's."""
        out: dict[str, str] = {}
        entries = frameworks.config_tensors(config, kind)
        if not entries:
            raise ConfigError(f"model configuration must contain at least one {kind}, none were specified.")
        for entry in entries:
            name = str(entry.get("name", ""))
            info = tensors.get(name)
            if info is None:
                raise ConfigError(
                    f"unable to load model '{self.name}', {kind} '{name}' is not in the signature "
                    f"(its {kind}s: {', '.join(sorted(tensors))})"
                )
            want = _tensor_type(name, info)
            got = str(entry.get("data_type", ""))
            if got != want:
                raise ConfigError(
                    f"unable to load model '{self.name}', {kind} '{name}' data-type {got} doesn't match "
                    f"model data-type {want}"
                )
            dims = _tensor_dims(info)
            if dims is not None:
                if self.max_batch > 0:
                    if not dims or dims[0] not in (-1,):
                        raise ConfigError(
                            f"unable to load model '{self.name}', configuration specified max-batch "
                            f"{self.max_batch} but {kind} '{name}' of the signature has shape {dims}, "
                            "without a variable batch dimension 0"
                        )
                    dims = dims[1:]
                given = _config_dims(entry)
                if given == [1] and not dims:
                    given = []
                if len(given) != len(dims) or any(
                    m != -1 and g != -1 and m != g for g, m in zip(given, dims, strict=True)
                ):
                    raise ConfigError(
                        f"unable to load model '{self.name}', {kind} '{name}' dims {given} don't match the "
                        f"signature's {dims}{' (past the batch dimension)' if self.max_batch > 0 else ''}"
                    )
            out[name] = want
        return out

    # --- execute ------------------------------------------------------------------------------------------

    def _run(self, inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        tf = self.tf
        feed = {
            name: tf.convert_to_tensor(array, dtype=self.input_dtypes[name]) for name, array in inputs.items()
        }
        results = self.function(**feed)
        out: dict[str, npt.NDArray[Any]] = {}
        for name, dtype in self.outputs.items():
            array = results[name].numpy()
            if dtype == "TYPE_STRING":
                array = np.asarray(array, dtype=np.object_)
            out[name] = array
        return out

    def execute(self, requests: list[Any]) -> list[Any]:
        return frameworks.execute(requests, self.inputs, self._run, self.max_batch > 0, "TensorFlow")
