import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderOperatorMetrics } from './metrics/render.js';
import { RequestCounts, snakeCase } from './request-counts.js';

describe('RequestCounts', () => {
  it('counts by protocol, endpoint and code, with codes from fixed sets only', () => {
    const c = new RequestCounts();
    c.http('model_infer', 200);
    c.http('model_infer', 200);
    c.http('model_infer', 400);
    c.http('unmatched', 1234); // not an HTTP status: one bucket, never a new label value per number
    c.grpc('inference.GRPCInferenceService/ModelInfer', 0);
    c.grpc('inference.GRPCInferenceService/ModelInfer', 5);
    c.grpc('unknown', 99);
    assert.deepEqual(c.snapshot(), [
      {
        protocol: 'grpc',
        endpoint: 'inference.GRPCInferenceService/ModelInfer',
        code: 'NOT_FOUND',
        count: 1,
      },
      { protocol: 'grpc', endpoint: 'inference.GRPCInferenceService/ModelInfer', code: 'OK', count: 1 },
      { protocol: 'grpc', endpoint: 'unknown', code: 'UNKNOWN', count: 1 },
      { protocol: 'http', endpoint: 'model_infer', code: '200', count: 2 },
      { protocol: 'http', endpoint: 'model_infer', code: '400', count: 1 },
      { protocol: 'http', endpoint: 'unmatched', code: 'other', count: 1 },
    ]);
  });

  it('names routes in snake_case', () => {
    assert.equal(snakeCase('modelInfer'), 'model_infer');
    assert.equal(snakeCase('systemSharedMemoryRegister'), 'system_shared_memory_register');
  });

  it('renders as Prometheus families with their labels', () => {
    const c = new RequestCounts();
    c.http('server_ready', 200);
    c.grpc('grpc.health.v1.Health/Check', 0);
    const text = renderOperatorMetrics({
      build: { version: '1.2.3', nodeVersion: 'v20.0.0' },
      models: [{ model: 'a"b', version: '1', state: 'READY' }],
      requests: c.snapshot(),
    });
    assert.match(text, /^nereid_build_info\{node_version="v20\.0\.0",version="1\.2\.3"\} 1$/m);
    assert.match(text, /^nereid_model_state\{model="a\\"b",state="READY",version="1"\} 1$/m);
    assert.match(text, /^nereid_http_requests_total\{code="200",endpoint="server_ready"\} 1$/m);
    assert.match(text, /^nereid_grpc_requests_total\{code="OK",rpc="grpc\.health\.v1\.Health\/Check"\} 1$/m);
    assert.match(text, /^# TYPE nereid_grpc_requests_total counter$/m);
    assert.equal(renderOperatorMetrics({}), '');
  });
});
