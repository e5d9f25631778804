import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { capShare, threadsRefusal, threadsSupported } from './pool.js';

describe('capShare', () => {
  it('splits a cap so that the threads together stay within it', () => {
    assert.equal(capShare(8192, 2), 4096);
    assert.equal(capShare(10, 3), 3);
    assert.ok(capShare(10, 3) * 3 <= 10);
    assert.equal(capShare(2, 4), 1, 'each thread may hold at least one');
    assert.equal(capShare(0, 4), 0, 'no cap stays no cap');
  });
});

describe('threadsRefusal', () => {
  it('names the flag, the Node it needs and what is served instead', () => {
    assert.equal(threadsSupported('20.20.2'), false);
    assert.equal(threadsSupported('22.11.0'), false);
    assert.equal(threadsSupported('23.0.0'), false);
    if (process.platform === 'linux') {
      assert.equal(threadsSupported('22.12.0'), true);
      assert.equal(threadsSupported('23.1.0'), true);
      assert.equal(threadsSupported('24.0.0'), true);
      assert.equal(threadsRefusal('--grpc-infer-thread-count', 'gRPC', false, '24.1.0'), undefined);
      assert.match(
        threadsRefusal('--grpc-infer-thread-count', 'gRPC', true, '24.1.0') ?? '',
        /--grpc-infer-thread-count is not supported with gRPC over TLS: gRPC is served on the main thread/,
      );
    }
    assert.match(
      threadsRefusal('--grpc-infer-thread-count', 'gRPC', false, '20.20.2') ?? '',
      /^--grpc-infer-thread-count needs Node 22.12\+ .*this is Node 20.20.2 .*gRPC is served on the main thread$/,
    );
  });
});
