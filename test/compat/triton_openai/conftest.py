"""Their tests/conftest.py, harness only: the same fixtures (backend, model, model_repository, prompt,
messages, server, fastapi_client_class_scope), each served by a Nereid process (utils.py) instead of
Triton's python frontend and an in-process FastAPI app. The environment picks the model as theirs does
(TEST_BACKEND, TEST_MODEL, TEST_MODEL_REPOSITORY)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from tests.utils import OpenAIServer, UrlClient  # type: ignore[import-not-found]  # run.sh copies it there


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "openai: mark test to run with OpenAI server (subprocess)")
    config.addinivalue_line("markers", "fastapi: mark test to run with the FastAPI app")


@pytest.fixture(scope="session")
def tool_call_parser() -> str:
    return os.environ.get("TEST_TOOL_CALL_PARSER", "llama3")


@pytest.fixture(scope="session")
def backend() -> str:
    return os.environ["TEST_BACKEND"]


@pytest.fixture(scope="session")
def model() -> str:
    return os.environ["TEST_MODEL"]


@pytest.fixture(scope="session")
def model_repository() -> str:
    return os.environ["TEST_MODEL_REPOSITORY"]


@pytest.fixture(scope="session")
def tokenizer_model() -> str:
    return os.environ.get("TEST_TOKENIZER", "")


@pytest.fixture(scope="session")
def prompt() -> str:
    return "What is machine learning?"


@pytest.fixture(scope="session")
def messages(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


@pytest.fixture(scope="session")
def input(prompt: str) -> str:
    return prompt


@pytest.fixture(scope="session")
def _nereid(model_repository: str) -> Iterator[OpenAIServer]:
    with OpenAIServer(["--model-repository", model_repository]) as s:
        yield s


@pytest.fixture(scope="module")
def server(_nereid: OpenAIServer) -> OpenAIServer:
    return _nereid


@pytest.fixture(scope="class")
def fastapi_client_class_scope(_nereid: OpenAIServer) -> Any:
    return UrlClient(_nereid.url_root)
