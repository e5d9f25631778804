"""TLS through the real tritonclient: gRPC with `ssl=True` (Triton's --grpc-use-ssl flags) and mutual TLS,
HTTPS (Nereid's --http-use-ssl flags) with tritonclient.http's `ssl_options`, perf_analyzer with its
--ssl-grpc-* and --ssl-https-* options (as Triton's own QA runs it, without the nginx Triton needs for HTTPS),
clients without TLS on TLS ports and TLS clients on clear-text ports (clean failures, the server keeps
serving), certificate rotation by SIGHUP and by the file poll (new connections get the new certificate, open
ones keep working), and start-up errors. Each server here loads only `simple`, with certificates made for
the run (tls_certs.py)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from http.client import HTTPException
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from nereid_server import ENTRY, MODEL_REPOSITORY, REPO_ROOT, NereidServer, node_executable, start_server
from test_perf_analyzer import _perf_analyzer
from tls_certs import KeptAliveHttps, make_certs, served_serial

BASE_FLAGS = [
    f"--model-repository={MODEL_REPOSITORY}",
    "--http-port=0",
    "--grpc-port=0",
    "--allow-metrics=false",
    "--model-control-mode=explicit",
    "--load-model=simple",
]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_certs(tmp_path_factory.mktemp("certs"))


def _tls_flags(protocol: str, folder: Path, mutual: bool = False) -> list[str]:
    return [
        f"--{protocol}-use-ssl-mutual=true" if mutual else f"--{protocol}-use-ssl=true",
        f"--{protocol}-server-cert={folder / 'server.crt'}",
        f"--{protocol}-server-key={folder / 'server.key'}",
        *([f"--{protocol}-root-cert={folder / 'ca.crt'}"] if mutual else []),
    ]


@pytest.fixture(scope="module")
def start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[list[str]], NereidServer]]:
    """Starts servers with BASE_FLAGS + flags; each must exit 0 on SIGTERM at the end of the module."""
    if node_executable() is None:
        pytest.skip("node is not installed")
    started: list[NereidServer] = []

    def run(flags: list[str]) -> NereidServer:
        log = tmp_path_factory.mktemp("nereid-tls") / "server.log"
        server = start_server([*BASE_FLAGS, *flags], log)
        started.append(server)
        server.url("grpc")
        return server

    yield run
    for server in started:
        code = server.stop()
        assert code == 0, f"server exited with code {code}; log:\n{server.log_tail()}"


@pytest.fixture(scope="module")
def tls_server(start: Callable[[list[str]], NereidServer], certs: Path) -> NereidServer:
    """gRPC over TLS and HTTPS, no client certificates."""
    return start([*_tls_flags("grpc", certs), *_tls_flags("http", certs)])


@pytest.fixture(scope="module")
def mutual_server(start: Callable[[list[str]], NereidServer], certs: Path) -> NereidServer:
    """gRPC and HTTPS, both requiring client certificates signed by ca.crt."""
    return start([*_tls_flags("grpc", certs, mutual=True), *_tls_flags("http", certs, mutual=True)])


def _grpc(server: NereidServer, certs: Path, client: str | None = None) -> Any:
    return grpcclient.InferenceServerClient(
        server.url("grpc"),
        ssl=True,
        root_certificates=str(certs / "ca.crt"),
        private_key=str(certs / f"{client}.key") if client else None,
        certificate_chain=str(certs / f"{client}.crt") if client else None,
    )


def _https(server: NereidServer, certs: Path, client: str | None = None) -> Any:
    options: dict[str, str] = {"ca_certs": str(certs / "ca.crt")}
    if client:
        options |= {"certfile": str(certs / f"{client}.crt"), "keyfile": str(certs / f"{client}.key")}
    return httpclient.InferenceServerClient(server.url("http"), ssl=True, ssl_options=options)


def _infer_simple(client: Any, module: Any) -> None:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"), module.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = client.infer("simple", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


def _unavailable(call: Callable[[], Any]) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as info:
        call()
    assert info.value.status() == "StatusCode.UNAVAILABLE", info.value
    return info.value


def _wait_for_log(server: NereidServer, pattern: str, count: int = 1, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while len(re.findall(pattern, server.log_text())) < count:
        if time.monotonic() >= deadline:
            pytest.fail(f"no {count}x {pattern!r} in the log:\n{server.log_tail()}")
        time.sleep(0.05)


def _own_certs(certs: Path, folder: Path) -> Path:
    """A copy of the certificates that a rotation test may overwrite."""
    shutil.copytree(certs, folder)
    return folder


def test_grpc_ssl_metadata_and_inference(tls_server: NereidServer, certs: Path) -> None:
    client = _grpc(tls_server, certs)
    try:
        metadata = client.get_server_metadata(as_json=True)
        assert metadata["name"] == "triton"
        assert "model_repository" in metadata["extensions"]
        model = client.get_model_metadata("simple", as_json=True)
        assert [i["name"] for i in model["inputs"]] == ["INPUT0", "INPUT1"]
        assert client.is_server_ready() is True
        _infer_simple(client, grpcclient)
    finally:
        client.close()
    assert re.search(
        r"GRPC TLS using the certificate of 'O=Nereid tests, CN=localhost' \(serial 1001",
        tls_server.log_text(),
    )


def test_grpc_clear_text_client_on_tls_port_is_refused_and_the_server_keeps_serving(
    tls_server: NereidServer, certs: Path
) -> None:
    plain = grpcclient.InferenceServerClient(tls_server.url("grpc"))
    try:
        err = _unavailable(plain.get_server_metadata)
        assert "this port serves gRPC over TLS only" in str(err.message())
        _unavailable(plain.is_server_live)
    finally:
        plain.close()
    client = _grpc(tls_server, certs)
    try:
        assert client.is_server_live() is True
        _infer_simple(client, grpcclient)
    finally:
        client.close()
    assert tls_server.process.poll() is None


def test_https_with_tritonclient_http(tls_server: NereidServer, certs: Path) -> None:
    client = _https(tls_server, certs)
    try:
        assert client.is_server_live() is True
        assert client.get_server_metadata()["name"] == "triton"
        assert client.get_model_metadata("simple")["name"] == "simple"
        _infer_simple(client, httpclient)
    finally:
        client.close()
    # insecure=True skips the host name check (not the chain): 127.0.0.1 is also in the certificate's names,
    # and a certificate for another host is taken only that way.
    client = httpclient.InferenceServerClient(
        f"127.0.0.1:{tls_server.ports['http']}",
        ssl=True,
        ssl_options={"ca_certs": str(certs / "ca.crt")},
        insecure=True,
    )
    try:
        assert client.is_server_ready() is True
    finally:
        client.close()


def test_plain_http_client_on_https_port_gets_a_clear_error(tls_server: NereidServer, certs: Path) -> None:
    plain = httpclient.InferenceServerClient(tls_server.url("http"))
    try:
        with pytest.raises(InferenceServerException) as info:
            plain.get_server_metadata()
        assert "this port serves HTTPS only: use https://" in str(info.value.message())
    finally:
        plain.close()
    client = _https(tls_server, certs)
    try:
        assert client.is_server_live() is True
    finally:
        client.close()


def test_tls_clients_on_clear_text_ports_fail_cleanly(
    start: Callable[[list[str]], NereidServer], certs: Path
) -> None:
    server = start([])
    grpc_tls = _grpc(server, certs)
    try:
        _unavailable(grpc_tls.get_server_metadata)
    finally:
        grpc_tls.close()
    http_tls = _https(server, certs)
    try:
        with pytest.raises(OSError, match=r"WRONG_VERSION_NUMBER|wrong version number|record layer"):
            http_tls.get_server_metadata()
    finally:
        http_tls.close()
    plain = grpcclient.InferenceServerClient(server.url("grpc"))
    try:
        _infer_simple(plain, grpcclient)
    finally:
        plain.close()
    plain_http = httpclient.InferenceServerClient(server.url("http"))
    try:
        assert plain_http.is_server_live() is True
    finally:
        plain_http.close()


def test_mutual_tls_takes_a_client_certificate_from_the_ca(mutual_server: NereidServer, certs: Path) -> None:
    client = _grpc(mutual_server, certs, client="client")
    try:
        assert client.get_server_metadata(as_json=True)["name"] == "triton"
        assert client.get_model_metadata("simple", as_json=True)["name"] == "simple"
        _infer_simple(client, grpcclient)
    finally:
        client.close()
    https = _https(mutual_server, certs, client="client")
    try:
        _infer_simple(https, httpclient)
    finally:
        https.close()
    assert "client certificates required" in mutual_server.log_text()


@pytest.mark.parametrize(
    "who", [None, "other-client"], ids=["no client certificate", "certificate of another CA"]
)
def test_mutual_tls_refuses_other_clients(mutual_server: NereidServer, certs: Path, who: str | None) -> None:
    refused = _grpc(mutual_server, certs, client=who)
    try:
        _unavailable(refused.get_server_metadata)
    finally:
        refused.close()
    https = _https(mutual_server, certs, client=who)
    try:
        # TLS 1.3 sends the refusal after the client's side of the handshake: the client sees an alert or a
        # closed connection when it reads the answer.
        with pytest.raises((OSError, HTTPException), match=r"(?i)certificate|unknown ca|connection closed"):
            https.is_server_live()
    finally:
        https.close()
    client = _grpc(mutual_server, certs, client="client")
    try:
        assert client.is_server_live() is True
    finally:
        client.close()


@pytest.mark.perf_analyzer
@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_perf_analyzer_over_mutual_tls(mutual_server: NereidServer, certs: Path, protocol: str) -> None:
    url = mutual_server.url(protocol)
    if protocol == "grpc":
        ssl = ["--ssl-grpc-use-ssl", f"--ssl-grpc-root-certifications-file={certs / 'ca.crt'}"]
        client = [
            f"--ssl-grpc-private-key-file={certs / 'client.key'}",
            f"--ssl-grpc-certificate-chain-file={certs / 'client.crt'}",
        ]
    else:
        url = f"https://{url}"
        ssl = [
            "--ssl-https-verify-peer=1",
            "--ssl-https-verify-host=2",
            f"--ssl-https-ca-certificates-file={certs / 'ca.crt'}",
        ]
        client = [
            f"--ssl-https-client-certificate-file={certs / 'client.crt'}",
            "--ssl-https-client-certificate-type=PEM",
            f"--ssl-https-private-key-file={certs / 'client.key'}",
            "--ssl-https-private-key-type=PEM",
        ]
    base = [_perf_analyzer(), "-m", "simple", "-i", protocol, "-u", url, "--concurrency-range", "2", *ssl]
    run = subprocess.run(
        [*base, *client, "--request-count", "50"], capture_output=True, text=True, timeout=300, check=False
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "Request count: 50" in output
    assert "Throughput:" in output
    refused = subprocess.run(
        [*base, "--request-count", "5"], capture_output=True, text=True, timeout=300, check=False
    )
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "failed to get model metadata" in refused.stdout + refused.stderr


def test_sighup_rotates_the_certificate_without_dropping_connections(
    start: Callable[[list[str]], NereidServer], certs: Path, tmp_path: Path
) -> None:
    own = _own_certs(certs, tmp_path / "rotation")
    server = start([*_tls_flags("grpc", own), *_tls_flags("http", own), "--tls-cert-poll-ms=0"])
    grpc_port, http_port = server.ports["grpc"], server.ports["http"]
    ca = own / "ca.crt"
    assert served_serial(grpc_port, ca) == served_serial(http_port, ca, "http/1.1") == "1001"
    kept = KeptAliveHttps(http_port, ca)
    before = _grpc(server, own)
    try:
        assert kept.get("/v2/health/live")[0] == 200
        _infer_simple(before, grpcclient)

        # A rotation as cert-manager or an operator does it: new key and certificate (new serial and subject).
        shutil.copy(own / "server-b.crt", own / "server.crt")
        shutil.copy(own / "server-b.key", own / "server.key")
        server.process.send_signal(signal.SIGHUP)
        _wait_for_log(
            server, r"(GRPC|HTTP) TLS certificate reloaded \(SIGHUP\): now using .*CN=nereid-reloaded", 2
        )

        assert served_serial(grpc_port, ca) == served_serial(http_port, ca, "http/1.1") == "1002"
        after = _grpc(server, own)
        try:
            _infer_simple(after, grpcclient)
        finally:
            after.close()
        # What was open before the rotation keeps working, still with the old certificate.
        assert kept.get("/v2/health/ready")[0] == 200
        assert kept.serial == "1001"
        _infer_simple(before, grpcclient)

        # A broken update: the certificate in use stays, the error is logged, nothing stops.
        (own / "server.crt").write_text(
            "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"
        )
        server.process.send_signal(signal.SIGHUP)
        _wait_for_log(
            server, r"TLS certificate reload \(SIGHUP\) failed, still using .*CN=nereid-reloaded", 2
        )
        assert served_serial(grpc_port, ca) == "1002"
        _infer_simple(before, grpcclient)
        assert kept.get("/v2/health/live")[0] == 200
        assert server.process.poll() is None
    finally:
        kept.close()
        before.close()


def test_the_poll_picks_up_replaced_files(
    start: Callable[[list[str]], NereidServer], certs: Path, tmp_path: Path
) -> None:
    own = _own_certs(certs, tmp_path / "poll")
    server = start([*_tls_flags("grpc", own), "--tls-cert-poll-ms=100"])
    grpc_port, ca = server.ports["grpc"], own / "ca.crt"
    before = _grpc(server, own)
    try:
        _infer_simple(before, grpcclient)
        # As an editor saves: write a new file beside, then rename it over the old one.
        for name in ("server.key", "server.crt"):
            shutil.copy(own / name.replace("server", "server-b"), own / f".{name}.tmp")
            os.replace(own / f".{name}.tmp", own / name)
        _wait_for_log(server, r"GRPC TLS certificate reloaded \(the files changed\): now using .*serial 1002")
        assert served_serial(grpc_port, ca) == "1002"
        _infer_simple(before, grpcclient)
    finally:
        before.close()


def test_startup_errors_name_the_flag_and_the_file(certs: Path, tmp_path: Path) -> None:
    node = node_executable()
    if node is None:
        pytest.skip("node is not installed")
    cases = [
        (
            [*_tls_flags("grpc", certs)[:2], f"--grpc-server-key={certs / 'server-b.key'}"],
            r"--grpc-server-key '.*server-b\.key' does not match the certificate of 'O=Nereid tests",
        ),
        (
            [
                "--http-use-ssl=true",
                f"--http-server-cert={tmp_path / 'nope.crt'}",
                f"--http-server-key={certs / 'server.key'}",
            ],
            r"--http-server-cert '.*nope\.crt': cannot open the file: no such file",
        ),
        (["--grpc-use-ssl=true"], r"--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key"),
    ]
    for flags, message in cases:
        done = subprocess.run(
            [node, str(ENTRY), *BASE_FLAGS, *flags],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode != 0, done.stderr
        assert re.search(message, done.stderr), done.stderr
        assert "Started" not in done.stderr
