"""Triton vs Nereid with gRPC over TLS (Triton's --grpc-use-ssl, --grpc-use-ssl-mutual, --grpc-server-cert,
--grpc-server-key, --grpc-root-cert), through the real tritonclient.grpc with `ssl=True`: metadata and
inference agree, mutual TLS takes and refuses the same clients, a client without TLS on a TLS port and a TLS
client on a clear-text port fail with the same status, and a missing certificate file stops both at start-up.

Intended differences, not compared: the message a clear-text client gets (Triton's gRPC library drops the
connection, "Socket closed"; Nereid answers UNAVAILABLE saying to use TLS) and the start-up error (Triton:
"Socket '...' already in use"; Nereid names the flag and the file). Certificates are made for the run by
test/fixtures/make-test-certs.sh."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from diff_servers import (
    MODELS,
    NEREID,
    REPO_ROOT,
    TRITON,
    Pair,
    Server,
    free_port,
    node_executable,
    start_nereid,
    start_triton,
    triton_available,
)
from tritonclient.utils import InferenceServerException

FLAGS = ["--model-control-mode=explicit", "--load-model=add_sub"]
A = np.array([1.0, 2.5, -3.0, 4.25], dtype=np.float32)
B = np.array([0.5, -1.0, 2.0, 8.0], dtype=np.float32)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not triton_available():
        message = f"Triton is not provisioned ({TRITON} is missing): run `bash scripts/setup-triton.sh`"
        if os.environ.get("NEREID_DIFF_REQUIRE_TRITON") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    if node_executable() is None:
        pytest.skip("node is not installed")
    if not (REPO_ROOT / "dist" / "src" / "cli" / "main.js").exists() or not NEREID.exists():
        pytest.skip("Nereid is not built: run `npx tsc -p tsconfig.json`")
    folder: Path = tmp_path_factory.mktemp("differential-tls")
    script = REPO_ROOT / "test" / "fixtures" / "make-test-certs.sh"
    subprocess.run(["bash", str(script), str(folder / "certs")], check=True, capture_output=True)
    shutil.copytree(MODELS / "add_sub", folder / "models" / "add_sub")
    return folder


def _tls_flags(certs: Path, mutual: bool) -> list[str]:
    return [
        "--grpc-use-ssl-mutual=true" if mutual else "--grpc-use-ssl=true",
        f"--grpc-server-cert={certs / 'server.crt'}",
        f"--grpc-server-key={certs / 'server.key'}",
        *([f"--grpc-root-cert={certs / 'ca.crt'}"] if mutual else []),
    ]


def _pair(work: Path, mutual: bool) -> Iterator[Pair]:
    flags = [*FLAGS, *_tls_flags(work / "certs", mutual)]
    logs = work / ("logs-mutual" if mutual else "logs")
    triton = start_triton(work / "models", flags, logs)
    try:
        nereid = start_nereid(work / "models", flags, logs)
    except BaseException:
        triton.stop()
        raise
    try:
        yield Pair(triton, nereid)
    finally:
        nereid.stop()
        triton.stop()


@pytest.fixture(scope="module")
def tls_pair(work: Path) -> Iterator[Pair]:
    yield from _pair(work, mutual=False)


@pytest.fixture(scope="module")
def mutual_pair(work: Path) -> Iterator[Pair]:
    yield from _pair(work, mutual=True)


def _client(server: Server, certs: Path, ssl: bool = True, client: str | None = None) -> Any:
    if not ssl:
        return grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    return grpcclient.InferenceServerClient(
        f"127.0.0.1:{server.grpc_port}",
        ssl=True,
        root_certificates=str(certs / "ca.crt"),
        private_key=str(certs / f"{client}.key") if client else None,
        certificate_chain=str(certs / f"{client}.crt") if client else None,
    )


def _outcome(server: Server, certs: Path, call: Any, **kwargs: Any) -> tuple[str, Any]:
    client = _client(server, certs, **kwargs)
    try:
        return "OK", call(client)
    except InferenceServerException as err:
        return str(err.status()), str(err.message())
    finally:
        client.close()


def _infer(client: Any) -> dict[str, list[float]]:
    inputs = []
    for name, data in (("INPUT0", A), ("INPUT1", B)):
        tensor = grpcclient.InferInput(name, [4], "FP32")
        tensor.set_data_from_numpy(data)
        inputs.append(tensor)
    result = client.infer("add_sub", inputs)
    return {name: result.as_numpy(name).tolist() for name in ("OUTPUT0", "OUTPUT1")}


def test_metadata_over_tls(tls_pair: Pair, work: Path) -> None:
    certs = work / "certs"
    triton = _outcome(tls_pair.triton, certs, lambda c: c.get_server_metadata(as_json=True))
    nereid = _outcome(tls_pair.nereid, certs, lambda c: c.get_server_metadata(as_json=True))
    assert triton[0] == nereid[0] == "OK", (triton, nereid)
    assert sorted(triton[1]) == sorted(nereid[1]) == ["extensions", "name", "version"]
    model = [
        _outcome(s, certs, lambda c: c.get_model_metadata("add_sub", as_json=True))
        for s in (tls_pair.triton, tls_pair.nereid)
    ]
    assert model[0] == model[1]
    assert model[0][0] == "OK"


def test_inference_over_tls(tls_pair: Pair, work: Path) -> None:
    triton, nereid = (_outcome(s, work / "certs", _infer) for s in (tls_pair.triton, tls_pair.nereid))
    assert triton == nereid
    assert nereid == ("OK", {"OUTPUT0": (A + B).tolist(), "OUTPUT1": (A - B).tolist()})


def test_clear_text_client_on_tls_port(tls_pair: Pair, work: Path) -> None:
    certs = work / "certs"
    outcomes = [
        _outcome(s, certs, lambda c: c.get_server_metadata(), ssl=False)
        for s in (tls_pair.triton, tls_pair.nereid)
    ]
    assert outcomes[0][0] == outcomes[1][0] == "StatusCode.UNAVAILABLE", outcomes
    assert "this port serves gRPC over TLS only" in outcomes[1][1]
    # Both keep serving TLS clients.
    for server in (tls_pair.triton, tls_pair.nereid):
        assert _outcome(server, certs, lambda c: c.is_server_live()) == ("OK", True)


def test_tls_client_on_clear_text_port(pair: Pair, work: Path) -> None:
    """The suite's shared servers (conftest.py) serve gRPC in clear text."""
    certs = work / "certs"
    outcomes = [_outcome(s, certs, lambda c: c.get_server_metadata()) for s in (pair.triton, pair.nereid)]
    assert outcomes[0][0] == outcomes[1][0] == "StatusCode.UNAVAILABLE", outcomes
    for server in (pair.triton, pair.nereid):
        assert _outcome(server, certs, lambda c: c.is_server_live(), ssl=False) == ("OK", True)


@pytest.mark.parametrize(
    ("client", "expected"),
    [("client", "OK"), (None, "StatusCode.UNAVAILABLE"), ("other-client", "StatusCode.UNAVAILABLE")],
    ids=["certificate from the CA", "no client certificate", "certificate of another CA"],
)
def test_mutual_tls(mutual_pair: Pair, work: Path, client: str | None, expected: str) -> None:
    certs = work / "certs"
    outcomes = [
        _outcome(s, certs, _infer, client=client)[0] for s in (mutual_pair.triton, mutual_pair.nereid)
    ]
    assert outcomes == [expected, expected]


def test_missing_certificate_stops_both_at_startup(work: Path) -> None:
    certs = work / "certs"
    flags = [
        f"--model-repository={work / 'models'}",
        "--http-address=127.0.0.1",
        f"--http-port={free_port()}",
        "--grpc-address=127.0.0.1",
        f"--grpc-port={free_port()}",
        "--allow-metrics=false",
        *FLAGS,
        "--grpc-use-ssl=true",
        f"--grpc-server-cert={certs / 'missing.crt'}",
        f"--grpc-server-key={certs / 'server.key'}",
    ]
    node = node_executable()
    assert node is not None
    runs = {
        name: _run_to_exit(command, work / f"startup-{name}.log")
        for name, command in (("triton", [str(TRITON), *flags]), ("nereid", [node, str(NEREID), *flags]))
    }
    (triton_code, triton_log), (nereid_code, nereid_log) = runs["triton"], runs["nereid"]
    assert triton_code != 0, triton_log
    assert nereid_code != 0, nereid_log
    # The messages differ on purpose: Triton's blames the socket, Nereid's names the flag and the file.
    assert "Invalid cert chain file" in triton_log
    assert f"--grpc-server-cert '{certs / 'missing.crt'}': cannot open the file: no such file" in nereid_log
    assert "Started GRPCInferenceService" not in triton_log + nereid_log


def _run_to_exit(command: list[str], log_path: Path) -> tuple[int, str]:
    """Runs a server that should not start: its exit code and its log. The process group is killed after,
    as Triton leaves its Python backend stubs behind when it exits at start-up."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        code = process.wait(timeout=300)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return code, log_path.read_text(encoding="utf-8", errors="replace")
