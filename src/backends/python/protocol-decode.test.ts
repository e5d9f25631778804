// The host's decoders for stub->host messages (protocol.ts `decode`): what a well-behaved stub sends
// arrives typed and whole, and what a broken or hostile one sends becomes the documented fallbacks instead
// of a throw. And the stub's side: every builder in python/nereid_stub/messages.py writes exactly the
// fields of its message's shape.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { PACKAGE_ROOT } from './interpreter.js';
import { MessageType, decode, type StubMessageType } from './protocol.js';

const PYTHON = path.join(PACKAGE_ROOT, '.venv/bin/python');

const info = { type: 'ValueError', message: 'no', frames: [], traceback: 'Traceback ...' };
const tensor = { name: 'OUT', datatype: 'FP32', shape: [1, 4], in_shm: false, offset: 0, byte_size: 16 };

void test('there is a decoder for every stub->host message type and none for the host->stub ones', () => {
  const stubTypes = Object.values(MessageType).filter((t) => t >= MessageType.Hello);
  assert.deepEqual(Object.keys(decode).map(Number).sort(), stubTypes.sort());
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
  const done = decode[MessageType.ExecuteDone]({
    batch: 7,
    error: 'Failed',
    error_info: info,
    responses: [{ rid: 4, final: true }],
    rescheduled: [5, 6],
    started: 100,
    finished: 200,
  });
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
  const done = decode[MessageType.ExecuteDone]({
    batch: '1',
    error: { why: 1 },
    responses: 'none',
    rescheduled: [1, 'two', 3],
    started: 'soon',
    finished: Number.NaN,
  });
  assert.equal(done.batch, 0);
  assert.equal(done.error, '{"why":1}');
  assert.deepEqual(done.responses, []);
  assert.deepEqual(done.rescheduled, [1, 3]);
  assert.deepEqual([done.started, done.finished], [undefined, undefined]);
  assert.deepEqual(decode[MessageType.ExecuteDone]({ batch: 2, responses: [null] }).responses[0].rid, 0);
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
  const types: StubMessageType[] = [MessageType.FinalizeDone, MessageType.Hello, MessageType.BlsCancel];
  for (const t of types) assert.doesNotThrow(() => decode[t]({}));
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
    (m.EXECUTE_DONE, m.execute_failed(1, "E: no", info, 1, 2)),
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
]
out = []
for type_, header in built:
    shape = m.SHAPES[type_]
    keys = set(header)
    ok = set(shape.__required_keys__) <= keys <= set(shape.__required_keys__) | set(shape.__optional_keys__)
    out.append([type_, ok, header])
print(json.dumps(out))
`;

void test("every builder in messages.py writes its message's shape, and the host decodes what it wrote", () => {
  const out = JSON.parse(
    execFileSync(PYTHON, ['-c', BUILDERS, path.join(PACKAGE_ROOT, 'python')], { encoding: 'utf8' }),
  ) as [number, boolean, Record<string, unknown>][];
  assert.equal(out.length, 19);
  for (const [type, ok, header] of out) assert.equal(ok, true, `type ${type}: ${JSON.stringify(header)}`);
  const [, , notFinal] = out[6];
  const r = decode[MessageType.Response](notFinal);
  assert.deepEqual([r.rid, r.final, r.error?.code, r.error?.fromModel], [3, false, 'INVALID_ARG', true]);
  const bls = decode[MessageType.BlsRequest](out[8][2]);
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
  const numeric = decode[MessageType.BlsRequest](out[9][2]);
  assert.deepEqual([numeric.correlationId, numeric.correlationIsString, numeric.traceRid], ['5', false, 0]);
  assert.deepEqual(decode[MessageType.ModelControl](out[15][2]).unloadDependents, true);
  assert.deepEqual(decode[MessageType.BlsCredit](out[18][2]), { call: 4, n: 8 });
});
