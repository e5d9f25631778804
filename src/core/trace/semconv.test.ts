import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hostAndPort, traceCarrier } from './carrier.js';
import { edgeAttributes, outcomeAttributes } from './semconv.js';
import type { TraceEdge } from './types.js';

const HTTP: TraceEdge = {
  protocol: 'http',
  method: 'POST',
  path: '/v2/models/simple/infer',
  route: '/v2/models/{model_name}/infer',
  scheme: 'http',
  protocolVersion: '1.1',
  serverAddress: 'localhost',
  serverPort: 8000,
};
const GRPC: TraceEdge = {
  protocol: 'grpc',
  method: 'ModelInfer',
  serverAddress: '10.0.0.1',
  serverPort: 8001,
};

describe('the semantic conventions on a request span', () => {
  it('writes the HTTP server attributes, and a method it does not know as _OTHER', () => {
    assert.deepEqual(edgeAttributes(HTTP), {
      'http.request.method': 'POST',
      'url.path': '/v2/models/simple/infer',
      'url.scheme': 'http',
      'http.route': '/v2/models/{model_name}/infer',
      'network.protocol.name': 'http',
      'network.protocol.version': '1.1',
      'server.address': 'localhost',
      'server.port': 8000,
    });
    const odd = edgeAttributes({ ...HTTP, method: 'BREW' });
    assert.equal(odd['http.request.method'], '_OTHER');
  });

  it('writes the stable and the older RPC attributes for gRPC', () => {
    assert.deepEqual(edgeAttributes(GRPC), {
      'rpc.system.name': 'grpc',
      'rpc.system': 'grpc',
      'rpc.service': 'inference.GRPCInferenceService',
      'rpc.method': 'inference.GRPCInferenceService/ModelInfer',
      'server.address': '10.0.0.1',
      'server.port': 8001,
    });
  });

  it('marks an HTTP span in error for 5xx only', () => {
    assert.deepEqual(outcomeAttributes(HTTP, 200), {
      attributes: { 'http.response.status_code': 200 },
      error: undefined,
    });
    assert.equal(outcomeAttributes(HTTP, 400).error, undefined);
    assert.deepEqual(outcomeAttributes(HTTP, 503), {
      attributes: { 'http.response.status_code': 503, 'error.type': '503' },
      error: '503',
    });
  });

  it("marks a gRPC span in error for the server's own failures, not the client's", () => {
    assert.deepEqual(outcomeAttributes(GRPC, 0).attributes, {
      'rpc.status_code': 'OK',
      'rpc.grpc.status_code': 0,
    });
    assert.equal(outcomeAttributes(GRPC, 3).error, undefined); // INVALID_ARGUMENT
    assert.equal(outcomeAttributes(GRPC, 5).error, undefined); // NOT_FOUND
    for (const [code, name] of [
      [2, 'UNKNOWN'],
      [13, 'INTERNAL'],
      [14, 'UNAVAILABLE'],
    ] as const) {
      assert.deepEqual(outcomeAttributes(GRPC, code), {
        attributes: { 'rpc.status_code': name, 'rpc.grpc.status_code': code, 'error.type': name },
        error: name,
      });
    }
  });
});

describe('hostAndPort', () => {
  it('splits host names, IPv4 and bracketed IPv6 with and without a port', () => {
    assert.deepEqual(hostAndPort('localhost:8000'), { address: 'localhost', port: 8000 });
    assert.deepEqual(hostAndPort('example.com'), { address: 'example.com' });
    assert.deepEqual(hostAndPort('127.0.0.1:1'), { address: '127.0.0.1', port: 1 });
    assert.deepEqual(hostAndPort('[::1]:8001'), { address: '::1', port: 8001 });
  });

  it('gives nothing for a missing or hostile value rather than echoing it', () => {
    assert.deepEqual(hostAndPort(undefined), {});
    assert.deepEqual(hostAndPort(''), {});
    assert.deepEqual(hostAndPort('evil host\r\n:80'), {});
    assert.deepEqual(hostAndPort('a'.repeat(300)), {});
    assert.deepEqual(hostAndPort('host:99999'), { address: 'host' });
    assert.deepEqual(hostAndPort('host:'), {});
  });
});

describe('traceCarrier', () => {
  it('is undefined without a traceparent or an edge, and keeps the edge lazily otherwise', () => {
    assert.equal(traceCarrier(undefined, undefined), undefined);
    assert.deepEqual(traceCarrier('00-a-b-01', ['x', 'y']), { traceparent: '00-a-b-01' });
    let made = 0;
    const carrier = traceCarrier(undefined, undefined, () => {
      made++;
      return GRPC;
    });
    assert.equal(made, 0);
    assert.deepEqual(carrier?.edge?.(), GRPC);
    assert.equal(made, 1);
  });
});
