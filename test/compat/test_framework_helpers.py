"""nereid_stub.frameworks, what the framework backends share, without a framework: parameter parsing as
Triton's backends read `parameters`, the fair default thread count (item 4 of issue 27: cores divided among
a model's instances), and the dim-0 joining and splitting of a dynamic batch.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from nereid_stub import frameworks
from nereid_stub.frameworks import ConfigError


def test_parameters_are_plain_strings() -> None:
    config = {"parameters": {"A": {"string_value": "1"}, "B": {"string_value": ""}, "C": "x"}}
    assert frameworks.parameters(config) == {"A": "1", "B": "", "C": "x"}
    assert frameworks.parameters({}) == {}


@pytest.mark.parametrize(("text", "value"), [("true", True), ("YES", True), ("1", True), ("off", False)])
def test_flags(text: str, value: bool) -> None:
    assert frameworks.flag({"K": text}, "K", not value) is value


def test_flag_default_and_refusal() -> None:
    assert frameworks.flag({}, "K", True) is True
    assert frameworks.flag({"K": " "}, "K", False) is False
    with pytest.raises(ConfigError, match="parameter 'K' must be true or false, got 'maybe'"):
        frameworks.flag({"K": "maybe"}, "K", False)


def test_counts() -> None:
    assert frameworks.count({"N": "4"}, "N") == 4
    assert frameworks.count({}, "N") is None
    assert frameworks.count({"N": "0"}, "N", minimum=0) == 0
    with pytest.raises(ConfigError, match="must be at least 1, got 0"):
        frameworks.count({"N": "0"}, "N")
    with pytest.raises(ConfigError, match="must be an integer, got 'four'"):
        frameworks.count({"N": "four"}, "N")


def test_fair_threads_divide_the_cores_among_the_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frameworks, "usable_cores", lambda: 8)
    groups = {"instance_group": [{"count": 2, "kind": "KIND_CPU"}, {"count": 2, "kind": "KIND_CPU"}]}
    assert frameworks.fair_threads(groups) == 2
    assert frameworks.fair_threads({"instance_group": [{"count": 3}]}) == 2
    assert frameworks.fair_threads({}) == 8
    assert frameworks.fair_threads({"instance_group": [{"count": 16}]}) == 1  # never 0


def test_native_pools_are_sized_and_sleep_when_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "7")  # the operator's value is kept
    frameworks.limit_native_pools(3)
    assert (os.environ["OMP_NUM_THREADS"], os.environ["MKL_NUM_THREADS"]) == ("3", "7")
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    frameworks.limit_native_pools(3)
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_usable_cores_is_this_process_affinity() -> None:
    assert frameworks.usable_cores() >= 1


def _inputs(rows: int, start: float) -> dict[str, npt.NDArray[Any]]:
    x = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2) + start
    return {"x": x, "s": np.array([b"a"] * rows, dtype=np.object_)}


def test_join_and_split_are_inverse() -> None:
    per_request = [_inputs(1, 0), _inputs(3, 10), _inputs(2, 20)]
    batch = frameworks.join_requests(per_request)
    assert batch is not None
    assert batch.sizes == [1, 3, 2]
    assert batch.inputs["x"].shape == (6, 2)
    back = frameworks.split_rows(batch.inputs, batch.sizes)
    for got, want in zip(back, per_request, strict=True):
        np.testing.assert_array_equal(got["x"], want["x"])
        assert list(got["s"]) == list(want["s"])


def test_requests_that_cannot_be_joined() -> None:
    assert frameworks.join_requests([_inputs(1, 0), {"x": np.zeros((1, 3), np.float32)}]) is None
    assert frameworks.join_requests([{"x": np.zeros((1, 2))}, {"x": np.zeros((1, 3))}]) is None
    assert frameworks.join_requests([{"x": np.zeros((1, 2), np.float32)}, {"x": np.zeros((1, 2))}]) is None
    assert frameworks.join_requests([{"x": np.array(1.0, dtype=np.float32)}]) is None


def test_split_refuses_an_output_without_the_batch() -> None:
    with pytest.raises(ValueError, match="its dim 0 is not the batch of 3 rows"):
        frameworks.split_rows({"y": np.zeros((2, 1))}, [1, 2])


def test_run_batched_runs_once_when_joinable_and_per_request_otherwise() -> None:
    calls: list[int] = []

    def double(inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        calls.append(int(inputs["x"].shape[0]))
        return {"y": inputs["x"] * 2}

    per_request = [{"x": np.ones((1, 2))}, {"x": np.ones((2, 2))}]
    results = frameworks.run_batched(per_request, double, batching=True)
    assert calls == [3]
    assert [r["y"].shape for r in results if isinstance(r, dict)] == [(1, 2), (2, 2)]
    calls.clear()
    frameworks.run_batched(per_request, double, batching=False)
    assert calls == [1, 2]


def test_run_batched_gives_every_request_of_a_failed_batch_the_error() -> None:
    def fail(inputs: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        raise RuntimeError("boom")

    results = frameworks.run_batched([{"x": np.ones((1, 2))}, {"x": np.ones((1, 2))}], fail, batching=True)
    assert [str(r) for r in results] == ["boom", "boom"]
