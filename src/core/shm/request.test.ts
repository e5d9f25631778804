// One request's shared memory: inputs read from regions, outputs written into them, sizes checked with
// Triton's texts, and the regions held exactly as long as the request.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { NereidError, type ErrorCode } from '../../common/errors.js';
import type { InferenceRequest, InferenceResponse } from '../types.js';
import { CLIENT_SHM_DISABLED, SystemSharedMemoryManager } from './manager.js';
import { inferWithSharedMemory, prepareShmRequest, usesSharedMemory } from './request.js';
import { ResponseStream } from '../response-stream.js';
import { ShmObjects } from './shm.testkit.js';

const objects = new ShmObjects();
after(() => objects.cleanup());

const fails = (code: ErrorCode, message: string | RegExp) => (err: unknown) =>
  err instanceof NereidError &&
  err.code === code &&
  (typeof message === 'string' ? err.message === message : message.test(err.message));

const int32s = (...v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);
const EMPTY = Buffer.alloc(0);

async function setup(): Promise<{ m: SystemSharedMemoryManager; key: string }> {
  const m = new SystemSharedMemoryManager({ allowClientShm: true });
  // [0,16): input A (4 x INT32) · [16,32): output · [32,48): BYTES input
  const content = Buffer.alloc(48);
  int32s(1, 2, 3, 4).copy(content, 0);
  const bytes = Buffer.concat([int32s(3), Buffer.from('abc')]);
  bytes.copy(content, 32);
  const key = objects.create(content);
  await m.register('in', key, 0, 16);
  await m.register('out', key, 16, 16);
  await m.register('str', key, 32, 16);
  return { m, key };
}

const request = (over: Partial<InferenceRequest> = {}): InferenceRequest => ({
  modelName: 'm',
  inputs: [
    {
      name: 'A',
      datatype: 'INT32',
      shape: [4],
      data: EMPTY,
      sharedMemory: { region: 'in', offset: 0, byteSize: 16 },
    },
    { name: 'B', datatype: 'INT32', shape: [1], data: int32s(7) },
  ],
  outputs: [{ name: 'Y', sharedMemory: { region: 'out', offset: 4, byteSize: 12 } }, { name: 'Z' }],
  ...over,
});

const response = (outputs: InferenceResponse['outputs']): InferenceResponse => ({
  modelName: 'm',
  modelVersion: '1',
  id: '',
  outputs,
  parameters: {},
  final: true,
});

void test('usesSharedMemory looks at inputs and requested outputs', () => {
  assert.equal(usesSharedMemory(request()), true);
  assert.equal(usesSharedMemory({ modelName: 'm', inputs: [] }), false);
  assert.equal(
    usesSharedMemory({
      modelName: 'm',
      inputs: [],
      outputs: [{ name: 'Y', sharedMemory: { region: 'r', offset: 0, byteSize: 1 } }],
    }),
    true,
  );
});

void test('inputs are read from their regions; outputs go to theirs and come back without data', async () => {
  const { m, key } = await setup();
  const shm = await prepareShmRequest(m, request());
  assert.deepEqual(shm.request.inputs[0], {
    name: 'A',
    datatype: 'INT32',
    shape: [4],
    data: int32s(1, 2, 3, 4),
  });
  assert.deepEqual(shm.request.inputs[1].data, int32s(7));
  assert.deepEqual(shm.request.outputs, [{ name: 'Y' }, { name: 'Z' }]);
  assert.equal(m.status().length, 3);

  const written = await shm.writeOutputs(
    response([
      { name: 'Y', datatype: 'INT32', shape: [3], data: int32s(10, 20, 30) },
      { name: 'Z', datatype: 'INT32', shape: [1], data: int32s(5) },
    ]),
  );
  assert.deepEqual(written.outputs[0], {
    name: 'Y',
    datatype: 'INT32',
    shape: [3],
    data: EMPTY,
    sharedMemory: { region: 'out', offset: 4, byteSize: 12 },
  });
  assert.deepEqual(written.outputs[1].data, int32s(5));
  assert.deepEqual(objects.read(key).subarray(20, 32), int32s(10, 20, 30));
  assert.deepEqual(objects.read(key).subarray(16, 20), Buffer.alloc(4), 'bytes before the offset untouched');
  shm.release();
  shm.release(); // idempotent
  await m.unregister();
  assert.equal(m.size, 0);
});

void test('BYTES inputs are read whole, then validated by the core', async () => {
  const { m } = await setup();
  const shm = await prepareShmRequest(
    m,
    request({
      inputs: [
        {
          name: 'S',
          datatype: 'BYTES',
          shape: [1],
          data: EMPTY,
          sharedMemory: { region: 'str', offset: 0, byteSize: 7 },
        },
      ],
      outputs: [],
    }),
  );
  assert.deepEqual(shm.request.inputs[0].data, Buffer.concat([int32s(3), Buffer.from('abc')]));
  shm.release();
  await m.close();
});

void test("a fixed-size input whose region size does not match its shape fails with Triton's text", async () => {
  const { m } = await setup();
  await assert.rejects(
    prepareShmRequest(
      m,
      request({
        inputs: [
          {
            name: 'A',
            datatype: 'INT32',
            shape: [2],
            data: EMPTY,
            sharedMemory: { region: 'in', offset: 0, byteSize: 16 },
          },
        ],
      }),
    ),
    fails('INVALID_ARG', "input byte size mismatch for input 'A' for model 'm'. Expected 8, got 16"),
  );
  const region = m.acquire('in', 0, 1).region;
  assert.equal(region.users, 1, 'the failed request released what it held');
  await m.close();
});

void test('an output larger than its slice fails before anything is written', async () => {
  const { m, key } = await setup();
  const before = objects.read(key);
  const shm = await prepareShmRequest(m, request());
  await assert.rejects(
    shm.writeOutputs(response([{ name: 'Y', datatype: 'INT32', shape: [4], data: int32s(1, 2, 3, 4) }])),
    fails(
      'INVALID_ARG',
      "shared memory size specified with the request for output 'Y' (12 bytes) should be at least 16 bytes to hold the results",
    ),
  );
  assert.deepEqual(objects.read(key), before);
  shm.release();
  await m.close();
});

void test('refusals: disabled, unknown region, out of bounds, classification, data plus region', async () => {
  const off = new SystemSharedMemoryManager({ allowClientShm: false });
  await assert.rejects(prepareShmRequest(off, request()), fails('UNSUPPORTED', CLIENT_SHM_DISABLED));

  const { m } = await setup();
  await assert.rejects(
    prepareShmRequest(
      m,
      request({ outputs: [{ name: 'Y', sharedMemory: { region: 'gone', offset: 0, byteSize: 4 } }] }),
    ),
    fails('NOT_FOUND', "Unable to find shared memory region: 'gone'"),
  );
  await assert.rejects(
    prepareShmRequest(
      m,
      request({ outputs: [{ name: 'Y', sharedMemory: { region: 'out', offset: 8, byteSize: 16 } }] }),
    ),
    fails('INVALID_ARG', "Invalid offset + byte size for shared memory region: 'out'"),
  );
  await assert.rejects(
    prepareShmRequest(
      m,
      request({
        outputs: [
          {
            name: 'Y',
            parameters: { classification: 2 },
            sharedMemory: { region: 'out', offset: 0, byteSize: 16 },
          },
        ],
      }),
    ),
    fails('INVALID_ARG', "Output can't set both 'shared_memory_region' and 'classification'"),
  );
  await assert.rejects(
    prepareShmRequest(
      m,
      request({
        inputs: [
          {
            name: 'A',
            datatype: 'INT32',
            shape: [4],
            data: int32s(1, 2, 3, 4),
            sharedMemory: { region: 'in', offset: 0, byteSize: 16 },
          },
        ],
      }),
    ),
    fails('INVALID_ARG', /sets both data and 'shared_memory_region'/),
  );
  // Every failure above let go of what it had acquired: unregister closes at once.
  for (const name of ['in', 'out', 'str']) assert.equal(m.acquire(name, 0, 1).region.users, 1, name);
  await m.close();
});

void test('unregister during a request: the request finishes, then the region goes', async () => {
  const { m, key } = await setup();
  const shm = await prepareShmRequest(m, request());
  await m.unregister();
  assert.deepEqual(
    m.status().map((r) => r.name),
    ['in', 'out'],
    'the regions in use stay registered; the idle one went at once',
  );
  await shm.writeOutputs(response([{ name: 'Y', datatype: 'INT32', shape: [1], data: int32s(42) }]));
  assert.deepEqual(objects.read(key).subarray(20, 24), int32s(42));
  shm.release();
  assert.equal(m.size, 0);
});

void test('inferWithSharedMemory: outputs written, regions let go when the model is done even if nobody reads', async () => {
  const { m, key } = await setup();
  const model = new ResponseStream<InferenceResponse>();
  let seen: InferenceRequest | undefined;
  const stream = inferWithSharedMemory(m, request(), (r) => {
    seen = r;
    return model;
  });
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(seen?.inputs[0].data, int32s(1, 2, 3, 4), 'the model got the bytes from the region');
  await m.unregister();
  assert.equal(m.size, 2, 'held by the running request');
  model.push(response([{ name: 'Y', datatype: 'INT32', shape: [1], data: int32s(77) }]), true);
  await new Promise((r) => setTimeout(r, 20));
  // Nobody iterated `stream`, yet the output is in the region and the regions are gone.
  assert.deepEqual(objects.read(key).subarray(20, 24), int32s(77));
  assert.equal(m.size, 0);
  const got: InferenceResponse[] = [];
  for await (const r of stream) got.push(r);
  assert.deepEqual(got[0].outputs[0].sharedMemory, { region: 'out', offset: 4, byteSize: 4 });
});

void test('inferWithSharedMemory: resolution and model errors reach the consumer; regions are released', async () => {
  const { m } = await setup();
  const missing = inferWithSharedMemory(
    m,
    request({ outputs: [{ name: 'Y', sharedMemory: { region: 'gone', offset: 0, byteSize: 4 } }] }),
    () => {
      throw new Error('never runs');
    },
  );
  await assert.rejects(
    async () => {
      for await (const _ of missing) assert.fail('no response expected');
    },
    fails('NOT_FOUND', "Unable to find shared memory region: 'gone'"),
  );

  const failing = inferWithSharedMemory(m, request(), () => {
    throw new NereidError('INVALID_ARG', 'refused by validation');
  });
  await assert.rejects(
    async () => {
      for await (const _ of failing) assert.fail('no response expected');
    },
    fails('INVALID_ARG', 'refused by validation'),
  );
  await m.unregister();
  assert.equal(m.size, 0, 'nothing is held after the failures');
});
