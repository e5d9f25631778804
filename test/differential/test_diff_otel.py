"""OpenTelemetry mode against a real OTLP/HTTP receiver (otlp_receiver.py, on the `opentelemetry-proto`
package), for Nereid and for the real Triton 2.51.

Each server is started with `--trace-config mode=opentelemetry`, `opentelemetry,url=<receiver>`, rate 1,
level TIMESTAMPS and one extra resource attribute, and gets the same four requests, each carrying its own
W3C traceparent: a plain model and an ensemble over HTTP, the plain model over unary gRPC (ModelInfer) and the
ensemble over a gRPC stream (ModelStreamInfer), both through tritonclient with the traceparent as metadata.
When the server has stopped (which flushes the batch span processor), the receiver holds every span decoded
into ExportTraceServiceRequest messages.

Nereid's spans are checked on their own (they need no Triton): the caller's trace id is kept, each
InferRequest span's parent is the caller's span, the model span is its child, the compute span the model
span's, an ensemble's steps are model spans under the ensemble's span, the attributes Triton sets are there
with the right values, the resource carries service.name and the configured attribute, and every body was a
valid ExportTraceServiceRequest. Then, where Triton is provisioned (and its build exports spans, which the
2.51 wheel's does: OTLP/HTTP JSON from opentelemetry-cpp 1.13.0), each request's span tree is compared with
Triton's: the same span names in the same parent/child structure, the same event names per span, the same
attribute keys and model attribute values. Times are not compared; nor are the `telemetry.sdk.*` resource
values (Triton's SDK is C++, Nereid's JavaScript), only that both send them.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from diff_servers import (
    MODELS,
    REPO_ROOT,
    TRITON,
    Server,
    node_executable,
    start_nereid,
    start_triton,
    triton_available,
)
from diff_wire import request
from otlp_receiver import OtlpReceiver, ReceivedSpan

# One caller trace per request: (name, transport, model, trace id, the caller's span id).
CALLS = [
    ("http_plain", "http", "add_sub", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"),
    ("http_ensemble", "http", "ensemble_add_sub", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"),
    ("grpc_plain", "grpc", "add_sub", "5b8aa5a2d2c872e8321cf37308d69df2", "051581bf3cb55c13"),
    (
        "grpc_stream_ensemble",
        "stream",
        "ensemble_add_sub",
        "1e223ff1f80f1c69f8f0b81c1a5a5c0a",
        "d75597dee50b0cac",
    ),
]
RESOURCE = ("deployment.environment", "nereid-differential")

# What Nereid adds on the request's SERVER span, beside Triton's own attributes (docs/tracing.md): the
# OpenTelemetry semantic conventions for HTTP and RPC servers. Triton sets none of them; the trees are
# compared without them.
SEMCONV_KEYS = {
    "http.request.method",
    "http.response.status_code",
    "http.route",
    "url.path",
    "url.scheme",
    "network.protocol.name",
    "network.protocol.version",
    "server.address",
    "server.port",
    "rpc.system.name",
    "rpc.system",
    "rpc.service",
    "rpc.method",
    "rpc.status_code",
    "rpc.grpc.status_code",
    "error.type",
}


def _inputs_json(model: str) -> bytes:
    names = ("INPUT0", "INPUT1") if model == "add_sub" else ("A", "B")
    return json.dumps(
        {"inputs": [{"name": n, "shape": [4], "datatype": "FP32", "data": [1, 2, 3, 4]} for n in names]}
    ).encode()


def _inputs_grpc(model: str) -> list[Any]:
    out = []
    for name in ("INPUT0", "INPUT1") if model == "add_sub" else ("A", "B"):
        i = grpcclient.InferInput(name, [4], "FP32")
        i.set_data_from_numpy(np.arange(4, dtype=np.float32))
        out.append(i)
    return out


def _put(results: queue.Queue[tuple[Any, Any]], result: Any, error: Any) -> None:
    results.put((result, error))


def _wait_ready(server: Server, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if request(server.http_port, "GET", "/v2/health/ready").status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{server.name} never became ready:\n{server.log_tail()}")
        time.sleep(0.1)


def _drive(server: Server) -> None:
    _wait_ready(server)
    for _, transport, model, trace_id, span_id in CALLS:
        traceparent = f"00-{trace_id}-{span_id}-01"
        if transport == "http":
            reply = request(
                server.http_port,
                "POST",
                f"/v2/models/{model}/infer",
                _inputs_json(model),
                {"traceparent": traceparent},
            )
            assert reply.status == 200, reply.body
            continue
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
        try:
            if transport == "grpc":
                client.infer(model, _inputs_grpc(model), headers={"traceparent": traceparent})
                continue
            results: queue.Queue[tuple[Any, Any]] = queue.Queue()
            client.start_stream(functools.partial(_put, results), headers={"traceparent": traceparent})
            client.async_stream_infer(model, _inputs_grpc(model), request_id="s1")
            result, error = results.get(timeout=60)
            assert error is None, error
            assert result.get_response().id == "s1"
            client.stop_stream()
        finally:
            client.close()


def _wait_for_roots(receiver: OtlpReceiver, timeout: float = 60.0) -> bool:
    """Waits until every call's request span has been exported (each server's batch processor exports on
    its own schedule) before the server is stopped: Triton finishes a stream's trace after its response is
    sent, so a stop right behind the last call could end it unexported on a loaded machine."""
    deadline = time.monotonic() + timeout
    wanted = {trace_id for _, _, _, trace_id, _ in CALLS}
    while time.monotonic() < deadline:
        seen = {s.trace_id for s in receiver.spans() if s.name == "InferRequest"}
        if wanted <= seen:
            return True
        time.sleep(0.2)
    return False


def _collect(start: Any, repository: Path, work: Path) -> tuple[list[ReceivedSpan], list[str]]:
    """The spans of one run of the calls; run again once if a call's request span never arrived (seen once
    from Triton 2.51 on a quiet machine: its unary gRPC span was never exported, every other one was)."""
    spans, errors, complete = _collect_once(start, repository, work / "run1")
    if complete:
        return spans, errors
    spans, errors, _ = _collect_once(start, repository, work / "run2")
    return spans, errors


def _collect_once(start: Any, repository: Path, work: Path) -> tuple[list[ReceivedSpan], list[str], bool]:
    work.mkdir(parents=True, exist_ok=True)
    with OtlpReceiver() as receiver:
        flags = [
            "--model-control-mode=explicit",
            "--load-model=*",
            "--trace-config=mode=opentelemetry",
            f"--trace-config=opentelemetry,url={receiver.url}",
            f"--trace-config=opentelemetry,resource={RESOURCE[0]}={RESOURCE[1]}",
            "--trace-config=rate=1",
            "--trace-config=level=TIMESTAMPS",
        ]
        server = start(repository, flags, work)
        try:
            _drive(server)
            complete = _wait_for_roots(receiver)
        finally:
            # Stopping shuts the batch span processor down, which exports what it holds.
            assert server.stop() == 0, server.log_tail()
        return receiver.spans(), list(receiver.errors), complete


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("otel") / "models"
    repo.mkdir()
    for name in ("add_sub", "ensemble_add_sub"):
        shutil.copytree(MODELS / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "ensemble_add_sub" / "1").mkdir(exist_ok=True)
    return repo


@pytest.fixture(scope="module")
def nereid(
    repository: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[ReceivedSpan], list[str]]:
    if node_executable() is None or not (REPO_ROOT / "dist" / "src" / "cli" / "main.js").exists():
        pytest.skip("Nereid is not built: run `npx tsc -p tsconfig.json`")
    return _collect(start_nereid, repository, tmp_path_factory.mktemp("nereid-logs"))


@pytest.fixture(scope="module")
def triton(
    repository: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[ReceivedSpan], list[str]]:
    if not triton_available():
        message = f"Triton is not provisioned ({TRITON} is missing): run `bash scripts/setup-triton.sh`"
        if os.environ.get("NEREID_DIFF_REQUIRE_TRITON") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return _collect(start_triton, repository, tmp_path_factory.mktemp("triton-logs"))


def _by_trace(spans: list[ReceivedSpan], trace_id: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.trace_id == trace_id]


def _tree(spans: list[ReceivedSpan], parent: str) -> list[dict[str, Any]]:
    """The spans under `parent` as nested dicts of what both servers must agree on (sorted: an ensemble's
    steps are compared as a set)."""
    out = []
    for s in spans:
        if s.parent_span_id != parent:
            continue
        attrs = s.attributes
        out.append(
            {
                "name": s.name,
                "events": sorted(s.events),
                "attribute_keys": sorted(set(attrs) - SEMCONV_KEYS),
                "model": (attrs.get("triton.model_name"), attrs.get("triton.model_version")),
                "children": _tree(spans, s.span_id),
            }
        )
    return sorted(out, key=lambda d: json.dumps(d, sort_keys=True))


def test_every_export_is_a_valid_otlp_request(nereid: tuple[list[ReceivedSpan], list[str]]) -> None:
    spans, errors = nereid
    assert errors == []
    assert spans, "no span arrived"
    assert {s.encoding for s in spans} == {"json"}  # Nereid exports OTLP/HTTP JSON, as Triton does


def test_each_request_joins_its_callers_trace(nereid: tuple[list[ReceivedSpan], list[str]]) -> None:
    spans, _ = nereid
    assert {s.trace_id for s in spans} == {c[3] for c in CALLS}
    for name, _, _, trace_id, caller in CALLS:
        roots = [s for s in _by_trace(spans, trace_id) if s.name == "InferRequest"]
        assert len(roots) == 1, name
        assert roots[0].parent_span_id == caller, name


def test_model_and_compute_spans_nest_as_triton_makes_them(
    nereid: tuple[list[ReceivedSpan], list[str]],
) -> None:
    spans, _ = nereid
    for name, transport, model, trace_id, _ in CALLS:
        mine = _by_trace(spans, trace_id)
        root = next(s for s in mine if s.name == "InferRequest")
        prefix = "HTTP" if transport == "http" else "GRPC"
        assert f"{prefix}_SEND_END" in root.events, (name, root.events)
        [top] = [s for s in mine if s.parent_span_id == root.span_id]
        assert top.name == model, name
        assert top.attributes["triton.model_name"] == model
        assert top.attributes["triton.model_version"] == 1
        assert top.attributes["triton.trace_parent_id"] == 0
        assert top.events[0] == "REQUEST_START", top.events
        assert top.events[-1] == "REQUEST_END", top.events
        if model == "add_sub":
            [compute] = [s for s in mine if s.parent_span_id == top.span_id]
            assert compute.name == "compute"
            assert compute.events == [
                "COMPUTE_START",
                "COMPUTE_INPUT_END",
                "COMPUTE_OUTPUT_START",
                "COMPUTE_END",
            ]
        else:
            steps = [s for s in mine if s.parent_span_id == top.span_id]
            assert [s.name for s in steps] == ["add_sub", "add_sub"], name
            for step in steps:
                assert step.attributes["triton.trace_parent_id"] == top.attributes["triton.trace_id"]
                assert [c.name for c in mine if c.parent_span_id == step.span_id] == ["compute"]
        # The exchange is the SERVER span; the model, step and compute spans are INTERNAL work inside it
        # (Triton marks every span SERVER, which makes a tracing backend count one request three times:
        # a deliberate difference, docs/tracing.md).
        assert root.span.kind == root.span.SPAN_KIND_SERVER, name
        assert all(s.span.kind == s.span.SPAN_KIND_INTERNAL for s in mine if s is not root), name


def test_request_spans_carry_the_semantic_conventions(
    nereid: tuple[list[ReceivedSpan], list[str]],
) -> None:
    spans, _ = nereid
    for name, transport, model, trace_id, _ in CALLS:
        root = next(s for s in _by_trace(spans, trace_id) if s.name == "InferRequest")
        attrs = root.attributes
        assert attrs["server.address"] == "127.0.0.1", name
        assert isinstance(attrs["server.port"], int), name
        if transport == "http":
            assert attrs["http.request.method"] == "POST", name
            assert attrs["url.path"] == f"/v2/models/{model}/infer", name
            assert attrs["http.route"] == "/v2/models/{model_name}/infer", name
            assert attrs["url.scheme"] == "http", name
            assert attrs["http.response.status_code"] == 200, name
        else:
            rpc = "ModelInfer" if transport == "grpc" else "ModelStreamInfer"
            assert attrs["rpc.system.name"] == attrs["rpc.system"] == "grpc", name
            assert attrs["rpc.service"] == "inference.GRPCInferenceService", name
            assert attrs["rpc.method"] == f"inference.GRPCInferenceService/{rpc}", name
            assert attrs["rpc.status_code"] == "OK", name
            assert attrs["rpc.grpc.status_code"] == 0, name
        assert "error.type" not in attrs, name


def test_triton_marks_every_span_server(triton: tuple[list[ReceivedSpan], list[str]]) -> None:
    """The difference above, pinned on Triton's side: should a later Triton mark its inner spans INTERNAL,
    this fails and the difference can go."""
    spans, _ = triton
    assert spans
    assert all(s.span.kind == s.span.SPAN_KIND_SERVER for s in spans)
    assert not any(SEMCONV_KEYS & set(s.attributes) for s in spans)


def test_resource_names_the_service_and_the_configured_attribute(
    nereid: tuple[list[ReceivedSpan], list[str]],
) -> None:
    spans, _ = nereid
    for s in spans:
        assert s.resource["service.name"] == "triton-inference-server"
        assert s.resource[RESOURCE[0]] == RESOURCE[1]


def test_same_span_trees_as_triton(
    nereid: tuple[list[ReceivedSpan], list[str]], triton: tuple[list[ReceivedSpan], list[str]]
) -> None:
    (ours, our_errors), (theirs, their_errors) = nereid, triton
    assert our_errors == []
    assert their_errors == []
    for name, _, _, trace_id, caller in CALLS:
        assert _tree(_by_trace(ours, trace_id), caller) == _tree(_by_trace(theirs, trace_id), caller), name


def test_same_resource_keys_and_scope_as_triton(
    nereid: tuple[list[ReceivedSpan], list[str]], triton: tuple[list[ReceivedSpan], list[str]]
) -> None:
    ours, theirs = nereid[0], triton[0]
    assert {s.scope for s in ours} == {s.scope for s in theirs}
    assert {tuple(sorted(s.resource)) for s in ours} == {tuple(sorted(s.resource)) for s in theirs}
    for key in ("service.name", RESOURCE[0]):
        assert {s.resource[key] for s in ours} == {s.resource[key] for s in theirs}
