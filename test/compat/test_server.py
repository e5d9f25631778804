"""Server-level endpoints through tritonclient.http: health, server metadata, repository index."""

from __future__ import annotations

from typing import Any

from model_repo import BUNDLED_MODELS

# Extensions a Triton client relies on for the features this suite exercises.
REQUIRED_EXTENSIONS = {
    "binary_tensor_data",
    "classification",
    "model_configuration",
    "model_repository",
    "statistics",
}


def test_server_is_live_and_ready(client: Any) -> None:
    assert client.is_server_live() is True
    assert client.is_server_ready() is True


def test_server_metadata(client: Any, package_version: str) -> None:
    metadata = client.get_server_metadata()
    assert isinstance(metadata["name"], str)
    assert metadata["name"]
    assert metadata["version"] == package_version
    extensions = metadata["extensions"]
    assert isinstance(extensions, list)
    assert all(isinstance(e, str) for e in extensions)
    missing = REQUIRED_EXTENSIONS - set(extensions)
    assert not missing, f"server metadata does not advertise {sorted(missing)}"


def test_repository_index_lists_every_bundled_model_ready(client: Any) -> None:
    index = client.get_model_repository_index()
    assert isinstance(index, list)
    by_name = {entry["name"]: entry for entry in index}
    for model in BUNDLED_MODELS:
        assert model in by_name, f"{model} missing from the repository index"
        assert by_name[model]["state"] == "READY", by_name[model]
        assert by_name[model]["version"] == "1", by_name[model]


def test_every_bundled_model_is_ready(client: Any) -> None:
    for model in BUNDLED_MODELS:
        assert client.is_model_ready(model) is True, model
        assert client.is_model_ready(model, model_version="1") is True, model
    assert client.is_model_ready("no_such_model") is False
