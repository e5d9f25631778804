"""Triton vs Nereid: HEAD. Triton's HTTP server routes HEAD like any verb a route does not take: 405 on every
route it has (health, readiness, metadata, config, statistics, settings, repository), 404 on a path it does
not know. Nereid answers the same statuses, and its own GET routes (the dashboard) as Triton answers HEAD on
its GET routes."""

from __future__ import annotations

import socket

import pytest
from diff_servers import Pair
from diff_wire import request

ROUTES = [
    "/v2/health/live",
    "/v2/health/ready",
    "/v2",
    "/v2/models/add_sub",
    "/v2/models/add_sub/versions/1",
    "/v2/models/add_sub/ready",
    "/v2/models/add_sub/config",
    "/v2/models/add_sub/stats",
    "/v2/models/stats",
    "/v2/models/nope/ready",
    "/v2/models/add_sub/infer",
    "/v2/repository/index",
    "/v2/logging",
    "/v2/trace/setting",
    "/v2/systemsharedmemory/status",
    "/v2/nope",
    "/nope",
]


@pytest.mark.parametrize("path", ROUTES)
def test_head_status_is_tritons(pair: Pair, path: str) -> None:
    triton, nereid = pair.send("HEAD", path)
    assert nereid.status == triton.status, f"HEAD {path}: Triton {triton.status}, Nereid {nereid.status}"


def _raw_head(port: int, path: str) -> bytes:
    """HEAD on a raw connection, every byte the server sends until it goes quiet or closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"HEAD {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        s.settimeout(2)
        try:
            while chunk := s.recv(4096):
                data += chunk
        except TimeoutError:
            pass
        return data


@pytest.mark.parametrize("path", ["/v2/health/live", "/v2/health/ready", "/v2"])
def test_head_answer_has_no_body_after_the_headers(pair: Pair, path: str) -> None:
    # (Triton writes its error body after a HEAD's headers, which HTTP forbids; Nereid does not copy that.)
    data = _raw_head(pair.nereid.http_port, path)
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 405"), data
    assert rest == b"", data


@pytest.mark.parametrize("path", ["/dashboard", "/dashboard/", "/dashboard/main.js", "/dashboard/api/server"])
def test_head_on_the_dashboard_answers_as_triton_answers_head_on_a_get_route(pair: Pair, path: str) -> None:
    triton_get_route = request(pair.triton.http_port, "HEAD", "/v2/health/live")
    nereid = request(pair.nereid.http_port, "HEAD", path)
    get = request(pair.nereid.http_port, "GET", path)
    assert get.status in (200, 301, 302, 308), f"GET {path} on Nereid: {get}"
    assert nereid.status == triton_get_route.status == 405, f"HEAD {path}: Nereid {nereid.status}"
