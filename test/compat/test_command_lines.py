"""Realistic tritonserver command lines start Nereid unchanged: the arguments Triton's Helm charts,
KServe's Triton runtime and Model Analyzer pass to `tritonserver`, kept with their sources in
test/fixtures/triton-command-lines.json, are given to `bin/nereid.js` as they are. Each must be accepted,
the server must start on a small repository, and each flag's effect is checked where it has one:

- ports (`--http-port`, `--grpc-port`, `--metrics-port`; `--allow-http`, `--allow-grpc`): the server
  listens there, with the right protocol. The values in the data are mapped to free ports (8000, 8080 ...
  may be taken on a shared machine), and a command line that gives no port gets free ones added;
- `--model-store` / `--model-repository`: the repository's models are served;
- `--model-control-mode`: none/poll load every model at start, explicit none until asked; poll refuses
  the load API as Triton does and picks up a model added to the repository (`--repository-poll-secs`);
- `--log-verbose` (`0`, `True`): the logging extension reports the level, and level 1 logs each request;
- `--strict-model-config=false`: auto-complete is on, so a model without config.pbtxt loads;
- a flag that changes nothing here (`--allow-gpu-metrics`): one start-up warning says why.

`--exit-timeout-secs` and `--metrics-interval-ms` have effects this test cannot see without timing (how
long shutdown may wait, how often gauges refresh); they are checked for being accepted, and the server
must still exit 0 on SIGTERM.
"""

from __future__ import annotations

import json
import shutil
import socket
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from nereid_server import MODEL_REPOSITORY, REPO_ROOT, NereidServer, node_executable, start_server

DATA = REPO_ROOT / "test" / "fixtures" / "triton-command-lines.json"
ENTRIES: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))["command_lines"]
PORT_FLAGS = {"http-port": "http", "grpc-port": "grpc", "metrics-port": "metrics"}
MODELS = ["simple", "simple_autocomplete"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _parse(args: list[str]) -> dict[str, str]:
    """`--flag=value` and `--flag value` (every flag in the data has a value) → {flag: value}."""
    flags: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        assert arg.startswith("--"), arg
        if "=" in arg:
            name, value = arg[2:].split("=", 1)
        else:
            name, value = arg[2:], args[i + 1]
            i += 1
        flags[name] = value
        i += 1
    return flags


def _command_line(entry: dict[str, Any], repository: Path) -> tuple[list[str], dict[str, int]]:
    """The entry's arguments with the repository substituted and every port mapped to a free one; the ports
    each service should listen on."""
    args = [a.replace("$MODEL_REPOSITORY", str(repository)) for a in entry["args"]]
    given = _parse(args)
    expected = {service: _free_port() for service in PORT_FLAGS.values()}
    mapping = {given[flag]: str(expected[service]) for flag, service in PORT_FLAGS.items() if flag in given}
    out: list[str] = []
    for i, arg in enumerate(args):
        name = arg[2:].split("=", 1)[0] if arg.startswith("--") else ""
        if name in PORT_FLAGS and "=" in arg:
            out.append(f"--{name}={mapping[arg.split('=', 1)[1]]}")
        elif i > 0 and args[i - 1][2:] in PORT_FLAGS:
            out.append(mapping[arg])
        else:
            out.append(arg)
    # Triton's defaults (8000-8002) may be taken on this machine: a command line that gives no port gets one.
    out += [f"--{flag}={expected[service]}" for flag, service in PORT_FLAGS.items() if flag not in given]
    return out, expected


def _repository(root: Path) -> Path:
    """`simple` (ONNX, with its config) and `simple_autocomplete` (the same model.onnx, no config.pbtxt)."""
    repo = root / "models"
    shutil.copytree(MODEL_REPOSITORY / "simple", repo / "simple")
    (repo / "simple_autocomplete" / "1").mkdir(parents=True)
    shutil.copy(MODEL_REPOSITORY / "simple" / "1" / "model.onnx", repo / "simple_autocomplete" / "1")
    return repo


def _eventually(predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def _ready(client: Any) -> set[str]:
    return {e["name"] for e in client.get_model_repository_index() if e.get("state") == "READY"}


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_command_line_starts_nereid(entry: dict[str, Any], tmp_path: Path) -> None:
    if node_executable() is None:
        pytest.skip("node is not installed")
    repo = _repository(tmp_path)
    args, ports = _command_line(entry, repo)
    flags = _parse(args)
    server = start_server(args, tmp_path / "server.log")
    try:
        _check(entry, server, flags, ports, repo)
    finally:
        code = server.stop()
    assert code == 0, f"exit code {code} after SIGTERM\n{server.log_tail()}"


def _check(
    entry: dict[str, Any], server: NereidServer, flags: dict[str, str], ports: dict[str, int], repo: Path
) -> None:
    log = server.log_tail
    # Every service listens on the port the command line gave it, and speaks its protocol there.
    for service in ("http", "grpc", "metrics"):
        assert server.wait_for(service, 30.0) == ports[service], f"{service}\n{log()}"
    http = httpclient.InferenceServerClient(f"localhost:{ports['http']}")
    grpc = grpcclient.InferenceServerClient(f"localhost:{ports['grpc']}")
    try:
        assert http.is_server_live()
        assert grpc.is_server_live()
        with urllib.request.urlopen(f"http://localhost:{ports['metrics']}/metrics", timeout=30) as r:
            assert r.status == 200
            assert b"nv_" in r.read()

        # The repository given with --model-store / --model-repository is the one served.
        names = {e["name"] for e in http.get_model_repository_index()}
        assert names == set(MODELS), names

        mode = flags.get("model-control-mode", "none")
        if mode == "explicit":
            assert _ready(http) == set(), "explicit mode loads nothing unasked"
            for m in MODELS:
                http.load_model(m)
        assert _eventually(lambda: _ready(http) == set(MODELS)), f"{_ready(http)}\n{log()}"
        # Auto-complete is on (--strict-model-config=false, or not given): the model without a config
        # loaded, with inputs and outputs from the ONNX file.
        assert flags.get("strict-model-config", "false").lower() == "false"
        config = http.get_model_config("simple_autocomplete")
        assert [i["name"] for i in config["input"]] == ["INPUT0", "INPUT1"]
        if mode == "poll":
            with pytest.raises(InferenceServerException, match="not allowed if polling is enabled"):
                http.load_model("simple")
            # Made beside the repository, then moved in whole, so no poll sees it half written.
            staged = repo.parent / "simple_added"
            shutil.copytree(repo / "simple", staged)
            text = (repo / "simple" / "config.pbtxt").read_text()
            (staged / "config.pbtxt").write_text(text.replace('name: "simple"', 'name: "simple_added"'))
            staged.rename(repo / "simple_added")
            assert _eventually(lambda: "simple_added" in _ready(http)), (
                f"poll mode (every {flags.get('repository-poll-secs', '15')} s) found no new model\n{log()}"
            )

        # --log-verbose: the level the logging extension reports; at 1 every HTTP request is logged.
        level = {"true": 1, "false": 0}.get(flags.get("log-verbose", "0").lower())
        level = int(flags.get("log-verbose", "0")) if level is None else level
        assert http.get_log_settings()["log_verbose_level"] == level
        http.is_server_ready()
        verbose_lines = "HTTP request: GET /v2/health/ready" in server.log_text()
        assert verbose_lines == (level >= 1), log()

        # Flags with no effect here are accepted, each with one start-up warning saying why.
        if "allow-gpu-metrics" in flags:
            assert server.log_text().count("--allow-gpu-metrics is accepted for compatibility") == 1, log()
        assert "error:" not in server.log_text(), log()
    finally:
        http.close()
        grpc.close()


def test_data_file_names_its_sources() -> None:
    """Every command line says where it comes from, down to the commit it was read at."""
    assert {e["id"] for e in ENTRIES} >= {"helm-aws", "kserve", "model-analyzer-profile"}
    for e in ENTRIES:
        assert e["source"], e["id"]
        assert e["tool"], e["id"]
        assert len(e["commit"]) == 40, e["id"]
        assert any("$MODEL_REPOSITORY" in a for a in e["args"]), e["id"]
