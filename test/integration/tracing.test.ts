/**
 * Tracing end to end on a real server: sampling by rate and count, settings changed at run time through
 * the trace extension (global and per model), a failed request's trace, the access log, and OpenTelemetry
 * spans exported over real OTLP/HTTP to a receiver on a real socket (the SDK's JSON encoding, read back
 * here) with the caller's W3C traceparent joined.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { EXAMPLES, post, request, startServer } from './harness.js';

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
  parent_id?: number;
  timestamps?: { name: string; ns: number }[];
}

function traces(file: string): Map<number, { model?: string; names: string[] }> {
  const out = new Map<number, { model?: string; names: string[] }>();
  for (const e of JSON.parse(readFileSync(file, 'utf8')) as Entry[]) {
    const t = out.get(e.id) ?? { names: [] };
    if (e.model_name) t.model = e.model_name;
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
    assert.equal(typeof lines[1].compute_us, 'number');
    assert.equal(lines[2].compute_us, undefined);
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
    try {
      // rate=0: only requests that carry a context are traced.
      assert.equal((await post(`${s.url}/v2/models/simple/infer`, SIMPLE)).status, 200);
      const traced = await post(`${s.url}/v2/models/simple/infer`, SIMPLE, {
        traceparent: `00-${traceId}-${callerSpan}-01`,
      });
      assert.equal(traced.status, 200);
    } finally {
      await s.stop(); // shuts the exporter down, which sends what is queued
      receiver.close();
    }
    interface Span {
      traceId: string;
      spanId: string;
      parentSpanId?: string;
      name: string;
      attributes: { key: string; value: Record<string, unknown> }[];
      events: { name: string }[];
    }
    const spans: Span[] = [];
    const resources: unknown[] = [];
    for (const b of bodies as { resourceSpans: { resource: unknown; scopeSpans: { spans: Span[] }[] }[] }[]) {
      for (const rs of b.resourceSpans) {
        resources.push(rs.resource);
        for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
    }
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
  });
});
