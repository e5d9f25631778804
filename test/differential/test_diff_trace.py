"""Triton-mode trace files: the real Triton and Nereid, each started with `--trace-config triton,file=...`,
rate 1 and level TIMESTAMPS, get the same requests (a plain Python model over HTTP, unary gRPC, a gRPC
stream and HTTP generate, an ensemble of two steps, and a BLS model that passes its trace to the call it
makes); once
both have stopped (log-frequency 0 writes at exit), their files have the same structure: the same traces
with the same model names and versions, the same parent/child relations, the same timestamp names per
trace, and the timestamps in the same order wherever Triton's own order does not depend on timing.
Values are not compared (they are times). A request refused by validation is not compared: Triton 2.51
never releases its trace, and then never writes the file that trace's settings collected (Nereid writes
it; test/integration/tracing.test.ts checks that). A settings change at run time is compared too: with
log_frequency 2 through the API both write `<file>.0` holding the next two traces.
"""

from __future__ import annotations

import functools
import json
import queue
import shutil
import time
from dataclasses import dataclass, field
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

from conftest import FLAGS

TRACE_MODELS = Path(__file__).resolve().parent / "trace_models"

ADD_SUB = json.dumps(
    {
        "inputs": [
            {"name": "INPUT0", "shape": [4], "datatype": "FP32", "data": [1, 2, 3, 4]},
            {"name": "INPUT1", "shape": [4], "datatype": "FP32", "data": [1, 1, 1, 1]},
        ]
    }
).encode()
ENSEMBLE = json.dumps(
    {
        "inputs": [
            {"name": "A", "shape": [4], "datatype": "FP32", "data": [1, 2, 3, 4]},
            {"name": "B", "shape": [4], "datatype": "FP32", "data": [1, 1, 1, 1]},
        ]
    }
).encode()

# Pairs (a, b): wherever both are in a trace, a's time is not after b's, on Triton as on Nereid. Pairs
# whose order depends on timing in Triton itself (the response against the end of the compute, an
# ensemble's REQUEST_END against the send) are left out.
ORDER = [
    ("HTTP_RECV_START", "HTTP_RECV_END"),
    ("HTTP_RECV_END", "REQUEST_START"),
    ("GRPC_WAITREAD_END", "REQUEST_START"),
    ("GRPC_WAITREAD_START", "GRPC_WAITREAD_END"),
    ("REQUEST_START", "QUEUE_START"),
    ("QUEUE_START", "COMPUTE_START"),
    ("COMPUTE_START", "COMPUTE_INPUT_END"),
    ("COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START"),
    ("COMPUTE_OUTPUT_START", "COMPUTE_END"),
    ("COMPUTE_END", "REQUEST_END"),
    ("QUEUE_START", "INFER_RESPONSE_COMPLETE"),
    ("INFER_RESPONSE_COMPLETE", "HTTP_SEND_START"),
    ("INFER_RESPONSE_COMPLETE", "GRPC_SEND_START"),
    ("HTTP_SEND_START", "HTTP_SEND_END"),
    ("GRPC_SEND_START", "GRPC_SEND_END"),
    ("QUEUE_START", "REQUEST_END"),
]


@dataclass
class Trace:
    id: int
    model: str = ""
    version: int = 0
    parent: int = 0
    names: list[str] = field(default_factory=list)
    ns: dict[str, int] = field(default_factory=dict)


def parse(objects: list[dict[str, Any]]) -> dict[int, Trace]:
    traces: dict[int, Trace] = {}
    for o in objects:
        t = traces.setdefault(int(o["id"]), Trace(int(o["id"])))
        if "model_name" in o:
            t.model = o["model_name"]
            t.version = int(o["model_version"])
            t.parent = int(o.get("parent_id", 0))
        for ts in o.get("timestamps", []):
            t.names.append(ts["name"])
            t.ns[ts["name"]] = int(ts["ns"])
    return traces


def shape(traces: dict[int, Trace]) -> list[dict[str, Any]]:
    """Root traces in the order their requests were sent (by REQUEST_START), each with its children
    (sorted by model name and timestamp names: the two ensemble steps run one after the other)."""
    roots = sorted((t for t in traces.values() if t.parent == 0), key=lambda t: t.ns["REQUEST_START"])
    out = []
    for r in roots:
        children = [t for t in traces.values() if t.parent == r.id]
        out.append(
            {
                "model": r.model,
                "version": r.version,
                "names": sorted(r.names),
                "children": sorted((c.model, c.version, tuple(sorted(c.names))) for c in children),
            }
        )
    return out


def _server_flags(trace_file: Path) -> list[str]:
    return [
        *FLAGS,
        f"--trace-config=triton,file={trace_file}",
        "--trace-config=rate=1",
        "--trace-config=level=TIMESTAMPS",
    ]


def _wait_ready(server: Server, timeout: float = 60.0) -> None:
    """Triton logs its HTTP line a moment before it accepts connections."""
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


def _put(results: queue.Queue[tuple[Any, Any]], result: Any, error: Any) -> None:
    results.put((result, error))


def _drive(server: Server) -> None:
    """The same requests, one at a time, on one server."""
    _wait_ready(server)
    assert request(server.http_port, "POST", "/v2/models/add_sub/infer", ADD_SUB).status == 200
    assert request(server.http_port, "POST", "/v2/models/ensemble_add_sub/infer", ENSEMBLE).status == 200
    assert request(server.http_port, "POST", "/v2/models/bls_add_sub/infer", ADD_SUB).status == 200
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        inputs = []
        for name in ("INPUT0", "INPUT1"):
            i = grpcclient.InferInput(name, [4], "FP32")
            i.set_data_from_numpy(np.ones(4, dtype=np.float32))
            inputs.append(i)
        client.infer("add_sub", inputs)
        # A ModelStreamInfer stream: its request is traced on its own, with the stream's timestamps.
        results: queue.Queue[tuple[Any, Any]] = queue.Queue()
        client.start_stream(functools.partial(_put, results))
        client.async_stream_infer("add_sub", inputs, request_id="stream-1")
        result, error = results.get(timeout=60)
        assert error is None, error
        assert result.get_response().id == "stream-1"
        client.stop_stream()
    finally:
        client.close()
    generate = b'{"INPUT0": [1, 2, 3, 4], "INPUT1": [1, 1, 1, 1]}'
    assert request(server.http_port, "POST", "/v2/models/add_sub/generate", generate).status == 200
    # log_frequency through the API: the traces so far are written now, the next two go to <file>.0.
    setting = request(server.http_port, "POST", "/v2/trace/setting", b'{"log_frequency":"2"}')
    assert setting.status == 200, setting.body
    for _ in range(2):
        assert request(server.http_port, "POST", "/v2/models/add_sub/infer", ADD_SUB).status == 200


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not triton_available():
        pytest.skip(f"Triton is not provisioned ({TRITON} is missing): run `bash scripts/setup-triton.sh`")
    if node_executable() is None or not (REPO_ROOT / "dist" / "src" / "cli" / "main.js").exists():
        pytest.skip("Nereid is not built: run `npx tsc -p tsconfig.json`")
    work = tmp_path_factory.mktemp("trace")
    repository = work / "models"
    repository.mkdir()
    for name in ("add_sub", "ensemble_add_sub"):
        shutil.copytree(MODELS / name, repository / name, ignore=shutil.ignore_patterns("__pycache__"))
    (repository / "ensemble_add_sub" / "1").mkdir(exist_ok=True)
    shutil.copytree(
        TRACE_MODELS / "bls_add_sub", repository / "bls_add_sub", ignore=shutil.ignore_patterns("__pycache__")
    )
    paths = {"triton": work / "triton-trace.json", "nereid": work / "nereid-trace.json"}
    for name, start in (("triton", start_triton), ("nereid", start_nereid)):
        server = start(repository, _server_flags(paths[name]), work / "logs")
        try:
            _drive(server)
        finally:
            assert server.stop() == 0, server.log_tail()
    return paths


def _load(path: Path) -> dict[int, Trace]:
    return parse(json.loads(path.read_text()))


def test_same_traces_models_and_parents(files: dict[str, Path]) -> None:
    triton, nereid = _load(files["triton"]), _load(files["nereid"])
    assert shape(nereid) == shape(triton)
    # The six exchanges: plain HTTP, ensemble (two children), BLS (one child), gRPC, gRPC stream, generate.
    assert [s["model"] for s in shape(triton)] == [
        "add_sub",
        "ensemble_add_sub",
        "bls_add_sub",
        "add_sub",
        "add_sub",
        "add_sub",
    ]


def test_children_name_their_parent_and_run_inside_it(files: dict[str, Path]) -> None:
    for name in ("triton", "nereid"):
        traces = _load(files[name])
        children = [t for t in traces.values() if t.parent != 0]
        assert len(children) == 3, name
        for c in children:
            parent = traces[c.parent]
            assert parent.model in ("ensemble_add_sub", "bls_add_sub"), name
            assert parent.ns["REQUEST_START"] <= c.ns["REQUEST_START"], name
            assert c.ns["REQUEST_END"] <= parent.ns["REQUEST_END"], name


def _unset(name: str, t: Trace, stamp: str) -> bool:
    """Triton 2.51 writes a generate request's HTTP_SEND_START / HTTP_SEND_END as 0 (never captured): those
    are left out of the order check, on Triton only."""
    return name == "triton" and stamp.startswith("HTTP_SEND_") and t.ns[stamp] == 0


def test_timestamps_in_the_same_order(files: dict[str, Path]) -> None:
    for name in ("triton", "nereid"):
        for t in _load(files[name]).values():
            for a, b in ORDER:
                if a in t.ns and b in t.ns and not _unset(name, t, a) and not _unset(name, t, b):
                    assert t.ns[a] <= t.ns[b], f"{name}: trace {t.id} ({t.model}) has {a} after {b}"


def test_generate_send_timestamps(files: dict[str, Path]) -> None:
    """The last root trace is the generate request's: Triton 2.51 writes its send timestamps as 0 (a
    difference recorded in docs/tracing.md); Nereid writes when the reply went out."""
    for name in ("triton", "nereid"):
        roots = [t for t in _load(files[name]).values() if t.parent == 0 and "HTTP_RECV_START" in t.ns]
        generate = max(roots, key=lambda t: t.ns["HTTP_RECV_START"])
        sent = (generate.ns["HTTP_SEND_START"], generate.ns["HTTP_SEND_END"])
        if name == "triton":
            assert sent == (0, 0), sent
        else:
            assert generate.ns["REQUEST_START"] < sent[0] <= sent[1], sent


def test_file_layout_is_the_same(files: dict[str, Path]) -> None:
    """One object per timestamp, the model object right before REQUEST_START, children before parents."""
    for name in ("triton", "nereid"):
        objects = json.loads(files[name].read_text())
        for i, o in enumerate(objects):
            if "model_name" in o:
                assert set(o) <= {"id", "model_name", "model_version", "parent_id", "request_id"}
                assert objects[i + 1]["timestamps"][0]["name"] == "REQUEST_START", name
            else:
                assert set(o) == {"id", "timestamps"}, name
                assert len(o["timestamps"]) == 1, name
        first_seen: dict[int, int] = {}
        for i, o in enumerate(objects):
            first_seen.setdefault(int(o["id"]), i)
        for o in objects:
            if o.get("parent_id"):
                assert first_seen[int(o["id"])] < first_seen[int(o["parent_id"])], name


def test_log_frequency_set_at_run_time(files: dict[str, Path]) -> None:
    for name in ("triton", "nereid"):
        rotated = Path(f"{files[name]}.0")
        assert rotated.exists(), name
        traces = parse(json.loads(rotated.read_text()))
        assert sorted(t.model for t in traces.values()) == ["add_sub", "add_sub"], name
        assert not Path(f"{files[name]}.1").exists(), name
