"""Triton vs Nereid: the status and the error text of each bad request in diff_cases.CASES. Triton's answer
is checked against the table first (so the table can't drift from the real server), then Nereid's against
Triton's: the same status (or the one the table gives where Nereid differs on purpose), and the same text,
'[request id: <id>] ' prefix included (or, for a case whose wording differs on purpose, the substring the
table gives). Known Nereid bugs are expected failures that name where the bug lives."""

from __future__ import annotations

import json

import pytest
from diff_cases import CASES, Case
from diff_servers import Pair


def _params() -> list[object]:
    out: list[object] = []
    for case in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=case.nereid_bug)] if case.nereid_bug else []
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


def _send(pair: Pair, case: Case) -> tuple[str, str, int, int]:
    triton, nereid = pair.send(case.method, case.path, case.body or None, case.headers)
    assert triton.status == case.status, f"the table is out of date: Triton answered {triton}"
    assert case.triton_says in triton.error(), f"the table is out of date: Triton answered {triton}"
    return triton.error(), nereid.error(), triton.status, nereid.status


@pytest.mark.parametrize("case", _params())
def test_bad_request(pair: Pair, case: Case) -> None:
    triton_text, nereid_text, triton_status, nereid_status = _send(pair, case)
    if case.newer_status:
        # Nereid follows a newer Triton here (case.newer_because).
        assert (nereid_status, case.newer_says in nereid_text) == (case.newer_status, True), nereid_text
        return
    # Where Nereid answers another status on purpose, the table says which and why (case.status_differs).
    assert bool(case.nereid_status) == bool(case.status_differs), "a status difference needs its reason"
    expected_status = case.nereid_status or triton_status
    assert nereid_status == expected_status, f"Triton {triton_status} {triton_text!r}, Nereid {nereid_text!r}"
    if case.wording_differs:
        expected = [case.triton_says, *([case.nereid_says] if case.nereid_says else [])]
        assert any(e in nereid_text for e in expected), nereid_text
    else:
        assert nereid_text == triton_text


def test_request_id_prefix(pair: Pair) -> None:
    """A request-validation error names the request's own id (the table's cases have none)."""
    body = json.dumps(
        {
            "id": "r-42",
            "inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [4], "data": [1, 2, 3, 4]},
                {"name": "INPUT1", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]},
            ],
        }
    ).encode()
    triton, nereid = pair.send("POST", "/v2/models/add_sub/infer", body, {"Content-Type": "application/json"})
    assert triton.error().startswith("[request id: r-42] inference input 'INPUT0' data-type is 'INT32'")
    assert nereid.error() == triton.error()


def test_servers_alive_after_bad_requests(pair: Pair) -> None:
    for case in CASES:
        pair.send(case.method, case.path, case.body or None, case.headers)
    triton, nereid = pair.send("GET", "/v2/health/live")
    assert triton.status == nereid.status == 200
