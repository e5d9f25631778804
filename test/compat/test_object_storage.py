"""The real tritonclient against a Nereid (bin/nereid.js) whose model repository is
`s3://host:port/bucket/...` on a real S3-compatible server (moto_server, installed by
scripts/setup-storage-servers.sh): server and model metadata, model config, inference over HTTP and gRPC, the
repository index, unload and load. Credentials come the way a user gives them: the AWS SDK's standard chain
(AWS_ACCESS_KEY_ID, ...), TRITON_AWS_MOUNT_DIRECTORY for the local copies, and Triton's credential file
(TRITON_CLOUD_CREDENTIAL_PATH), whose entries are matched by prefix. The suite skips only when the setup could
not provide moto_server on this machine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from nereid_server import MODEL_REPOSITORY, REPO_ROOT, NereidServer, ServerStartError, start_server

BUCKET = "nereid-compat"
PREFIX = "repo/models"
MODELS = ("simple", "add_sub_python")


def _tool(name: str) -> str | None:
    env_file = REPO_ROOT / ".cache" / "storage-servers.env"
    if not env_file.exists():
        return None
    for line in env_file.read_text().splitlines():
        key, _, value = line.partition("=")
        if key == name and value:
            return value
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _put(url: str, body: bytes = b"") -> None:
    # moto accepts unsigned requests unless its IAM mode is on: the objects are written without Nereid.
    # An explicit content type: with urllib's default (a form), moto's server would parse binary as a form.
    req = urllib.request.Request(
        url, data=body, method="PUT", headers={"Content-Type": "application/octet-stream"}
    )
    with urllib.request.urlopen(req, timeout=120) as res:
        assert res.status == 200, url


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    moto = _tool("NEREID_MOTO_SERVER")
    if moto is None:
        pytest.skip(
            "moto_server is not installed (scripts/setup-storage-servers.sh, .cache/storage-servers.env)"
        )
    port = _free_port()
    log = (tmp_path_factory.mktemp("moto") / "moto.log").open("wb")
    proc = subprocess.Popen([moto, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(endpoint, timeout=2).close()
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start (exit {proc.poll()})") from None
                time.sleep(0.2)
        _put(f"{endpoint}/{BUCKET}")
        for model in MODELS:
            for f in sorted((MODEL_REPOSITORY / model).rglob("*")):
                if f.is_file():
                    key = f"{PREFIX}/{f.relative_to(MODEL_REPOSITORY).as_posix()}"
                    _put(f"{endpoint}/{BUCKET}/{key}", f.read_bytes())
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def s3_server(
    s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[NereidServer, Path]]:
    mount = tmp_path_factory.mktemp("aws-mount")
    env = {
        "AWS_ACCESS_KEY_ID": "compat-key",
        "AWS_SECRET_ACCESS_KEY": "compat-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TRITON_AWS_MOUNT_DIRECTORY": str(mount),
    }
    saved = {k: os.environ.get(k) for k in [*env, "TRITON_CLOUD_CREDENTIAL_PATH"]}
    os.environ.update(env)
    os.environ.pop("TRITON_CLOUD_CREDENTIAL_PATH", None)
    host = s3_endpoint.removeprefix("http://")
    try:
        server = start_server(
            [
                "--http-port=0",
                "--grpc-port=0",
                "--metrics-port=0",
                f"--model-repository=s3://{host}/{BUCKET}/{PREFIX}",
                "--model-control-mode=explicit",
                "--load-model=simple",
            ],
            tmp_path_factory.mktemp("nereid-s3") / "server.log",
        )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    server.url("metrics", timeout=60.0)
    try:
        yield server, mount
    finally:
        code = server.stop()
        assert code == 0, server.log_tail()
        # The copies live in a session folder of the mount directory, removed at exit.
        assert list(mount.iterdir()) == [], list(mount.rglob("*"))


def _infer_simple(client: Any, module: Any) -> tuple[Any, Any]:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"), module.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = client.infer("simple", inputs)
    return result.as_numpy("OUTPUT0"), result.as_numpy("OUTPUT1")


def test_metadata_config_and_inference_from_s3(s3_server: tuple[NereidServer, Path]) -> None:
    server, mount = s3_server
    http = httpclient.InferenceServerClient(url=server.http_url)
    grpc = grpcclient.InferenceServerClient(url=server.url("grpc"))
    try:
        assert http.is_server_ready()
        assert http.is_model_ready("simple")
        meta = http.get_model_metadata("simple")
        assert meta["name"] == "simple"
        assert [i["name"] for i in meta["inputs"]] == ["INPUT0", "INPUT1"]
        config = grpc.get_model_config("simple", as_json=True)["config"]
        assert config["name"] == "simple"
        assert config["max_batch_size"] == 8
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        for client, module in ((http, httpclient), (grpc, grpcclient)):
            out0, out1 = _infer_simple(client, module)
            np.testing.assert_array_equal(out0, a + 1)
            np.testing.assert_array_equal(out1, a - 1)
        # The model was copied under TRITON_AWS_MOUNT_DIRECTORY.
        copied = [p.relative_to(mount).parts[-3:] for p in mount.rglob("model.onnx")]
        assert copied == [("simple", "1", "model.onnx")], copied
    finally:
        http.close()
        grpc.close()


def test_repository_index_load_and_unload_from_s3(s3_server: tuple[NereidServer, Path]) -> None:
    server, _ = s3_server
    client = httpclient.InferenceServerClient(url=server.http_url)
    try:
        index = {m["name"]: m for m in client.get_model_repository_index()}
        assert set(index) == set(MODELS), index
        assert index["simple"]["state"] == "READY"
        assert "state" not in index["add_sub_python"] or index["add_sub_python"]["state"] != "READY"

        client.load_model("add_sub_python")
        assert client.is_model_ready("add_sub_python")
        x = np.array([1, 2, 3, 4], dtype=np.float32)
        y = np.array([10, 20, 30, 40], dtype=np.float32)
        inputs = [httpclient.InferInput("INPUT0", [4], "FP32"), httpclient.InferInput("INPUT1", [4], "FP32")]
        inputs[0].set_data_from_numpy(x)
        inputs[1].set_data_from_numpy(y)
        result = client.infer("add_sub_python", inputs)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x + y)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), x - y)

        client.unload_model("add_sub_python")
        deadline = time.monotonic() + 60
        while client.is_model_ready("add_sub_python") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not client.is_model_ready("add_sub_python")
        with pytest.raises(InferenceServerException, match="model not found in any model repository"):
            client.load_model("missing")
    finally:
        client.close()


def _start_with_credential_file(
    s3_endpoint: str, credentials: dict[str, Any], tmp_path: Path, extra: list[str]
) -> NereidServer:
    cred_file = tmp_path / "cloud_credential.json"
    cred_file.write_text(json.dumps(credentials))
    host = s3_endpoint.removeprefix("http://")
    saved = os.environ.get("TRITON_CLOUD_CREDENTIAL_PATH")
    os.environ["TRITON_CLOUD_CREDENTIAL_PATH"] = str(cred_file)
    try:
        server = start_server(
            [
                "--http-port=0",
                "--grpc-port=0",
                "--metrics-port=0",
                f"--model-repository=s3://{host}/{BUCKET}/{PREFIX}",
                "--model-control-mode=explicit",
                "--load-model=simple",
                *extra,
            ],
            tmp_path / "server.log",
            startup_timeout=120.0,
        )
        # The metrics endpoint is announced last, just before the SIGTERM handler is installed.
        server.url("metrics", timeout=60.0)
        return server
    finally:
        if saved is None:
            os.environ.pop("TRITON_CLOUD_CREDENTIAL_PATH", None)
        else:
            os.environ["TRITON_CLOUD_CREDENTIAL_PATH"] = saved


def test_credential_file_entry_matching_the_repository_serves(s3_endpoint: str, tmp_path: Path) -> None:
    host = s3_endpoint.removeprefix("http://")
    server = _start_with_credential_file(
        s3_endpoint,
        {
            "s3": {
                "s3://other-bucket": {"key_id": "k", "secret_key": "unused-secret"},
                f"s3://{host}/{BUCKET}": {
                    "key_id": "k2",
                    "secret_key": "file-secret-0123",
                    "region": "us-east-1",
                },
            }
        },
        tmp_path,
        [],
    )
    try:
        client = httpclient.InferenceServerClient(url=server.http_url)
        try:
            out0, _ = _infer_simple(client, httpclient)
            np.testing.assert_array_equal(out0, np.arange(16, dtype=np.int32).reshape(1, 16) + 1)
        finally:
            client.close()
    finally:
        code = server.stop()
        assert code == 0, server.log_tail()
    assert "file-secret-0123" not in server.log_text()


def test_credential_file_without_a_matching_entry_fails_naming_file_and_url(
    s3_endpoint: str, tmp_path: Path
) -> None:
    host = s3_endpoint.removeprefix("http://")
    with pytest.raises(ServerStartError) as err:
        _start_with_credential_file(
            s3_endpoint,
            {"s3": {"s3://other-bucket": {"key_id": "k", "secret_key": "never-printed-secret"}}},
            tmp_path,
            [],
        )
    text = str(err.value)
    assert (
        f"no credential in '{tmp_path / 'cloud_credential.json'}' matches 's3://{host}/{BUCKET}/{PREFIX}'"
        in text
    )
    assert "never-printed-secret" not in text
