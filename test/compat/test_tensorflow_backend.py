"""The `tensorflow` backend (python/backends/tensorflow, docs/backends.md#tensorflow) through the real
tritonclient over HTTP and gRPC, on SavedModels TensorFlow itself makes in the test setup
(framework_models.py): one SavedModel with two signatures (`serving_default`: MatMul, Relu, ArgMax;
`scale`: FP32 and INT32 in, FP64 and INT32 out), served by its default signature with a full config, by
`scale` through TF_SIGNATURE_DEF with thread parameters, and with a config of one line (auto-complete fills
inputs, outputs, max_batch_size and dynamic batching from the signature); and a string model (BYTES in and
out). The requests are sent at once with different batch sizes; every answer is compared element-wise with
what TensorFlow computes calling the same signature directly. Plus loads that must fail with a clear
reason: a signature the SavedModel does not have, a saved_model.pb that is not one, a config type that
disagrees with the signature, and a GraphDef.

Needs the backend's venv (`npx nereid backends install tensorflow`, which scripts/test.sh runs); without it
the tests skip and say so.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

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

MODELS = ["tf_default", "tf_scale", "tf_autocomplete", "tf_strings"]


def _broken(out: Path, name: str, config: str) -> None:
    folder = out / "models" / name
    (folder / "1").mkdir(parents=True)
    (folder / "config.pbtxt").write_text(config, encoding="utf-8")


_FULL = (
    'platform: "tensorflow_savedmodel"\nmax_batch_size: 8\ninstance_group { count: 1 kind: KIND_CPU }\n'
    'input { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }\n'
    'output { name: "y" data_type: TYPE_FP32 dims: [ 3 ] }\n'
)


@pytest.fixture(scope="module")
def tf_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    python = require_venv("tensorflow")
    out = make_models("tensorflow", python, tmp_path_factory.mktemp("tensorflow"))
    saved = out / "savedmodels" / "two"
    # A signature the SavedModel does not have.
    _broken(
        out,
        "tf_missing_signature",
        _FULL + 'parameters { key: "TF_SIGNATURE_DEF" value { string_value: "predict" } }\n',
    )
    shutil.copytree(saved, out / "models" / "tf_missing_signature" / "1" / "model.savedmodel")
    # A saved_model.pb that is not a SavedModel.
    _broken(out, "tf_bad_file", _FULL)
    (out / "models" / "tf_bad_file" / "1" / "model.savedmodel").mkdir()
    (out / "models" / "tf_bad_file" / "1" / "model.savedmodel" / "saved_model.pb").write_bytes(
        b"not a saved model\xff\xff"
    )
    # A config whose input type disagrees with the signature's.
    _broken(out, "tf_wrong_type", _FULL.replace("TYPE_FP32 dims: [ 4 ]", "TYPE_INT32 dims: [ 4 ]"))
    shutil.copytree(saved, out / "models" / "tf_wrong_type" / "1" / "model.savedmodel")
    # A TF1 GraphDef.
    _broken(out, "tf_graphdef", _FULL.replace("tensorflow_savedmodel", "tensorflow_graphdef"))
    (out / "models" / "tf_graphdef" / "1" / "model.graphdef").write_bytes(b"\x00")
    yield from serve(out, out / "server.log")


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_answers_equal_tensorflow(tf_served: Served, protocol: str, model: str) -> None:
    answers = infer_all(tf_served, protocol, model)
    assert_matches_framework(tf_served, model, answers)


def test_dynamic_batcher_joins_requests(tf_served: Served) -> None:
    before = counts(tf_served, "tf_scale")
    answers = infer_all(tf_served, "grpc", "tf_scale")
    assert_matches_framework(tf_served, "tf_scale", answers)
    after = counts(tf_served, "tf_scale")
    requests = request_count(tf_served.expected("tf_scale"))
    assert after[0] - before[0] == sum(int(a["out"].shape[0]) for a in answers)
    assert after[1] - before[1] < requests, f"no two of {requests} requests were executed together"


def test_signature_selection_serves_the_named_signature(tf_served: Served) -> None:
    # The same SavedModel: tf_default answers serving_default's tensors, tf_scale the `scale` signature's.
    default = tf_served.http.get_model_metadata("tf_default")
    scale = tf_served.http.get_model_metadata("tf_scale")
    assert [t["name"] for t in default["inputs"]] == ["x"]
    assert sorted(t["name"] for t in scale["inputs"]) == ["a", "b"]
    assert sorted((t["name"], t["datatype"]) for t in scale["outputs"]) == [
        ("count", "INT32"),
        ("out", "FP64"),
    ]


def test_auto_complete_fills_the_config_from_the_signature(tf_served: Served) -> None:
    config = tf_served.http.get_model_config("tf_autocomplete")
    assert config["max_batch_size"] == 4  # Triton's default-max-batch-size: every tensor batches on dim 0
    assert "dynamic_batching" in config
    assert [(i["name"], i["data_type"], i["dims"]) for i in config["input"]] == [("x", "TYPE_FP32", [4])]
    outputs = {o["name"]: o for o in config["output"]}
    assert (outputs["y"]["data_type"], outputs["y"]["dims"]) == ("TYPE_FP32", [3])
    # One value per row: dims [1] reshaped to [] (config dims cannot be empty).
    assert (outputs["cls"]["data_type"], outputs["cls"]["dims"]) == ("TYPE_INT64", [1])
    assert outputs["cls"].get("reshape", {}).get("shape", []) == []


def _thread_lines(served: Served, model: str) -> list[tuple[int, int]]:
    pattern = re.compile(rf"tensorflow model '{re.escape(model)}': .* threads intra-op (\d+) inter-op (\d+)")
    return [(int(a), int(b)) for a, b in pattern.findall(served.server.log_text())]


def test_threads_default_to_a_fair_share_of_the_cores(tf_served: Served) -> None:
    # tf_default: two instances, no thread parameters: each gets cores // 2 (at least 1).
    share = max(1, usable_cores() // 2)
    assert _thread_lines(tf_served, "tf_default") == [(share, share), (share, share)]


def test_thread_parameters_reach_tensorflow(tf_served: Served) -> None:
    assert _thread_lines(tf_served, "tf_scale") == [(1, 1)]


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (
            "tf_missing_signature",
            "the SavedModel has no signature 'predict' (TF_SIGNATURE_DEF); its signatures: "
            "scale, serving_default",
        ),
        ("tf_bad_file", "unable to read the SavedModel"),
        ("tf_wrong_type", "input 'x' data-type TYPE_INT32 doesn't match model data-type TYPE_FP32"),
        ("tf_graphdef", "TensorFlow GraphDef models (tensorflow_graphdef, model.graphdef) are not served"),
    ],
)
def test_bad_models_fail_the_load_with_a_clear_reason(tf_served: Served, model: str, reason: str) -> None:
    index = {m["name"]: m for m in tf_served.http.get_model_repository_index()}
    entry = index[model]
    assert entry.get("state") == "UNAVAILABLE", entry
    assert reason in entry.get("reason", ""), entry
    # The others still serve.
    assert tf_served.http.is_model_ready("tf_default")
