"""The classification extension on the bundled DenseNet models: requesting `fc6_1` with class_count=N
returns N BYTES entries "<score>:<index>:<label>", which must agree with the raw scores of the same input
and with the label file."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import tritonclient.http as httpclient

from model_repo import labels, model_spec

RNG = np.random.default_rng(7)


def _image(batch: int | None) -> npt.NDArray[np.float32]:
    shape = (3, 224, 224) if batch is None else (batch, 3, 224, 224)
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def _infer(client: Any, model: str, image: npt.NDArray[np.float32], class_count: int) -> Any:
    tensor = httpclient.InferInput("data_0", list(image.shape), "FP32")
    tensor.set_data_from_numpy(image, binary_data=True)
    output = httpclient.InferRequestedOutput("fc6_1", binary_data=True, class_count=class_count)
    return client.infer(model, [tensor], outputs=[output])


def _parse(entry: object) -> tuple[float, int, str]:
    text = entry.decode() if isinstance(entry, bytes) else str(entry)
    score, index, label = text.split(":", 2)
    return float(score), int(index), label


def _check_top_k(entries: npt.NDArray[Any], scores: npt.NDArray[np.float32], names: tuple[str, ...]) -> None:
    k = len(entries)
    parsed = [_parse(e) for e in entries]
    want_indices = list(np.argsort(-scores, kind="stable")[:k])
    assert [p[1] for p in parsed] == want_indices
    for score, index, label in parsed:
        assert label == names[index]
        assert score == pytest.approx(float(scores[index]), rel=1e-4, abs=1e-5)
    assert [p[0] for p in parsed] == sorted((p[0] for p in parsed), reverse=True)


def test_labels_file_has_1000_classes() -> None:
    spec = model_spec("densenet_onnx")
    assert len(labels("densenet_onnx", spec.output("fc6_1").label_filename)) == 1000


def test_densenet_onnx_top3(client: Any) -> None:
    spec = model_spec("densenet_onnx")
    names = labels("densenet_onnx", spec.output("fc6_1").label_filename)
    image = _image(None)
    raw = _infer(client, "densenet_onnx", image, 0).as_numpy("fc6_1")
    assert raw.dtype == np.float32
    assert raw.shape == (1000,)
    assert np.isfinite(raw).all()

    result = _infer(client, "densenet_onnx", image, 3)
    top = result.as_numpy("fc6_1")
    assert top.shape == (3,)
    output = result.get_response()["outputs"][0]
    assert output["datatype"] == "BYTES"
    assert output["shape"] == [3]
    _check_top_k(top, raw, names)


def test_densenet_batched_top5_per_image(client: Any) -> None:
    spec = model_spec("densenet_batched")
    names = labels("densenet_batched", spec.output("fc6_1").label_filename)
    images = _image(2)
    raw = _infer(client, "densenet_batched", images, 0).as_numpy("fc6_1")
    assert raw.shape == (2, 1000)
    top = _infer(client, "densenet_batched", images, 5).as_numpy("fc6_1")
    assert top.shape == (2, 5)
    for i in range(2):
        _check_top_k(top[i], raw[i], names)


def test_batched_and_unbatched_densenet_agree(client: Any) -> None:
    image = _image(None)
    single = _infer(client, "densenet_onnx", image, 0).as_numpy("fc6_1")
    batched = _infer(client, "densenet_batched", image[np.newaxis], 0).as_numpy("fc6_1")
    np.testing.assert_allclose(batched[0], single, rtol=1e-4, atol=1e-5)
