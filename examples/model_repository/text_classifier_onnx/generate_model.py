"""Writes 1/model.onnx: a bag-of-words sentiment scorer over tokenizer_ts's vocabulary.

INPUT_IDS INT64 [batch, 16] -> LOGITS FP32 [batch, 2] = sum of the rows of a [37, 2] table picked by
each id (Gather, then ReduceSum over the sequence). Column 0 scores "negative", column 1 "positive";
padding and unknown words score nothing. Run from the repository root with the examples' Python
environment:  .venv/bin/python examples/model_repository/text_classifier_onnx/generate_model.py
"""

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Same order as tokenizer_ts/1/vocab.ts (id = position).
VOCABULARY = [
    "[PAD]",
    "[UNK]",
    *("the", "a", "an", "this", "that", "it", "is", "was", "and", "but", "i", "you", "very", "so"),
    *("movie", "film", "book", "food", "not"),
    *("good", "great", "love", "excellent", "fun", "wonderful", "best", "nice"),
    *("bad", "terrible", "hate", "boring", "awful", "worst", "poor", "dull"),
]
POSITIVE = {"good": 1, "great": 2, "love": 2, "excellent": 2, "fun": 1, "wonderful": 2, "best": 2, "nice": 1}
NEGATIVE = {"bad": 1, "terrible": 2, "hate": 2, "boring": 1, "awful": 2, "worst": 2, "poor": 1, "dull": 1}


def main() -> None:
    table = np.zeros((len(VOCABULARY), 2), dtype=np.float32)
    for i, word in enumerate(VOCABULARY):
        table[i, 0] = NEGATIVE.get(word, 0.0)
        table[i, 1] = POSITIVE.get(word, 0.0)
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "INPUT_IDS"], ["picked"], axis=0),
            helper.make_node("ReduceSum", ["picked", "axes"], ["LOGITS"], keepdims=0),
        ],
        "text_classifier",
        [helper.make_tensor_value_info("INPUT_IDS", TensorProto.INT64, ["batch", 16])],
        [helper.make_tensor_value_info("LOGITS", TensorProto.FLOAT, ["batch", 2])],
        initializer=[
            numpy_helper.from_array(table, "table"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "axes"),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="nereid-examples"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    out = Path(__file__).resolve().parent / "1" / "model.onnx"
    out.parent.mkdir(exist_ok=True)
    onnx.save(model, out)
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
