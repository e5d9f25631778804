/**
 * What a response carries: the requested outputs in request order, only those the model produced, a
 * config reshape shown as the config's dims, and, when a backend names an output twice, its last one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import {
  freezeModelConfig,
  normalizeModelConfig,
  parseModelConfigText,
  validateModelConfig,
} from '../../model-config/index.js';
import { prepareRequest } from '../inference.js';
import { ResponseStream } from '../response-stream.js';
import { ModelStats } from '../stats/model-stats.js';
import type { InferenceResponse } from '../types.js';
import { JobSender } from './job-sender.js';
import { OutputContract } from './output-contract.js';

const warned: string[] = [];
const warnings = { warn: (m: string) => warned.push(m) } as unknown as Logger;

function config(maxBatchSize: number) {
  const c = normalizeModelConfig(
    parseModelConfigText(
      `name: "m"
       backend: "scripted"
       max_batch_size: ${maxBatchSize}
       input [ { name: "IN" data_type: TYPE_INT32 dims: [ 4 ] } ]
       output [
         { name: "FLAT" data_type: TYPE_INT32 dims: [ 4 ] },
         { name: "SQUARE" data_type: TYPE_INT32 dims: [ 2, 2 ] reshape: { shape: [ 4 ] } },
         { name: "FREE" data_type: TYPE_INT32 dims: [ -1 ] reshape: { shape: [ -1 ] } }
       ]`,
      'config.pbtxt',
    ),
    { backend: 'scripted' },
  );
  validateModelConfig(c);
  return freezeModelConfig(c);
}

const int32 = (name: string, shape: number[], fill: number): Tensor => ({
  name,
  datatype: 'INT32',
  shape,
  data: Buffer.from(new Int32Array(shape.reduce((a, b) => a * b, 1)).fill(fill).buffer),
});

/** Sends `outputs` for one request naming `requested` (all when empty) and returns its response. */
async function respond(
  maxBatchSize: number,
  requested: string[],
  outputs: Tensor[],
  strict?: boolean,
): Promise<InferenceResponse> {
  const cfg = config(maxBatchSize);
  const shape = maxBatchSize > 0 ? [1, 4] : [4];
  const prepared = prepareRequest(cfg, {
    modelName: 'm',
    inputs: [{ name: 'IN', datatype: 'INT32', shape, data: Buffer.alloc(16) }],
    outputs: requested.map((name) => ({ name })),
  });
  const stats = new ModelStats('m', '1');
  const stream = new ResponseStream<InferenceResponse>();
  const record = stats.startRequest(process.hrtime.bigint(), prepared.batchSize);
  const sender = new JobSender(
    {
      config: cfg,
      version: '1',
      labels: new Map(),
      stats,
      ...(strict !== undefined && {
        contract: new OutputContract({ config: cfg, version: '1', strict, log: warnings }),
      }),
    },
    prepared,
    stream,
    record,
    false,
  );
  record.computeStart = process.hrtime.bigint();
  sender.send(outputs, { final: true });
  const got: InferenceResponse[] = [];
  for await (const r of stream) got.push(r);
  assert.equal(got.length, 1);
  return got[0];
}

void describe('JobSender responses', () => {
  it('keeps the request order and leaves out what the model did not produce', async () => {
    const r = await respond(0, ['SQUARE', 'FLAT'], [int32('FLAT', [4], 1)]);
    assert.deepEqual(
      r.outputs.map((t) => t.name),
      ['FLAT'],
    );
    const all = await respond(0, [], [int32('SQUARE', [4], 2), int32('FLAT', [4], 1)]);
    assert.deepEqual(
      all.outputs.map((t) => t.name),
      ['FLAT', 'SQUARE'],
      'no outputs named: config order',
    );
  });

  it('shows a reshaped output with the config dims, behind the batch dimension when batching', async () => {
    const plain = await respond(0, ['SQUARE', 'FREE'], [int32('SQUARE', [4], 3), int32('FREE', [4], 4)]);
    assert.deepEqual(plain.outputs[0].shape, [2, 2]);
    // Dims with a -1 cannot be filled in: the backend's shape stays.
    assert.deepEqual(plain.outputs[1].shape, [4]);
    const batched = await respond(8, ['SQUARE'], [int32('SQUARE', [1, 4], 3)]);
    assert.deepEqual(batched.outputs[0].shape, [1, 2, 2]);
    assert.deepEqual(
      [...new Int32Array(batched.outputs[0].data.buffer, batched.outputs[0].data.byteOffset, 4)],
      [3, 3, 3, 3],
    );
  });

  it('takes the last of two outputs a backend sent under one name', async () => {
    const r = await respond(0, ['FLAT'], [int32('FLAT', [4], 1), int32('FLAT', [4], 7)]);
    assert.equal(r.outputs.length, 1);
    assert.equal(r.outputs[0].data.readInt32LE(0), 7);
  });

  it('checks each output against the config: other datatypes and shapes warned once, or refused when strict', async () => {
    warned.length = 0;
    const wide: Tensor = { name: 'FLAT', datatype: 'INT64', shape: [4], data: Buffer.alloc(32) };
    const r = await respond(0, ['FLAT'], [wide], false);
    assert.equal(r.outputs[0].datatype, 'INT64', 'passed through, as Triton passes a Python model through');
    await respond(0, ['FLAT'], [wide], false);
    // A warning per new contract (one per model version); the two above shared none, so each warned.
    assert.deepEqual(warned, [
      ...Array<string>(2).fill(
        "model 'm' version 1 returned output 'FLAT' as INT64, but its config declares TYPE_INT32; the output " +
          "goes out as the model made it (as Triton's Python backend sends it). Warned once per model " +
          'version; --strict-model-outputs=true fails such requests',
      ),
    ]);
    await assert.rejects(respond(0, ['FLAT'], [wide], true), {
      code: 'INTERNAL',
      message:
        "model 'm' version 1 returned output 'FLAT' as INT64, but its config declares TYPE_INT32 (--strict-model-outputs=true)",
    });
    await assert.rejects(respond(0, ['FLAT'], [int32('FLAT', [2, 2], 1)], true), {
      message:
        "model 'm' version 1 returned output 'FLAT' with shape [2,2], but its config expects [4] (--strict-model-outputs=true)",
    });
    // The backend's side of a reshape, and any batch size, are what the config expects.
    const batched = await respond(
      8,
      ['SQUARE', 'FREE'],
      [int32('SQUARE', [3, 4], 1), int32('FREE', [3, 9], 1)],
      true,
    );
    assert.deepEqual(batched.outputs[0].shape, [3, 2, 2]);
    await assert.rejects(respond(8, ['SQUARE'], [int32('SQUARE', [3, 2, 2], 1)], true), {
      message:
        "model 'm' version 1 returned output 'SQUARE' with shape [3,2,2], but its config expects [-1,4] (--strict-model-outputs=true)",
    });
  });

  it('always refuses an output whose bytes do not fit its shape, whatever the strictness', async () => {
    const short: Tensor = { name: 'FLAT', datatype: 'INT32', shape: [4], data: Buffer.alloc(12) };
    await assert.rejects(respond(0, ['FLAT'], [short], false), {
      code: 'INTERNAL',
      message:
        "model 'm' version 1 returned output 'FLAT' with shape [4] of INT32, which needs 16 bytes, but holds 12",
    });
    const negative: Tensor = { name: 'FLAT', datatype: 'INT32', shape: [-4], data: Buffer.alloc(16) };
    await assert.rejects(respond(0, ['FLAT'], [negative], false), {
      message: "model 'm' version 1 returned output 'FLAT' with an invalid shape [-4]",
    });
    // Without a contract (an embedding that builds senders by hand) nothing is checked.
    const r = await respond(0, ['FLAT'], [short]);
    assert.equal(r.outputs[0].data.length, 12);
  });
});
