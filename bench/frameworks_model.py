"""Run by a framework backend's venv interpreter for bench/frameworks.py: makes the bench's MLP with the
framework itself (4 layers of WIDTH x WIDTH, FP32, relu) in OUT, then times the framework called directly
on it with THREADS threads, back to back for SECONDS at batch 1 and 8, and prints {batch: rows/s} and
{cpu_us_<batch>: this process's CPU µs per row} as JSON.

    <venv>/bin/python bench/frameworks_model.py pytorch|openvino|tensorflow OUT SECONDS THREADS WIDTH
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

LAYERS = 4


def torch_model(out: str, weights: list[npt.NDArray[np.float32]], threads: int) -> Callable[[Any], Any]:
    import torch

    warnings.simplefilter("ignore")
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)

    class Mlp(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.ParameterList([torch.nn.Parameter(torch.from_numpy(w)) for w in weights])

        def forward(self, x: Any) -> Any:
            for w in self.w:
                x = torch.relu(x @ w)
            return x

    width = weights[0].shape[0]
    torch.jit.trace(Mlp().eval(), (torch.zeros(2, width),)).save(out + "/model.pt")
    module = torch.jit.load(out + "/model.pt")

    def run(x: Any) -> Any:
        with torch.inference_mode():
            return module(torch.from_numpy(x)).numpy()

    return run


def openvino_model(out: str, weights: list[npt.NDArray[np.float32]], threads: int) -> Callable[[Any], Any]:
    import openvino
    from openvino import opset13 as ops

    param = ops.parameter([-1, weights[0].shape[0]], np.float32, name="x")
    node = param
    for w in weights:
        node = ops.relu(ops.matmul(node, ops.constant(w), False, False))
    node.output(0).get_tensor().set_names({"y"})
    openvino.save_model(openvino.Model([node], [param], "mlp"), out + "/model.xml")
    core = openvino.Core()
    model = core.read_model(out + "/model.xml")
    request = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads}).create_infer_request()

    def run(x: Any) -> Any:
        return request.infer({"x": x})["y"]

    return run


def tensorflow_model(out: str, weights: list[npt.NDArray[np.float32]], threads: int) -> Callable[[Any], Any]:
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    width = weights[0].shape[0]

    class Mlp(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.w = [tf.Variable(w) for w in weights]

        @tf.function(input_signature=[tf.TensorSpec([None, width], tf.float32, name="x")])  # type: ignore[untyped-decorator]
        def serve(self, x: Any) -> dict[str, Any]:
            for w in self.w:
                x = tf.nn.relu(tf.matmul(x, w))
            return {"y": x}

    mlp = Mlp()
    tf.saved_model.save(mlp, out + "/model.savedmodel", signatures={"serving_default": mlp.serve})
    function = tf.saved_model.load(out + "/model.savedmodel").signatures["serving_default"]

    def run(x: Any) -> Any:
        return function(x=tf.convert_to_tensor(x))["y"].numpy()

    return run


MAKERS = {"pytorch": torch_model, "openvino": openvino_model, "tensorflow": tensorflow_model}


def main(argv: list[str]) -> int:
    kind, out, seconds, threads, width = argv[1], argv[2], float(argv[3]), int(argv[4]), int(argv[5])
    rng = np.random.default_rng(0)
    weights = [
        (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32) for _ in range(LAYERS)
    ]
    run = MAKERS[kind](out, weights, threads)
    result: dict[str, float] = {}
    for batch in (1, 8):
        x = rng.standard_normal((batch, width)).astype(np.float32)
        for _ in range(20):
            run(x)
        n, start, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds:
            run(x)
            n += 1
        result[str(batch)] = n * batch / (time.perf_counter() - start)
        # CPU seconds of this process (every thread: the framework's pools too) per row, in µs.
        result[f"cpu_us_{batch}"] = (time.process_time() - cpu) / (n * batch) * 1e6
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
