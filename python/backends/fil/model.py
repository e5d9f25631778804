"""Nereid's `fil` backend: Triton's FIL backend (tree models) on CPU libraries, as a Python-based backend.

A model with `backend: "fil"` is a tree ensemble file in its version folder, read by the library of its
`model_type` parameter (Triton's FIL names and default file names):

| model_type            | file            | read by                         |
| --------------------- | --------------- | ------------------------------- |
| `xgboost`             | `xgboost.model` | xgboost (CPU build)             |
| `xgboost_json`        | `xgboost.json`  | xgboost                         |
| `xgboost_ubj`         | `xgboost.ubj`   | xgboost                         |
| `lightgbm`            | `model.txt`     | lightgbm                        |
| `treelite_checkpoint` | `checkpoint.tl` | treelite (its GTIL interpreter) |

`default_model_filename` names another file of the version folder. The input (`input__0`, FP32
`[num_features]`) is batched over dim 0: every request of a batch is predicted in one call. The output
(`output__0`) is, as FIL's: the prediction of a regressor (`output_class: false`); for a classifier the
class index (a binary one thresholded by `threshold`, default 0.5), or with `predict_proba: true` the
probability of each class (a binary classifier's single probability, or `[1 - p, p]` when the output has
two values). `cpu_nthread` sets the framework's threads (default: all cores). FIL's other performance
parameters are accepted; the GPU-only ones log a warning that they have no
effect on the CPU. docs/backends.md lists what is honoured.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

import triton_python_backend_utils as pb_utils

DEFAULT_FILES = {
    "xgboost": "xgboost.model",
    "xgboost_json": "xgboost.json",
    "xgboost_ubj": "xgboost.ubj",
    "lightgbm": "model.txt",
    "treelite_checkpoint": "checkpoint.tl",
}
HONOURED = {"model_type", "output_class", "predict_proba", "threshold", "cpu_nthread"}
# Accepted, with no effect to report: they change FIL's speed or memory layout only, or XGBoost already does
# what they ask.
NO_EFFECT = {
    "use_experimental_optimizations",
    "xgboost_allow_unknown_field",
    "layout",
    "chunk_size",
    "align_bytes",
}
# FIL's parameters for GPU execution (docs/model_config.md of Triton's fil_backend).
GPU_ONLY = {"threads_per_tree", "storage_type", "algo", "blocks_per_sm", "transfer_threshold"}
# The python backend's own model parameters, read by the server.
SERVER_PARAMETERS = {"EXECUTION_ENV_PATH", "execution_timeout_seconds", "stub_memory_limit_mb"}


def _fail(message: str) -> None:
    raise pb_utils.TritonModelException(message)


def _bool(params: dict[str, str], key: str, default: bool, model: str) -> bool:
    raw = params.get(key)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    _fail(f"parameter '{key}' of model '{model}' must be true or false, got '{raw}'")
    return default


def _model_file(args: dict[str, str], config: dict[str, Any], model_type: str, model: str) -> str:
    version_dir = os.path.join(args["model_repository"], args["model_version"])
    name = str(config.get("default_model_filename") or "") or DEFAULT_FILES[model_type]
    path = os.path.realpath(os.path.join(version_dir, name))
    if not path.startswith(os.path.realpath(version_dir) + os.sep):
        _fail(f"default_model_filename '{name}' of model '{model}' must name a file in its version folder")
    if not os.path.isfile(path):
        _fail(
            f"model '{model}' has no file '{name}' in version {args['model_version']} "
            f"(model_type '{model_type}' reads '{DEFAULT_FILES[model_type]}' unless default_model_filename "
            "names another)"
        )
    return path


class _Forest:
    """One loaded model: `scores(x)` gives (rows, k) float32, k = 1 for a regressor or a binary classifier."""

    def __init__(self, model_type: str, path: str, model: str, threads: int) -> None:
        self.model_type = model_type
        self.num_features: int | None = None
        # 0: the library's default (all cores)
        self.threads = threads
        try:
            if model_type.startswith("xgboost"):
                self._load_xgboost(path)
            elif model_type == "lightgbm":
                self._load_lightgbm(path)
            else:
                self._load_treelite(path)
        except pb_utils.TritonModelException:
            raise
        except Exception as e:  # the libraries raise their own types for a bad file
            _fail(f"model '{model}': cannot read '{os.path.basename(path)}' as {model_type}: {e}")

    def _load_xgboost(self, path: str) -> None:
        import xgboost

        booster = xgboost.Booster()
        booster.load_model(path)
        if self.threads > 0:
            booster.set_param({"nthread": self.threads})
        learner = json.loads(booster.save_config())["learner"]
        self.objective = str(learner["objective"]["name"])
        self.num_class = int(learner["learner_model_param"].get("num_class", "0") or 0)
        self.num_features = booster.num_features()
        self._booster = booster

    def _load_lightgbm(self, path: str) -> None:
        import lightgbm

        booster = lightgbm.Booster(model_file=path)
        self.num_features = booster.num_feature()
        self._lgb = booster

    def _load_treelite(self, path: str) -> None:
        import treelite

        self._tl = treelite.Model.deserialize(path)
        self.num_features = int(self._tl.num_feature)

    def scores(self, x: np.ndarray) -> np.ndarray:
        if self.model_type.startswith("xgboost"):
            if self.objective == "multi:softmax":
                # Labels would lose the probabilities: the margins, softened as softprob does.
                margin = np.asarray(self._booster.inplace_predict(x, output_margin=True), dtype=np.float64)
                e = np.exp(margin - margin.max(axis=1, keepdims=True))
                out = e / e.sum(axis=1, keepdims=True)
            else:
                out = np.asarray(self._booster.inplace_predict(x))
        elif self.model_type == "lightgbm":
            out = np.asarray(self._lgb.predict(x, num_threads=self.threads))
        else:
            import treelite

            out = np.asarray(treelite.gtil.predict(self._tl, x, nthread=self.threads or -1))
        scores: np.ndarray = out.astype(np.float32, copy=False)
        return scores.reshape(scores.shape[0], -1)


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        self.model = model = str(config.get("name") or args.get("model_name", ""))
        params = {str(k): str(v.get("string_value", "")) for k, v in (config.get("parameters") or {}).items()}
        model_type = params.get("model_type", "xgboost").strip()
        if model_type not in DEFAULT_FILES:
            _fail(
                f"model_type '{model_type}' of model '{model}' is not one of {', '.join(DEFAULT_FILES)} "
                "(Triton's FIL backend names)"
            )
        for key in sorted(params):
            if key in GPU_ONLY:
                pb_utils.Logger.log_warn(
                    f"fil model '{model}': parameter '{key}' applies to GPU execution only and has no "
                    "effect here (CPU)"
                )
            elif key not in HONOURED and key not in NO_EFFECT and key not in SERVER_PARAMETERS:
                pb_utils.Logger.log_warn(f"fil model '{model}': unknown parameter '{key}' is ignored")
        self.output_class = _bool(params, "output_class", False, model)
        self.predict_proba = _bool(params, "predict_proba", False, model)
        raw_threshold = params.get("threshold", "").strip()
        try:
            self.threshold = float(raw_threshold) if raw_threshold else 0.5
        except ValueError:
            _fail(f"parameter 'threshold' of model '{model}' must be a number, got '{raw_threshold}'")
        raw_threads = params.get("cpu_nthread", "").strip()
        try:
            threads = int(raw_threads) if raw_threads else 0
        except ValueError:
            _fail(f"parameter 'cpu_nthread' of model '{model}' must be an integer, got '{raw_threads}'")
        if not np.isfinite(self.threshold):
            _fail(f"parameter 'threshold' of model '{model}' must be a finite number")
        inputs = config.get("input") or []
        outputs = config.get("output") or []
        if len(inputs) != 1:
            _fail(f"fil model '{model}' must have exactly one input (input__0), it has {len(inputs)}")
        if inputs[0].get("data_type") != "TYPE_FP32":
            _fail(f"input '{inputs[0].get('name')}' of fil model '{model}' must be TYPE_FP32")
        main = [o for o in outputs if o.get("name") != "treeshap_output"]
        if any(o.get("name") == "treeshap_output" for o in outputs):
            _fail(
                f"fil model '{model}': treeshap_output (SHAP values) is not supported by Nereid's fil backend"
            )
        if len(main) != 1:
            _fail(f"fil model '{model}' must have exactly one output (output__0), it has {len(main)}")
        if main[0].get("data_type") != "TYPE_FP32":
            _fail(f"output '{main[0].get('name')}' of fil model '{model}' must be TYPE_FP32")
        self.input_name = str(inputs[0]["name"])
        self.output_name = str(main[0]["name"])
        self.output_dims = [int(d) for d in main[0].get("dims", [])]
        self.input_dims = [int(d) for d in inputs[0].get("dims", [])]
        path = _model_file(args, config, model_type, model)
        self.forest = _Forest(model_type, path, model, max(threads, 0))
        features = self.input_dims[-1] if self.input_dims else -1
        known = self.forest.num_features
        if features > 0 and known is not None and known > 0 and features != known:
            _fail(
                f"input '{self.input_name}' of fil model '{model}' has {features} features but the model "
                f"was trained on {known}"
            )

    def _outputs(self, scores: np.ndarray) -> np.ndarray:
        out: np.ndarray = scores
        k = scores.shape[1]
        if not self.output_class:
            pass
        elif self.predict_proba:
            if k == 1 and self.output_dims and self.output_dims[-1] == 2:
                out = np.concatenate([1.0 - scores, scores], axis=1).astype(np.float32)
        elif k == 1:
            out = (scores > self.threshold).astype(np.float32)
        else:
            out = np.argmax(scores, axis=1).astype(np.float32).reshape(-1, 1)
        return out

    def execute(self, requests: list[Any]) -> list[Any]:
        arrays: list[np.ndarray] = []
        ranks: list[int] = []
        for request in requests:
            tensor = pb_utils.get_input_tensor_by_name(request, self.input_name)
            if tensor is None:
                error = pb_utils.TritonError(
                    f"fil model '{self.model}' needs input '{self.input_name}'",
                    pb_utils.TritonError.INVALID_ARG,
                )
                return [pb_utils.InferenceResponse(error=error) for _ in requests]
            x = tensor.as_numpy()
            ranks.append(x.ndim)
            arrays.append(x.reshape(1, -1) if x.ndim == 1 else x.reshape(x.shape[0], -1))
        sizes = [a.shape[0] for a in arrays]
        batch = np.ascontiguousarray(np.concatenate(arrays, axis=0), dtype=np.float32)
        known = self.forest.num_features
        if known is not None and known > 0 and batch.shape[1] != known:
            error = pb_utils.TritonError(
                f"fil model '{self.model}' takes {known} features per row, got {batch.shape[1]}",
                pb_utils.TritonError.INVALID_ARG,
            )
            return [pb_utils.InferenceResponse(error=error) for _ in requests]
        out = self._outputs(self.forest.scores(batch))
        width = (
            int(np.prod(self.output_dims)) if self.output_dims and all(d > 0 for d in self.output_dims) else 0
        )
        if width and out.shape[1] != width:
            error = pb_utils.TritonError(
                f"fil model '{self.model}' produces {out.shape[1]} values per row but output "
                f"'{self.output_name}' declares dims {self.output_dims}"
            )
            return [pb_utils.InferenceResponse(error=error) for _ in requests]
        responses = []
        start = 0
        for n, rank in zip(sizes, ranks, strict=True):
            rows = out[start : start + n]
            start += n
            shape = [n, *self.output_dims] if width else list(rows.shape)
            if rank == 1:
                shape = shape[1:]
            tensor = pb_utils.Tensor(self.output_name, np.ascontiguousarray(rows.reshape(shape)))
            responses.append(pb_utils.InferenceResponse([tensor]))
        return responses
