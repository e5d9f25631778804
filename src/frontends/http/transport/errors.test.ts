import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError, type ErrorCode } from '../../../common/errors.js';
import { Logger } from '../../../common/logger.js';
import { errorBody, httpStatusOf, toErrorReply } from './errors.js';

void test('Triton error code → HTTP status (HttpCodeFromError, server src/http_server.cc)', () => {
  const table: [ErrorCode, number][] = [
    ['INTERNAL', 500],
    ['NOT_FOUND', 404],
    ['UNAVAILABLE', 503],
    ['UNSUPPORTED', 501],
    ['INVALID_ARG', 400],
    ['ALREADY_EXISTS', 400],
    ['CANCELLED', 400],
    ['UNKNOWN', 400],
  ];
  for (const [code, status] of table) assert.equal(httpStatusOf(code), status, code);
});

void test('error body is {"error": message} with JSON escaping', () => {
  assert.equal(errorBody('a "quoted"\nline'), '{"error":"a \\"quoted\\"\\nline"}');
  assert.deepEqual(JSON.parse(errorBody('x')), { error: 'x' });
});

void test('NereidErrors map by code and are not logged as errors; anything else is a logged 500', () => {
  const lines: string[] = [];
  const log = new Logger({}, (l) => lines.push(l));
  const ctx = { log, requestId: 'abc', method: 'POST', path: '/v2/models/m/infer' };

  const r1 = toErrorReply(new NereidError('NOT_FOUND', "Request for unknown model: 'm' is not found"), ctx);
  assert.deepEqual(r1, { status: 404, body: errorBody("Request for unknown model: 'm' is not found") });
  assert.equal(lines.length, 0);

  const r2 = toErrorReply(new TypeError('x is not a function'), ctx);
  assert.equal(r2.status, 500);
  assert.deepEqual(JSON.parse(r2.body), { error: 'internal error: x is not a function' });
  assert.equal(lines.length, 1);
  assert.match(
    lines[0],
    /^E.*\[request id: abc\] POST \/v2\/models\/m\/infer: unexpected error: TypeError: x is not a function/,
  );

  toErrorReply('a string', { ...ctx, requestId: undefined });
  assert.match(lines[1], /\[request id: <id_unknown>\].*unexpected error: a string/);
});
