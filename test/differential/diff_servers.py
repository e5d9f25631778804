"""Starts the two servers the differential suite compares: the real Triton (.venv-triton/bin/tritonserver,
provisioned by scripts/setup-triton.sh) and Nereid (bin/nereid.js), on loopback only, with the same model
repository and the same flags. Logs go to files (a chatty server can never block on a full pipe).

Nereid binds port 0 and announces the port it got; Triton refuses port 0, so it gets ports picked free just
before it starts (and another set if one was taken in between).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from diff_wire import Reply, request

REPO_ROOT = Path(__file__).resolve().parents[2]
TRITON = Path(os.environ.get("NEREID_TRITON_VENV", REPO_ROOT / ".venv-triton")) / "bin" / "tritonserver"
NEREID = REPO_ROOT / "bin" / "nereid.js"

_HTTP_LINE = re.compile(r"Started HTTPService at \S*?:(\d+)")
_GRPC_LINE = re.compile(r"Started GRPCInferenceService at \S*?:(\d+)")
_BIND_FAILURE = re.compile(
    r"address already in use|failed to start|Socket '.*' already in use", re.IGNORECASE
)


class ServerStartError(RuntimeError):
    """A server exited or never announced its HTTP endpoint."""


@dataclass
class Server:
    name: str  # "triton" or "nereid"
    process: subprocess.Popen[bytes]
    log_path: Path
    http_port: int
    grpc_port: int

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM to the server's process group, wait, SIGKILL after `timeout`; the exit code."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return self.process.returncode


@dataclass
class Pair:
    triton: Server
    nereid: Server

    def send(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[Reply, Reply]:
        """The same request to Triton, then to Nereid."""
        return (
            request(self.triton.http_port, method, path, body, headers),
            request(self.nereid.http_port, method, path, body, headers),
        )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def triton_available() -> bool:
    return TRITON.exists() and os.access(TRITON, os.X_OK)


def node_executable() -> str | None:
    return shutil.which(os.environ.get("NODE", "node"))


def _spawn(args: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        # A process group of its own, so stop() reaches the Python backend's stub processes as well.
        return subprocess.Popen(
            args,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _wait_for_http(server: Server, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = _HTTP_LINE.search(server.log_text())
        if match:
            server.http_port = int(match.group(1))
            grpc = _GRPC_LINE.search(server.log_text())
            if grpc:
                server.grpc_port = int(grpc.group(1))
            return True
        if server.process.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def _start(name: str, args: list[str], log_path: Path, timeout: float) -> Server:
    server = Server(name, _spawn(args, log_path), log_path, 0, 0)
    if _wait_for_http(server, timeout):
        return server
    code = server.stop(timeout=10)
    raise ServerStartError(f"{name} did not start (exit code {code}): {' '.join(args)}\n{server.log_tail()}")


def start_triton(repository: Path | str, flags: list[str], log_dir: Path, timeout: float = 120.0) -> Server:
    """tritonserver on 127.0.0.1 with `flags`; metrics off (Nereid's metrics are compared elsewhere)."""
    last: ServerStartError | None = None
    for attempt in range(3):
        http_port, grpc_port = free_port(), free_port()
        args = [
            str(TRITON),
            f"--model-repository={repository}",
            "--http-address=127.0.0.1",
            f"--http-port={http_port}",
            "--grpc-address=127.0.0.1",
            f"--grpc-port={grpc_port}",
            "--allow-metrics=false",
            # Triton waits this long for in-flight work when stopped (default 30 s).
            "--exit-timeout-secs=5",
            # The Python backend names its shared-memory regions from this prefix; a unique one keeps two
            # servers (or two test runs) on one machine apart.
            f"--backend-config=python,shm-region-prefix-name=nereid_diff_{os.getpid()}_{attempt}_",
            *flags,
        ]
        try:
            return _start("triton", args, log_dir / f"triton-{attempt}.log", timeout)
        except ServerStartError as err:
            last = err
            if not _BIND_FAILURE.search(str(err)):
                raise
    assert last is not None
    raise last


def start_nereid(repository: Path | str, flags: list[str], log_dir: Path, timeout: float = 120.0) -> Server:
    node = node_executable()
    if node is None:
        raise ServerStartError("node is not on PATH")
    args = [
        node,
        str(NEREID),
        f"--model-repository={repository}",
        "--http-address=127.0.0.1",
        "--http-port=0",
        "--grpc-address=127.0.0.1",
        "--grpc-port=0",
        "--allow-metrics=false",
        # Triton 2.51 has no --allow-client-shm: clients may always register shared memory there. Nereid
        # follows the newer Triton, where it is off by default, so it is turned on to compare the same
        # behaviour (test_diff_shared_memory.py).
        "--allow-client-shm=true",
        *flags,
    ]
    return _start("nereid", args, log_dir / "nereid.log", timeout)


MODELS = Path(__file__).resolve().parent / "models"


def prepare_repository(destination: Path) -> Path:
    """A copy of models/ that both servers serve, completed with what git can't hold or mypy can't see:
    cfg_versions' folders 2 and 3 (copies of 1) and the ensemble's empty version folder."""
    repository = destination / "models"
    shutil.copytree(MODELS, repository, ignore=shutil.ignore_patterns("__pycache__", ".mypy_cache"))
    for version in ("2", "3"):
        shutil.copytree(repository / "cfg_versions" / "1", repository / "cfg_versions" / version)
    (repository / "ensemble_add_sub" / "1").mkdir(exist_ok=True)
    return repository
