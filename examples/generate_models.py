"""Generates every ONNX model Nereid ships or tests with.

Writes the test fixtures (test/fixtures/models/) and the bundled example repository's model files
(examples/model_repository/*/1/model.onnx plus the densenet label files). The config.pbtxt files are
hand-written and are not touched. Everything is deterministic: fixed seeds, fixed op order, so running the
script twice yields byte-identical files and `git diff` after a regeneration shows only real changes.

Usage: python examples/generate_models.py [--check]
  --check  also load and run every generated model with onnxruntime (python) and compare with numpy.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

import sequence_models

# Opset 17 came with IR version 8 (onnx 1.12); pinning both, rather than taking the installed onnx's newest
# IR, keeps the files loadable by older onnxruntime builds as well as onnxruntime-node 1.30.
OPSET = 17
IR_VERSION = 8
PRODUCER = "nereid-examples"

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "test" / "fixtures" / "models"
REPOSITORY = ROOT / "examples" / "model_repository"

Dim = int | str


@dataclass(frozen=True)
class TritonType:
    """A Triton datatype and the ONNX element type that carries it."""

    name: str
    onnx_type: int
    numpy_type: str


# Every Triton datatype; BYTES travels as ONNX string, BF16 as ONNX bfloat16.
TRITON_TYPES: tuple[TritonType, ...] = (
    TritonType("BOOL", TensorProto.BOOL, "bool"),
    TritonType("UINT8", TensorProto.UINT8, "uint8"),
    TritonType("UINT16", TensorProto.UINT16, "uint16"),
    TritonType("UINT32", TensorProto.UINT32, "uint32"),
    TritonType("UINT64", TensorProto.UINT64, "uint64"),
    TritonType("INT8", TensorProto.INT8, "int8"),
    TritonType("INT16", TensorProto.INT16, "int16"),
    TritonType("INT32", TensorProto.INT32, "int32"),
    TritonType("INT64", TensorProto.INT64, "int64"),
    TritonType("FP16", TensorProto.FLOAT16, "float16"),
    TritonType("FP32", TensorProto.FLOAT, "float32"),
    TritonType("FP64", TensorProto.DOUBLE, "float64"),
    TritonType("BYTES", TensorProto.STRING, "object"),
    TritonType("BF16", TensorProto.BFLOAT16, "bfloat16"),
)

# Tuned on a 2-core AMD EPYC (Zen 5) so one call takes about 1.5 s with one intra-op thread.
SLOW_MATRIX = 512
SLOW_ITERATIONS = 1500

# The stand-in for densenet: a small ResNet-style network with random weights. Depths are tuned so that bare
# onnxruntime-node runs roughly 100-130 images/s on 2 cores of an AVX-512 AMD EPYC (Zen 5) - about
# 2 GMAC per image - while the file stays near 1 MB: most compute runs at 112x112 with 32 channels, where
# a 3x3 conv costs 116 MMAC for only 37 KB of weights.
DENSENET_STAGES: tuple[tuple[int, int], ...] = ((32, 8), (48, 2))  # (channels, residual blocks) per stage
DENSENET_CLASSES = 1000
DENSENET_SEED = 20240601
DENSENET_CALIBRATION_IMAGES = 32
DENSENET_LOGIT_SCALE = 3.0


def make_model(graph: onnx.GraphProto, doc: str) -> onnx.ModelProto:
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


def value(name: str, elem_type: int, shape: Sequence[Dim]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, list(shape))


def initializer(name: str, array: npt.NDArray[np.generic]) -> onnx.TensorProto:
    return numpy_helper.from_array(array, name=name)


# ---------------------------------------------------------------------------------------------------------
# Small models: identity, add/sub, string arithmetic, slow.


def identity_model(triton_type: TritonType, shape: Sequence[Dim]) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])],
        f"identity_{triton_type.name.lower()}",
        [value("INPUT0", triton_type.onnx_type, shape)],
        [value("OUTPUT0", triton_type.onnx_type, shape)],
    )
    return make_model(graph, f"OUTPUT0 = INPUT0 ({triton_type.name}).")


def add_sub_model(name: str, elem_type: int, width: int) -> onnx.ModelProto:
    shape: list[Dim] = ["batch", width]
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
            helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"]),
        ],
        name,
        [value("INPUT0", elem_type, shape), value("INPUT1", elem_type, shape)],
        [value("OUTPUT0", elem_type, shape), value("OUTPUT1", elem_type, shape)],
    )
    return make_model(graph, "OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1.")


def simple_string_model() -> onnx.ModelProto:
    # Strings are parsed as int32 by Cast (ORT's CPU Cast parses decimal text); results are printed back.
    shape: list[Dim] = ["batch", 16]
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["INPUT0"], ["a"], to=TensorProto.INT32),
            helper.make_node("Cast", ["INPUT1"], ["b"], to=TensorProto.INT32),
            helper.make_node("Add", ["a", "b"], ["sum"]),
            helper.make_node("Sub", ["a", "b"], ["difference"]),
            helper.make_node("Cast", ["sum"], ["OUTPUT0"], to=TensorProto.STRING),
            helper.make_node("Cast", ["difference"], ["OUTPUT1"], to=TensorProto.STRING),
        ],
        "simple_string",
        [value("INPUT0", TensorProto.STRING, shape), value("INPUT1", TensorProto.STRING, shape)],
        [value("OUTPUT0", TensorProto.STRING, shape), value("OUTPUT1", TensorProto.STRING, shape)],
    )
    return make_model(
        graph, "Decimal strings in; OUTPUT0 = str(int(a) + int(b)), OUTPUT1 = str(int(a) - int(b))."
    )


def slow_model() -> onnx.ModelProto:
    """[1,16] -> [1,16] through SLOW_ITERATIONS dense 512x512 MatMuls, without storing a big weight.

    The weight matrix is computed in-graph (sin of a ramp) so the file stays under 1 KB; the loop
    state is seeded from INPUT0 so the work cannot be constant-folded away.
    """
    d = SLOW_MATRIX
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("MatMul", ["state_in", "weight"], ["product"]),
            helper.make_node("Tanh", ["product"], ["state_out"]),
        ],
        "slow_body",
        [
            value("iteration", TensorProto.INT64, []),
            value("cond_in", TensorProto.BOOL, []),
            value("state_in", TensorProto.FLOAT, [d, d]),
        ],
        [value("cond_out", TensorProto.BOOL, []), value("state_out", TensorProto.FLOAT, [d, d])],
    )
    nodes = [
        # An integer Range has exactly d*d elements (a float one could round to d*d +- 1).
        helper.make_node("Range", ["ramp_start", "ramp_limit", "ramp_delta"], ["ramp_int"]),
        helper.make_node("Cast", ["ramp_int"], ["ramp_float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["ramp_float", "ramp_step"], ["ramp"]),
        helper.make_node("Sin", ["ramp"], ["waves"]),
        helper.make_node("Mul", ["waves", "weight_scale"], ["scaled"]),
        helper.make_node("Reshape", ["scaled", "weight_shape"], ["weight"]),
        helper.make_node("Tile", ["INPUT0", "tile_repeats"], ["state0"]),
        helper.make_node("Loop", ["iterations", "", "state0"], ["state_final"], body=body),
        helper.make_node("Slice", ["state_final", "slice_starts", "slice_ends"], ["OUTPUT0"]),
    ]
    inits = [
        initializer("ramp_start", np.array(0, dtype=np.int64)),
        initializer("ramp_limit", np.array(d * d, dtype=np.int64)),
        initializer("ramp_delta", np.array(1, dtype=np.int64)),
        initializer("ramp_step", np.array(0.37, dtype=np.float32)),
        initializer("weight_scale", np.array(1.0 / np.sqrt(d), dtype=np.float32)),
        initializer("weight_shape", np.array([d, d], dtype=np.int64)),
        initializer("tile_repeats", np.array([d, d // 16], dtype=np.int64)),
        initializer("iterations", np.array(SLOW_ITERATIONS, dtype=np.int64)),
        initializer("slice_starts", np.array([0, 0], dtype=np.int64)),
        initializer("slice_ends", np.array([1, 16], dtype=np.int64)),
    ]
    graph = helper.make_graph(
        nodes,
        "slow_fp32",
        [value("INPUT0", TensorProto.FLOAT, [1, 16])],
        [value("OUTPUT0", TensorProto.FLOAT, [1, 16])],
        initializer=inits,
    )
    return make_model(
        graph, f"Deliberately slow: {SLOW_ITERATIONS} MatMuls of {d}x{d}; about 1.5 s on one core."
    )


# ---------------------------------------------------------------------------------------------------------
# The densenet stand-in.


Float32Array = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Conv:
    """A 3x3 (or 1x1) convolution with "same" padding, followed by ReLU unless it ends a residual branch."""

    name: str
    weight: Float32Array  # [out, in, k, k]
    bias: Float32Array  # [out]
    stride: int


@dataclass(frozen=True)
class Residual:
    """relu(x + conv2(relu(conv1(x))))."""

    first: Conv
    second: Conv


@dataclass(frozen=True)
class Classifier:
    body: tuple[Conv | Residual, ...]
    fc_weight: Float32Array  # [classes, channels]
    fc_bias: Float32Array  # [classes]


def random_conv(rng: np.random.Generator, name: str, cin: int, cout: int, stride: int, gain: float) -> Conv:
    std = gain * np.sqrt(2.0 / (cin * 9))
    weight = (rng.standard_normal((cout, cin, 3, 3)) * std).astype(np.float32)
    bias = (rng.standard_normal(cout) * 0.01).astype(np.float32)
    return Conv(name, weight, bias, stride)


def conv2d(x: npt.NDArray[np.float64], conv: Conv) -> npt.NDArray[np.float64]:
    """Reference NCHW convolution in float64 (pads k//2 on every side like the ONNX graph)."""
    k = conv.weight.shape[2]
    pad = k // 2
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(2, 3))
    windows = windows[:, :, :: conv.stride, :: conv.stride]
    out = np.einsum("nchwij,ocij->nohw", windows, conv.weight.astype(np.float64), optimize=True)
    return np.asarray(out + conv.bias.astype(np.float64)[None, :, None, None])


def pooled_features(
    body: Sequence[Conv | Residual], images: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    x = images
    for layer in body:
        if isinstance(layer, Conv):
            x = np.maximum(conv2d(x, layer), 0.0)
        else:
            branch = np.maximum(conv2d(x, layer.first), 0.0)
            x = np.maximum(x + conv2d(branch, layer.second), 0.0)
    return np.asarray(x.mean(axis=(2, 3)))


def calibration_images(count: int, seed: int) -> npt.NDArray[np.float64]:
    """Synthetic pictures in [-1, 1] (the INCEPTION scaling Triton's image_client uses for densenet_onnx):
    flat colours, gradients, stripes and noise, so the calibrated classifier separates such inputs."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:224, 0:224] / 223.0
    images = []
    for i in range(count):
        colour = rng.uniform(-1, 1, 3)[:, None, None]
        kind = i % 4
        if kind == 0:
            pattern = np.zeros((224, 224))
        elif kind == 1:
            angle = rng.uniform(0, np.pi)
            pattern = np.cos(angle) * xx + np.sin(angle) * yy - 0.5
        elif kind == 2:
            pattern = np.sin(rng.uniform(5, 60) * xx + rng.uniform(5, 60) * yy)
        else:
            pattern = rng.uniform(-1, 1, (224, 224))
        tint = rng.uniform(-1, 1, 3)[:, None, None]
        images.append(np.clip(colour + tint * pattern[None], -1, 1))
    return np.stack(images)


@functools.cache
def densenet_classifier() -> Classifier:
    """Random convolutions, then a 1000-way layer whose bias and scale are fitted to the pooled features of
    calibration_images() (like a folded batch norm), so different pictures win different classes instead
    of one class winning for everything, as happens with untrained weights."""
    rng = np.random.default_rng(DENSENET_SEED)
    body: list[Conv | Residual] = []
    channels = 3
    for stage, (width, blocks) in enumerate(DENSENET_STAGES):
        body.append(random_conv(rng, f"down{stage}", channels, width, 2, 1.0))
        channels = width
        for block in range(blocks):
            name = f"s{stage}b{block}"
            # The damped second conv keeps activations in range across residual sums without normalisation.
            body.append(
                Residual(
                    random_conv(rng, f"{name}_c1", width, width, 1, 1.0),
                    random_conv(rng, f"{name}_c2", width, width, 1, 0.5),
                )
            )
    features = pooled_features(body, calibration_images(DENSENET_CALIBRATION_IMAGES, DENSENET_SEED + 1))
    # Rounded so that last-bit differences between BLAS builds cannot change the written file.
    mean = np.round(features.mean(axis=0), 3)
    scale = np.round(features.std(axis=0), 3) + 1e-3
    directions = rng.standard_normal((DENSENET_CLASSES, channels)) * (
        DENSENET_LOGIT_SCALE / np.sqrt(channels)
    )
    fc_weight = (directions / scale[None, :]).astype(np.float32)
    fc_bias = (-(fc_weight.astype(np.float64) @ mean)).astype(np.float32)
    return Classifier(tuple(body), fc_weight, fc_bias)


def densenet_model(classifier: Classifier, batched: bool) -> onnx.ModelProto:
    """data_0 [N,3,224,224] -> fc6_1: the network of densenet_classifier() with Triton densenet_onnx's names.

    The classifier is a 1x1 conv named fc6 (as in densenet), so the unbatched output is [1,1000,1,1]; the
    batched variant flattens it to [N,1000].
    """
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def conv(src: str, dst: str, c: Conv) -> None:
        k = c.weight.shape[2]
        inits.extend([initializer(f"{c.name}_w", c.weight), initializer(f"{c.name}_b", c.bias)])
        node = helper.make_node(
            "Conv",
            [src, f"{c.name}_w", f"{c.name}_b"],
            [dst],
            name=c.name,
            kernel_shape=[k, k],
            strides=[c.stride, c.stride],
            pads=[k // 2] * 4,
        )
        nodes.append(node)

    def relu(src: str, dst: str) -> None:
        nodes.append(helper.make_node("Relu", [src], [dst]))

    current = "data_0"
    for layer in classifier.body:
        if isinstance(layer, Conv):
            conv(current, f"{layer.name}_out", layer)
            relu(f"{layer.name}_out", f"{layer.name}_relu")
            current = f"{layer.name}_relu"
        else:
            first, second = layer.first, layer.second
            conv(current, f"{first.name}_out", first)
            relu(f"{first.name}_out", f"{first.name}_relu")
            conv(f"{first.name}_relu", f"{second.name}_out", second)
            nodes.append(helper.make_node("Add", [current, f"{second.name}_out"], [f"{second.name}_sum"]))
            relu(f"{second.name}_sum", f"{second.name}_relu")
            current = f"{second.name}_relu"
    nodes.append(helper.make_node("GlobalAveragePool", [current], ["pool"]))
    fc = Conv(
        "fc6",
        classifier.fc_weight.reshape(*classifier.fc_weight.shape, 1, 1),
        classifier.fc_bias,
        1,
    )
    logits = "fc6_logits" if batched else "fc6_1"
    conv("pool", logits, fc)
    if batched:
        nodes.append(helper.make_node("Flatten", [logits], ["fc6_1"], axis=1))

    batch: Dim = "batch" if batched else 1
    out_shape: list[Dim] = [batch, DENSENET_CLASSES] if batched else [1, DENSENET_CLASSES, 1, 1]
    graph = helper.make_graph(
        nodes,
        "densenet_batched" if batched else "densenet_onnx",
        [value("data_0", TensorProto.FLOAT, [batch, 3, 224, 224])],
        [value("fc6_1", TensorProto.FLOAT, out_shape)],
        initializer=inits,
    )
    return make_model(
        graph,
        "Image classifier stand-in with random weights: same interface as Triton's densenet_onnx "
        "(data_0 NCHW 3x224x224 -> fc6_1 1000 logits), small-ResNet compute.",
    )


def densenet_reference(classifier: Classifier, images: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """numpy forward pass of the same network, [N,3,224,224] -> [N,1000] logits."""
    features = pooled_features(classifier.body, images)
    return np.asarray(features @ classifier.fc_weight.T.astype(np.float64) + classifier.fc_bias)


LABEL_ADJECTIVES = """
amber azure brisk coastal copper crimson dappled dusky emerald feral frosted gilded granite hollow ivory jade
lunar marbled misty mossy nimble obsidian ochre pale plum quiet russet rustic scarlet silver slate speckled
striped sunlit tawny teal umber velvet violet woolly
"""
LABEL_NOUNS = """
badger beetle canoe compass falcon fern heron kettle lantern lynx marten moth otter parrot pebble quill raven
sparrow teapot thistle trumpet tulip walrus wren yak
"""


def densenet_labels() -> list[str]:
    """1000 distinct, readable class names ("amber badger", ...): 40 adjectives x 25 nouns."""
    adjectives, nouns = LABEL_ADJECTIVES.split(), LABEL_NOUNS.split()
    assert len(adjectives) * len(nouns) == DENSENET_CLASSES
    labels = [f"{adj} {noun}" for adj in adjectives for noun in nouns]
    assert len(set(labels)) == DENSENET_CLASSES
    return labels


def corrupt_bytes() -> bytes:
    # Deterministic noise that is not a parseable ModelProto (starts with an invalid protobuf tag).
    rng = np.random.default_rng(7)
    return b"\xff\xff\xff\xff NOT AN ONNX MODEL \x00" + rng.integers(0, 256, 1024, dtype=np.uint8).tobytes()


# ---------------------------------------------------------------------------------------------------------
# Output plan and checks.


def triton_type(name: str) -> TritonType:
    return next(t for t in TRITON_TYPES if t.name == name)


def identity_builder(t: TritonType) -> Callable[[], onnx.ModelProto]:
    return lambda: identity_model(t, ["batch", "n"])


def planned_files() -> dict[Path, Callable[[], bytes]]:
    def ser(build: Callable[[], onnx.ModelProto]) -> Callable[[], bytes]:
        return lambda: build().SerializeToString()

    def labels() -> bytes:
        return ("\n".join(densenet_labels()) + "\n").encode()

    plan: dict[Path, Callable[[], bytes]] = {}
    for t in TRITON_TYPES:
        plan[FIXTURES / f"identity_{t.name.lower()}.onnx"] = ser(identity_builder(t))
    plan[FIXTURES / "add_sub_fp32.onnx"] = ser(lambda: add_sub_model("add_sub_fp32", TensorProto.FLOAT, 16))
    plan[FIXTURES / "slow_fp32.onnx"] = ser(slow_model)
    plan[FIXTURES / "corrupt.onnx"] = corrupt_bytes

    repo = REPOSITORY
    plan[repo / "simple" / "1" / "model.onnx"] = ser(lambda: add_sub_model("simple", TensorProto.INT32, 16))
    plan[repo / "simple_int8" / "1" / "model.onnx"] = ser(
        lambda: add_sub_model("simple_int8", TensorProto.INT8, 16)
    )
    plan[repo / "simple_string" / "1" / "model.onnx"] = ser(simple_string_model)
    plan[repo / "densenet_onnx" / "1" / "model.onnx"] = ser(
        lambda: densenet_model(densenet_classifier(), batched=False)
    )
    plan[repo / "densenet_onnx" / "densenet_labels.txt"] = labels
    plan[repo / "densenet_batched" / "1" / "model.onnx"] = ser(
        lambda: densenet_model(densenet_classifier(), batched=True)
    )
    plan[repo / "densenet_batched" / "densenet_labels.txt"] = labels
    plan[repo / "add_sub_fp32" / "1" / "model.onnx"] = ser(
        lambda: add_sub_model("add_sub_fp32", TensorProto.FLOAT, 16)
    )
    plan[repo / "identity_fp32" / "1" / "model.onnx"] = ser(identity_builder(triton_type("FP32")))
    return plan


def check_with_onnxruntime() -> None:
    """Runs every generated model with onnxruntime (python) and compares against numpy."""
    import onnxruntime as ort  # type: ignore[import-untyped]

    def session(path: Path) -> ort.InferenceSession:
        return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    rng = np.random.default_rng(1)
    for t in TRITON_TYPES:
        path = FIXTURES / f"identity_{t.name.lower()}.onnx"
        if t.name == "BF16":
            # numpy cannot feed bfloat16 to onnxruntime-python; run the same Identity between two Casts.
            model = onnx.load(str(path))
            model.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT
            model.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
            model.graph.node.insert(0, helper.make_node("Cast", ["INPUT0"], ["x"], to=TensorProto.BFLOAT16))
            model.graph.node[1].input[0] = "x"
            model.graph.node[1].output[0] = "y"
            model.graph.node.append(helper.make_node("Cast", ["y"], ["OUTPUT0"], to=TensorProto.FLOAT))
            s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            x = np.array([[1.0, -2.5], [3.0, 0.5]], dtype=np.float32)
            session(path)  # the real file must load too
        elif t.name == "BYTES":
            s = session(path)
            x = np.array([["a", "bc"], ["", "héllo"]], dtype=object)
        else:
            s = session(path)
            x = (rng.integers(0, 100, (3, 5)) % (2 if t.name == "BOOL" else 100)).astype(t.numpy_type)
        (y,) = s.run(None, {"INPUT0": x})
        assert y.dtype == x.dtype, t.name
        assert np.array_equal(y, x), t.name
        print(f"ok identity_{t.name.lower()}")

    a = rng.standard_normal((4, 16)).astype(np.float32)
    b = rng.standard_normal((4, 16)).astype(np.float32)
    for path in (FIXTURES / "add_sub_fp32.onnx", REPOSITORY / "add_sub_fp32/1/model.onnx"):
        o0, o1 = session(path).run(None, {"INPUT0": a, "INPUT1": b})
        assert np.array_equal(o0, a + b)
        assert np.array_equal(o1, a - b)
    print("ok add_sub_fp32")

    ai = np.arange(16, dtype=np.int32).reshape(1, 16)
    bi = np.ones((1, 16), dtype=np.int32)
    o0, o1 = session(REPOSITORY / "simple/1/model.onnx").run(None, {"INPUT0": ai, "INPUT1": bi})
    assert np.array_equal(o0, ai + bi)
    assert np.array_equal(o1, ai - bi)
    print("ok simple")

    a8 = np.array([[100, -100, 5] + [0] * 13], dtype=np.int8)
    b8 = np.array([[100, 100, 3] + [1] * 13], dtype=np.int8)
    o0, o1 = session(REPOSITORY / "simple_int8/1/model.onnx").run(None, {"INPUT0": a8, "INPUT1": b8})
    # int8 wraps around, as numpy does
    assert np.array_equal(o0, a8 + b8)
    assert np.array_equal(o1, a8 - b8)
    print("ok simple_int8")

    sa = np.array([[str(i) for i in range(16)], [str(-i * 7) for i in range(16)]], dtype=object)
    sb = np.array([["1"] * 16, ["100"] * 16], dtype=object)
    o0, o1 = session(REPOSITORY / "simple_string/1/model.onnx").run(None, {"INPUT0": sa, "INPUT1": sb})
    ia, ib = sa.astype(np.int32), sb.astype(np.int32)
    assert o0.tolist() == (ia + ib).astype(str).tolist()
    assert o1.tolist() == (ia - ib).astype(str).tolist()
    print("ok simple_string")

    # Fresh pictures of the calibration kinds (other seed); ORT must agree with the numpy reference.
    images = calibration_images(12, seed=99)
    expected = densenet_reference(densenet_classifier(), images)
    single_session = session(REPOSITORY / "densenet_onnx/1/model.onnx")
    (single,) = single_session.run(None, {"data_0": images[:1].astype(np.float32)})
    assert single.shape == (1, DENSENET_CLASSES, 1, 1)
    assert np.allclose(single.reshape(-1), expected[0], rtol=1e-3, atol=1e-3)
    batched_session = session(REPOSITORY / "densenet_batched/1/model.onnx")
    (batch,) = batched_session.run(None, {"data_0": images.astype(np.float32)})
    assert batch.shape == (len(images), DENSENET_CLASSES)
    assert np.allclose(batch, expected, rtol=1e-3, atol=1e-3)
    top1 = [int(i) for i in np.argmax(batch, axis=1)]
    assert len(set(top1)) >= len(top1) // 2, f"too few distinct classes: {top1}"
    print(f"ok densenet (top-1 of {len(top1)} test pictures: {top1})")

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    slow = ort.InferenceSession(
        str(FIXTURES / "slow_fp32.onnx"), sess_options=opts, providers=["CPUExecutionProvider"]
    )
    start = time.perf_counter()
    (out,) = slow.run(None, {"INPUT0": np.full((1, 16), 0.5, dtype=np.float32)})
    elapsed = time.perf_counter() - start
    assert out.shape == (1, 16)
    assert np.isfinite(out).all()
    print(f"ok slow_fp32 ({elapsed:.2f} s on one thread)")

    try:
        session(FIXTURES / "corrupt.onnx")
    except Exception as err:  # onnxruntime raises its own exception types
        print(f"ok corrupt ({type(err).__name__})")
    else:
        raise AssertionError("corrupt.onnx loaded")


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--check", action="store_true", help="run every model with onnxruntime afterwards")
    args = parser.parse_args(argv)

    for path, build in planned_files().items():
        data = build()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()[:12]
        print(f"{path.relative_to(ROOT)}  {len(data):>9} bytes  sha256:{digest}")
    if args.check:
        check_with_onnxruntime()
    sequence_models.generate(ROOT, args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
