"""The `openvino` backend (python/backends/openvino, docs/backends.md#openvino) through the real tritonclient
over HTTP and gRPC: an ONNX model made here with the onnx package (MatMul, Relu, ArgMax; dynamic batch),
converted to OpenVINO IR by OpenVINO itself (framework_models.py), served as IR with a full config
(NUM_STREAMS, PERFORMANCE_HINT, INFERENCE_NUM_THREADS), as IR with a config of one line (auto-complete fills
inputs, outputs, max_batch_size and dynamic batching from the model), and as the ONNX file read by OpenVINO.
The requests are sent at once with different batch sizes; every answer is compared element-wise with what
OpenVINO computes on the same inputs called directly.

Needs the backend's venv (`npx nereid backends install openvino`, which scripts/test.sh runs); without it
the tests skip and say so.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from framework_backends import (
    PROTOCOLS,
    Served,
    assert_matches_framework,
    counts,
    infer_all,
    make_models,
    request_count,
    require_venv,
    serve,
)
from nereid_stub.frameworks import usable_cores

MODELS = ["openvino_ir", "openvino_autocomplete", "openvino_onnx"]


def write_onnx(path: Path) -> None:
    """x [batch, 4] → y = relu(x @ W) [batch, 3], cls = argmax(x @ W) [batch] (int64)."""
    weights = ((np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0) / 7.0).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["mm"]),
            helper.make_node("Relu", ["mm"], ["y"]),
            helper.make_node("ArgMax", ["mm"], ["cls"], axis=1, keepdims=0),
        ],
        "nereid_openvino_test",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
            helper.make_tensor_value_info("cls", TensorProto.INT64, ["batch"]),
        ],
        [numpy_helper.from_array(weights, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


@pytest.fixture(scope="module")
def ov_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    python = require_venv("openvino")
    out = tmp_path_factory.mktemp("openvino")
    write_onnx(out / "onnx" / "model.onnx")
    make_models("openvino", python, out)
    # A config naming a tensor the model does not have.
    wrong = out / "models" / "openvino_wrong_name"
    shutil.copytree(out / "models" / "openvino_ir" / "1", wrong / "1")
    (wrong / "config.pbtxt").write_text(
        'backend: "openvino"\nmax_batch_size: 8\n'
        'input { name: "not_x" data_type: TYPE_FP32 dims: [ 4 ] }\n'
        'output { name: "y" data_type: TYPE_FP32 dims: [ 3 ] }\n',
        encoding="utf-8",
    )
    yield from serve(out, out / "server.log")


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_answers_equal_openvino(ov_served: Served, protocol: str, model: str) -> None:
    answers = infer_all(ov_served, protocol, model)
    assert_matches_framework(ov_served, model, answers)


def test_auto_complete_fills_the_config_from_the_model(ov_served: Served) -> None:
    config = ov_served.http.get_model_config("openvino_autocomplete")
    assert config["max_batch_size"] == 4  # Triton's default-max-batch-size: every tensor batches on dim 0
    assert "dynamic_batching" in config
    assert [(i["name"], i["data_type"], i["dims"]) for i in config["input"]] == [("x", "TYPE_FP32", [4])]
    outputs = {o["name"]: o for o in config["output"]}
    assert (outputs["y"]["data_type"], outputs["y"]["dims"]) == ("TYPE_FP32", [3])
    # One value per row: dims [1] reshaped to [] (config dims cannot be empty).
    assert (outputs["cls"]["data_type"], outputs["cls"]["dims"]) == ("TYPE_INT64", [1])
    assert outputs["cls"].get("reshape", {}).get("shape", []) == []


def test_dynamic_batcher_joins_requests(ov_served: Served) -> None:
    before = counts(ov_served, "openvino_ir")
    answers = infer_all(ov_served, "http", "openvino_ir")
    assert_matches_framework(ov_served, "openvino_ir", answers)
    after = counts(ov_served, "openvino_ir")
    requests = request_count(ov_served.expected("openvino_ir"))
    assert after[0] - before[0] == sum(int(a["y"].shape[0]) for a in answers)
    assert after[1] - before[1] < requests, f"no two of {requests} requests were executed together"


def _thread_lines(served: Served, model: str) -> list[tuple[int, int]]:
    pattern = re.compile(rf"openvino model '{re.escape(model)}': .* threads (\d+) streams (\d+)")
    return [(int(a), int(b)) for a, b in pattern.findall(served.server.log_text())]


def test_threads_default_to_a_fair_share_of_the_cores(ov_served: Served) -> None:
    # Two instances, no INFERENCE_NUM_THREADS: each compiled model gets cores // 2 (at least 1).
    lines = _thread_lines(ov_served, "openvino_autocomplete")
    assert [threads for threads, _ in lines] == [max(1, usable_cores() // 2)] * 2


def test_parameters_reach_the_compiled_model(ov_served: Served) -> None:
    # INFERENCE_NUM_THREADS 1 and NUM_STREAMS 1, as the compiled model reports them.
    assert _thread_lines(ov_served, "openvino_ir") == [(1, 1)]


def test_unknown_tensor_name_fails_the_load(ov_served: Served) -> None:
    index = {m["name"]: m for m in ov_served.http.get_model_repository_index()}
    entry = index["openvino_wrong_name"]
    assert entry.get("state") == "UNAVAILABLE", entry
    assert "input 'not_x' is not an input of the model" in entry.get("reason", ""), entry
    assert ov_served.http.is_model_ready("openvino_ir")
