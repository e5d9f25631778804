"""What the framework backends' tests share (test_pytorch_backend.py, test_openvino_backend.py,
test_tensorflow_backend.py): the backend's venv (made by `npx nereid backends install NAME`, which
scripts/test.sh runs), the models its framework makes (framework_models.py run by that venv's
interpreter), a server serving them, and the comparison of each answer with the framework's own.

The venv is found as the server finds it: `<root>/<name>-<sha256(requirements.txt)[:12]>/`, complete once
it holds `.nereid-installed`; the root is NEREID_BACKEND_VENVS, else the checkout's `.cache/backends/`.
"""

from __future__ import annotations

import hashlib
import os
import queue
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from nereid_server import REPO_ROOT, NereidServer, node_executable, start_server

BACKENDS = REPO_ROOT / "python" / "backends"
GENERATOR = Path(__file__).resolve().parent / "framework_models.py"
PROTOCOLS = ["http", "grpc"]


def venv_root() -> Path:
    env = os.environ.get("NEREID_BACKEND_VENVS")
    return Path(env).resolve() if env else REPO_ROOT / ".cache" / "backends"


def venv_python(name: str) -> Path | None:
    """The interpreter of backend `name`'s finished venv, or None when it is not installed."""
    requirements = (BACKENDS / name / "requirements.txt").read_bytes()
    folder = venv_root() / f"{name}-{hashlib.sha256(requirements).hexdigest()[:12]}"
    python = folder / "bin" / "python"
    return python if (folder / ".nereid-installed").is_file() and python.exists() else None


def require_venv(name: str) -> Path:
    """The backend's venv interpreter. Missing, the tests skip saying how to install it, unless
    NEREID_REQUIRE_BACKENDS names the backend (scripts/test.sh sets it to those its setup installed): then a
    missing venv is a failure, so a broken install cannot pass as a skip."""
    python = venv_python(name)
    if python is None:
        message = f"the {name} backend is not installed: run `npx nereid backends install {name}`"
        if name in os.environ.get("NEREID_REQUIRE_BACKENDS", "").split():
            pytest.fail(message)
        pytest.skip(message)
    return python


def make_models(name: str, python: Path, out: Path) -> Path:
    """Runs framework_models.py for `name` in its venv; returns `out` (models/ and expected/ inside)."""
    done = subprocess.run(
        [str(python), str(GENERATOR), name, str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{GENERATOR} {name} failed:\n{done.stdout}\n{done.stderr}"
    return out


@dataclass
class Served:
    """A server over a framework's models, its clients, and the framework's answers."""

    server: NereidServer
    http: Any
    grpc: Any
    expected_dir: Path

    def client(self, protocol: str) -> Any:
        return self.http if protocol == "http" else self.grpc

    def expected(self, model: str) -> dict[str, npt.NDArray[Any]]:
        with np.load(self.expected_dir / f"{model}.npz") as data:
            # Strings are stored as fixed-width bytes ('S'); tritonclient gives BYTES back as objects.
            return {
                key: data[key].astype(np.object_) if data[key].dtype.kind == "S" else data[key]
                for key in data.files
            }


def serve(repository: Path, log: Path, extra: list[str] | None = None) -> Iterator[Served]:
    if node_executable() is None:
        pytest.skip("node is not installed")
    flags = [
        f"--model-repository={repository / 'models'}",
        "--http-port=0",
        "--grpc-port=0",
        "--metrics-port=0",
        "--log-verbose=1",
        "--exit-on-error=false",  # the suites include a model that must fail to load
        # Stubs importing torch side by side on a loaded 2-core machine can outlast the 30 s default.
        "--backend-config=python,stub-timeout-seconds=300",
        *(extra or []),
    ]
    server = start_server(flags, log, startup_timeout=300.0)
    http = httpclient.InferenceServerClient(url=server.http_url, network_timeout=300.0, concurrency=8)
    grpc = grpcclient.InferenceServerClient(url=server.url("grpc"))
    try:
        yield Served(server, http, grpc, repository / "expected")
    finally:
        http.close()
        grpc.close()
        code = server.stop()
        assert code == 0, f"server exited with code {code} after SIGTERM; log:\n{server.log_tail()}"


def _datatype(array: npt.NDArray[Any]) -> str:
    if array.dtype.kind in ("O", "S"):
        return "BYTES"
    names = {
        np.dtype(np.float32): "FP32",
        np.dtype(np.float64): "FP64",
        np.dtype(np.int64): "INT64",
        np.dtype(np.int32): "INT32",
        np.dtype(np.bool_): "BOOL",
    }
    return names[array.dtype]


def request_count(expected: dict[str, npt.NDArray[Any]]) -> int:
    return len({key.split("_", 1)[0] for key in expected if key.startswith("in")})


def infer_all(served: Served, protocol: str, model: str) -> list[dict[str, npt.NDArray[Any]]]:
    """Sends every request of the model's expected set at once (async_infer, so the dynamic batcher can join
    them) and returns each response's outputs, in request order."""
    expected = served.expected(model)
    module = httpclient if protocol == "http" else grpcclient
    client = served.client(protocol)
    count = request_count(expected)
    names: list[list[str]] = []
    pending: list[Any] = []
    done: queue.Queue[tuple[int, Any, Any]] = queue.Queue()
    for i in range(count):
        inputs = []
        for key, value in expected.items():
            if key.startswith(f"in{i}_"):
                tensor = module.InferInput(key[len(f"in{i}_") :], list(value.shape), _datatype(value))
                tensor.set_data_from_numpy(value)
                inputs.append(tensor)
        names.append([key[len(f"out{i}_") :] for key in expected if key.startswith(f"out{i}_")])
        outputs = [module.InferRequestedOutput(n) for n in names[i]]
        if protocol == "http":
            pending.append(client.async_infer(model, inputs, outputs=outputs))
        else:
            client.async_infer(
                model,
                inputs,
                partial(lambda n, result, error: done.put((n, result, error)), i),
                outputs=outputs,
            )
    results: list[Any] = [None] * count
    if protocol == "http":
        results = [p.get_result() for p in pending]
    else:
        for _ in range(count):
            i, result, error = done.get(timeout=300)
            if error is not None:
                raise error
            results[i] = result
    return [{n: result.as_numpy(n) for n in names[i]} for i, result in enumerate(results)]


def assert_matches_framework(served: Served, model: str, answers: list[dict[str, npt.NDArray[Any]]]) -> None:
    """Every output of every request equals, element by element, what the framework computed."""
    expected = served.expected(model)
    assert len(answers) == request_count(expected)
    for i, outputs in enumerate(answers):
        for name, got in outputs.items():
            want = expected[f"out{i}_{name}"]
            assert got.dtype == want.dtype, f"{model} request {i} output {name}: {got.dtype} != {want.dtype}"
            assert got.shape == want.shape, f"{model} request {i} output {name}: {got.shape} != {want.shape}"
            if want.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{model} {i} {name}")
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{model} {i} {name}")


def counts(served: Served, model: str) -> tuple[int, int]:
    """(inference_count, execution_count) of the model's version 1, from the statistics extension."""
    stats = served.http.get_inference_statistics(model_name=model)["model_stats"][0]
    return int(stats["inference_count"]), int(stats["execution_count"])
