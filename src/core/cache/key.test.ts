import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Tensor } from '../../common/tensor.js';
import type { PreparedRequest } from '../inference.js';
import { requestCacheKey } from './key.js';

const int32 = (name: string, values: number[], shape = [1, values.length]): Tensor => ({
  name,
  datatype: 'INT32',
  shape,
  data: Buffer.from(new Int32Array(values).buffer),
});

function request(overrides: Partial<PreparedRequest> = {}): PreparedRequest {
  return {
    id: 'r1',
    inputs: new Map([
      ['A', int32('A', [1, 2, 3, 4])],
      ['B', int32('B', [5, 6, 7, 8])],
    ]),
    outputs: [
      { name: 'X', classification: 0 },
      { name: 'Y', classification: 0 },
    ],
    batchSize: 1,
    correlationId: 0n,
    flags: 0,
    priority: 0,
    timeoutUs: 0,
    parameters: {},
    ...overrides,
  };
}

const key = (r: PreparedRequest, model = 'm', version = '1'): string =>
  requestCacheKey(model, version, r).hex;

describe('requestCacheKey', () => {
  it('is a SHA-256 digest that depends only on what the model computes from', () => {
    const k = requestCacheKey('m', '1', request());
    assert.equal(k.digest.length, 32);
    assert.equal(k.hex, k.digest.toString('hex'));
    // Not the request id, not request parameters, not the input order.
    assert.equal(key(request({ id: 'other', parameters: { priority: 3, custom: 'x' } })), k.hex);
    const reordered = new Map([...request().inputs].reverse());
    assert.equal(key(request({ inputs: reordered })), k.hex);
  });

  it('changes with the model, the version, any input byte, shape, datatype or name', () => {
    const base = key(request());
    const variants = [
      key(request(), 'other'),
      key(request(), 'm', '2'),
      key(
        request({
          inputs: new Map([
            ['A', int32('A', [1, 2, 3, 5])],
            ['B', int32('B', [5, 6, 7, 8])],
          ]),
        }),
      ),
      key(
        request({
          inputs: new Map([
            ['A', int32('A', [1, 2, 3, 4], [2, 2])],
            ['B', int32('B', [5, 6, 7, 8])],
          ]),
        }),
      ),
      key(
        request({
          inputs: new Map<string, Tensor>([
            ['A', { ...int32('A', [1, 2, 3, 4]), datatype: 'FP32' }],
            ['B', int32('B', [5, 6, 7, 8])],
          ]),
        }),
      ),
      key(
        request({
          inputs: new Map([
            ['C', int32('C', [1, 2, 3, 4])],
            ['B', int32('B', [5, 6, 7, 8])],
          ]),
        }),
      ),
    ];
    for (const v of variants) assert.notEqual(v, base);
    assert.equal(new Set(variants).size, variants.length);
  });

  it('tells input bytes apart from the boundary between inputs', () => {
    // The same bytes split differently between A and B must not collide.
    const one = request({
      inputs: new Map([
        ['A', int32('A', [1, 2])],
        ['B', int32('B', [3, 4, 5, 6])],
      ]),
    });
    const two = request({
      inputs: new Map([
        ['A', int32('A', [1, 2, 3])],
        ['B', int32('B', [4, 5, 6])],
      ]),
    });
    assert.notEqual(key(one), key(two));
  });

  it('changes with the requested outputs, their order and their classification', () => {
    const base = key(request());
    const onlyX = key(request({ outputs: [{ name: 'X', classification: 0 }] }));
    const swapped = key(
      request({
        outputs: [
          { name: 'Y', classification: 0 },
          { name: 'X', classification: 0 },
        ],
      }),
    );
    const classified = key(
      request({
        outputs: [
          { name: 'X', classification: 2 },
          { name: 'Y', classification: 0 },
        ],
      }),
    );
    assert.equal(new Set([base, onlyX, swapped, classified]).size, 4);
  });
});
