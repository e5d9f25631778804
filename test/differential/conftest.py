"""Fixtures of the differential suite: the real Triton and Nereid, started once per run on loopback with the
same copy of models/ and the same flags, and a `pair` that sends one request to both.

Skips the whole suite when Triton is not provisioned (bash scripts/setup-triton.sh), node is missing, or
Nereid is not built (npx tsc -p tsconfig.json). With NEREID_DIFF_REQUIRE_TRITON=1 (scripts/test.sh sets it
unless setup-triton skipped) a missing Triton is an error instead: a broken provisioning must not pass as
a skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tritonclient.grpc as grpcclient
from diff_servers import (
    NEREID,
    REPO_ROOT,
    TRITON,
    Pair,
    node_executable,
    prepare_repository,
    start_nereid,
    start_triton,
    triton_available,
)

# Explicit control so a model that fails to load (broken_init, invalid_config) neither stops Triton
# (exit-on-error) nor hides the others; --load-model=* loads everything at startup, like MODE_NONE would.
FLAGS = ["--model-control-mode=explicit", "--load-model=*", "--exit-on-error=false"]


@pytest.fixture(scope="session")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    if not triton_available():
        message = f"Triton is not provisioned ({TRITON} is missing): run `bash scripts/setup-triton.sh`"
        if os.environ.get("NEREID_DIFF_REQUIRE_TRITON") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    if node_executable() is None:
        pytest.skip("node is not installed")
    if not (REPO_ROOT / "dist" / "src" / "cli" / "main.js").exists() or not NEREID.exists():
        pytest.skip("Nereid is not built: run `npx tsc -p tsconfig.json`")
    work: Path = tmp_path_factory.mktemp("differential")
    repository = prepare_repository(work)
    triton = start_triton(repository, FLAGS, work / "logs")
    try:
        nereid = start_nereid(repository, FLAGS, work / "logs")
    except BaseException:
        triton.stop()
        raise
    try:
        yield Pair(triton, nereid)
    finally:
        nereid.stop()
        triton.stop()


@pytest.fixture(scope="module")
def clients(pair: Pair) -> Iterator[tuple[Any, Any]]:
    """A tritonclient gRPC client for each server of the shared pair: (Triton's, Nereid's)."""
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{pair.triton.grpc_port}")
    nereid = grpcclient.InferenceServerClient(f"127.0.0.1:{pair.nereid.grpc_port}")
    try:
        yield triton, nereid
    finally:
        triton.close()
        nereid.close()


def start_pair(work: Path, repository: Path, flags: list[str]) -> Iterator[Pair]:
    """Another pair, for a module whose flags differ from FLAGS (its own fixture drives this generator):
    skips and fails as `pair` does, stops both servers afterwards."""
    if not triton_available():
        message = f"Triton is not provisioned ({TRITON} is missing): run `bash scripts/setup-triton.sh`"
        if os.environ.get("NEREID_DIFF_REQUIRE_TRITON") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    if node_executable() is None:
        pytest.skip("node is not installed")
    if not (REPO_ROOT / "dist" / "src" / "cli" / "main.js").exists() or not NEREID.exists():
        pytest.skip("Nereid is not built: run `npx tsc -p tsconfig.json`")
    triton = start_triton(repository, flags, work / "logs")
    try:
        nereid = start_nereid(repository, flags, work / "logs")
    except BaseException:
        triton.stop()
        raise
    try:
        yield Pair(triton, nereid)
    finally:
        nereid.stop()
        triton.stop()
