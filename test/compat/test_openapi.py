"""API conformance: docs/openapi.yaml against a live Nereid, checked by schemathesis.

A server is started for this module alone (explicit model control, a few of the bundled models loaded,
client shared memory on), so that the state-changing operations schemathesis calls (load and unload,
log and trace settings, shared-memory registration) touch nothing the rest of the suite relies on; it is
stopped, and must exit cleanly, at the end. schemathesis reads the document from the server itself
(GET /openapi.yaml) and runs its phases with every check on (`--checks all`), with the exceptions
test/compat/schemathesis.toml lists and explains; a fixed seed and a small example budget keep the run
reproducible and within a minute or two. Any failure (a 5xx, an undocumented status or content type, a
response that does not match its schema, a valid request refused or an invalid one accepted) fails the test
with schemathesis' report, which ends with a curl command that reproduces each failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from nereid_server import MODEL_REPOSITORY, REPO_ROOT, NereidServer, node_executable, start_server

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "schemathesis.toml"
DOCUMENT = REPO_ROOT / "docs" / "openapi.yaml"
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"

# The models the run can reach by name (the document's `simple` example among them).
MODELS = ["simple", "add_sub_fp32", "identity_fp32", "repeat_int32", "stream_ts", "simple_string"]

# Per operation at most this many generated cases in the fuzzing phase; the coverage and examples phases
# add their own, deterministic ones (about 900 requests in all). NEREID_OPENAPI_EXAMPLES raises it for a
# longer run.
MAX_EXAMPLES = int(os.environ.get("NEREID_OPENAPI_EXAMPLES", "3"))
SEED = 20231123


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NereidServer]:
    if node_executable() is None:
        pytest.skip("node is not installed")
    log_path = tmp_path_factory.mktemp("openapi") / "server.log"
    flags = [
        f"--model-repository={MODEL_REPOSITORY}",
        "--http-port=0",
        "--allow-grpc=false",
        "--allow-metrics=false",
        "--model-control-mode=explicit",
        *[f"--load-model={m}" for m in MODELS],
        "--allow-client-shm=true",
        # A refused load request answers its 4xx instead of Triton's 500 (the default, docs/from-triton.md):
        # schemathesis counts every 5xx for client input as a server error.
        "--load-error-status=client-error",
    ]
    running = start_server(flags, log_path)
    try:
        yield running
    finally:
        code = running.stop()
        assert code == 0, f"server exited with code {code} after SIGTERM; log:\n{running.log_tail()}"


def _get(url: str) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=30) as res:
        return res.status, res.headers.get("Content-Type", ""), res.read()


def test_the_document_is_served_as_it_is(api_server: NereidServer) -> None:
    status, content_type, body = _get(f"http://{api_server.http_url}/openapi.yaml")
    assert status == 200
    assert content_type == "application/yaml"
    assert body == DOCUMENT.read_bytes()
    doc = yaml.safe_load(body)
    assert doc["openapi"] == "3.1.0"


def test_every_documented_path_is_routed(api_server: NereidServer) -> None:
    """Each path and method of the document reaches a handler (the router's 404/405 would say otherwise)."""
    doc = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    values = {"{model}": "simple", "{version}": "1", "{region}": "r", "{repository}": "repo"}
    for template, item in doc["paths"].items():
        path = template
        # Load and unload name a model no repository has: the schemathesis run below needs `simple` loaded.
        if template.startswith("/v2/repository/"):
            path = path.replace("{model}", "nereid-openapi-no-such-model")
        for name, value in values.items():
            path = path.replace(name, value)
        for method in ("get", "post"):
            if method not in item:
                continue
            req = urllib.request.Request(
                f"http://{api_server.http_url}{path}",
                method=method.upper(),
                data=b"" if method == "post" else None,
            )
            try:
                with urllib.request.urlopen(req, timeout=60) as res:
                    status, body = res.status, res.read()
            except urllib.error.HTTPError as err:
                status, body = err.code, err.read()
            assert status != 405, f"{method.upper()} {path}: 405"
            assert not (status == 404 and body == b'{"error":"Not Found"}'), (
                f"{method.upper()} {path}: not routed"
            )
            assert str(status) in item[method]["responses"], (
                f"{method.upper()} {path}: undocumented {status} {body[:200]!r}"
            )


def test_schemathesis_finds_no_failure(api_server: NereidServer, tmp_path: Path) -> None:
    if not SCHEMATHESIS.exists():
        pytest.fail(f"{SCHEMATHESIS} is missing: run scripts/setup-python.sh (test/compat/requirements.txt)")
    base = f"http://{api_server.http_url}"
    args = [
        str(SCHEMATHESIS),
        "--config-file",
        str(CONFIG),
        "--no-color",
        "run",
        f"{base}/openapi.yaml",
        "--url",
        base,
        "--checks",
        "all",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--generation-database",
        "none",
        # One worker: with two, schemathesis 4.32 sometimes fails inside CPython's ast module while it
        # builds examples (SystemError "AST constructor recursion depth mismatch"), an error of its own.
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--suppress-health-check",
        "all",
    ]
    run = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    report = run.stdout + run.stderr
    (tmp_path / "schemathesis.txt").write_text(report, encoding="utf-8")
    assert run.returncode == 0, f"schemathesis exited with {run.returncode}:\n{report[-20000:]}"
    # The run really tested the API: it says so, and the server answered it all.
    assert "No issues found" in report or " passed" in report, report[-4000:]
    status, _, _ = _get(f"{base}/v2/health/live")
    assert status == 200
