"""Nereid's fil backend (python/backends/fil: tree models, Triton's FIL backend config) through the real
tritonclient over HTTP and gRPC, with dynamic batching on.

The models are trained here, on a small generated table, by XGBoost and LightGBM themselves in the fil
backend's own venv (`npx nereid backends install fil`, which scripts/test.sh runs): an XGBoost binary
classifier (JSON; class with a threshold, and probabilities as [1 - p, p]), an XGBoost 3-class classifier
(UBJSON, probabilities), a LightGBM 3-class classifier (class index), a LightGBM regressor, and an XGBoost
regressor converted to a Treelite checkpoint. Every answer is compared element-wise with the framework's
own predict() on the same rows, requests of different sizes sent at once so the batcher merges them.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from nereid_server import ENTRY, REPO_ROOT, NereidServer, node_executable, start_server

FIL_DIR = REPO_ROOT / "python" / "backends" / "fil"
FEATURES = 6


def fil_python() -> Path:
    """The fil backend's venv interpreter, found by the server's own rule (backend-venv.ts)."""
    key = hashlib.sha256((FIL_DIR / "requirements.txt").read_bytes()).hexdigest()[:12]
    root = Path(os.environ.get("NEREID_BACKEND_VENVS") or REPO_ROOT / ".cache" / "backends")
    venv = root / f"fil-{key}"
    if not (venv / ".nereid-installed").exists():
        pytest.fail(f"the fil backend is not installed in {venv}: run 'npx nereid backends install fil'")
    return venv / "bin" / "python"


# Run by the fil venv's python: trains, saves the model files and the frameworks' own predictions.
TRAIN = r"""
import json, sys
from pathlib import Path
import numpy as np
import lightgbm as lgb
import treelite
import xgboost as xgb

out = Path(sys.argv[1])
rng = np.random.default_rng(7)
X = rng.normal(size=(300, 6))
binary = (X[:, 0] + 0.5 * X[:, 1] - X[:, 2] > 0).astype(np.int32)
three = np.digitize(X[:, 0] + X[:, 3], [-0.7, 0.7]).astype(np.int32)
target = (2.0 * X[:, 0] - X[:, 1] * X[:, 4] + 0.1 * rng.normal(size=300))
Xq = rng.normal(size=(40, 6))
np.save(out / "queries.npy", Xq)
dq = xgb.DMatrix(Xq)

b = xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, binary), 20)
b.save_model(str(out / "xgb_binary.json"))
np.save(out / "xgb_binary.npy", b.predict(dq))

m = xgb.train(
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, three), 15
)
m.save_model(str(out / "xgb_multi.ubj"))
np.save(out / "xgb_multi.npy", m.predict(dq))

r = xgb.train({"objective": "reg:squarederror", "max_depth": 4, "nthread": 1}, xgb.DMatrix(X, target), 25)
r.save_model(str(out / "xgb_reg.json"))
treelite.frontend.load_xgboost_model(str(out / "xgb_reg.json")).serialize(str(out / "checkpoint.tl"))
np.save(out / "xgb_reg.npy", r.predict(dq))

params = {"verbose": -1, "num_threads": 1, "min_data_in_leaf": 5}
lm = lgb.train({**params, "objective": "multiclass", "num_class": 3}, lgb.Dataset(X, three), 15)
lm.save_model(str(out / "lgb_multi.txt"))
np.save(out / "lgb_multi.npy", lm.predict(Xq))

lr = lgb.train({**params, "objective": "regression"}, lgb.Dataset(X, target), 25)
lr.save_model(str(out / "lgb_reg.txt"))
np.save(out / "lgb_reg.npy", lr.predict(Xq))
"""


def _config(name: str, width: int, params: dict[str, str]) -> str:
    entries = ",\n".join(f'  {{ key: "{k}" value: {{ string_value: "{v}" }} }}' for k, v in params.items())
    return f"""
name: "{name}"
backend: "fil"
max_batch_size: 64
input [ {{ name: "input__0" data_type: TYPE_FP32 dims: [ {FEATURES} ] }} ]
output [ {{ name: "output__0" data_type: TYPE_FP32 dims: [ {width} ] }} ]
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
dynamic_batching {{ max_queue_delay_microseconds: 20000 }}
parameters [
{entries}
]
"""


# name -> (file in the training folder, file name FIL expects, output width, parameters)
MODELS: dict[str, tuple[str, str, int, dict[str, str]]] = {
    "fil_xgb_proba": (
        "xgb_binary.json",
        "xgboost.json",
        2,
        {"model_type": "xgboost_json", "output_class": "true", "predict_proba": "true"},
    ),
    "fil_xgb_class": (
        "xgb_binary.json",
        "xgboost.json",
        1,
        # storage_type is GPU-only: accepted with a warning.
        {"model_type": "xgboost_json", "output_class": "true", "threshold": "0.3", "storage_type": "DENSE"},
    ),
    "fil_xgb_multi": (
        "xgb_multi.ubj",
        "xgboost.ubj",
        3,
        {"model_type": "xgboost_ubj", "output_class": "true", "predict_proba": "true"},
    ),
    "fil_lgb_class": ("lgb_multi.txt", "model.txt", 1, {"model_type": "lightgbm", "output_class": "true"}),
    "fil_lgb_reg": (
        "lgb_reg.txt",
        "model.txt",
        1,
        {"model_type": "lightgbm", "output_class": "false", "cpu_nthread": "1"},
    ),
    "fil_treelite_reg": (
        "checkpoint.tl",
        "checkpoint.tl",
        1,
        {"model_type": "treelite_checkpoint", "output_class": "false", "cpu_nthread": "2"},
    ),
    "fil_bad_type": ("xgb_binary.json", "xgboost.json", 1, {"model_type": "catboost"}),
}


def _load(path: Path) -> npt.NDArray[np.float32]:
    values: npt.NDArray[np.float32] = np.load(path).astype(np.float32)
    return values


def _expected(trained: Path, model: str) -> npt.NDArray[np.float32]:
    if model == "fil_xgb_proba":
        p = _load(trained / "xgb_binary.npy")
        return np.stack([1 - p, p], axis=1)
    if model == "fil_xgb_class":
        return (_load(trained / "xgb_binary.npy") > 0.3).astype(np.float32).reshape(-1, 1)
    if model == "fil_xgb_multi":
        return _load(trained / "xgb_multi.npy")
    if model == "fil_lgb_class":
        probabilities = _load(trained / "lgb_multi.npy")
        classes: npt.NDArray[np.float32] = np.argmax(probabilities, axis=1).astype(np.float32)
        return classes.reshape(-1, 1)
    if model == "fil_lgb_reg":
        return _load(trained / "lgb_reg.npy").reshape(-1, 1)
    return _load(trained / "xgb_reg.npy").reshape(-1, 1)


class Fil:
    def __init__(self, server: NereidServer, trained: Path) -> None:
        self.server = server
        self.trained = trained
        self.queries: npt.NDArray[np.float32] = _load(trained / "queries.npy")


@pytest.fixture(scope="module")
def fil(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fil]:
    if node_executable() is None or not ENTRY.exists():
        pytest.fail(f"node and {ENTRY} are needed")
    python = fil_python()
    trained = tmp_path_factory.mktemp("fil_trained")
    subprocess.run([str(python), "-c", TRAIN, str(trained)], check=True, timeout=300)
    repo = tmp_path_factory.mktemp("fil_repo")
    for name, (source, target, width, params) in MODELS.items():
        (repo / name / "1").mkdir(parents=True)
        shutil.copy(trained / source, repo / name / "1" / target)
        (repo / name / "config.pbtxt").write_text(_config(name, width, params))
    log = tmp_path_factory.mktemp("fil_log") / "server.log"
    server = start_server(
        [
            f"--model-repository={repo}",
            "--http-port=0",
            "--grpc-port=0",
            "--metrics-port=0",
            "--model-control-mode=explicit",
            *(f"--load-model={m}" for m in MODELS if m != "fil_bad_type"),
        ],
        log,
    )
    try:
        yield Fil(server, trained)
    finally:
        code = server.stop()
        assert code == 0, server.log_tail()


def _infer_http(url: str, model: str, rows: npt.NDArray[np.float32]) -> npt.NDArray[Any]:
    with httpclient.InferenceServerClient(url=url) as c:
        inp = httpclient.InferInput("input__0", list(rows.shape), "FP32")
        inp.set_data_from_numpy(rows, binary_data=True)
        result = c.infer(model, [inp])
        out: npt.NDArray[Any] = result.as_numpy("output__0")
        return out


def _infer_grpc(url: str, model: str, rows: npt.NDArray[np.float32]) -> npt.NDArray[Any]:
    with grpcclient.InferenceServerClient(url=url) as c:
        inp = grpcclient.InferInput("input__0", list(rows.shape), "FP32")
        inp.set_data_from_numpy(rows)
        result = c.infer(model, [inp])
        out: npt.NDArray[Any] = result.as_numpy("output__0")
        return out


ANSWERED = [m for m in MODELS if m != "fil_bad_type"]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("model", ANSWERED)
def test_fil_matches_the_framework(fil: Fil, model: str, protocol: str) -> None:
    url = fil.server.http_url if protocol == "http" else fil.server.url("grpc")
    call = _infer_http if protocol == "http" else _infer_grpc
    expected = _expected(fil.trained, model)
    # Requests of 1..6 rows at once, covering all 40 query rows: the batcher merges them into one execute.
    bounds: list[tuple[int, int]] = []
    start = 0
    size = 1
    while start < len(fil.queries):
        bounds.append((start, min(start + size, len(fil.queries))))
        start += size
        size = size % 6 + 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda b: call(url, model, fil.queries[b[0] : b[1]]), bounds))
    for (lo, hi), got in zip(bounds, answers, strict=True):
        assert got.dtype == np.float32
        assert got.shape == expected[lo:hi].shape
        np.testing.assert_allclose(got, expected[lo:hi], rtol=1e-5, atol=1e-6)


def test_fil_statistics_count_every_row(fil: Fil) -> None:
    with httpclient.InferenceServerClient(url=fil.server.http_url) as c:
        before = c.get_inference_statistics("fil_lgb_reg")["model_stats"][0]["inference_count"]
        _infer_http(fil.server.http_url, "fil_lgb_reg", fil.queries[:5])
        after = c.get_inference_statistics("fil_lgb_reg")["model_stats"][0]["inference_count"]
    assert after - before == 5


def test_fil_gpu_only_parameter_is_accepted_with_a_warning(fil: Fil) -> None:
    text = Path(fil.server.log_path).read_text(errors="replace")
    assert "parameter 'storage_type' applies to GPU execution only" in text


def test_fil_wrong_feature_count_is_a_client_error(fil: Fil) -> None:
    rows = np.zeros((2, FEATURES + 1), dtype=np.float32)
    with httpclient.InferenceServerClient(url=fil.server.http_url) as c:
        inp = httpclient.InferInput("input__0", list(rows.shape), "FP32")
        inp.set_data_from_numpy(rows)
        with pytest.raises(InferenceServerException) as e:
            c.infer("fil_lgb_reg", [inp])
    assert "400" in str(e.value.status()) or "unexpected shape" in str(e.value)
    # and the model still answers
    assert _infer_http(fil.server.http_url, "fil_lgb_reg", fil.queries[:1]).shape == (1, 1)


def test_fil_bad_model_type_fails_the_load_clearly(fil: Fil) -> None:
    with httpclient.InferenceServerClient(url=fil.server.http_url) as c:
        with pytest.raises(InferenceServerException) as e:
            c.load_model("fil_bad_type")
        assert not c.is_model_ready("fil_bad_type")
    message = str(e.value)
    assert "model_type 'catboost' of model 'fil_bad_type' is not one of xgboost, xgboost_json" in message
    assert "lightgbm" in message
