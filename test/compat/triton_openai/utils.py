"""Harness for running Triton's own OpenAI-frontend tests (server repo, python/openai/tests) against
Nereid: it replaces only their tests/utils.py, starting `node bin/nereid.js` instead of Triton's
python frontend. run.sh copies their test files next to this one; none of their assertions change.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import openai

REPO_ROOT = Path(os.environ["NEREID_ROOT"])
PORT = int(os.environ.get("NEREID_OPENAI_PORT", "9000"))


class OpenAIServer:
    """Their OpenAIServer's interface (url_for, get_client, get_async_client), over a Nereid process."""

    API_KEY = "EMPTY"

    def __init__(self, cli_args: list[str], *, env_dict: dict[str, str] | None = None) -> None:
        self.host = "localhost"
        self.port = PORT
        repo = cli_args[cli_args.index("--model-repository") + 1]
        args = [
            "node",
            str(REPO_ROOT / "bin" / "nereid.js"),
            f"--model-repository={repo}",
            f"--http-port={PORT}",
            "--grpc-port=0",
            "--metrics-port=0",
        ]
        self.proc = subprocess.Popen(args, cwd=REPO_ROOT, stdout=sys.stdout, stderr=sys.stderr)
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{self.url_root}/v2/health/ready") as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("Nereid did not become ready")
            time.sleep(0.5)

    def __enter__(self) -> OpenAIServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    @property
    def url_root(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url_for(self, *parts: str) -> str:
        return self.url_root + "/" + "/".join(parts)

    def get_client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url_for("v1"), api_key=self.API_KEY)

    def get_async_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=self.url_for("v1"), api_key=self.API_KEY)


class UrlClient:
    """Stands in for FastAPI's TestClient (their `client` fixture): the same get/post calls, over the
    network to a running Nereid."""

    def __init__(self, root: str) -> None:
        import requests

        self.root = root
        self.session = requests.Session()

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.session.get(self.root + path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.session.post(self.root + path, **kwargs)
