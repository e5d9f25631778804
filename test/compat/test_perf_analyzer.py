"""Triton's own load generator, perf_analyzer (PyPI wheel, installed by scripts/setup-python.sh), must be
able to profile a model served by Nereid: it reads model metadata and config, sends binary tensors, and
reads the statistics extension for its server-side breakdown."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from model_repo import require_ready
from nereid_server import REPO_ROOT

VENV_PERF_ANALYZER = REPO_ROOT / ".venv" / "bin" / "perf_analyzer"


def _perf_analyzer() -> str:
    if VENV_PERF_ANALYZER.exists():
        return str(VENV_PERF_ANALYZER)
    found = shutil.which("perf_analyzer")
    if found is None:
        pytest.skip("perf_analyzer is not installed (scripts/setup-python.sh installs it)")
    return found


def _server_count(output: str, label: str) -> int:
    """A count from perf_analyzer's "Server:" block."""
    server_block = output.split("Server:", 1)[-1]
    match = re.search(rf"{label}: (\d+)", server_block)
    assert match, f"no '{label}' in perf_analyzer's server block:\n{output}"
    return int(match.group(1))


@pytest.mark.perf_analyzer
@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize(("model", "batch", "requests"), [("simple", 4, 100), ("densenet_batched", 2, 16)])
def test_perf_analyzer_profiles_a_model(
    server: Any, tmp_path: Path, model: str, batch: int, requests: int, protocol: str
) -> None:
    report = tmp_path / "report.csv"
    # a fixed request count instead of stability windows: this checks compatibility, not speed, and must
    # not depend on how busy the machine is
    command = [
        _perf_analyzer(),
        "-m", model,
        "-b", str(batch),
        "-i", protocol,
        "-u", server.url(protocol),
        "--concurrency-range", "2",
        "--request-count", str(requests),
        "-f", str(report),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert f"Request count: {requests}" in output
    assert "Throughput:" in output
    # perf_analyzer's server-side block is the delta of the statistics extension over the run. In
    # --request-count mode perf_analyzer can read the final statistics while its last requests are still
    # in flight: it reports 99 of 100 now and then even against bench/transport/http-echo.ts, which counts
    # a request before it can read another. So up to `concurrency` requests may be missing; no more.
    concurrency = 2
    succeeded = _server_count(output, "Successful request count")
    assert requests - concurrency <= succeeded <= requests, output
    assert _server_count(output, "Inference count") == succeeded * batch, output
    with report.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1, rows
    assert int(rows[0]["Concurrency"]) == 2
    assert float(rows[0]["Inferences/Second"]) > 0


@pytest.mark.perf_analyzer
def test_perf_analyzer_streams_a_decoupled_model(
    server: Any, tmp_path: Path, example_models: dict[str, Any]
) -> None:
    require_ready(example_models, "square_int32")
    data = tmp_path / "input.json"
    data.write_text(json.dumps({"data": [{"IN": [3]}]}), encoding="utf-8")
    requests = 40
    command = [
        _perf_analyzer(),
        "-m", "square_int32",
        "-i", "grpc",
        "--streaming",
        "-u", server.url("grpc"),
        "--input-data", str(data),
        "--concurrency-range", "2",
        "--request-count", str(requests),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert f"Request count: {requests}" in output, output
    assert requests - 2 <= _server_count(output, "Successful request count") <= requests, output
    # each request with IN=3 is answered three times: responses/s is three times requests/s
    requests_per_s = re.search(r"^\s*Throughput: ([\d.]+) infer/sec", output, re.MULTILINE)
    responses_per_s = re.search(r"Response Throughput: ([\d.]+) infer/sec", output)
    assert requests_per_s, output
    assert responses_per_s, output
    assert float(responses_per_s.group(1)) == pytest.approx(3 * float(requests_per_s.group(1)), rel=0.01)
