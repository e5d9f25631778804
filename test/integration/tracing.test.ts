/**
 * Tracing end to end on a real server: sampling by rate and count, settings changed at run time through
 * the trace extension (global and per model), a failed request's trace, the access log, and OpenTelemetry
 * spans exported over real OTLP/HTTP to a receiver on a real socket (the SDK's JSON encoding, read back
 * here) with the caller's W3C traceparent joined. ModelStreamInfer (through @grpc/grpc-js, the client the
 * gRPC tests use): each request on a stream gets its own trace with Triton's stream timestamps, joins the
 * traceparent of the stream's metadata, and gets its own access-log line.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { Metadata } from '@grpc/grpc-js';
import type { Plain } from '../../src/frontends/grpc/messages.js';
import { TestClient } from '../../src/frontends/grpc/test-client.testkit.js';
import { EXAMPLES, post, request, startServer, type TestServer } from './harness.js';
import { postSse } from './sse.js';

const SIMPLE = {
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, () => 1) },
  ],
};
const MISSING = { inputs: [SIMPLE.inputs[0]] };

interface Entry {
  id: number;
  model_name?: string;
  request_id?: string;
  parent_id?: number;
  timestamps?: { name: string; ns: number }[];
}

interface FileTrace {
  model?: string;
  requestId?: string;
  parentId?: number;
  names: string[];
}

function traces(file: string): Map<number, FileTrace> {
  const out = new Map<number, FileTrace>();
  for (const e of JSON.parse(readFileSync(file, 'utf8')) as Entry[]) {
    const t = out.get(e.id) ?? { names: [] };
    if (e.model_name) t.model = e.model_name;
    if (e.request_id) t.requestId = e.request_id;
    if (e.parent_id !== undefined) t.parentId = e.parent_id;
    for (const ts of e.timestamps ?? []) t.names.push(ts.name);
    out.set(e.id, t);
  }
  return out;
}

const dir = mkdtempSync(path.join(tmpdir(), 'nereid-trace-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('Triton-mode tracing', () => {
  it('samples every rate-th request while count lasts, and counts down trace_count', async () => {
    const file = path.join(dir, 'rate.json');
    const s = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      `--trace-config=triton,file=${file}`,
      '--trace-config=rate=2',
      '--trace-config=count=3',
      '--trace-config=level=TIMESTAMPS',
    ]);
    try {
      for (let i = 0; i < 8; i++)
        assert.equal((await post(`${s.url}/v2/models/simple/infer`, SIMPLE)).status, 200);
      const settings = (await request(`${s.url}/v2/trace/setting`)).json<Record<string, unknown>>();
      assert.equal(settings.trace_count, '0');
    } finally {
      await s.stop();
    }
    const t = traces(file);
    assert.equal(t.size, 3);
    for (const trace of t.values()) {
      assert.equal(trace.model, 'simple');
      assert.deepEqual([...trace.names].sort(), [
        'COMPUTE_END',
        'COMPUTE_INPUT_END',
        'COMPUTE_OUTPUT_START',
        'COMPUTE_START',
        'HTTP_RECV_END',
        'HTTP_RECV_START',
        'HTTP_SEND_END',
        'HTTP_SEND_START',
        'INFER_RESPONSE_COMPLETE',
        'QUEUE_START',
        'REQUEST_END',
        'REQUEST_START',
      ]);
    }
  });

  it('takes settings changed at run time on the next request, per model too, and traces failures', async () => {
    const file = path.join(dir, 'runtime.json');
    const log = path.join(dir, 'access.log');
    const s = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--load-model=simple_identity',
      `--trace-config=triton,file=${file}`,
      '--trace-config=rate=1',
      `--access-log=${log}`,
    ]);
    try {
      // Off at start: not traced.
      assert.equal((await post(`${s.url}/v2/models/simple/infer`, SIMPLE)).status, 200);
      const on = await post(`${s.url}/v2/trace/setting`, { trace_level: ['TIMESTAMPS'] });
      assert.equal(on.status, 200);
      assert.deepEqual(on.json<Record<string, unknown>>().trace_level, ['TIMESTAMPS']);
      assert.equal((await post(`${s.url}/v2/models/simple/infer`, SIMPLE)).status, 200);
      // A failed request is traced: it starts and ends.
      assert.equal((await post(`${s.url}/v2/models/simple/infer`, MISSING)).status, 400);
      // Off for one model only.
      const off = await post(`${s.url}/v2/models/simple/trace/setting`, { trace_level: ['OFF'] });
      assert.deepEqual(off.json<Record<string, unknown>>().trace_level, ['OFF']);
      assert.equal((await post(`${s.url}/v2/models/simple/infer`, SIMPLE)).status, 200);
      // An invalid setting is refused whole.
      const bad = await post(`${s.url}/v2/trace/setting`, { trace_rate: '0' });
      assert.equal(bad.status, 400);
      assert.match(bad.json<{ error: string }>().error, /sample rate must be non-zero/);
    } finally {
      await s.stop();
    }
    const t = [...traces(file).values()];
    assert.equal(t.length, 2);
    assert.ok(t[0].names.includes('COMPUTE_START'));
    assert.deepEqual(
      t[1].names.filter((n) => !n.startsWith('HTTP_')),
      ['REQUEST_START', 'REQUEST_END'],
    );
    const lines = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.length, 4);
    assert.deepEqual(
      lines.map((l) => l.status),
      [200, 200, 400, 200],
    );
    assert.equal(lines[0].trace_id, '');
    assert.equal(lines[1].trace_id, '1');
    assert.equal(lines[1].model, 'simple');
    // The path named no version: the line says which one answered.
    assert.deepEqual(
      lines.map((l) => l.version),
      ['1', '1', '1', '1'],
    );
    assert.equal(typeof lines[1].compute_us, 'number');
    assert.equal(lines[2].compute_us, undefined);
  });
});

describe('generate and generate_stream', () => {
  it('are traced and access-logged as infer is, a stream with one INFER_RESPONSE_COMPLETE per response', async () => {
    const file = path.join(dir, 'generate.json');
    const log = path.join(dir, 'generate-access.log');
    const s = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--load-model=square_int32',
      `--trace-config=triton,file=${file}`,
      '--trace-config=rate=1',
      '--trace-config=level=TIMESTAMPS',
      `--access-log=${log}`,
    ]);
    let streamed = '';
    try {
      const gen = await post(`${s.url}/v2/models/simple/generate`, {
        id: 'g1',
        INPUT0: Array.from({ length: 16 }, (_, i) => i),
        INPUT1: new Array<number>(16).fill(2),
      });
      assert.equal(gen.status, 200);
      const sse = await postSse(`${s.url}/v2/models/square_int32/generate_stream`, { id: 'g2', IN: 2 });
      assert.equal(sse.status, 200);
      let events = 0;
      for await (const e of sse.events()) {
        events++;
        streamed += JSON.stringify(e);
      }
      assert.equal(events, 2);
    } finally {
      await s.stop();
    }
    const byRequest = new Map([...traces(file).values()].map((t) => [t.requestId, t]));
    const g1 = byRequest.get('g1')!;
    assert.equal(g1.model, 'simple');
    assert.deepEqual([...g1.names].sort(), [
      'COMPUTE_END',
      'COMPUTE_INPUT_END',
      'COMPUTE_OUTPUT_START',
      'COMPUTE_START',
      'HTTP_RECV_END',
      'HTTP_RECV_START',
      'HTTP_SEND_END',
      'HTTP_SEND_START',
      'INFER_RESPONSE_COMPLETE',
      'QUEUE_START',
      'REQUEST_END',
      'REQUEST_START',
    ]);
    const g2 = byRequest.get('g2')!;
    assert.equal(g2.model, 'square_int32');
    const count = (n: string): number => g2.names.filter((x) => x === n).length;
    // Two responses and the decoupled model's flag-only final one; the send brackets the whole stream.
    assert.equal(count('INFER_RESPONSE_COMPLETE'), 3);
    assert.equal(count('HTTP_SEND_START'), 1);
    assert.equal(count('HTTP_SEND_END'), 1);
    assert.ok(g2.names.indexOf('HTTP_SEND_START') < g2.names.indexOf('HTTP_SEND_END'));
    const lines = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      lines.map((l) => [l.request_id, l.model, l.status]),
      [
        ['g1', 'simple', 200],
        ['g2', 'square_int32', 200],
      ],
    );
    assert.ok((lines[1].bytes_out as number) >= streamed.length / 2);
    assert.ok((lines[1].bytes_in as number) > 0);
    assert.equal(typeof lines[0].compute_us, 'number');
  });
});

describe('OpenTelemetry mode', () => {
  it('exports InferRequest, model and compute spans over OTLP/HTTP, joined to the caller trace', async () => {
    const bodies: unknown[] = [];
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const port = (receiver.address() as AddressInfo).port;
    const s = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--trace-config=mode=opentelemetry',
      `--trace-config=opentelemetry,url=http://127.0.0.1:${port}/v1/traces`,
      '--trace-config=opentelemetry,resource=service.name=nereid-test',
      '--trace-config=rate=0',
      '--trace-config=level=TIMESTAMPS',
    ]);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const badTrace = '5b8aa5a2d2c872e8321cf37308d69df2';
    const grpcTrace = '0af7651916cd43dd8448eb211c80319c';
    const httpPort = new URL(s.url).port;
    const grpcPort = s.running.grpc!.port;
    try {
      // rate=0: only requests that carry a context are traced.
      assert.equal((await post(`${s.url}/v2/models/simple/infer`, SIMPLE)).status, 200);
      const traced = await post(`${s.url}/v2/models/simple/infer`, SIMPLE, {
        traceparent: `00-${traceId}-${callerSpan}-01`,
      });
      assert.equal(traced.status, 200);
      // A client mistake (an input missing): answered 400, its span says so and is not in error.
      const bad = await post(`${s.url}/v2/models/simple/infer`, MISSING, {
        traceparent: `00-${badTrace}-${callerSpan}-01`,
      });
      assert.equal(bad.status, 400);
      const client = new TestClient(`127.0.0.1:${grpcPort}`);
      try {
        const metadata = new Metadata();
        metadata.set('traceparent', `00-${grpcTrace}-${callerSpan}-01`);
        await client.call('ModelInfer', grpcRequest('simple', 'g1', [1, 16]), metadata);
      } finally {
        client.close();
      }
    } finally {
      await s.stop(); // shuts the exporter down, which sends what is queued
      receiver.close();
    }
    interface Span {
      traceId: string;
      spanId: string;
      parentSpanId?: string;
      name: string;
      kind: number;
      attributes: { key: string; value: Record<string, unknown> }[];
      events: { name: string }[];
      status?: { code?: number };
    }
    const all: Span[] = [];
    const resources: unknown[] = [];
    for (const b of bodies as { resourceSpans: { resource: unknown; scopeSpans: { spans: Span[] }[] }[] }[]) {
      for (const rs of b.resourceSpans) {
        resources.push(rs.resource);
        for (const ss of rs.scopeSpans) all.push(...ss.spans);
      }
    }
    // OTLP's JSON (as this exporter writes it): attribute values as {stringValue} / {intValue}; span kinds 1 =
    // INTERNAL, 2 = SERVER; status code 2 = ERROR.
    const attrs = (span: Span): Record<string, unknown> =>
      Object.fromEntries(span.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    const rootOf = (id: string): Span => all.find((x) => x.traceId === id && x.name === 'InferRequest')!;
    const spans = all.filter((x) => x.traceId === traceId);
    assert.deepEqual(spans.map((x) => x.name).sort(), ['InferRequest', 'compute', 'simple']);
    const byName = new Map(spans.map((x) => [x.name, x]));
    const root = byName.get('InferRequest')!;
    assert.equal(root.traceId, traceId);
    assert.equal(root.parentSpanId, callerSpan);
    assert.ok(root.events.some((e) => e.name === 'HTTP_RECV_START'));
    const model = byName.get('simple')!;
    assert.equal(model.parentSpanId, root.spanId);
    assert.ok(model.events.some((e) => e.name === 'REQUEST_START'));
    const name = model.attributes.find((a) => a.key === 'triton.model_name');
    assert.deepEqual(name?.value, { stringValue: 'simple' });
    const compute = byName.get('compute')!;
    assert.equal(compute.parentSpanId, model.spanId);
    assert.deepEqual(
      compute.events.map((e) => e.name),
      ['COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END'],
    );
    assert.match(JSON.stringify(resources), /nereid-test/);

    // The semantic conventions: the exchange is the SERVER span with the HTTP attributes; the model and
    // compute spans are INTERNAL work under it.
    assert.equal(root.kind, 2);
    assert.equal(model.kind, 1);
    assert.equal(compute.kind, 1);
    assert.deepEqual(attrs(root), {
      'http.request.method': 'POST',
      'url.path': '/v2/models/simple/infer',
      'url.scheme': 'http',
      'http.route': '/v2/models/{model_name}/infer',
      'network.protocol.name': 'http',
      'network.protocol.version': '1.1',
      'server.address': '127.0.0.1',
      'server.port': Number(httpPort),
      'http.response.status_code': 200,
    });
    assert.notEqual(root.status?.code, 2);
    const badRoot = rootOf(badTrace);
    assert.equal(attrs(badRoot)['http.response.status_code'], 400);
    assert.notEqual(badRoot.status?.code, 2, 'a 4xx is not a server error');
    const grpcRoot = rootOf(grpcTrace);
    assert.equal(grpcRoot.kind, 2);
    assert.deepEqual(attrs(grpcRoot), {
      'rpc.system.name': 'grpc',
      'rpc.system': 'grpc',
      'rpc.service': 'inference.GRPCInferenceService',
      'rpc.method': 'inference.GRPCInferenceService/ModelInfer',
      'server.address': '127.0.0.1',
      'server.port': grpcPort,
      'rpc.status_code': 'OK',
      'rpc.grpc.status_code': 0,
    });
  });
});

const int32s = (v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);

function grpcRequest(model: string, id: string, shape: number[], inputs = 2): object {
  const names = ['INPUT0', 'INPUT1'].slice(0, inputs);
  return {
    model_name: model,
    id,
    inputs: names.map((name) => ({ name, datatype: 'INT32', shape })),
    raw_input_contents: names.map((_, k) => int32s(Array.from({ length: 16 }, (_, i) => i + k))),
  };
}

/** Writes `requests` on one ModelStreamInfer stream (with `metadata`), ends it, returns every response. */
async function streamAll(s: TestServer, requests: object[], metadata = new Metadata()): Promise<Plain[]> {
  const client = new TestClient(`127.0.0.1:${s.running.grpc!.port}`);
  try {
    const stream = client.stream(metadata);
    const messages: Plain[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (m: Plain) => messages.push(m));
      stream.on('error', reject);
      stream.on('end', resolve);
    });
    for (const r of requests) stream.write(r);
    stream.end();
    await done;
    return messages;
  } finally {
    client.close();
  }
}

const STREAM_ROOT_NAMES = [
  'GRPC_WAITREAD_START',
  'GRPC_WAITREAD_END',
  'REQUEST_START',
  'QUEUE_START',
  'REQUEST_END',
  'INFER_RESPONSE_COMPLETE',
  'GRPC_SEND_START',
  'GRPC_SEND_END',
];

describe('ModelStreamInfer tracing', () => {
  it('traces and logs each request of a stream on its own (plain model, ensemble, a refused request)', async () => {
    const file = path.join(dir, 'stream.json');
    const log = path.join(dir, 'stream-access.log');
    const s = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--load-model=simple_ensemble',
      `--trace-config=triton,file=${file}`,
      '--trace-config=rate=1',
      '--trace-config=level=TIMESTAMPS',
      `--access-log=${log}`,
    ]);
    let responses: Plain[];
    try {
      responses = await streamAll(s, [
        grpcRequest('simple', 's1', [1, 16]),
        grpcRequest('simple_ensemble', 'e1', [1, 16]),
        grpcRequest('simple', 'bad', [1, 16], 1), // one input missing: refused, in-band error
        grpcRequest('simple', 's2', [1, 16]),
      ]);
    } finally {
      await s.stop();
    }
    assert.deepEqual(
      responses.map((r) => (r.infer_response as { id: string }).id),
      ['s1', 'e1', 'bad', 's2'],
    );
    assert.match(String(responses[2].error_message), /expected 2 inputs but got 1/);

    const all = traces(file);
    const roots = [...all.entries()].filter(([, t]) => t.parentId === 0 || t.parentId === undefined);
    const byRequest = new Map(roots.map(([id, t]) => [t.requestId ?? '', { id, ...t }]));
    assert.deepEqual([...byRequest.keys()].sort(), ['bad', 'e1', 's1', 's2']);
    for (const id of ['s1', 's2']) {
      const t = byRequest.get(id)!;
      assert.equal(t.model, 'simple');
      // Every stream timestamp once, Triton's names, and the compute phases in between.
      assert.deepEqual(
        t.names.filter((n) => !n.startsWith('COMPUTE_')).sort(),
        [...STREAM_ROOT_NAMES].sort(),
      );
      assert.ok(t.names.includes('COMPUTE_START'));
      assert.ok(t.names.indexOf('GRPC_SEND_START') < t.names.indexOf('GRPC_SEND_END'));
    }
    // The ensemble's two steps are child traces of its request's trace.
    const ensemble = byRequest.get('e1')!;
    assert.equal(ensemble.model, 'simple_ensemble');
    assert.ok(ensemble.names.includes('GRPC_WAITREAD_END') && ensemble.names.includes('GRPC_SEND_END'));
    const steps = [...all.values()].filter((t) => t.parentId === ensemble.id);
    assert.deepEqual(
      steps.map((t) => t.model),
      ['simple', 'simple'],
    );
    // The refused request: read, started, ended, answered (its error is the response).
    const bad = byRequest.get('bad')!;
    assert.deepEqual(
      bad.names.filter((n) => !n.startsWith('GRPC_')),
      ['REQUEST_START', 'REQUEST_END'],
    );
    assert.ok(bad.names.includes('GRPC_SEND_END'));

    const lines = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.length, 4);
    const line = new Map(lines.map((l) => [l.request_id, l]));
    for (const id of ['s1', 'e1', 'bad', 's2']) {
      const l = line.get(id)!;
      assert.equal(l.protocol, 'grpc');
      assert.equal(l.trace_id, String(byRequest.get(id)!.id));
      assert.ok((l.bytes_in as number) > 0 && (l.bytes_out as number) > 0);
      assert.equal(l.version, '1', id); // the version that answered, though the request named none
    }
    assert.equal(line.get('s1')!.status, 0);
    assert.equal(line.get('e1')!.model, 'simple_ensemble');
    assert.equal(line.get('bad')!.status, 3); // INVALID_ARGUMENT
    assert.equal(typeof line.get('s2')!.compute_us, 'number');
    assert.equal(line.get('bad')!.compute_us, undefined);
  });

  it("a decoupled model's request: one INFER_RESPONSE_COMPLETE / GRPC_SEND_* per response, one log line", async () => {
    const file = path.join(dir, 'stream-decoupled.json');
    const log = path.join(dir, 'stream-decoupled.log');
    const s = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--load-model=square_int32',
      `--trace-config=triton,file=${file}`,
      '--trace-config=rate=1',
      '--trace-config=level=TIMESTAMPS',
      `--access-log=${log}`,
    ]);
    let responses: Plain[];
    try {
      responses = await streamAll(s, [
        {
          model_name: 'square_int32',
          id: 'sq',
          inputs: [{ name: 'IN', datatype: 'INT32', shape: [1] }],
          raw_input_contents: [int32s([3])],
        },
      ]);
    } finally {
      await s.stop();
    }
    assert.equal(responses.length, 3);
    const [trace] = [...traces(file).values()];
    assert.equal(trace.model, 'square_int32');
    const count = (n: string): number => trace.names.filter((x) => x === n).length;
    assert.equal(count('GRPC_WAITREAD_START'), 1);
    assert.equal(count('INFER_RESPONSE_COMPLETE'), 3);
    assert.equal(count('GRPC_SEND_START'), 3);
    assert.equal(count('GRPC_SEND_END'), 3);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    assert.equal(lines.length, 1);
    const line = JSON.parse(lines[0]) as Record<string, unknown>;
    assert.equal(line.request_id, 'sq');
    assert.equal(line.status, 0);
    assert.equal(line.trace_id, '1');
  });

  it('joins the traceparent of the stream metadata: one InferRequest span per request', async () => {
    const bodies: { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }[] = [];
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as (typeof bodies)[number]);
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const port = (receiver.address() as AddressInfo).port;
    const s = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--trace-config=mode=opentelemetry',
      `--trace-config=opentelemetry,url=http://127.0.0.1:${port}/v1/traces`,
      '--trace-config=rate=0',
      '--trace-config=level=TIMESTAMPS',
    ]);
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const callerSpan = 'b7ad6b7169203331';
    try {
      // rate=0: a stream without a context is not traced.
      await streamAll(s, [grpcRequest('simple', 'plain', [1, 16])]);
      const md = new Metadata();
      md.set('traceparent', `00-${traceId}-${callerSpan}-01`);
      const r = await streamAll(
        s,
        [grpcRequest('simple', 'a', [1, 16]), grpcRequest('simple', 'b', [1, 16])],
        md,
      );
      assert.equal(r.length, 2);
    } finally {
      await s.stop();
      receiver.close();
    }
    const spans = bodies.flatMap((b) =>
      b.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)),
    );
    const roots = spans.filter((x) => x.name === 'InferRequest');
    assert.equal(roots.length, 2);
    for (const root of roots) {
      assert.equal(root.traceId, traceId);
      assert.equal(root.parentSpanId, callerSpan);
      const events = root.events.map((e) => e.name);
      for (const n of [
        'GRPC_WAITREAD_START',
        'GRPC_WAITREAD_END',
        'INFER_RESPONSE_COMPLETE',
        'GRPC_SEND_START',
        'GRPC_SEND_END',
      ])
        assert.ok(events.includes(n), `${n} in ${events.join(',')}`);
      const model = spans.filter((x) => x.name === 'simple' && x.parentSpanId === root.spanId);
      assert.equal(model.length, 1);
    }
    assert.notEqual(roots[0].spanId, roots[1].spanId);
    assert.equal(spans.filter((x) => x.name === 'simple').length, 2);
  });
});

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  events: { name: string }[];
}
