"""Triton vs Nereid: server metadata, health, readiness, the repository index and model metadata, over HTTP
with the same model repository."""

from __future__ import annotations

import json
from typing import Any

import pytest
from diff_servers import Pair
from diff_wire import differences, relative_to_model_folder

# Models both servers load (the rest of models/ fails to load on purpose).
LOADED = [
    "add_sub",
    "add_sub_batched",
    "identity_bytes",
    "cfg_batching",
    "cfg_instances",
    "cfg_io",
    "cfg_sequence",
    "cfg_versions",
    "ensemble_add_sub",
]


def test_server_metadata_has_triton_shape(pair: Pair) -> None:
    triton, nereid = pair.send("GET", "/v2")
    assert (triton.status, nereid.status) == (200, 200)
    t, n = triton.json(), nereid.json()
    assert sorted(t) == sorted(n) == ["extensions", "name", "version"]
    # The version is each server's own (Triton 2.51.0, Nereid its package version).
    assert isinstance(n["version"], str)
    assert all(isinstance(e, str) for e in n["extensions"])
    assert triton.headers["content-type"] == nereid.headers["content-type"] == "application/json"


def test_server_name_is_the_id_with_tritons_default(pair: Pair) -> None:
    """Both report --id, default "triton": what Triton's simple_http_health_metadata.py checks
    (`if metadata["name"] != "triton": sys.exit(1)`). Nereid says what it is in a Server header, which
    Triton does not send."""
    triton, nereid = pair.send("GET", "/v2")
    assert nereid.json()["name"] == triton.json()["name"] == "triton"
    assert "server" not in triton.headers
    assert nereid.headers["server"].startswith("nereid/")


def test_server_claims_no_extension_triton_lacks(pair: Pair) -> None:
    triton, nereid = pair.send("GET", "/v2")
    assert set(nereid.json()["extensions"]) <= set(triton.json()["extensions"])


# Every extension Triton offers, Nereid offers too (trace since docs/tracing.md; cuda_shared_memory as
# Triton offers it on a machine without a GPU: test_diff_shared_memory.py).
def test_server_lists_the_extensions_it_implements(pair: Pair) -> None:
    triton, nereid = pair.send("GET", "/v2")
    missing = set(triton.json()["extensions"]) - set(nereid.json()["extensions"])
    assert missing == set()


@pytest.mark.parametrize(
    "path",
    [
        "/v2/health/live",
        "/v2/health/ready",  # 400 on both: two models failed to load and readiness is strict
        "/v2/models/add_sub/ready",
        "/v2/models/add_sub/versions/1/ready",
        "/v2/models/cfg_versions/versions/2/ready",  # on disk, not in the version policy
        "/v2/models/cfg_versions/versions/3/ready",
        "/v2/models/broken_init/ready",
        "/v2/models/nope/ready",
        "/v2/models/ensemble_add_sub/ready",
    ],
)
def test_health_and_readiness_codes(pair: Pair, path: str) -> None:
    triton, nereid = pair.send("GET", path)
    assert nereid.status == triton.status, f"{path}: Triton {triton}, Nereid {nereid}"
    assert nereid.body == triton.body


def test_strict_readiness_counts_failed_models(pair: Pair) -> None:
    triton, nereid = pair.send("GET", "/v2/health/ready")
    assert triton.status == nereid.status == 400


def _index(reply_body: Any) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["name"], e.get("version", "")): e for e in reply_body}


def test_repository_index_same_models_versions_and_states(pair: Pair) -> None:
    triton, nereid = pair.send("POST", "/v2/repository/index", b"{}")
    assert (triton.status, nereid.status) == (200, 200)
    t, n = _index(triton.json()), _index(nereid.json())
    loaded_t = {k: e["state"] for k, e in t.items() if e.get("state") == "READY"}
    loaded_n = {k: e["state"] for k, e in n.items() if e.get("state") == "READY"}
    assert loaded_n == loaded_t
    assert {name for name, _ in t} == {name for name, _ in n}


def test_repository_index_ready_filter(pair: Pair) -> None:
    triton, nereid = pair.send("POST", "/v2/repository/index", json.dumps({"ready": True}).encode())
    names_t = sorted((e["name"], e["version"]) for e in triton.json())
    names_n = sorted((e["name"], e["version"]) for e in nereid.json())
    assert names_n == names_t


def test_repository_index_entries_are_byte_identical_for_ready_models(pair: Pair) -> None:
    """Triton writes only the fields that are set ('reason' only when it is not empty)."""
    triton, nereid = pair.send("POST", "/v2/repository/index", b"{}")
    t, n = _index(triton.json()), _index(nereid.json())
    for key, entry in t.items():
        if entry.get("state") == "READY":
            assert n[key] == entry


def test_repository_index_reason_of_a_model_that_failed_to_load(pair: Pair) -> None:
    triton, nereid = pair.send("POST", "/v2/repository/index", b"{}")
    t = _index(triton.json())[("broken_init", "1")]
    n = _index(nereid.json())[("broken_init", "1")]
    assert t["state"] == n["state"] == "UNAVAILABLE"
    # Both: "Internal: TritonModelException: broken_init refuses to load\n\nAt:\n  <file>(10): initialize\n",
    # the traceback's final newline included. Intended difference (docs/security.md): Triton names the file
    # with its absolute path, Nereid relative to the model folder (`1/broken_init.py`), so load errors never
    # tell a client where the server keeps its files.
    assert n["reason"] == relative_to_model_folder(t["reason"], "broken_init")


def test_repository_index_of_a_config_refused_at_poll(pair: Pair) -> None:
    """Intended difference (docs/differential-testing.md): Triton refuses a config that fails validation
    when it polls the repository, so its index shows the bare name, requests say the model is not found
    and only its log says why. Nereid validates the config when it loads the model (after auto-complete),
    so the failure is version 1's: the index shows it UNAVAILABLE with the reason, which a client can read,
    and requests say the model has no available versions (404 on both)."""
    triton, nereid = pair.send("POST", "/v2/repository/index", b"{}")
    t = [e for e in triton.json() if e["name"] == "invalid_config"]
    n = [e for e in nereid.json() if e["name"] == "invalid_config"]
    assert t == [{"name": "invalid_config"}]
    reason = "Only one priority level is allowed when 'preserve_ordering' is true for invalid_config"
    assert n == [
        {
            "name": "invalid_config",
            "version": "1",
            "state": "UNAVAILABLE",
            "reason": f"Invalid argument: {reason}",
        }
    ]
    triton, nereid = pair.send("GET", "/v2/models/invalid_config")
    assert (triton.status, triton.error()) == (
        404,
        "Request for unknown model: 'invalid_config' is not found",
    )
    assert (nereid.status, nereid.error()) == (
        404,
        "Request for unknown model: 'invalid_config' has no available versions",
    )


def test_config_refused_at_poll_gives_the_validation_message(pair: Pair) -> None:
    """The message itself is the same on both (Triton logs it; Nereid puts it in the index reason)."""
    _, nereid = pair.send("POST", "/v2/repository/index", b"{}")
    entry = next(e for e in nereid.json() if e["name"] == "invalid_config")
    expected = "Only one priority level is allowed when 'preserve_ordering' is true for invalid_config"
    assert expected in entry.get("reason", "")
    assert expected in pair.triton.log_text()


@pytest.mark.parametrize("model", LOADED)
def test_model_metadata(pair: Pair, model: str) -> None:
    triton, nereid = pair.send("GET", f"/v2/models/{model}")
    assert (triton.status, nereid.status) == (200, 200)
    assert differences(triton.json(), nereid.json()) == []


@pytest.mark.parametrize(
    "path",
    [
        "/v2/models/nope",
        "/v2/models/add_sub/versions/7",
        "/v2/models/cfg_versions/versions/2",
        "/v2/models/broken_init",
        "/v2/models/nope/config",
        "/v2/models/broken_init/config",
    ],
)
def test_metadata_errors(pair: Pair, path: str) -> None:
    triton, nereid = pair.send("GET", path)
    assert nereid.status == triton.status
    assert nereid.error() == triton.error()


def test_live_after_every_bad_request(pair: Pair) -> None:
    """Run last in this module by name order; the error suite runs too, and the servers must be alive."""
    triton, nereid = pair.send("GET", "/v2/health/live")
    assert triton.status == nereid.status == 200
