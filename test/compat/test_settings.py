"""The logging and trace-setting extensions through tritonclient.http and tritonclient.grpc: both protocols
read the same settings, an update through one is seen through the other, a log setting changes what the
server writes, a per-model trace setting overrides the global one until cleared, and bad values are
refused. Every test puts the settings back as it found them."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tritonclient.utils import InferenceServerException

LOG_KEYS = {"log_file", "log_info", "log_warning", "log_error", "log_verbose_level", "log_format"}
TRACE_KEYS = {"trace_file", "trace_level", "trace_rate", "trace_count", "log_frequency"}


def _grpc_log(grpc: Any) -> dict[str, Any]:
    """gRPC's LogSettingsResponse as plain values (each entry is a oneof of bool/uint32/string)."""
    out: dict[str, Any] = {}
    for key, value in grpc.get_log_settings().settings.items():
        out[key] = getattr(value, value.WhichOneof("parameter_choice"))
    return out


def _grpc_trace(grpc: Any, model: str | None = None) -> dict[str, Any]:
    settings = grpc.get_trace_settings(model_name=model).settings
    return {key: list(value.value) for key, value in settings.items()}


def _as_lists(http: dict[str, Any]) -> dict[str, list[str]]:
    return {k: v if isinstance(v, list) else [v] for k, v in http.items()}


@pytest.fixture
def restore_logs(client: Any) -> Iterator[None]:
    before = client.get_log_settings()
    yield
    client.update_log_settings({k: v for k, v in before.items() if k != "log_file"})
    assert client.get_log_settings() == before


@pytest.fixture
def restore_trace(client: Any) -> Iterator[None]:
    before = client.get_trace_settings()
    yield
    # trace_file is never sent: it cannot be changed over the network
    client.update_trace_settings(
        model_name="simple", settings={k: None for k in TRACE_KEYS if k != "trace_file"}
    )
    client.update_trace_settings(settings={k: v for k, v in before.items() if k != "trace_file"})
    assert client.get_trace_settings() == before


def test_log_settings_same_on_both_protocols(client: Any, grpc: Any) -> None:
    http = client.get_log_settings()
    assert set(http) >= LOG_KEYS
    assert http["log_format"] in ("default", "ISO8601")
    assert isinstance(http["log_verbose_level"], int)
    assert _grpc_log(grpc) == http
    assert grpc.get_log_settings(as_json=True)["settings"]["log_info"] == {"bool_param": http["log_info"]}


@pytest.mark.usefixtures("restore_logs")
def test_log_update_over_grpc_is_seen_over_http(client: Any, grpc: Any) -> None:
    answer = grpc.update_log_settings({"log_verbose_level": 2, "log_warning": False}, as_json=True)
    assert answer["settings"]["log_verbose_level"] == {"uint32_param": 2}
    assert answer["settings"]["log_warning"] == {"bool_param": False}
    http = client.get_log_settings()
    assert http["log_verbose_level"] == 2
    assert http["log_warning"] is False
    # HTTP POST answers the full settings, like Triton
    full = client.update_log_settings({"log_verbose_level": 0})
    assert set(full) >= LOG_KEYS
    assert full["log_verbose_level"] == 0
    assert _grpc_log(grpc)["log_verbose_level"] == 0


def _reload(client: Any, model: str) -> None:
    """Unload and load `model`: each step writes an INFO line (a load of a loaded, unchanged model is a
    no-op and writes nothing)."""
    client.unload_model(model)
    client.load_model(model)
    assert client.is_model_ready(model) is True


@pytest.mark.usefixtures("restore_logs")
def test_log_format_changes_the_server_log(client: Any, server: Any) -> None:
    model = "simple_int8"
    client.update_log_settings({"log_format": "ISO8601", "log_info": True})
    _reload(client, model)
    line = _wait_for_log_line(server, f"successfully loaded '{model}'")
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z I ", line), line

    client.update_log_settings({"log_format": "default"})
    _reload(client, model)
    line = _wait_for_log_line(server, f"successfully loaded '{model}'", after=line)
    assert re.match(r"^I\d{4} \d\d:\d\d:\d\d\.\d+ ", line), line


@pytest.mark.usefixtures("restore_logs")
def test_log_info_off_silences_info_lines(client: Any, server: Any) -> None:
    model = "simple_int8"
    before = server.log_text().count(f"successfully loaded '{model}'")
    client.update_log_settings({"log_info": False})
    _reload(client, model)
    client.update_log_settings({"log_info": True})
    _reload(client, model)
    _wait_for_log_line(server, f"successfully loaded '{model}'")
    # only the second reload (with log_info back on) wrote its line
    assert server.log_text().count(f"successfully loaded '{model}'") == before + 1


@pytest.mark.usefixtures("restore_logs")
def test_log_verbose_level_logs_requests(client: Any, server: Any) -> None:
    client.update_log_settings({"log_verbose_level": 1})
    client.get_model_metadata("simple_string")
    line = _wait_for_log_line(server, "/v2/models/simple_string")
    client.update_log_settings({"log_verbose_level": 0})
    client.get_model_metadata("simple_string")
    time.sleep(0.2)
    lines = [x for x in server.log_text().splitlines() if "/v2/models/simple_string" in x]
    assert lines[-1] == line, "a request was logged with log_verbose_level 0"


def test_log_settings_refuse_bad_values(client: Any, grpc: Any) -> None:
    with pytest.raises(InferenceServerException) as grpc_file:
        grpc.update_log_settings({"log_file": "/tmp/x.log"})
    assert grpc_file.value.status() == "StatusCode.UNIMPLEMENTED"
    with pytest.raises(InferenceServerException) as bad_format:
        client.update_log_settings({"log_format": "yaml"})
    assert bad_format.value.status() == "400"
    with pytest.raises(InferenceServerException) as grpc_format:
        grpc.update_log_settings({"log_format": "yaml"})
    assert grpc_format.value.status() == "StatusCode.INVALID_ARGUMENT"
    with pytest.raises(InferenceServerException) as negative:
        client.update_log_settings({"log_verbose_level": -1})
    assert negative.value.status() == "400"
    assert client.get_log_settings()["log_format"] == "default"


def test_trace_settings_same_on_both_protocols(client: Any, grpc: Any) -> None:
    http = client.get_trace_settings()
    assert set(http) >= TRACE_KEYS
    assert _grpc_trace(grpc) == _as_lists(http)
    assert _grpc_trace(grpc, "simple") == _as_lists(client.get_trace_settings(model_name="simple"))


@pytest.mark.usefixtures("restore_trace")
def test_model_trace_setting_overrides_global_until_cleared(client: Any, grpc: Any) -> None:
    global_before = client.get_trace_settings()
    answer = grpc.update_trace_settings(
        model_name="simple", settings={"trace_rate": "7", "log_frequency": "3"}
    )
    model = {key: list(value.value) for key, value in answer.settings.items()}
    assert model["trace_rate"] == ["7"]
    assert model["log_frequency"] == ["3"]
    http_model = client.get_trace_settings(model_name="simple")
    assert http_model["trace_rate"] == "7"
    assert http_model["log_frequency"] == "3"
    # other models and the global settings are untouched
    assert client.get_trace_settings() == global_before
    assert client.get_trace_settings(model_name="simple_int8") == global_before

    # a global change shows through every key the model did not set
    client.update_trace_settings(settings={"trace_count": "50", "trace_rate": "9"})
    http_model = client.get_trace_settings(model_name="simple")
    assert http_model["trace_count"] == "50"
    assert http_model["trace_rate"] == "7"

    # clearing the model's key falls back to the global value
    client.update_trace_settings(model_name="simple", settings={"trace_rate": None})
    assert client.get_trace_settings(model_name="simple")["trace_rate"] == "9"
    assert _grpc_trace(grpc, "simple")["trace_rate"] == ["9"]


def test_trace_file_cannot_be_set_over_the_network(client: Any, grpc: Any) -> None:
    """Naming the file would let a client make the server write wherever it may write (Triton refuses too)."""
    with pytest.raises(InferenceServerException) as over_grpc:
        grpc.update_trace_settings(settings={"trace_file": "/tmp/nereid-client-chosen.json"})
    assert over_grpc.value.status() == "StatusCode.UNIMPLEMENTED"
    assert "can not be updated through network protocol" in over_grpc.value.message()
    with pytest.raises(InferenceServerException) as over_http:
        client.update_trace_settings(model_name="simple", settings={"trace_file": None})
    assert over_http.value.status() == "501"
    # tracing cannot be switched on without the file the command line did not give
    with pytest.raises(InferenceServerException) as no_file:
        client.update_trace_settings(settings={"trace_level": ["TIMESTAMPS"]})
    assert no_file.value.status() == "400"
    assert "trace file name is not given" in no_file.value.message()
    assert client.get_trace_settings()["trace_file"] == ""
    assert client.get_trace_settings()["trace_level"] == ["OFF"]


def test_trace_settings_refuse_bad_values(client: Any, grpc: Any) -> None:
    with pytest.raises(InferenceServerException) as level:
        grpc.update_trace_settings(settings={"trace_level": ["LOUD"]})
    assert level.value.status() == "StatusCode.INVALID_ARGUMENT"
    with pytest.raises(InferenceServerException) as rate:
        client.update_trace_settings(settings={"trace_rate": "often"})
    assert rate.value.status() == "400"
    with pytest.raises(InferenceServerException) as unknown:
        grpc.get_trace_settings(model_name="no_such_model")
    assert unknown.value.status() == "StatusCode.NOT_FOUND"
    assert client.get_trace_settings()["trace_level"] == ["OFF"]


def _wait_for_log_line(server: Any, text: str, after: str | None = None, timeout: float = 10.0) -> str:
    """The last server log line containing `text` (and, with `after`, a different line than that)."""
    deadline = time.monotonic() + timeout
    while True:
        lines: list[str] = [line for line in server.log_text().splitlines() if text in line]
        if lines and lines[-1] != after:
            return lines[-1]
        if time.monotonic() >= deadline:
            raise AssertionError(f"no new log line with {text!r}\n{server.log_tail()}")
        time.sleep(0.05)
