"""Triton vs Nereid: the compute phases of the statistics extension after the same inferences on the same
Python model. Values differ between servers (different machines' worth of work), so the structure is
compared: on both, every phase (compute_input, compute_infer, compute_output) is measured — Model
Analyzer shows 0.000 ms for a phase that is not — and the phases of the requests fit in their success
time. Deltas around the suite's own requests, so other tests' traffic does not matter.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import tritonclient.grpc as grpcclient
from diff_servers import Pair
from diff_wire import Reply, infer_json, request, tensor_json

N = 20
PHASES = ("compute_input", "compute_infer", "compute_output")
FIELDS = ("success", "queue", *PHASES)


def _stats(reply: Reply) -> dict[str, dict[str, int]]:
    assert reply.status == 200, str(reply)
    [model] = reply.json()["model_stats"]
    stats: dict[str, dict[str, int]] = model["inference_stats"]
    return stats


def _delta(after: dict[str, dict[str, int]], before: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {f: {k: after[f][k] - before[f][k] for k in ("count", "ns")} for f in FIELDS}


@pytest.mark.parametrize("model", ["add_sub", "identity_bytes"])
def test_every_phase_is_measured_and_fits_in_the_success_time(pair: Pair, model: str) -> None:
    if model == "add_sub":
        body = infer_json(
            [
                tensor_json("INPUT0", "FP32", [4], [1.0, 2.0, 3.0, 4.0]),
                tensor_json("INPUT1", "FP32", [4], [4.0, 3.0, 2.0, 1.0]),
            ]
        )
    else:
        body = infer_json([tensor_json("INPUT0", "BYTES", [1, 3], ["a", "bc", "def"])])
    path = f"/v2/models/{model}/stats"
    deltas: dict[str, Any] = {}
    for server in (pair.triton, pair.nereid):
        before = _stats(request(server.http_port, "GET", path))
        for _ in range(N):
            reply = request(server.http_port, "POST", f"/v2/models/{model}/infer", body)
            assert reply.status == 200, f"{server.name}: {reply}"
        deltas[server.name] = _delta(_stats(request(server.http_port, "GET", path)), before)
    for name, d in deltas.items():
        shown = json.dumps(d)
        assert d["success"]["count"] == N, f"{name}: {shown}"
        for phase in PHASES:
            assert d[phase]["count"] == N, f"{name} {phase}: {shown}"
            assert d[phase]["ns"] > 0, f"{name} {phase} is not measured: {shown}"
        compute = sum(d[phase]["ns"] for phase in PHASES)
        outlast = f"{name}: the phases outlast the requests: {shown}"
        assert d["queue"]["ns"] + compute <= d["success"]["ns"], outlast


def test_grpc_statistics_have_the_same_fields(pair: Pair) -> None:
    """The same statistics through tritonclient.grpc: both servers fill the same fields of the message,
    and the phase counts agree with the success count on each."""
    shapes = []
    for port in (pair.triton.grpc_port, pair.nereid.grpc_port):
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        try:
            [model] = client.get_inference_statistics("add_sub", as_json=True)["model_stats"]
        finally:
            client.close()
        stats = model["inference_stats"]
        success = int(stats["success"]["count"])
        assert success > 0
        for phase in PHASES:
            assert int(stats[phase]["count"]) == success
            assert int(stats[phase]["ns"]) > 0
        shapes.append((sorted(model), sorted(stats)))
    assert shapes[1] == shapes[0]
