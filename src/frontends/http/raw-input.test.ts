import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../../common/errors.js';
import type { JsonObject } from '../../model-config/json.js';
import { deduceRawInput } from './raw-input.js';

function cfg(maxBatch: number, inputs: [string, string, (number | string)[]][]): JsonObject {
  return {
    max_batch_size: maxBatch,
    input: inputs.map(([name, data_type, dims]) => ({ name, data_type, dims })),
  };
}

function rejects(fn: () => unknown, message: string): void {
  assert.throws(
    fn,
    (err: unknown) => err instanceof NereidError && err.code === 'INVALID_ARG' && err.message === message,
  );
}

void test('fixed shape: name, datatype and shape from the config; the body is the data (no copy)', () => {
  const body = Buffer.alloc(32);
  const input = deduceRawInput(cfg(0, [['INPUT0', 'TYPE_FP32', [8]]]), 'm', body);
  assert.deepEqual([input.name, input.datatype, input.shape], ['INPUT0', 'FP32', [8]]);
  assert.equal(input.data, body);
});

void test('one variable dim is deduced from the byte size; batching models get batch 1', () => {
  assert.deepEqual(deduceRawInput(cfg(0, [['I', 'TYPE_FP32', [-1]]]), 'm', Buffer.alloc(32)).shape, [8]);
  assert.deepEqual(
    deduceRawInput(cfg(8, [['I', 'TYPE_INT16', [2, -1]]]), 'm', Buffer.alloc(12)).shape,
    [1, 2, 3],
  );
  // 64-bit dims printed as strings are read too
  assert.deepEqual(deduceRawInput(cfg(0, [['I', 'TYPE_UINT8', ['-1']]]), 'm', Buffer.alloc(5)).shape, [5]);
});

void test('BYTES: shape [1], the body becomes one length-prefixed element', () => {
  const input = deduceRawInput(cfg(0, [['INPUT0', 'TYPE_STRING', [1]]]), 'm', Buffer.from('427'));
  assert.equal(input.datatype, 'BYTES');
  assert.deepEqual(input.shape, [1]);
  assert.deepEqual(input.data, Buffer.from([3, 0, 0, 0, 0x34, 0x32, 0x37]));
});

void test('Triton error texts (L0_http raw binary tests)', () => {
  rejects(
    () => deduceRawInput(cfg(0, [['INPUT0', 'TYPE_STRING', [-1]]]), 'm', Buffer.from('427')),
    "[request id: <id_unknown>] For BYTE datatype raw input 'INPUT0', the model must have input shape [1]",
  );
  rejects(
    () => deduceRawInput(cfg(0, [['INPUT0', 'TYPE_FP16', [-1, -1]]]), 'm', Buffer.alloc(8)),
    "[request id: <id_unknown>] The shape of the raw input 'INPUT0' can not be deduced because there are more than one variable-sized dimension",
  );
  rejects(
    () =>
      deduceRawInput(
        cfg(0, [
          ['A', 'TYPE_FP32', [8]],
          ['B', 'TYPE_FP32', [8]],
          ['C', 'TYPE_FP32', [8]],
        ]),
        'three',
        Buffer.alloc(96),
      ),
    "[request id: <id_unknown>] Raw request must only have 1 input (found 1) to be deduced but got 3 inputs in 'three' model configuration",
  );
});
