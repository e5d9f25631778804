// triton_python_backend_utils outside a stub, run by the checkout's Python: ModelConfig's checks and texts
// (what auto_complete_config relies on), the dtype tables, the BYTES codec, Tensor construction and the
// sender's rules, each asserted in Python and reported back as JSON.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { PACKAGE_ROOT } from './interpreter.js';

const PYTHON = path.join(PACKAGE_ROOT, '.venv/bin/python');

/** What every snippet starts with: `out`, the dict it fills, and `err(fn)`, a call's exception text or None. */
const PRELUDE = String.raw`
import json, sys
sys.path.insert(0, sys.argv[1])
out = {}
def err(fn):
    try:
        fn()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None
`;

/** Runs a snippet after PRELUDE against the package's python/ folder and returns its `out` as JSON. */
function runPython<T>(body: string): T {
  const script = `${PRELUDE}${body}\nprint(json.dumps(out))\n`;
  return JSON.parse(
    execFileSync(PYTHON, ['-c', script, path.join(PACKAGE_ROOT, 'python')], { encoding: 'utf8' }),
  ) as T;
}

const SCRIPT = String.raw`
import numpy as np
import triton_python_backend_utils as pb_utils
from nereid_stub.api import _RequestState

cfg = pb_utils.ModelConfig(json.dumps({"name": "m", "max_batch_size": 8, "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": [4]}], "output": [], "sequence_batching": {}}))
out["mbs"] = err(lambda: cfg.set_max_batch_size(4))
out["dyn"] = err(cfg.set_dynamic_batching)
out["dtype"] = err(lambda: cfg.add_input({"name": "X", "data_type": "TYPE_INT32", "dims": [4]}))
out["dims"] = err(lambda: cfg.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [5]}))
out["extra"] = err(lambda: cfg.add_output({"name": "Y", "data_type": "TYPE_FP32", "dims": [1], "optional": True}))
out["missing"] = err(lambda: cfg.add_output({"name": "Y", "dims": [1]}))
cfg.add_output({"name": "Y", "data_type": "TYPE_FP32", "dims": [1]})
cfg.set_model_transaction_policy({"decoupled": True})
out["policy"] = err(lambda: cfg.set_model_transaction_policy({"decoupled": False}))
out["config"] = cfg.as_dict()

out["codes"] = [pb_utils.numpy_to_triton_type(t) for t in (np.bool_, np.uint8, np.int32, np.float16, np.float64, np.object_, np.bytes_)]
out["types"] = [np.dtype(pb_utils.triton_to_numpy_type(c)).name for c in (1, 5, 9, 11)]
out["string"] = np.dtype(pb_utils.triton_string_to_numpy("TYPE_INT16")).name
data = np.array([b"a", b"", "\u00e9".encode()], dtype=np.object_)
ser = pb_utils.serialize_byte_tensor(data)
out["bytes"] = list(ser)
out["roundtrip"] = [x.decode() for x in pb_utils.deserialize_bytes_tensor(ser)]
out["empty"] = repr(pb_utils.serialize_byte_tensor(np.array([], dtype=np.object_)))
out["malformed"] = err(lambda: pb_utils.deserialize_bytes_tensor(b"\x05\x00\x00\x00ab"))

t = pb_utils.Tensor("T", np.array([[1, 2], [3, 4]], dtype=np.int64))
out["tensor"] = [t.name(), t.triton_dtype(), t.shape(), t.as_numpy().tolist(), t.is_cpu()]
out["unicode"] = pb_utils.Tensor("S", np.array(["x", "y\u00e9"])).as_numpy().tolist() == [b"x", "y\u00e9".encode()]
out["void"] = err(lambda: pb_utils.Tensor("V", np.zeros(2, dtype=[("a", "i4")])))
out["dlpack"] = pb_utils.Tensor.from_dlpack("D", pb_utils.Tensor("T", np.arange(3, dtype=np.float32))).as_numpy().tolist()

e = pb_utils.TritonError("nope", pb_utils.TritonError.NOT_FOUND)
out["error"] = [e.message(), int(e.code()), e.code() == pb_utils.TritonError.NOT_FOUND, int(pb_utils.TritonError("x").code())]

state = _RequestState(1, False, frozenset())
sender = pb_utils.InferenceResponseSender(state)
out["flag"] = err(lambda: sender.send(None, 2))
out["final_first"] = err(lambda: sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL))
out["no_response"] = err(lambda: sender.send())
state.closed = True
out["params"] = err(lambda: pb_utils.InferenceResponse([], parameters={"k": 1.5}))
out["response_params"] = pb_utils.InferenceResponse([], parameters={"k": 1, "b": True}).parameters()
out["bls_no_stub"] = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[]).exec().error().message()
`;

void test(
  'triton_python_backend_utils behaves as Triton documents it',
  { skip: !existsSync(PYTHON) && 'no .venv' },
  () => {
    const out = runPython<Record<string, unknown>>(SCRIPT);
    assert.equal(
      out.mbs,
      "ValueError: configuration specified max_batch_size 8, but in auto-complete-config function for model 'm' specified max_batch_size 4",
    );
    assert.equal(
      out.dyn,
      "ValueError: Configuration specified scheduling_choice as 'sequence_batching', but auto-complete-config function for model 'm' tries to set scheduling_choice as 'dynamic_batching'",
    );
    assert.equal(
      out.dtype,
      "ValueError: unable to load model 'm', configuration expects datatype TYPE_FP32 for input 'X', model provides TYPE_INT32",
    );
    assert.equal(
      out.dims,
      "ValueError: model 'm', tensor 'X': the model expects dims [5] but the model configuration specifies dims [4]",
    );
    assert.equal(
      out.extra,
      "ValueError: output 'Y' in auto-complete-config function for model 'm' contains property other than 'name', 'data_type' and 'dims'.",
    );
    assert.equal(
      out.missing,
      "ValueError: output 'Y' in auto-complete-config function for model 'm' is missing 'data_type' property.",
    );
    assert.equal(
      out.policy,
      "ValueError: trying to change decoupled property in auto-complete-config for model 'm', which is already set to 'True'.",
    );
    const config = out.config as { output: unknown[]; model_transaction_policy: unknown };
    assert.deepEqual(config.output, [{ name: 'Y', data_type: 'TYPE_FP32', dims: [1] }]);
    assert.deepEqual(config.model_transaction_policy, { decoupled: true });

    assert.deepEqual(out.codes, [1, 2, 8, 10, 12, 13, 13]);
    assert.deepEqual(out.types, ['bool', 'uint64', 'int64', 'float32']);
    assert.equal(out.string, 'int16');
    assert.deepEqual(out.bytes, [1, 0, 0, 0, 97, 0, 0, 0, 0, 2, 0, 0, 0, 0xc3, 0xa9]);
    assert.deepEqual(out.roundtrip, ['a', '', '\u00e9']);
    assert.equal(out.empty, '()');
    assert.equal(out.malformed, 'ValueError: malformed BYTES tensor: element length exceeds the data');

    assert.deepEqual(out.tensor, [
      'T',
      9,
      [2, 2],
      [
        [1, 2],
        [3, 4],
      ],
      true,
    ]);
    assert.equal(out.unicode, true);
    assert.match(
      String(out.void),
      // Triton 2.51's text (its stub's numpy_to_triton_type), then which tensor and dtype.
      /^TritonModelException: NumPy dtype is not supported\. Tensor 'V' is /,
    );
    assert.deepEqual(out.dlpack, [0, 1, 2]);
    assert.deepEqual(out.error, ['nope', 2, true, 1]);

    assert.equal(out.flag, 'TritonModelException: Unable to send response. Unsupported flag provided.');
    assert.equal(
      out.final_first,
      'TritonModelException: Unable to send response. Non-decoupled model cannot send complete final before sending a response.',
    );
    assert.equal(
      out.no_response,
      'TritonModelException: Inference Response object must be provided when the response flags is set to zero.',
    );
    assert.equal(
      out.params,
      "TritonModelException: Expect parameters values to have type bool/int/str, found type <class 'float'>",
    );
    assert.deepEqual(JSON.parse(String(out.response_params)), { k: 1, b: true });
    assert.equal(out.bls_no_stub, 'BLS requests need a running Nereid Python backend stub');
  },
);

const ARENA_SCRIPT = String.raw`
import os, resource, signal, tempfile
from nereid_stub.shm import OutputArena

fd, path = tempfile.mkstemp()
os.unlink(path)
arena = OutputArena(fd, 256, 128)
a = arena.write(memoryview(b"a" * 100))
b = arena.write(memoryview(b"b" * 100))
c = arena.write(memoryview(b"c" * 300))
out["offsets"] = [a, b, c]
out["content"] = os.pread(fd, 3, b).decode()
arena.release(a, 100)
arena.release(b, 100)
out["reused"] = arena.write(memoryview(b"d" * 200))
# A file that cannot grow (as on a full /dev/shm): the write reports None and the arena stays off.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (os.fstat(fd).st_size, resource.RLIM_INFINITY))
out["full"] = arena.write(memoryview(b"e" * 4096))
out["reason"] = arena.disabled_reason
out["after"] = arena.write(memoryview(b"f"))
`;

void test(
  "the stub's output arena allocates first-fit, merges freed space, and gives up cleanly when it cannot grow",
  { skip: !existsSync(PYTHON) && 'no .venv' },
  () => {
    const out = runPython<{
      offsets: number[];
      content: string;
      reused: number;
      full: null;
      reason: string;
      after: null;
    }>(ARENA_SCRIPT);
    assert.deepEqual(out.offsets, [0, 128, 256], '64-byte aligned, grown when full');
    assert.equal(out.content, 'bbb');
    assert.equal(out.reused, 0, 'two freed neighbours merge into one range');
    assert.equal(out.full, null);
    assert.equal(out.reason, 'File too large');
    assert.equal(out.after, null);
  },
);

const METRICS_SCRIPT = String.raw`
import gc
import triton_python_backend_utils as pb_utils
from nereid_stub import metrics

F = pb_utils.MetricFamily
c = F("c_total", "requests", F.COUNTER)
g = F("g", "a gauge", F.GAUGE)
h = F("h", "a histogram", F.HISTOGRAM)
out["errors"] = [
    err(lambda: F("bad name", "x", F.COUNTER)),
    err(lambda: F("g", "now a counter", F.COUNTER)),
    err(lambda: c.Metric(labels=["a"])),
    err(lambda: c.Metric(buckets=[1.0])),
    err(lambda: h.Metric()),
    err(lambda: h.Metric(buckets=(1.0,))),
    err(lambda: h.Metric(buckets=[2.0, 1.0])),
    err(lambda: c.Metric(labels={"a": 1})),
    err(lambda: c.Metric().increment(-1)),
    err(lambda: c.Metric().set(1)),
    err(lambda: c.Metric().observe(1)),
    err(lambda: g.Metric().observe(1)),
    err(lambda: h.Metric(buckets=[1.0]).increment(1)),
    err(lambda: h.Metric(buckets=[1.0]).set(1)),
    err(lambda: h.Metric(buckets=[1.0]).value()),
]
kept = c.Metric(labels={"k": "v"})
same = F("c_total", "another description", F.COUNTER).Metric(labels={"k": "v"})
kept.increment(2)
same.increment(3)
out["shared"] = [kept.value(), same.value()]
gauge = g.Metric()
gauge.increment(5)
gauge.set(float("inf"))
hist = h.Metric(labels={"m": "x"}, buckets=[1.0, 10.0])
for v in (0.5, 3, 30):
    hist.observe(v)
c.Metric(labels={"k": "dropped"}).increment(1)
gc.collect()
snap = metrics.snapshot()
for family in snap:
    for m in family["m"]:
        m.pop("s", None)
out["snapshot"] = snap
`;

void test(
  'MetricFamily / Metric raise Triton’s errors, share series, and snapshot only the series a model holds',
  { skip: !existsSync(PYTHON) && 'no .venv' },
  () => {
    const out = runPython<{ errors: string[]; shared: number[]; snapshot: unknown }>(METRICS_SCRIPT);
    assert.deepEqual(out.errors, [
      "TritonModelException: Error when creating MetricFamily: Invalid metric name 'bad name'",
      "TritonModelException: Error when creating MetricFamily: metric family 'g' already exists with another kind",
      'TritonModelException: Failed to create metric. Labels must be a dictionary.',
      'TritonModelException: Failed to create metric. Unexpected buckets found.',
      'TritonModelException: Failed to create metric. Missing required buckets.',
      'TritonModelException: Failed to create metric. Buckets must be a list.',
      'TritonModelException: Error when creating Metric: Bucket Boundaries must be strictly sorted',
      'TritonModelException: Error when creating Metric: Parameter [a] must have a type of TRITONSERVER_PARAMETER_STRING to be added as a label.',
      'TritonModelException: Failed to increment metric value: TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by non-negative values.',
      'TritonModelException: Failed to set metric value: TRITONSERVER_METRIC_KIND_COUNTER does not support Set',
      'TritonModelException: Failed to observe metric value: TRITONSERVER_METRIC_KIND_COUNTER does not support Observe',
      'TritonModelException: Failed to observe metric value: TRITONSERVER_METRIC_KIND_GAUGE does not support Observe',
      'TritonModelException: Failed to increment metric value: TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Increment',
      'TritonModelException: Failed to set metric value: TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Set',
      'TritonModelException: Failed to get metric value: TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Value',
    ]);
    assert.deepEqual(out.shared, [5, 5]);
    assert.deepEqual(out.snapshot, [
      { n: 'c_total', d: 'requests', k: 'counter', m: [{ l: { k: 'v' }, v: 5 }] },
      { n: 'g', d: 'a gauge', k: 'gauge', m: [{ l: {}, v: '+Inf' }] },
      {
        n: 'h',
        d: 'a histogram',
        k: 'histogram',
        m: [{ l: { m: 'x' }, v: 33.5, b: [1, 10], bc: [1, 2], c: 3 }],
      },
    ]);
  },
);

const WIRE_SCRIPT = String.raw`
import numpy as np
import triton_python_backend_utils as pb_utils
from nereid_stub.api import InferenceRequest, Tensor, _RequestState

# Tensors over delivered bytes (the host's inputs): what as_numpy makes of them.
frame = bytearray(np.arange(12, dtype=np.int32).tobytes()) + bytearray(np.array([1.5, -2], dtype=np.float16).tobytes())
blob = memoryview(frame)
grid = Tensor._wire("G", "INT32", [3, 4], blob[0:48])
a = grid.as_numpy()
out["grid"] = [a.shape, str(a.dtype), a.flags.writeable, a.flags.c_contiguous, a.tolist()[2], grid.as_numpy() is a]
a[0, 0] = 99  # writable, over the frame's own bytes (no copy), as Triton's arrays are
out["shared"] = int(np.frombuffer(frame, dtype=np.int32, count=1)[0])
out["half"] = Tensor._wire("H", "FP16", [2], blob[48:52]).as_numpy().tolist()
out["scalar"] = Tensor._wire("S", "INT32", [], blob[4:8]).as_numpy().tolist()
out["empty"] = list(Tensor._wire("E", "INT32", [0, 3], blob[0:0]).as_numpy().shape)
out["short"] = err(lambda: Tensor._wire("X", "INT32", [4], blob[0:12]).as_numpy())
out["long"] = err(lambda: Tensor._wire("X", "INT32", [2], blob[0:12]).as_numpy())
out["bytes"] = [x.decode() for x in Tensor._wire("B", "BYTES", [1], memoryview(b"\x02\x00\x00\x00hi")).as_numpy()]
out["readonly"] = Tensor._wire("R", "INT32", [1], memoryview(b"\x01\x00\x00\x00")).as_numpy().flags.writeable

# Tensor(name, array): the one-lookup path for native numeric arrays, the general one for the rest.
big = Tensor("BE", np.array([1, 2], dtype=">i4"))
out["swapped"] = [big.triton_dtype(), big.as_numpy().dtype.byteorder in "=<", big.as_numpy().tolist()]
flag = Tensor("F", np.array([[True], [False]]))
out["bool"] = [flag.triton_dtype(), flag.shape(), type(flag.shape()[0]).__name__]
out["list"] = [Tensor("L", [1.0, 2.0]).triton_dtype(), Tensor("L", np.float32(3)).shape()]
view = np.arange(6, dtype=np.int64).reshape(2, 3)[:, 1]
strided = Tensor("V", view)
out["strided"] = [bytes(strided._wire_bytes()) == np.ascontiguousarray(view).tobytes(), strided.shape()]

# The request's trace is made on first use, and the same object after.
state = _RequestState(7, False, frozenset())
req = InferenceRequest._incoming(state, "id", 0, [grid], [], "m", 1, 0, "{}")
out["trace"] = [req.trace() is req.trace(), req.trace().get_context()]
state.closed = True
out["by_name"] = [pb_utils.get_input_tensor_by_name(req, "G") is grid, pb_utils.get_input_tensor_by_name(req, "Z")]
resp = pb_utils.InferenceResponse([big])
out["response"] = [pb_utils.get_output_tensor_by_name(resp, "BE") is big, resp.parameters()]
`;

void test(
  'delivered tensors become writable numpy arrays over their bytes; Tensor() takes native and other arrays as before',
  { skip: !existsSync(PYTHON) && 'no .venv' },
  () => {
    const out = runPython<Record<string, unknown>>(WIRE_SCRIPT);
    assert.deepEqual(out.grid, [[3, 4], 'int32', true, true, [8, 9, 10, 11], true]);
    assert.equal(out.shared, 99);
    assert.deepEqual(out.half, [1.5, -2]);
    assert.equal(out.scalar, 1);
    assert.deepEqual(out.empty, [0, 3]);
    assert.match(String(out.short), /cannot reshape array of size 3 into shape \(4,\)/);
    assert.match(String(out.long), /cannot reshape array of size 3 into shape \(2,\)/);
    assert.deepEqual(out.bytes, ['hi']);
    assert.equal(out.readonly, false);
    assert.deepEqual(out.swapped, [8, true, [1, 2]]);
    assert.deepEqual(out.bool, [1, [2, 1], 'int']);
    assert.deepEqual(out.list, [12, []]);
    assert.deepEqual(out.strided, [true, [2]]);
    assert.deepEqual(out.trace, [true, null]);
    assert.deepEqual(out.by_name, [true, null]);
    assert.deepEqual(out.response, [true, '{}']);
  },
);

const REQUEST_MAP_SCRIPT = String.raw`
import gc, socket
from nereid_stub import frames, messages
from nereid_stub.runtime import Runtime

a, b = socket.socketpair()
rt = Runtime(b, None, None)
def execute(rid0, n):
    requests = [{"rid": rid0 + k, "request_id": "", "correlation_id": "0", "correlation_is_string": False,
                 "flags": 0, "parameters": "{}", "requested_outputs": [], "inputs": []} for k in range(n)]
    return frames.Frame(messages.EXECUTE, {"batch": 1, "requests": requests}, memoryview(bytearray()))
kept = []
for i in range(100):
    _, states = rt._build_requests(execute(i * 10, 10))
    for s in states:
        s.closed = True  # answered: nothing to report when they go
    if i == 0:
        kept = states
    del states
gc.collect()
out["size"] = len(rt._requests)
out["kept"] = all(rt._request_state(k) is kept[k] for k in range(10))
out["gone"] = rt._request_state(500)
rt._route(frames.Frame(messages.CANCEL, {"rid": 3}, memoryview(b"")))
out["cancelled"] = [s.cancelled for s in kept[2:5]]
`;

void test(
  "the stub's map of live requests finds the ones a model holds, forgets the others, and stays small",
  { skip: !existsSync(PYTHON) && 'no .venv' },
  () => {
    const out = runPython<{ size: number; kept: boolean; gone: null; cancelled: boolean[] }>(
      REQUEST_MAP_SCRIPT,
    );
    assert.ok(out.size <= 74, `1,000 requests, 10 alive: ${out.size} entries`);
    assert.equal(out.kept, true);
    assert.equal(out.gone, null);
    assert.deepEqual(out.cancelled, [false, true, false]);
  },
);
