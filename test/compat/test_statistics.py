"""The statistics extension through tritonclient.http: counters move by exactly what the requests did."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from model_repo import BUNDLED_MODELS


def _simple_stats(client: Any) -> dict[str, Any]:
    stats = client.get_inference_statistics(model_name="simple")
    entries = stats["model_stats"]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["name"] == "simple"
    assert entry["version"] == "1"
    assert isinstance(entry, dict)
    return entry


def _infer_simple(client: Any, batch: int) -> None:
    data = np.ones((batch, 16), dtype=np.int32)
    inputs = [
        httpclient.InferInput("INPUT0", [batch, 16], "INT32"),
        httpclient.InferInput("INPUT1", [batch, 16], "INT32"),
    ]
    for tensor in inputs:
        tensor.set_data_from_numpy(data)
    client.infer("simple", inputs)


def test_counters_increase_by_what_was_done(client: Any) -> None:
    before = _simple_stats(client)
    for _ in range(3):
        _infer_simple(client, 2)
    after = _simple_stats(client)

    assert after["inference_count"] - before["inference_count"] == 6  # batch-expanded
    executions = after["execution_count"] - before["execution_count"]
    assert 1 <= executions <= 3
    success_before = before["inference_stats"]["success"]
    success_after = after["inference_stats"]["success"]
    assert success_after["count"] - success_before["count"] == 3
    assert success_after["ns"] > success_before["ns"]
    for phase in ("queue", "compute_input", "compute_infer", "compute_output"):
        assert (
            after["inference_stats"][phase]["count"] >= before["inference_stats"][phase]["count"] + executions
        )
        assert after["inference_stats"][phase]["ns"] >= before["inference_stats"][phase]["ns"]
    assert after["last_inference"] >= before["last_inference"]
    assert after["last_inference"] > 0
    batch2 = [b for b in after["batch_stats"] if int(b["batch_size"]) == 2]
    assert batch2, "batch_stats has no entry for batch size 2"


def test_rejected_requests_do_not_count_as_executions(client: Any) -> None:
    before = _simple_stats(client)
    bad = [
        httpclient.InferInput("INPUT0", [1, 15], "INT32"),
        httpclient.InferInput("INPUT1", [1, 15], "INT32"),
    ]
    for tensor in bad:
        tensor.set_data_from_numpy(np.ones((1, 15), dtype=np.int32))
    with pytest.raises(InferenceServerException):
        client.infer("simple", bad)
    after = _simple_stats(client)
    assert after["execution_count"] == before["execution_count"]
    assert after["inference_count"] == before["inference_count"]
    assert after["inference_stats"]["success"]["count"] == before["inference_stats"]["success"]["count"]


def test_statistics_for_all_models(client: Any) -> None:
    stats = client.get_inference_statistics()
    names = {entry["name"] for entry in stats["model_stats"]}
    assert set(BUNDLED_MODELS) <= names
