"""Triton vs Nereid: a Python model whose answer breaks its own config (models/bad_outputs): an output as
another datatype or with another shape than the config's, an output the config does not declare, a
requested output left out. Triton's core checks only an output's name, after the Python backend has pruned
the names the request did not ask for, so each of these is answered 200 with what the model made; Nereid
answers the same by default (and logs a warning once; --strict-model-outputs=true fails such requests,
tested in test/integration/model-errors.test.ts)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from diff_servers import Pair

MODES = ["ok", "dtype", "shape", "undeclared", "only_undeclared", "missing"]


def _body(mode: str, outputs: list[str] | None) -> bytes:
    tensor = {"name": "MODE", "datatype": "BYTES", "shape": [1], "data": [mode]}
    request: dict[str, Any] = {"inputs": [tensor]}
    if outputs is not None:
        request["outputs"] = [{"name": n} for n in outputs]
    return json.dumps(request).encode()


def _answer(reply: Any) -> tuple[int, list[tuple[str, str, list[int], list[int]]]]:
    if reply.status != 200:
        return reply.status, []
    outputs = reply.json().get("outputs", [])
    return 200, sorted((o["name"], o["datatype"], o["shape"], o.get("data")) for o in outputs)


@pytest.mark.parametrize("requested", [None, ["OUT", "EXTRA"], ["OUT"]], ids=["all", "both", "out"])
@pytest.mark.parametrize("mode", MODES)
def test_model_breaks_its_config(pair: Pair, mode: str, requested: list[str] | None) -> None:
    triton, nereid = pair.send(
        "POST", "/v2/models/bad_outputs/infer", _body(mode, requested), {"Content-Type": "application/json"}
    )
    assert triton.status == 200, f"Triton answered {triton}"
    assert _answer(nereid) == _answer(triton), f"Triton {triton}, Nereid {nereid}"
