import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { describe, it } from 'node:test';
import { Coalescer, ownedBuffer, packTensors, unpackTensors } from './wire.js';

const tensor = (data: Buffer): { name: string; data: Buffer } => ({ name: 't', data });

describe('packTensors', () => {
  it('moves a body that owns its buffer, keeping the views into it', async () => {
    const body = Buffer.alloc(64 * 1024);
    body.writeUInt32LE(7, 100);
    const owned = ownedBuffer(body);
    assert.ok(owned !== undefined);
    const transfer: ArrayBuffer[] = [];
    const packed = packTensors(
      [tensor(body.subarray(100, 104)), tensor(body.subarray(200, 204))],
      transfer,
      owned,
    );
    assert.deepEqual(transfer, [owned]);
    const { port1, port2 } = new MessageChannel();
    const got = new Promise<{ name: string; data: Buffer }[]>((resolve) => port2.once('message', resolve));
    port1.postMessage(packed, transfer);
    const back = unpackTensors(await got);
    assert.equal(body.buffer.byteLength, 0, 'the body was moved, not copied');
    assert.ok(Buffer.isBuffer(back[0].data));
    assert.equal(back[0].data.readUInt32LE(0), 7);
    assert.equal(back[0].data.buffer, back[1].data.buffer, 'one buffer on the other side too');
    port1.close();
  });

  it('copies data it does not own (a model output, a pooled Buffer) and leaves the original alone', () => {
    const shared = Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]); // from Node's 8 KiB pool
    const transfer: ArrayBuffer[] = [];
    const packed = packTensors([tensor(shared.subarray(2, 6))], transfer);
    assert.equal(transfer.length, 1);
    assert.equal(transfer[0].byteLength, 4, 'an exact-size copy');
    assert.deepEqual([...packed[0].data], [3, 4, 5, 6]);
    assert.notEqual(packed[0].data.buffer, shared.buffer);
    assert.equal(ownedBuffer(shared), undefined);
  });
});

describe('Coalescer', () => {
  it('sends the messages of one turn as one batch, a lone message as itself', async () => {
    const sent: unknown[] = [];
    const c = new Coalescer<{ t: string; n: number }>((m) => sent.push(m));
    c.post({ t: 'x', n: 1 });
    c.post({ t: 'x', n: 2 });
    assert.equal(sent.length, 0, 'nothing before the turn ends');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(sent, [
      {
        t: 'batch',
        items: [
          { t: 'x', n: 1 },
          { t: 'x', n: 2 },
        ],
      },
    ]);
    c.post({ t: 'x', n: 3 });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(sent[1], { t: 'x', n: 3 });
  });
});
