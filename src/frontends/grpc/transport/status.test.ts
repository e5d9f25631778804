import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NereidError, type ErrorCode } from '../../../common/errors.js';
import { Logger } from '../../../common/logger.js';
import { GrpcStatusError, Status, grpcStatusOf, toGrpcError } from './status.js';

describe('gRPC status mapping', () => {
  it("follows Triton's table for every error code", () => {
    const expected: Record<ErrorCode, number> = {
      INTERNAL: 13,
      NOT_FOUND: 5,
      UNAVAILABLE: 14,
      UNSUPPORTED: 12,
      INVALID_ARG: 3,
      ALREADY_EXISTS: 6,
      CANCELLED: 1,
      UNKNOWN: 2,
    };
    for (const [code, status] of Object.entries(expected))
      assert.equal(grpcStatusOf(code as ErrorCode), status, code);
  });

  it('keeps NereidError messages, passes transport statuses, and logs the unexpected once', () => {
    const lines: string[] = [];
    const log = new Logger({}, (l) => lines.push(l));
    const ctx = { log, method: '/inference.GRPCInferenceService/ModelInfer', requestId: 'r7' };
    assert.deepEqual(toGrpcError(new NereidError('NOT_FOUND', "model 'x'"), ctx), {
      code: Status.NOT_FOUND,
      details: "model 'x'",
    });
    assert.deepEqual(toGrpcError(new GrpcStatusError(Status.RESOURCE_EXHAUSTED, 'too big'), ctx), {
      code: Status.RESOURCE_EXHAUSTED,
      details: 'too big',
    });
    assert.equal(lines.length, 0);
    assert.deepEqual(toGrpcError(new TypeError('boom'), ctx), {
      code: Status.INTERNAL,
      details: 'internal error: boom',
    });
    assert.equal(lines.length, 1);
    assert.match(
      lines[0],
      /\[request id: r7\] \/inference\.GRPCInferenceService\/ModelInfer: unexpected error: TypeError: boom/,
    );
  });
});
