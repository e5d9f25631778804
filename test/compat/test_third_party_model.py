"""A third-party model served by a framework backend: Silero VAD, as the `silero-vad` PyPI package ships it
(`silero_vad/data/silero_vad_openvino_16k.onnx`, the file the package itself prepares for OpenVINO), in a
folder with `1/model.onnx` and a config of two lines (`backend: "openvino"`, `default_model_filename:
"model.onnx"`: inputs and outputs come from auto-complete). Streaming requests (each carrying the state
returned for the one before) go through the real tritonclient over HTTP and gRPC, and every answer is
compared element-wise with OpenVINO called directly on the same file (framework_models.py silero).

The wheel is fetched once with pip (`pip download silero-vad==6.2.3 --no-deps`, 11 MB, into
.cache/third-party/; its torch dependency is not installed: only the ONNX file is used). Needs the
openvino backend's venv; without it, or without the package index, the tests skip and say so (a missing
venv fails when NEREID_REQUIRE_BACKENDS names openvino).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Iterator

import pytest

from framework_backends import (
    PROTOCOLS,
    Served,
    assert_matches_framework,
    infer_all,
    make_models,
    require_venv,
    serve,
)
from nereid_server import REPO_ROOT

PACKAGE = "silero-vad==6.2.3"
WHEEL = "silero_vad-6.2.3-py3-none-any.whl"
MEMBER = "silero_vad/data/silero_vad_openvino_16k.onnx"


def silero_onnx() -> bytes:
    cache = REPO_ROOT / ".cache" / "third-party"
    wheel = cache / WHEEL
    if not wheel.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", PACKAGE, "--no-deps", "-d", str(cache), "-q"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0 or not wheel.is_file():
            pytest.skip(f"could not download {PACKAGE} from the package index: {done.stderr.strip()[-300:]}")
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(MEMBER)


@pytest.fixture(scope="module")
def silero_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    python = require_venv("openvino")
    out = tmp_path_factory.mktemp("silero")
    (out / "onnx").mkdir()
    (out / "onnx" / "model.onnx").write_bytes(silero_onnx())
    make_models("silero", python, out)
    yield from serve(out, out / "server.log")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_silero_vad_answers_equal_openvino(silero_served: Served, protocol: str) -> None:
    answers = infer_all(silero_served, protocol, "silero_vad")
    assert_matches_framework(silero_served, "silero_vad", answers)
    # One speech probability per chunk.
    probabilities = [float(a["output"].reshape(-1)[0]) for a in answers]
    assert all(0.0 <= p <= 1.0 for p in probabilities), probabilities


def test_silero_vad_config_comes_from_the_model(silero_served: Served) -> None:
    config = silero_served.http.get_model_config("silero_vad")
    assert config.get("max_batch_size", 0) == 0  # static dim 0 (1): no batching
    assert sorted((i["name"], i["dims"]) for i in config["input"]) == [
        ("input", [1, 576]),
        ("state", [2, 1, 128]),
    ]
    assert sorted((o["name"], o["dims"]) for o in config["output"]) == [
        ("output", [1, 1]),
        ("stateN", [2, 1, 128]),
    ]
