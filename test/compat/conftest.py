"""Session fixtures for the compatibility suite: one Nereid server for the whole run, and real tritonclient
clients pointed at it.

The server runs in explicit model-control mode with every bundled model loaded at startup, so the
load/unload tests can use the repository API; tests that unload a model load it back before they finish.
System shared memory is enabled (`--allow-client-shm=true`) for the shared-memory tests. A second repository,
written at startup by model_repo.write_test_models, adds the suite's own Python models (python_raises) without
touching examples/. At the end the server gets SIGTERM and must exit with code 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from grpc_stream import Stream
from model_repo import write_test_models
from nereid_server import ENTRY, MODEL_REPOSITORY, REPO_ROOT, NereidServer, node_executable, start_server

SERVER_FLAGS = [
    f"--model-repository={MODEL_REPOSITORY}",
    "--http-port=0",
    "--grpc-port=0",
    "--metrics-port=0",
    "--model-control-mode=explicit",
    "--load-model=*",
    "--allow-client-shm=true",
]


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NereidServer]:
    if node_executable() is None:
        pytest.skip("node is not installed")
    if not ENTRY.exists():
        pytest.fail(f"{ENTRY} does not exist")
    log_path: Path = tmp_path_factory.mktemp("nereid") / "server.log"
    test_models = write_test_models(tmp_path_factory.mktemp("test_models"))
    running = start_server([*SERVER_FLAGS, f"--model-repository={test_models}"], log_path)
    try:
        yield running
    finally:
        code = running.stop()
        assert code == 0, f"server exited with code {code} after SIGTERM; log:\n{running.log_tail()}"


@pytest.fixture(scope="session")
def client(server: NereidServer) -> Iterator[Any]:
    """A tritonclient.http.InferenceServerClient (untyped library, hence Any)."""
    c = httpclient.InferenceServerClient(url=server.http_url, network_timeout=120.0)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="session")
def grpc(server: NereidServer) -> Iterator[Any]:
    """A tritonclient.grpc.InferenceServerClient on the same server."""
    port = server.wait_for("grpc", timeout=10.0)
    assert port is not None, (
        f"the server did not announce 'Started GRPCInferenceService'\n{server.log_tail()}"
    )
    c = grpcclient.InferenceServerClient(url=f"localhost:{port}")
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def stream(grpc: Any) -> Iterator[Stream]:
    """A stream opened on the shared gRPC client for one test, stopped after it."""
    s = Stream(grpc)
    try:
        yield s
    finally:
        grpc.stop_stream()


@pytest.fixture(scope="session")
def example_models(client: Any) -> dict[str, dict[str, Any]]:
    """The server's repository index at the start of the run, by model name. Models that other work adds
    to examples/ while the suite runs are not in it, so tests of optional models skip rather than race."""
    return {entry["name"]: entry for entry in client.get_model_repository_index()}


@pytest.fixture(scope="session")
def package_version() -> str:
    data = json.loads((REPO_ROOT / "package.json").read_text(encoding="utf-8"))
    version = data["version"]
    assert isinstance(version, str)
    return version


# Triton's own OpenAI frontend tests run through test/compat/triton_openai/run.sh against a Triton checkout
# (docs/openai.md); its harness is not a test module of this suite.
collect_ignore = ["triton_openai"]
