"""Triton vs Nereid, both serving the same `s3://127.0.0.1:<port>/<bucket>/models` from one real S3-compatible
server (moto_server, scripts/setup-storage-servers.sh), with credentials from the AWS environment variables:
the URL form with a custom endpoint, the repository index, configs, inference, unload and load, and the
answer to a model that is not in the bucket must be the same as from local disk. The suite skips when
Triton or moto_server is not provisioned on this machine (NEREID_DIFF_REQUIRE_TRITON makes a missing
Triton an error, as in conftest.py)."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diff_servers import (
    NEREID,
    REPO_ROOT,
    TRITON,
    Pair,
    free_port,
    node_executable,
    prepare_repository,
    start_nereid,
    start_triton,
    triton_available,
)
from diff_wire import differences, infer_json, output_array, tensor_json

BUCKET = "nereid-differential"
FLAGS = ["--model-control-mode=explicit", "--load-model=*", "--exit-on-error=false"]
MODELS = ["add_sub", "cfg_versions", "cfg_io", "ensemble_add_sub"]


def _moto_server() -> str | None:
    env_file = REPO_ROOT / ".cache" / "storage-servers.env"
    if not env_file.exists():
        return None
    for line in env_file.read_text().splitlines():
        key, _, value = line.partition("=")
        if key == "NEREID_MOTO_SERVER" and value:
            return value
    return None


def _put(url: str, body: bytes = b"") -> None:
    # Unsigned writes (moto checks no credentials by default); an explicit type: moto would parse a form.
    req = urllib.request.Request(
        url, data=body, method="PUT", headers={"Content-Type": "application/octet-stream"}
    )
    with urllib.request.urlopen(req, timeout=120) as res:
        assert res.status == 200, url


def _upload(endpoint: str, repository: Path) -> None:
    _put(f"{endpoint}/{BUCKET}")
    for model in MODELS:
        for f in sorted((repository / model).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                _put(f"{endpoint}/{BUCKET}/models/{f.relative_to(repository).as_posix()}", f.read_bytes())
    # A bucket has no empty folders: the ensemble's version folder is a marker object, as S3 consoles make.
    _put(f"{endpoint}/{BUCKET}/models/ensemble_add_sub/1/")


@pytest.fixture(scope="module")
def s3_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    if not triton_available():
        message = f"Triton is not provisioned ({TRITON} is missing): run `bash scripts/setup-triton.sh`"
        if os.environ.get("NEREID_DIFF_REQUIRE_TRITON") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    moto = _moto_server()
    if moto is None:
        pytest.skip("moto_server is not installed: run `bash scripts/setup-storage-servers.sh`")
    if node_executable() is None or not NEREID.exists():
        pytest.skip("node or Nereid's build is missing")
    work: Path = tmp_path_factory.mktemp("differential-s3")
    port = free_port()
    with (work / "moto.log").open("wb") as log:
        proc = subprocess.Popen(
            [moto, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT
        )
    endpoint = f"http://127.0.0.1:{port}"
    saved = {
        k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    }
    servers: list[Any] = []
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
        _upload(endpoint, prepare_repository(work))
        os.environ.update(
            {
                "AWS_ACCESS_KEY_ID": "diff-key",
                "AWS_SECRET_ACCESS_KEY": "diff-secret",
                "AWS_DEFAULT_REGION": "us-east-1",
            }
        )
        url = f"s3://127.0.0.1:{port}/{BUCKET}/models"
        servers.append(start_triton(url, FLAGS, work / "logs"))
        servers.append(start_nereid(url, FLAGS, work / "logs"))
        yield Pair(servers[0], servers[1])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for s in reversed(servers):
            s.stop()
        proc.terminate()
        proc.wait(timeout=30)


def _index(pair: Pair) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    triton, nereid = pair.send("POST", "/v2/repository/index", b"{}")
    assert (triton.status, nereid.status) == (200, 200)

    def rows(body: Any) -> list[tuple[str, str, str]]:
        return sorted((e["name"], e.get("version", ""), e.get("state", "")) for e in body)

    return rows(triton.json()), rows(nereid.json())


def test_repository_index_from_s3_matches(s3_pair: Pair) -> None:
    t, n = _index(s3_pair)
    assert n == t
    assert ("cfg_versions", "3", "READY") in t, t


@pytest.mark.parametrize("model", MODELS)
def test_config_from_s3_matches(s3_pair: Pair, model: str) -> None:
    triton, nereid = s3_pair.send("GET", f"/v2/models/{model}/config")
    assert (triton.status, nereid.status) == (200, 200), f"Triton {triton}, Nereid {nereid}"
    t, n = triton.json(), nereid.json()
    # As in test_diff_config.py: a field of ensemble configs that came after Triton 2.51.
    if "max_inflight_requests" not in t.get("ensemble_scheduling", {}):
        n.get("ensemble_scheduling", {}).pop("max_inflight_requests", None)
    t.pop("model_transaction_policy", None)
    n.pop("model_transaction_policy", None)
    assert differences(t, n) == []


def test_inference_from_s3_matches(s3_pair: Pair) -> None:
    a = [1.0, 2.0, 3.0, 4.0]
    b = [10.0, 20.0, 30.0, 40.0]
    body = infer_json([tensor_json("INPUT0", "FP32", [4], a), tensor_json("INPUT1", "FP32", [4], b)])
    triton, nereid = s3_pair.send("POST", "/v2/models/add_sub/infer", body)
    assert (triton.status, nereid.status) == (200, 200), f"Triton {triton}, Nereid {nereid}"
    for name in ("OUTPUT0", "OUTPUT1"):
        np.testing.assert_array_equal(output_array(nereid, name), output_array(triton, name))
    np.testing.assert_array_equal(output_array(nereid, "OUTPUT0"), np.add(a, b).astype(np.float32))


def test_unload_and_load_from_s3_match(s3_pair: Pair) -> None:
    for action in ("unload", "load"):
        triton, nereid = s3_pair.send("POST", f"/v2/repository/models/cfg_io/{action}", b"{}")
        assert (triton.status, nereid.status) == (200, 200), f"{action}: Triton {triton}, Nereid {nereid}"
    triton, nereid = s3_pair.send("GET", "/v2/models/cfg_io/ready")
    assert triton.status == nereid.status == 200


def test_load_of_a_model_not_in_the_bucket_matches(s3_pair: Pair) -> None:
    triton, nereid = s3_pair.send("POST", "/v2/repository/models/not_there/load", b"{}")
    # Triton's 500 (404 only with --load-error-status=client-error), the same as from local disk.
    assert (triton.status, nereid.status) == (500, 500)
    # Triton's whole text; Nereid appends what the poll found, as from local disk (diff_cases.py, "load of a
    # model that is not in the repository").
    assert triton.error() == "failed to load 'not_there', failed to poll from model repository"
    assert nereid.error() == (
        f"{triton.error()}: failed to poll model 'not_there': model not found in any model repository."
    )
