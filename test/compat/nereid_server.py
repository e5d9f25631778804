"""Runs `node bin/nereid.js` as a child process for the compatibility suite.

The server is started on port 0 everywhere; the ports it actually bound are read from its startup log
(Triton's lines "Started HTTPService at <addr>:<port>", "Started GRPCInferenceService at ...",
"Started Metrics Service at ..."). The log goes to a file, not a pipe, so a chatty server can never block
on a full pipe while a test is busy.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_REPOSITORY = REPO_ROOT / "examples" / "model_repository"
ENTRY = REPO_ROOT / "bin" / "nereid.js"

_SERVICE_LINES = {
    "http": re.compile(r"Started HTTPService at \S*?:(\d+)\"?\s*$", re.MULTILINE),
    "grpc": re.compile(r"Started GRPCInferenceService at \S*?:(\d+)\"?\s*$", re.MULTILINE),
    "metrics": re.compile(r"Started Metrics Service at \S*?:(\d+)\"?\s*$", re.MULTILINE),
}


class ServerStartError(RuntimeError):
    """The server exited or never announced its HTTP endpoint."""


@dataclass
class NereidServer:
    """One running server process and what it announced."""

    args: list[str]
    log_path: Path
    process: subprocess.Popen[bytes]
    ports: dict[str, int] = field(default_factory=dict)

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def _scan(self) -> None:
        text = self.log_text()
        for service, pattern in _SERVICE_LINES.items():
            match = pattern.search(text)
            if match and service not in self.ports:
                self.ports[service] = int(match.group(1))

    def wait_for(self, service: str, timeout: float) -> int | None:
        """The port `service` announced, waiting up to `timeout` seconds; None if it never did."""
        deadline = time.monotonic() + timeout
        while True:
            self._scan()
            if service in self.ports:
                return self.ports[service]
            if self.process.poll() is not None or time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    @property
    def http_url(self) -> str:
        return f"localhost:{self.ports['http']}"

    def url(self, service: str, timeout: float = 10.0) -> str:
        """host:port of `service` ("http", "grpc" or "metrics"); raises if it was never announced."""
        port = self.wait_for(service, timeout)
        if port is None:
            raise ServerStartError(f"the server did not announce its {service} endpoint\n{self.log_tail()}")
        return f"localhost:{port}"

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, wait for a graceful exit, return the exit code (SIGKILL after `timeout`)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise ServerStartError(
                    f"server ignored SIGTERM for {timeout:.0f}s and was killed\n{self.log_tail()}"
                ) from None
        return self.process.returncode


def node_executable() -> str | None:
    return shutil.which(os.environ.get("NODE", "node"))


def start_server(
    extra_args: list[str], log_path: Path, startup_timeout: float = 120.0, fd_limit: int | None = None
) -> NereidServer:
    """Starts the server with `extra_args` and waits until its HTTP endpoint is announced. `fd_limit` caps
    the server's open file descriptors (RLIMIT_NOFILE), as a container's ulimit would."""
    node = node_executable()
    if node is None:
        raise ServerStartError("node is not on PATH")
    args = [node, str(ENTRY), *extra_args]
    log_path.parent.mkdir(parents=True, exist_ok=True)

    def limit_fds() -> None:
        if fd_limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

    with log_path.open("wb") as log:
        process = subprocess.Popen(
            args,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=limit_fds if fd_limit is not None else None,
        )
    server = NereidServer(args=args, log_path=log_path, process=process)
    if server.wait_for("http", startup_timeout) is None:
        code = process.poll()
        if code is None:
            process.kill()
            process.wait()
        state = f"exited with code {code}" if code is not None else f"was silent for {startup_timeout:.0f}s"
        raise ServerStartError(
            f"{' '.join(args)}\n{state} before announcing 'Started HTTPService'; log:\n{server.log_tail()}"
        )
    return server
