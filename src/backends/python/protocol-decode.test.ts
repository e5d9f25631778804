// The host's decoders for stub->host messages (protocol.ts `decode`): what a well-behaved stub sends
// arrives typed and whole, and what a broken or hostile one sends becomes the documented fallbacks instead
// of a throw. EXECUTE_DONE's header is a binary layout (decodeExecuteDone): one that is cut short, says
// more than it holds or carries a bad entry is a clear error, never a read past its end. And the stub's
// side: every builder in python/nereid_stub/messages.py writes exactly the fields of its message's shape
// (EXECUTE_DONE: the very bytes the host's own encoder writes).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { PACKAGE_ROOT } from './interpreter.js';
import {
  BINARY_HEADERS,
  MessageType,
  decode,
  decodeExecuteDone,
  encodeExecuteDone,
  type JsonStubMessageType,
  type StubTensor,
} from './protocol.js';

const PYTHON = path.join(PACKAGE_ROOT, '.venv/bin/python');

const info = { type: 'ValueError', message: 'no', frames: [], traceback: 'Traceback ...' };
const tensor: StubTensor = {
  name: 'OUT',
  datatype: 'FP32',
  shape: [1, 4],
  in_shm: false,
  offset: 0,
  byte_size: 16,
};

void test('there is a decoder for every stub->host message type and none for the host->stub ones', () => {
  const stubTypes = Object.values(MessageType).filter(
    (t) => t >= MessageType.Hello && !BINARY_HEADERS.has(t),
  );
  assert.deepEqual(Object.keys(decode).map(Number).sort(), stubTypes.sort());
  assert.deepEqual([...BINARY_HEADERS], [MessageType.ExecuteDone]);
});

void test("a well-behaved stub's messages decode whole", () => {
  const response = {
    rid: 3,
    final: true,
    outputs: [tensor],
    parameters: '{"a":1}',
    error: { code: 3, message: 'bad', from_model: true, info },
    undeclared: ['EXTRA'],
  };
  assert.deepEqual(decode[MessageType.Response](response), {
    rid: 3,
    final: true,
    outputs: [tensor],
    parameters: '{"a":1}',
    error: { code: 'INVALID_ARG', message: 'bad', fromModel: true, info },
    undeclared: ['EXTRA'],
  });
  const done = decodeExecuteDone(
    encodeExecuteDone({
      batch: 7,
      error: 'Failed',
      error_info: info,
      responses: [{ rid: 4, final: true }],
      rescheduled: [5, 6],
      started: 100,
      finished: 200,
    }),
  );
  assert.equal(done.batch, 7);
  assert.equal(done.error, 'Failed');
  assert.deepEqual(done.errorInfo, info);
  assert.deepEqual(
    done.responses.map((r) => [r.rid, r.final, r.error]),
    [[4, true, undefined]],
  );
  assert.deepEqual(done.rescheduled, [5, 6]);
  assert.deepEqual([done.started, done.finished], [100, 200]);
  const bls = decode[MessageType.BlsRequest]({
    call: 2,
    model_name: 'other',
    model_version: 3,
    request_id: 'r',
    correlation_id: 'seq',
    correlation_is_string: true,
    flags: 3,
    timeout_us: 500,
    parameters: '{}',
    requested_outputs: ['OUT'],
    inputs: [tensor],
    trace_rid: 9,
    window: 32,
  });
  assert.deepEqual(bls, {
    call: 2,
    modelName: 'other',
    modelVersion: '3',
    requestId: 'r',
    correlationId: 'seq',
    correlationIsString: true,
    flags: 3,
    timeoutUs: 500,
    parameters: '{}',
    requestedOutputs: ['OUT'],
    inputs: [tensor],
    traceRid: 9,
    window: 32,
  });
  assert.deepEqual(
    decode[MessageType.ModelControl]({
      call: 1,
      op: 'load',
      model_name: 'm',
      config: '{}',
      files: [['file:1/model.py', 0, 3]],
      unload_dependents: true,
      version: '2',
    }),
    {
      call: 1,
      op: 'load',
      modelName: 'm',
      config: '{}',
      files: [['file:1/model.py', 0, 3]],
      unloadDependents: true,
      version: '2',
    },
  );
  assert.deepEqual(decode[MessageType.InitDone]({ error: 'E', error_info: info }), {
    failed: true,
    error: 'E',
    errorInfo: info,
  });
  assert.deepEqual(decode[MessageType.InitDone]({}), {
    failed: false,
    error: undefined,
    errorInfo: undefined,
  });
  assert.deepEqual(decode[MessageType.AutoCompleteDone]({ config: '{}' }), {
    error: undefined,
    config: '{}',
  });
  assert.deepEqual(decode[MessageType.Log]({ level: 2, message: 'hi', file: 'model.py', line: 4 }), {
    level: 2,
    message: 'hi',
    file: 'model.py',
    line: 4,
  });
  assert.deepEqual(decode[MessageType.Fatal]({ message: 'no numpy' }), { message: 'no numpy' });
  assert.deepEqual(decode[MessageType.BlsCancel]({ call: 5 }), { call: 5 });
  assert.deepEqual(decode[MessageType.Hello]({ pid: 42, python: '3.11', numpy: '2' }), { pid: 42 });
  const metrics = decode[MessageType.Metrics]({
    query: 8,
    families: [{ n: 'c', d: 'a counter', k: 'counter', m: [{ l: { x: 'y' }, v: 2, s: 0 }] }],
  });
  assert.equal(metrics.query, 8);
  assert.deepEqual(
    metrics.families.map((f) => [f.name, f.kind, f.metrics.length]),
    [['c', 'counter', 1]],
  );
});

void test('malformed fields become the fallbacks their readers expect, never a throw', () => {
  const r = decode[MessageType.Response]({
    rid: 'x',
    final: 1,
    parameters: 5,
    error: 'boom',
    undeclared: 'A',
  });
  assert.deepEqual(r, {
    rid: 0,
    final: false,
    outputs: undefined,
    parameters: '',
    // an error that is not an object: INTERNAL, and its JSON as the text
    error: { code: 'INTERNAL', message: '"boom"', fromModel: false, info: undefined },
    undeclared: undefined,
  });
  const bls = decode[MessageType.BlsRequest]({
    model_version: -1,
    flags: '3',
    timeout_us: -5,
    requested_outputs: 7,
  });
  assert.deepEqual(
    [
      bls.call,
      bls.modelVersion,
      bls.flags,
      bls.timeoutUs,
      bls.requestedOutputs,
      bls.parameters,
      bls.traceRid,
    ],
    [0, '', 3, 0, [], '', 0],
  );
  const control = decode[MessageType.ModelControl]({ call: 4, op: 7, files: {} });
  assert.deepEqual(
    [control.op, control.modelName, control.files, control.unloadDependents],
    ['7', '', [], false],
  );
  assert.deepEqual(decode[MessageType.InitDone]({ error: 5 }), {
    failed: true,
    error: undefined,
    errorInfo: undefined,
  });
  assert.deepEqual(decode[MessageType.AutoCompleteDone]({ error: { e: 1 }, config: 3 }), {
    error: '{"e":1}',
    config: undefined,
  });
  assert.deepEqual(decode[MessageType.Log]({ level: 'x', file: 3 }), {
    level: 0,
    message: 'undefined',
    file: '',
    line: 0,
  });
  assert.deepEqual(decode[MessageType.Fatal]({ message: 3 }), { message: undefined });
  assert.deepEqual(decode[MessageType.Metrics]({ families: 'x' }), { query: 0, families: [] });
  const types: JsonStubMessageType[] = [MessageType.FinalizeDone, MessageType.Hello, MessageType.BlsCancel];
  for (const t of types) assert.doesNotThrow(() => decode[t]({}));
});

const sampleDone = encodeExecuteDone({
  batch: 9,
  responses: [
    { rid: 4, final: true, outputs: [tensor, { ...tensor, name: 'Ü', in_shm: true, offset: 64 }] },
    { rid: 5, final: true, error: { code: 3, message: 'bad' } },
  ],
  rescheduled: [6],
  started: 100,
  finished: 200,
});

void test('an EXECUTE_DONE cut short anywhere, or saying more than it holds, is a clear error', () => {
  const whole = decodeExecuteDone(sampleDone);
  assert.deepEqual(
    whole.responses.map((r) => [r.rid, r.final, r.error?.code, r.outputs]),
    [
      [4, true, undefined, [tensor, { ...tensor, name: 'Ü', in_shm: true, offset: 64 }]],
      [5, true, 'INVALID_ARG', undefined],
    ],
  );
  assert.deepEqual([whole.batch, whole.rescheduled, whole.started, whole.finished], [9, [6], 100, 200]);
  for (let n = 0; n < sampleDone.length; n++) {
    assert.throws(
      () => decodeExecuteDone(sampleDone.subarray(0, n)),
      /malformed EXECUTE_DONE from the Python stub: (header truncated|an entry is not JSON)/,
      `cut at ${n} of ${sampleDone.length}`,
    );
  }
  const trailing = Buffer.concat([sampleDone, Buffer.from([0])]);
  assert.throws(() => decodeExecuteDone(trailing), /bytes after the last response/);
  // Counts far beyond what the header holds: the reads run out, nothing that large is allocated.
  for (const at of [20, 24, 28]) {
    const lying = Buffer.from(sampleDone);
    lying.writeUInt32LE(0xffffffff, at);
    assert.throws(() => decodeExecuteDone(lying), /header truncated/, `count at ${at}`);
  }
  const badKind = Buffer.from(sampleDone);
  badKind[32 + 4] = 7; // the first response's kind (after the one rescheduled rid)
  assert.throws(() => decodeExecuteDone(badKind), /response kind 7/);
  const notJson = encodeExecuteDone({ batch: 1, error: 'x' });
  notJson[32] = 0x7b; // '{' where the tail starts: the tail's JSON no longer parses
  notJson[33] = 0x7b;
  assert.throws(() => decodeExecuteDone(notJson), /an entry is not JSON/);
});

void test("an EXECUTE_DONE's odd but well-formed fields become the fallbacks their readers expect", () => {
  const unstamped = decodeExecuteDone(encodeExecuteDone({ batch: 2 }));
  assert.deepEqual(
    [unstamped.started, unstamped.finished, unstamped.error],
    [undefined, undefined, undefined],
  );
  // A JSON response that is not an object answers no request (rid 0); a tail that is not an object, none.
  const odd = Buffer.from(
    encodeExecuteDone({ batch: 2, responses: [{ rid: 1, final: true, error: { code: 1, message: '' } }] }),
  );
  const entry = 32;
  const text = Buffer.from('null');
  const withNull = Buffer.concat([odd.subarray(0, entry + 1), Buffer.from([4, 0, 0, 0]), text]);
  assert.equal(decodeExecuteDone(withNull).responses[0].rid, 0);
  const tailArray = Buffer.concat([encodeExecuteDone({ batch: 3 }), Buffer.from('[1]')]);
  tailArray.writeUInt32LE(3, 28);
  assert.equal(decodeExecuteDone(tailArray).error, undefined);
  // tensors.ts checks each descriptor where it is read: a datatype the stub made up arrives as it is
  const made = Buffer.from(
    encodeExecuteDone({ batch: 4, responses: [{ rid: 1, final: true, outputs: [tensor] }] }),
  );
  const dtypeAt = made.indexOf('FP32');
  made.write('XX32', dtypeAt, 'latin1');
  const outputs = decodeExecuteDone(made).responses[0].outputs;
  assert.deepEqual(outputs, [{ ...tensor, datatype: 'XX32' }]);
});

// Each builder's output against its shape in messages.SHAPES: the required fields present, nothing else.
const BUILDERS = String.raw`
import json, sys
sys.path.insert(0, sys.argv[1])
from nereid_stub import messages as m

info = {"type": "E", "message": "no", "frames": [], "traceback": "t"}
t = m.tensor_json("IN", "FP32", [1], False, 0, 4)
built = [
    (m.HELLO, m.hello(1, "3.11", "2")),
    (m.INIT_DONE, m.init_done()),
    (m.INIT_DONE, m.init_failed("E: no", info)),
    (m.AUTOCOMPLETE_DONE, m.autocomplete_done("{}")),
    (m.AUTOCOMPLETE_DONE, m.autocomplete_failed("E: no")),
    (m.RESPONSE, json.loads(m.error_json(3, "bad", 3, True, info, final=False))),
    (m.RESPONSE, json.loads(m.error_json(3, "bad", 3))),
    (m.BLS_REQUEST, json.loads(m.bls_request_json(1, "x", -1, "r", "seq", 0, 0, "{}", ["OUT"], [t], 7, 32))),
    (m.BLS_REQUEST, json.loads(m.bls_request_json(1, "x", -1, "r", 5, 0, 0, "{}", [], []))),
    (m.BLS_CANCEL, m.bls_cancel(1)),
    (m.LOG, m.log(0, "hi", "model.py", 3)),
    (m.FINALIZE_DONE, m.finalize_done()),
    (m.FATAL, m.fatal("no numpy")),
    (m.MODEL_CONTROL, m.model_control(1, m.load_op("x", "{}", [("file:1/model.py", 0, 3)]))),
    (m.MODEL_CONTROL, m.model_control(2, m.unload_op("x", True))),
    (m.MODEL_CONTROL, m.model_control(3, m.ready_op("x", ""))),
    (m.METRICS, m.metrics_reply(4, [])),
    (m.BLS_CREDIT, m.bls_credit(4, 8)),
    # Text that needs escaping, through bls_request_json's own string encoder
    (m.BLS_REQUEST, json.loads(m.bls_request_json(2, 'Ü"\\\n', 3, "a\u2028b", "é", 3, 9, '{"k":"v"}', ["Ω", "B"], []))),
]
out = []
for type_, header in built:
    shape = m.SHAPES[type_]
    keys = set(header)
    ok = set(shape.__required_keys__) <= keys <= set(shape.__required_keys__) | set(shape.__optional_keys__)
    out.append([type_, ok, header])
# EXECUTE_DONE is binary: its builders' bytes, for the host to decode (and compare with its own encoder's)
outs = [m.tensor_bin("OUT", "FP32", [1, 4], False, 0, 16), m.tensor_bin("Ü", "BYTES", [2], True, 64, 9)]
binary = [
    m.execute_done(9, [m.response_entry(4, True, outs, '{"a":1}', ["EXTRA"]), m.response_entry(5, False, [])], [7, 8], 100, 200),
    m.execute_done(3, [m.json_entry(m.error_json(6, "bad é", 3, True, info))], [], 1, 2),
    m.execute_failed(1, "E: no", info, 1, 2),
]
print(json.dumps({"json": out, "binary": [b.hex() for b in binary]}))
`;

void test("every builder in messages.py writes its message's shape, and the host decodes what it wrote", () => {
  const built = JSON.parse(
    execFileSync(PYTHON, ['-c', BUILDERS, path.join(PACKAGE_ROOT, 'python')], { encoding: 'utf8' }),
  ) as { json: [number, boolean, Record<string, unknown>][]; binary: string[] };
  const out = built.json;
  assert.equal(out.length, 19);
  for (const [type, ok, header] of out) assert.equal(ok, true, `type ${type}: ${JSON.stringify(header)}`);
  const [outputs, errorOnly, failed] = built.binary.map((hex) => Buffer.from(hex, 'hex'));
  const out0: StubTensor = {
    name: 'OUT',
    datatype: 'FP32',
    shape: [1, 4],
    in_shm: false,
    offset: 0,
    byte_size: 16,
  };
  const out1: StubTensor = {
    name: 'Ü',
    datatype: 'BYTES',
    shape: [2],
    in_shm: true,
    offset: 64,
    byte_size: 9,
  };
  const sameAsHost = {
    batch: 9,
    responses: [
      { rid: 4, final: true, outputs: [out0, out1], parameters: '{"a":1}', undeclared: ['EXTRA'] },
      { rid: 5, final: false, outputs: [] },
    ],
    rescheduled: [7, 8],
    started: 100,
    finished: 200,
  };
  assert.ok(outputs.equals(encodeExecuteDone(sameAsHost)), 'the stub writes the bytes the host would');
  const done = decodeExecuteDone(outputs);
  assert.deepEqual(
    done.responses.map((r) => [r.rid, r.final, r.outputs, r.parameters, r.undeclared]),
    [
      [4, true, [out0, out1], '{"a":1}', ['EXTRA']],
      [5, false, [], '', undefined],
    ],
  );
  assert.deepEqual([done.batch, done.rescheduled, done.started, done.finished], [9, [7, 8], 100, 200]);
  const e = decodeExecuteDone(errorOnly).responses[0];
  assert.deepEqual(
    [e.rid, e.final, e.error?.code, e.error?.message, e.error?.fromModel],
    [6, true, 'INVALID_ARG', 'bad é', true],
  );
  const f = decodeExecuteDone(failed);
  assert.deepEqual(
    [f.batch, f.error, f.errorInfo, f.responses, f.started],
    [1, 'E: no', { type: 'E', message: 'no', frames: [], traceback: 't' }, [], 1],
  );
  const [, , notFinal] = out[5];
  const r = decode[MessageType.Response](notFinal);
  assert.deepEqual([r.rid, r.final, r.error?.code, r.error?.fromModel], [3, false, 'INVALID_ARG', true]);
  const bls = decode[MessageType.BlsRequest](out[7][2]);
  assert.deepEqual(
    [bls.correlationId, bls.correlationIsString, bls.traceRid, bls.window, bls.inputs],
    [
      'seq',
      true,
      7,
      32,
      [{ name: 'IN', datatype: 'FP32', shape: [1], in_shm: false, offset: 0, byte_size: 4 }],
    ],
  );
  const numeric = decode[MessageType.BlsRequest](out[8][2]);
  assert.deepEqual([numeric.correlationId, numeric.correlationIsString, numeric.traceRid], ['5', false, 0]);
  assert.deepEqual(decode[MessageType.ModelControl](out[14][2]).unloadDependents, true);
  assert.deepEqual(decode[MessageType.BlsCredit](out[17][2]), { call: 4, n: 8 });
  const escaped = decode[MessageType.BlsRequest](out[18][2]);
  assert.deepEqual(
    [
      escaped.call,
      escaped.modelName,
      escaped.modelVersion,
      escaped.requestId,
      escaped.correlationId,
      escaped.correlationIsString,
      escaped.flags,
      escaped.timeoutUs,
      escaped.parameters,
      escaped.requestedOutputs,
      escaped.window,
    ],
    [2, 'Ü"\\\n', '3', 'a\u2028b', 'é', true, 3, 9, '{"k":"v"}', ['Ω', 'B'], 0],
  );
});
