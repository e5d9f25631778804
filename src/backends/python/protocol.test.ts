// The host<->stub protocol, one full sample per message type (every field, optional ones included), sent
// through both sides: encoded and decoded here (the host's round trip), then written to the checkout's
// Python, which reads each frame with the stub's own FrameReader, checks its header has exactly the fields
// of python/nereid_stub/messages.py's shape for that type (nested tensors, requests, responses and errors
// too), re-encodes the hot messages with the stub's fast encoders and writes every frame back; the host
// decodes what came back and compares. A field renamed or added on one side only fails here.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { encodeFrame, encodeRawFrame, FrameDecoder, type Frame } from './frames.js';
import { PACKAGE_ROOT } from './interpreter.js';
import {
  BINARY_HEADERS,
  MessageType,
  decodeExecuteDone,
  encodeExecuteDone,
  type Messages,
  type StubError,
  type StubTensor,
} from './protocol.js';

const PYTHON = path.join(PACKAGE_ROOT, '.venv/bin/python');

const tensor = (name: string, inShm: boolean, offset: number): StubTensor => ({
  name,
  datatype: 'INT32',
  shape: [2, 8],
  in_shm: inShm,
  offset,
  byte_size: 64,
});
const errorInfo = {
  type: 'ValueError',
  message: 'no',
  frames: [['1/model.py', 45, 'execute']],
  traceback: 'Traceback (most recent call last): ...',
  phase: 'initialize',
};
const error: StubError = { code: 3, message: 'bad \u00e9 "input"', from_model: true, info: errorInfo };

const SAMPLES: { [T in MessageType]: Messages[T] } = {
  [MessageType.Init]: {
    name: 'm_0_0',
    model_path: '/models/m/1/model.py',
    backend_package: { name: 'nereid_backend_b', dir: '/backends/b' },
    decoupled: true,
    shm_threshold: 65536,
    response_window: 32,
    response_overdraft: 256,
    shm_initial: 1048576,
    shm_growth: 1048576,
    args: { model_name: 'm', model_version: '1' },
  },
  [MessageType.AutoComplete]: {
    name: 'm',
    model_path: '/backends/b/model.py',
    backend_package: { name: 'nereid_backend_b', dir: '/backends/b' },
    args: { model_repository: '/models/m', model_version: '1' },
    config: '{"name":"m"}',
  },
  [MessageType.Execute]: {
    batch: 7,
    requests: [
      {
        rid: 11,
        request_id: 'r-1',
        correlation_id: '18446744073709551615',
        correlation_is_string: false,
        flags: 3,
        parameters: '{"k":1}',
        requested_outputs: ['OUTPUT0'],
        inputs: [tensor('INPUT0', false, 0), tensor('INPUT1', true, 4096)],
        cancelled: true,
        traced: true,
        trace_context: '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}',
      },
    ],
  },
  [MessageType.Cancel]: { rid: 11 },
  [MessageType.BlsResponse]: {
    call: 4,
    final: true,
    outputs: [tensor('OUT', false, 0)],
    parameters: '{"p":true}',
    error,
  },
  [MessageType.Free]: {
    ranges: [
      [0, 64],
      [4096, 128],
    ],
  },
  [MessageType.Finalize]: {},
  [MessageType.ModelControlDone]: { call: 2, ready: true, error },
  [MessageType.MetricsQuery]: { query: 5 },
  [MessageType.Credit]: { rid: 11, n: 8 },
  [MessageType.Hello]: { pid: 1234, python: '3.11.7', numpy: '1.26.4' },
  [MessageType.InitDone]: { error: 'ValueError: no', error_info: errorInfo },
  [MessageType.AutoCompleteDone]: { config: '{"name":"m"}', error: 'TypeError: no' },
  [MessageType.Response]: {
    rid: 11,
    final: false,
    outputs: [tensor('OUTPUT0', false, 0), tensor('OUTPUT1', true, 128)],
    parameters: '{"a":"b"}',
    error,
    undeclared: ['EXTRA'],
  },
  [MessageType.ExecuteDone]: {
    batch: 7,
    error: 'Failed',
    error_info: errorInfo,
    responses: [
      {
        rid: 11,
        final: true,
        outputs: [tensor('OUTPUT0', false, 0)],
        parameters: '{}',
        error,
        undeclared: ['EXTRA'],
      },
    ],
    rescheduled: [12, 13],
    started: 35596337944003,
    finished: 35596338044003,
  },
  [MessageType.BlsRequest]: {
    call: 4,
    model_name: 'other',
    model_version: -1,
    request_id: 'bls',
    correlation_id: 'seq-a',
    correlation_is_string: true,
    flags: 1,
    timeout_us: 500,
    parameters: '{}',
    requested_outputs: ['OUT'],
    inputs: [tensor('IN', false, 0)],
    trace_rid: 11,
    window: 32,
  },
  [MessageType.BlsCancel]: { call: 4 },
  [MessageType.BlsCredit]: { call: 4, n: 8 },
  [MessageType.Log]: { level: 2, message: 'hello', file: 'model.py', line: 42 },
  [MessageType.FinalizeDone]: {},
  [MessageType.Fatal]: { message: 'no numpy' },
  [MessageType.ModelControl]: {
    call: 3,
    op: 'load',
    model_name: 'other',
    config: '{}',
    files: [['file:1/model.py', 0, 10]],
    unload_dependents: false,
    version: '',
  },
  [MessageType.Metrics]: { query: 5, families: [] },
};

const TYPES = Object.keys(SAMPLES).map(Number) as MessageType[];
const BLOB = Buffer.from('0123456789abcdef');

function encodeAll(): Buffer {
  return Buffer.concat(
    TYPES.flatMap((t) =>
      t === MessageType.ExecuteDone
        ? encodeRawFrame(t, encodeExecuteDone(SAMPLES[MessageType.ExecuteDone]), [BLOB])
        : encodeFrame(t, SAMPLES[t], [BLOB]),
    ),
  );
}

function decodeAll(wire: Buffer): Frame[] {
  return new FrameDecoder(1 << 20, BINARY_HEADERS).push(wire);
}

/** A frame's header against its sample: EXECUTE_DONE's binary one as the host decodes it. */
function assertSample(f: Frame): void {
  if (f.type === MessageType.ExecuteDone) {
    const expected = decodeExecuteDone(encodeExecuteDone(SAMPLES[MessageType.ExecuteDone]));
    assert.deepEqual(decodeExecuteDone(f.head), expected, 'EXECUTE_DONE');
    assert.equal(expected.responses[0].error?.message, error.message);
    return;
  }
  assert.deepEqual(f.header, SAMPLES[f.type as MessageType], `type ${f.type}`);
}

void test('every message type survives the host encoding and decoding it', () => {
  const frames = decodeAll(encodeAll());
  assert.deepEqual(
    frames.map((f) => f.type),
    TYPES,
  );
  for (const f of frames) {
    assertSample(f);
    assert.ok(f.blob.equals(BLOB));
  }
});

/** Reads frames from stdin, checks each against messages.SHAPES, writes them back on stdout. */
const ECHO = String.raw`
import json, sys
sys.path.insert(0, sys.argv[1])
from nereid_stub import frames, messages

NESTED = {
    "inputs": messages.StubTensor, "outputs": messages.StubTensor, "requests": messages.StubRequest,
    "responses": messages.StubResponse, "error": messages.StubError, "backend_package": messages.BackendPackage,
}

def check(value, shape, where):
    if shape is messages.Finalize or shape is messages.FinalizeDone:
        assert value == {}, where
        return
    fields = set(shape.__required_keys__) | set(shape.__optional_keys__)
    assert set(value) == fields, f"{where}: fields {sorted(value)} but the shape has {sorted(fields)}"
    for key, sub in NESTED.items():
        v = value.get(key)  # "error" is a StubError in responses, a text in EXECUTE_DONE
        items = [v] if isinstance(v, dict) else v if isinstance(v, list) else []
        for i, item in enumerate(items):
            check(item, sub, f"{where}.{key}[{i}]")

def fast_response(r):
    """The stub's fast encoders for one StubResponse: outputs and error variants, compared to json."""
    outs = [messages.tensor_json(t["name"], t["datatype"], t["shape"], t["in_shm"], t["offset"], t["byte_size"]) for t in r["outputs"]]
    with_outputs = json.loads(messages.response_json(r["rid"], r["final"], outs, r["parameters"], r.get("undeclared")))
    expect = {k: r[k] for k in ("rid", "final", "outputs", "undeclared") if k in r}
    if r["parameters"] not in ("", "{}"):
        expect["parameters"] = r["parameters"]
    assert with_outputs == expect, (with_outputs, expect)
    e = r["error"]
    with_error = json.loads(messages.error_response_json(r["rid"], e["message"], e["code"], e.get("from_model", False), e.get("info")))
    assert with_error == {"rid": r["rid"], "final": True, "error": e}, with_error
    assert json.loads(messages.response_json(r["rid"], True, None)) == {"rid": r["rid"], "final": True}

class Pipe:
    def recv(self, n):
        return sys.stdin.buffer.read1(n)
    def recv_into(self, view):
        return sys.stdin.buffer.readinto1(view)
    def sendall(self, data):
        sys.stdout.buffer.write(data)
    def sendmsg(self, buffers):
        return sum(sys.stdout.buffer.write(b) for b in buffers)

reader, writer = frames.FrameReader(Pipe(), frozenset({messages.EXECUTE_DONE})), frames.FrameWriter(Pipe())
seen = []
while (frame := reader.read()) is not None:
    seen.append(frame.type)
    if frame.type == messages.EXECUTE_DONE:
        # binary (protocol-decode.test.ts checks the stub's encoder against the host's): sent back as it came
        assert frame.header == {} and len(frame.head) > 32, frame.head
        writer.send_bytes(frame.type, frame.head, [bytes(frame.blob)])
        continue
    check(frame.header, messages.SHAPES[frame.type], f"type {frame.type}")
    header = frame.header
    if frame.type == messages.RESPONSE:
        fast_response(header)
    writer.send(frame.type, header, [bytes(frame.blob)])
assert sorted(seen) == sorted(messages.SHAPES), (seen, sorted(messages.SHAPES))
`;

void test('every message type crosses to the stub and back with exactly the fields both sides define', () => {
  const back = execFileSync(PYTHON, ['-c', ECHO, path.join(PACKAGE_ROOT, 'python')], {
    input: encodeAll(),
    maxBuffer: 1 << 24,
  });
  const frames = decodeAll(back);
  assert.deepEqual(
    frames.map((f) => f.type),
    TYPES,
  );
  for (const f of frames) {
    assertSample(f);
    assert.ok(f.blob.equals(BLOB));
  }
});

void test('a field the other side does not know is caught', () => {
  const wrong = encodeFrame(MessageType.Cancel, { rid: 1, i: 1 });
  assert.throws(
    () =>
      execFileSync(PYTHON, ['-c', ECHO, path.join(PACKAGE_ROOT, 'python')], {
        input: Buffer.concat(wrong),
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    /fields \['i', 'rid'\] but the shape has \['rid'\]/,
  );
});

// The stub's FrameReader keeps one 64 KiB receive buffer and FrameWriter sends a frame with one sendmsg
// (part by part past 256 parts): frames that straddle the buffer's end, fill it exactly, outgrow it, or
// carry hundreds of blobs all arrive whole over a real socket, and a frame's blob keeps its bytes after
// later frames reuse the buffer.
const SOCKET_SCRIPT = String.raw`
import json, socket, sys, threading
sys.path.insert(0, sys.argv[1])
from nereid_stub import frames

a, b = socket.socketpair()
a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)  # small kernel buffers: partial reads and sends
b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
# 4 + 5 + len('{"i":4}') + 65520 = 65536: the buffer exactly; 65521 is one byte more
sizes = [0, 1, 30000, 40000, 65520, 65521, 70000, 250000, 5, 65000, 3]
def fill(i, n):
    return bytes((i * 7 + k) % 251 for k in range(n))
def write():
    w = frames.FrameWriter(a)
    for i, n in enumerate(sizes):
        w.send(40 + i, {"i": i}, [fill(i, n)])
    w.send(60, {"parts": 300}, [bytes([k % 256]) * 3 for k in range(300)])
    w.send_text(61, '  {"spaced": true} ', [memoryview(b"xyz")])
    a.close()
threading.Thread(target=write).start()
r = frames.FrameReader(b)
got = []
while (f := r.read()) is not None:
    got.append(f)
out = {"types": [f.type for f in got], "headers": [f.header for f in got[-2:]]}
out["intact"] = all(bytes(f.blob) == fill(i, n) for i, (f, n) in enumerate(zip(got, sizes)))
out["parts"] = bytes(got[-2].blob) == b"".join(bytes([k % 256]) * 3 for k in range(300))
out["last"] = bytes(got[-1].blob).decode()
print(json.dumps(out))
`;

void test("the stub's frame reader and writer move frames of every size over a real socket", () => {
  const out = JSON.parse(
    execFileSync(PYTHON, ['-c', SOCKET_SCRIPT, path.join(PACKAGE_ROOT, 'python')], { encoding: 'utf8' }),
  ) as { types: number[]; headers: unknown[]; intact: boolean; parts: boolean; last: string };
  assert.deepEqual(out.types, [40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 60, 61]);
  assert.equal(out.intact, true, 'every blob arrived with its own bytes');
  assert.equal(out.parts, true, 'a frame of 300 blobs arrived whole');
  assert.deepEqual(out.headers, [{ parts: 300 }, { spaced: true }]);
  assert.equal(out.last, 'xyz');
});
