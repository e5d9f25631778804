"""Builds the ONNX graphs of the bundled stateful (sequence-batched) example models.

Called by generate_models.py, which writes every model file; this module only knows these four graphs and
how to check them:

- simple_sequence: OUTPUT = (INPUT + START) * READY, Triton's ONNX ``simple_sequence`` (QA's
  gen_qa_sequence_models: "return 0 if not-ready and INPUT+START otherwise"), which is what Triton's
  ``simple_*_sequence_*_client`` examples check (1, 11, 7, ... for the inputs 0, 11, 7, ...).
- simple_dyna_sequence: OUTPUT = (INPUT + START + END * CORRID) * READY, what the same clients check with
  ``-d`` (the last request of a sequence adds the correlation id).
- simple_string_dyna_sequence: the clients' ``-d`` model for a string correlation id: a running sum kept in
  implicit state, plus the correlation id (a decimal string) on the last request.
- accumulator_state: OUTPUT = running sum of INPUT over the sequence, in implicit state
  (INPUT_STATE -> OUTPUT_STATE); the server zeroes INPUT_STATE on a sequence's first request.

All are batched along dim 0 (max_batch_size 8 in their configs) with INT32 [1] tensors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper

OPSET = 17
IR_VERSION = 8
PRODUCER = "nereid-examples"

Int32Array = npt.NDArray[np.int32]


def _value(name: str, elem_type: int) -> onnx.ValueInfoProto:
    # Every tensor here is [batch, 1].
    return helper.make_tensor_value_info(name, elem_type, ["batch", 1])


def _model(
    name: str,
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[str],
    outputs: Sequence[str],
    doc: str,
    types: dict[str, int] | None = None,
) -> onnx.ModelProto:
    kinds = types or {}
    graph = helper.make_graph(
        list(nodes),
        name,
        [_value(n, kinds.get(n, TensorProto.INT32)) for n in inputs],
        [_value(n, TensorProto.INT32) for n in outputs],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name=PRODUCER,
        producer_version="1",
        doc_string=doc,
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def simple_sequence_model() -> onnx.ModelProto:
    return _model(
        "simple_sequence",
        [
            helper.make_node("Add", ["INPUT", "START"], ["started"]),
            helper.make_node("Mul", ["started", "READY"], ["OUTPUT"]),
        ],
        ["INPUT", "START", "READY"],
        ["OUTPUT"],
        "OUTPUT = (INPUT + START) * READY",
    )


def simple_dyna_sequence_model() -> onnx.ModelProto:
    return _model(
        "simple_dyna_sequence",
        [
            # Correlation ids beyond int32 wrap, as a C cast would.
            helper.make_node("Cast", ["CORRID"], ["corrid"], to=TensorProto.INT32),
            helper.make_node("Mul", ["END", "corrid"], ["end_corrid"]),
            helper.make_node("Add", ["INPUT", "START"], ["started"]),
            helper.make_node("Add", ["started", "end_corrid"], ["sum"]),
            helper.make_node("Mul", ["sum", "READY"], ["OUTPUT"]),
        ],
        ["INPUT", "START", "END", "READY", "CORRID"],
        ["OUTPUT"],
        "OUTPUT = (INPUT + START + END * CORRID) * READY",
        {"CORRID": TensorProto.UINT64},
    )


def simple_string_dyna_sequence_model() -> onnx.ModelProto:
    return _model(
        "simple_string_dyna_sequence",
        [
            # The correlation id arrives as text; Cast parses it like strtol.
            helper.make_node("Cast", ["CORRID"], ["corrid"], to=TensorProto.INT32),
            helper.make_node("Mul", ["END", "corrid"], ["end_corrid"]),
            helper.make_node("Add", ["INPUT", "INPUT_STATE"], ["running"]),
            helper.make_node("Identity", ["running"], ["OUTPUT_STATE"]),
            helper.make_node("Add", ["running", "end_corrid"], ["sum"]),
            helper.make_node("Mul", ["sum", "READY"], ["OUTPUT"]),
        ],
        ["INPUT", "INPUT_STATE", "START", "END", "READY", "CORRID"],
        ["OUTPUT", "OUTPUT_STATE"],
        "OUTPUT = (INPUT + running sum + END * CORRID) * READY; OUTPUT_STATE = running sum",
        {"CORRID": TensorProto.STRING},
    )


def accumulator_state_model() -> onnx.ModelProto:
    return _model(
        "accumulator_state",
        [
            helper.make_node("Add", ["INPUT", "INPUT_STATE"], ["OUTPUT"]),
            helper.make_node("Identity", ["OUTPUT"], ["OUTPUT_STATE"]),
        ],
        ["INPUT", "INPUT_STATE"],
        ["OUTPUT", "OUTPUT_STATE"],
        "OUTPUT = OUTPUT_STATE = INPUT + INPUT_STATE (a running sum kept in implicit state)",
    )


# model folder name -> graph builder
SEQUENCE_MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "simple_sequence": simple_sequence_model,
    "simple_dyna_sequence": simple_dyna_sequence_model,
    "simple_string_dyna_sequence": simple_string_dyna_sequence_model,
    "accumulator_state": accumulator_state_model,
}


def _col(values: Sequence[int]) -> Int32Array:
    return np.array(values, dtype=np.int32).reshape(-1, 1)


def check_with_onnxruntime(repository: Path) -> None:
    """Runs each graph on a two-row batch, the way the sequence batcher feeds it, and compares."""
    import onnxruntime as ort  # type: ignore[import-untyped]

    def run(name: str, feeds: dict[str, npt.NDArray[np.generic]]) -> list[Int32Array]:
        session = ort.InferenceSession(
            str(repository / name / "1" / "model.onnx"), providers=["CPUExecutionProvider"]
        )
        return [np.asarray(o, dtype=np.int32) for o in session.run(None, feeds)]

    # Row 0: first request of a sequence; row 1: a padding row (READY 0).
    x, start, ready = _col([0, 5]), _col([1, 0]), _col([1, 0])
    (out,) = run("simple_sequence", {"INPUT": x, "START": start, "READY": ready})
    assert out.ravel().tolist() == [1, 0], out
    print("ok simple_sequence")

    end = _col([1, 0])
    corrid = np.array([[1000], [7]], dtype=np.uint64)
    feeds: dict[str, npt.NDArray[np.generic]] = {
        "INPUT": _col([1, 5]),
        "START": _col([0, 1]),
        "END": end,
        "READY": _col([1, 1]),
        "CORRID": corrid,
    }
    (out,) = run("simple_dyna_sequence", feeds)
    assert out.ravel().tolist() == [1001, 6], out
    print("ok simple_dyna_sequence")

    state = _col([9, 0])
    feeds = {
        "INPUT": _col([-1, 20]),
        "INPUT_STATE": state,
        "START": _col([0, 1]),
        "END": _col([1, 0]),
        "READY": _col([1, 1]),
        "CORRID": np.array([["1002"], ["0"]], dtype=object),
    }
    out, next_state = run("simple_string_dyna_sequence", feeds)
    assert out.ravel().tolist() == [1010, 20], out
    assert next_state.ravel().tolist() == [8, 20], next_state
    print("ok simple_string_dyna_sequence")

    total = _col([0, 0])
    for step in ([3, 10], [4, -1], [-2, 5]):
        out, total = run("accumulator_state", {"INPUT": _col(step), "INPUT_STATE": total})
        assert np.array_equal(out, total)
    assert total.ravel().tolist() == [5, 14], total
    print("ok accumulator_state")


def generate(root: Path, check: bool) -> None:
    """Writes examples/model_repository/<model>/1/model.onnx under root (the configs are hand-written)."""
    repository = root / "examples" / "model_repository"
    for name, build in SEQUENCE_MODELS.items():
        path = repository / name / "1" / "model.onnx"
        data = build().SerializeToString()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()[:12]
        print(f"{path.relative_to(root)}  {len(data):>9} bytes  sha256:{digest}")
    if check:
        check_with_onnxruntime(repository)
