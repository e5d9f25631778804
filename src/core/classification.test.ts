import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { splitBytesElements } from '../common/tensor.js';
import { classify } from './classification.js';

describe('classify', () => {
  it('returns the top N as value:index:label strings per batch item', () => {
    const values = new Float32Array([0.1, 0.7, 0.2, 0.9, 0.05, 0.3]);
    const t = { name: 'OUT', datatype: 'FP32' as const, shape: [2, 3], data: Buffer.from(values.buffer) };
    const r = classify(t, 2, true, ['cat', 'dog', 'bird']);
    assert.equal(r.datatype, 'BYTES');
    assert.deepEqual(r.shape, [2, 2]);
    assert.deepEqual(
      splitBytesElements(r.data).map((b) => b.toString()),
      ['0.700000:1:dog', '0.200000:2:bird', '0.900000:0:cat', '0.300000:2:bird'],
    );
  });

  it('omits labels when there is no label file and clamps N to the class count', () => {
    const t = {
      name: 'OUT',
      datatype: 'INT32' as const,
      shape: [3],
      data: Buffer.from(new Int32Array([5, 9, 1]).buffer),
    };
    const r = classify(t, 10, false, undefined);
    assert.deepEqual(r.shape, [3]);
    assert.deepEqual(
      splitBytesElements(r.data).map((b) => b.toString()),
      ['9:1', '5:0', '1:2'],
    );
  });
});
