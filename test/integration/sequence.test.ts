// The sequence batcher over HTTP with the real server and the bundled stateful example models: Triton's
// sequence client examples' expectations, implicit state, control values, correlation id kinds, Triton's
// error texts, idle timeouts, slots released by END, and more sequences than slots.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  EXAMPLES,
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  type TestServer,
} from './harness.js';

const onnx = (model: string): Buffer => readFileSync(path.join(EXAMPLES, model, '1', 'model.onnx'));
const config = (model: string): string => readFileSync(path.join(EXAMPLES, model, 'config.pbtxt'), 'utf8');

/** The example's config under another name, with text replaced. */
function variant(
  model: string,
  name: string,
  edits: [string, string][],
): { config: string; files: Record<string, Buffer> } {
  let text = config(model).replace(`name: "${model}"`, `name: "${name}"`);
  for (const [from, to] of edits) {
    assert.ok(text.includes(from), `${model} config has '${from}'`);
    text = text.replace(from, to);
  }
  return { config: text, files: { '1/model.onnx': onnx(model) } };
}

const example = (model: string): { config: string; files: Record<string, Buffer> } =>
  variant(model, model, []);

interface InferResult {
  status: number;
  value?: number;
  error?: string;
}

type SequenceId = number | string | bigint;

/** One request of a sequence: INPUT [1,1] INT32; returns OUTPUT[0] or the error text. */
async function step(
  s: TestServer,
  model: string,
  id: SequenceId | undefined,
  input: number,
  flags: { start?: boolean; end?: boolean } = {},
): Promise<InferResult> {
  const parameters: Record<string, unknown> = {};
  if (id !== undefined) parameters.sequence_id = typeof id === 'bigint' ? `@@${id}@@` : id;
  if (flags.start) parameters.sequence_start = true;
  if (flags.end) parameters.sequence_end = true;
  // A uint64 beyond 2^53 must reach the server exactly: splice it into the JSON text as a bare number.
  const body = JSON.stringify({
    parameters,
    inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [input] }],
  }).replace(/"@@(\d+)@@"/, '$1');
  const res = await post(`${s.url}/v2/models/${model}/infer`, body);
  const json = res.json<{ outputs?: { name: string; data: number[] }[]; error?: string }>();
  if (res.status !== 200) return { status: res.status, error: json.error };
  const out = json.outputs?.find((o) => o.name === 'OUTPUT');
  assert.ok(out, `OUTPUT in ${JSON.stringify(json)}`);
  assert.equal(json.outputs?.length, 1, 'state outputs never reach the client');
  return { status: 200, value: out.data[0] };
}

/** Sends `values` as one sequence, one request after another; returns every OUTPUT. */
async function sequence(
  s: TestServer,
  model: string,
  id: SequenceId,
  values: readonly number[],
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const r = await step(s, model, id, values[i], { start: i === 0, end: i === values.length - 1 });
    assert.equal(r.status, 200, `sequence ${String(id)} step ${i}: ${r.error}`);
    out.push(r.value!);
  }
  return out;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// The values Triton's simple_*_sequence_*_client examples send, and what they check.
const VALUES = [11, 7, 5, 3, 2, 0, 1];
// Negated, with 0 rather than -0 (JSON has no -0).
const NEGATED = VALUES.map((v) => -v || 0);

describe('sequence batcher over HTTP', () => {
  let repo: string;
  let s: TestServer;

  before(async () => {
    repo = makeRepository({
      simple_sequence: example('simple_sequence'),
      simple_dyna_sequence: example('simple_dyna_sequence'),
      simple_string_dyna_sequence: example('simple_string_dyna_sequence'),
      accumulator_state: example('accumulator_state'),
      // One instance with two slots, sequences kept open for a minute: more sequences than slots.
      accumulator_two_slots: variant('accumulator_state', 'accumulator_two_slots', [
        ['max_batch_size: 8', 'max_batch_size: 2'],
        ['max_sequence_idle_microseconds: 5000000', 'max_sequence_idle_microseconds: 60000000'],
        ['kind: KIND_CPU', 'kind: KIND_CPU\n    count: 1'],
      ]),
      // A single slot: a second sequence waits until the first one ends.
      sequence_one_slot: variant('simple_sequence', 'sequence_one_slot', [
        ['max_batch_size: 8', 'max_batch_size: 1'],
        ['kind: KIND_CPU', 'kind: KIND_CPU\n    count: 1'],
      ]),
      // Sequences idle for 300 ms lose their slot.
      sequence_short_idle: variant('simple_sequence', 'sequence_short_idle', [
        ['sequence_batching {', 'sequence_batching {\n  max_sequence_idle_microseconds: 300000'],
      ]),
    });
    s = await startServer([`--model-repository=${repo}`]);
  });

  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  it('simple_sequence answers what Triton’s sequence client examples check, for interleaved sequences', async () => {
    // Sent concurrently: two uint64 ids and a string id, as simple_grpc_sequence_stream_infer_client does.
    const [a, b, c] = await Promise.all([
      sequence(s, 'simple_sequence', 1000, [0, ...VALUES]),
      sequence(s, 'simple_sequence', 1001, [100, ...NEGATED]),
      sequence(s, 'simple_sequence', '6a3e1e2c-uuid-like-id', [20, ...NEGATED]),
    ]);
    assert.deepEqual(a, [1, ...VALUES], 'OUTPUT = (INPUT + START) * READY');
    assert.deepEqual(b, [101, ...NEGATED]);
    assert.deepEqual(c, [21, ...NEGATED]);
  });

  it('simple_dyna_sequence adds the correlation id to the last response (the clients’ -d mode)', async () => {
    const [a, b] = await Promise.all([
      sequence(s, 'simple_dyna_sequence', 1000, [0, ...VALUES]),
      sequence(s, 'simple_dyna_sequence', 1001, [100, ...NEGATED]),
    ]);
    assert.deepEqual(a, [1, 11, 7, 5, 3, 2, 0, 1 + 1000]);
    assert.deepEqual(b, [101, -11, -7, -5, -3, -2, 0, -1 + 1001]);
  });

  it('simple_string_dyna_sequence keeps a running sum and adds a string correlation id at the end', async () => {
    const out = await sequence(s, 'simple_string_dyna_sequence', '1002', [20, ...NEGATED]);
    const expected: number[] = [20];
    for (const v of VALUES) expected.push(expected[expected.length - 1] - v);
    expected[expected.length - 1] += 1002;
    assert.deepEqual(out, expected);
  });

  it('control values: START, END, READY and a 64-bit CORRID reach the model', async () => {
    // A one-request sequence: START and END together. CORRID 2^32 + 7 is cast to int32 by the model: 7.
    const big = 2n ** 32n + 7n;
    const r = await step(s, 'simple_dyna_sequence', big, 5, { start: true, end: true });
    assert.deepEqual(r, { status: 200, value: 5 + 1 + 7 });
    // The full uint64 range is accepted as a correlation id.
    const max = 2n ** 64n - 1n;
    const m = await step(s, 'simple_dyna_sequence', max, 5, { start: true, end: true });
    assert.deepEqual(m, { status: 200, value: 5 + 1 - 1 }, 'uint64 max is -1 as int32');
  });

  it('implicit state: interleaved sequences accumulate independently, and state starts over on START', async () => {
    const sums = await Promise.all(
      [1, 2, 3, 4].map((k) => sequence(s, 'accumulator_state', `acc-${k}`, [k, k * 10, k * 100, -k])),
    );
    sums.forEach((out, i) => {
      const k = i + 1;
      assert.deepEqual(out, [k, 11 * k, 111 * k, 110 * k], `sequence acc-${k}`);
    });
    // The same id again: a new sequence from zero.
    assert.deepEqual(await sequence(s, 'accumulator_state', 'acc-1', [5, 5]), [5, 10]);
    // A START in the middle of an open sequence restarts it (Triton logs a conflict and carries on).
    assert.deepEqual((await step(s, 'accumulator_state', 77, 3, { start: true })).value, 3);
    assert.deepEqual((await step(s, 'accumulator_state', 77, 4)).value, 7);
    assert.deepEqual((await step(s, 'accumulator_state', 77, 10, { start: true })).value, 10);
    assert.deepEqual((await step(s, 'accumulator_state', 77, 1, { end: true })).value, 11);
  });

  it('rejects requests without a correlation id, or that do not start their sequence, with Triton’s texts', async () => {
    const none = await step(s, 'simple_sequence', undefined, 1, { start: true });
    assert.equal(none.status, 400);
    assert.equal(
      none.error,
      "inference request to model 'simple_sequence' must specify a non-zero or non-empty correlation ID",
    );
    const zero = await step(s, 'simple_sequence', 0, 1, { start: true });
    assert.equal(zero.status, 400);
    const empty = await step(s, 'simple_sequence', '', 1, { start: true });
    assert.equal(empty.status, 400);
    assert.match(empty.error!, /non-zero or non-empty correlation ID/);

    const notStarted = await step(s, 'simple_sequence', 4242, 1);
    assert.equal(notStarted.status, 400);
    assert.equal(
      notStarted.error,
      "inference request for sequence 4242 to model 'simple_sequence' must specify the START flag on the first request of the sequence",
    );
    const notStartedText = await step(s, 'simple_sequence', 'no-start', 1);
    assert.match(
      notStartedText.error!,
      /^inference request for sequence no-start to model 'simple_sequence'/,
    );

    // After END the id is unknown again.
    await sequence(s, 'simple_sequence', 'finished', [1, 2]);
    const late = await step(s, 'simple_sequence', 'finished', 3);
    assert.equal(late.status, 400);
    assert.match(late.error!, /must specify the START flag/);

    // A uint64 id and the same digits as a string are different sequences.
    assert.equal((await step(s, 'simple_sequence', 5151, 1, { start: true })).status, 200);
    assert.equal((await step(s, 'simple_sequence', '5151', 1)).status, 400);
    assert.equal((await step(s, 'simple_sequence', 5151, 1, { end: true })).status, 200);

    // Batch size 2 is refused (the sequence batcher takes one row per request).
    const res = await post(`${s.url}/v2/models/simple_sequence/infer`, {
      parameters: { sequence_id: 9, sequence_start: true },
      inputs: [{ name: 'INPUT', shape: [2, 1], datatype: 'INT32', data: [1, 2] }],
    });
    assert.equal(res.status, 400);
    assert.match(
      res.json<{ error: string }>().error,
      /must specify batch-size 1 due to requirements of sequence batcher/,
    );

    // The control inputs are the server's: a client may not send them, and metadata does not list them.
    const bad = await post(`${s.url}/v2/models/simple_sequence/infer`, {
      parameters: { sequence_id: 10, sequence_start: true },
      inputs: [
        { name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [1] },
        { name: 'START', shape: [1, 1], datatype: 'INT32', data: [1] },
      ],
    });
    assert.equal(bad.status, 400);
    // One input too many: Triton reports the count before the unknown name.
    assert.match(
      bad.json<{ error: string }>().error,
      /expected 1 inputs but got 2 inputs for model 'simple_sequence'/,
    );
    const swapped = await post(`${s.url}/v2/models/simple_sequence/infer`, {
      parameters: { sequence_id: 10, sequence_start: true },
      inputs: [{ name: 'START', shape: [1, 1], datatype: 'INT32', data: [1] }],
    });
    assert.equal(swapped.status, 400);
    assert.match(swapped.json<{ error: string }>().error, /^unexpected inference input 'START'/);
    const meta = (await request(`${s.url}/v2/models/accumulator_state`)).json<{
      inputs: { name: string }[];
      outputs: { name: string }[];
    }>();
    assert.deepEqual(
      meta.inputs.map((i) => i.name),
      ['INPUT'],
    );
    assert.deepEqual(
      meta.outputs.map((o) => o.name),
      ['OUTPUT'],
    );
    // The server is still healthy.
    assert.equal((await fetch(`${s.url}/v2/health/live`)).status, 200);
  });

  it('an idle sequence loses its slot: its next request must START again', async () => {
    assert.equal((await step(s, 'sequence_short_idle', 'idler', 1, { start: true })).status, 200);
    assert.equal((await step(s, 'sequence_short_idle', 'idler', 2)).status, 200, 'still open');
    await sleep(1000);
    const late = await step(s, 'sequence_short_idle', 'idler', 3);
    assert.equal(late.status, 400);
    assert.match(late.error!, /sequence idler to model 'sequence_short_idle' must specify the START flag/);
    // A new sequence under the same id is fine.
    assert.deepEqual(await sequence(s, 'sequence_short_idle', 'idler', [1, 2]), [2, 2]);
  });

  it('END releases the slot: a sequence waiting for the only slot runs once the first one ends', async () => {
    assert.equal((await step(s, 'sequence_one_slot', 'first', 1, { start: true })).status, 200);
    let secondDone = false;
    const second = step(s, 'sequence_one_slot', 'second', 40, { start: true }).then((r) => {
      secondDone = true;
      return r;
    });
    await sleep(500);
    assert.equal(
      secondDone,
      false,
      'the second sequence waits in the backlog while the first holds the slot',
    );
    assert.deepEqual(await step(s, 'sequence_one_slot', 'first', 2, { end: true }), {
      status: 200,
      value: 2,
    });
    assert.deepEqual(await second, { status: 200, value: 41 });
    assert.deepEqual(await step(s, 'sequence_one_slot', 'second', 2, { end: true }), {
      status: 200,
      value: 2,
    });
  });

  it('more sequences than slots wait for a slot instead of failing', async () => {
    // 12 sequences of 5 steps over 2 slots; each client sends its next step after the previous answer.
    const ids = Array.from({ length: 12 }, (_, i) => 5000 + i);
    const results = await Promise.all(
      ids.map((id) => sequence(s, 'accumulator_two_slots', id, [1, 2, 3, 4, id])),
    );
    results.forEach((out, i) => assert.deepEqual(out, [1, 3, 6, 10, 10 + ids[i]]));
  });

  it('binds each sequence to one instance and slot, spreading new sequences over the instances', async () => {
    const logging = await post(`${s.url}/v2/logging`, { log_verbose_level: 1 });
    assert.equal(logging.status, 200);
    try {
      await Promise.all([
        sequence(s, 'simple_dyna_sequence', 31, [1, 2, 3]),
        sequence(s, 'simple_dyna_sequence', 32, [1, 2, 3]),
      ]);
    } finally {
      await post(`${s.url}/v2/logging`, { log_verbose_level: 0 });
    }
    const bound = (id: number): string[] =>
      s.logs.filter((l) => l.includes(`sequence ${id} of model 'simple_dyna_sequence' bound to instance`));
    const [a, b] = [bound(31), bound(32)];
    assert.equal(a.length, 1, 'sequence 31 is bound once');
    assert.equal(b.length, 1, 'sequence 32 is bound once');
    const instanceOf = (line: string): string => /instance (\S+), slot/.exec(line)![1];
    assert.notEqual(instanceOf(a[0]), instanceOf(b[0]), 'two sequences on two instances');
  });
});
