/**
 * The OTLP check (docs/tracing.md): Nereid exports its spans to a real OpenTelemetry Collector (the
 * upstream OTLP receiver and debug exporter, built by scripts/build-otelcol.sh from the Go module proxy),
 * and every span the collector decoded is checked against the OpenTelemetry semantic conventions as the
 * `@opentelemetry/semantic-conventions` package publishes them: the attribute names (its constants), their
 * types as the collector read them off the wire (Str, Int), the values the conventions fix (`grpc`, the
 * method), and the span kinds (SERVER at the edge, INTERNAL for the work inside). One HTTP infer, one gRPC
 * infer and one ensemble over HTTP. Skipped, saying why, where no collector can be built (no Go).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  HTTP_REQUEST_METHOD_VALUE_POST,
} from '@opentelemetry/semantic-conventions';
import {
  ATTR_RPC_GRPC_STATUS_CODE,
  ATTR_RPC_METHOD,
  ATTR_RPC_SERVICE,
  ATTR_RPC_SYSTEM,
  RPC_SYSTEM_VALUE_GRPC,
} from '@opentelemetry/semantic-conventions/incubating';
import { TestClient } from '../../src/frontends/grpc/test-client.testkit.js';
import { EXAMPLES, ROOT, post, startServer, type TestServer } from './harness.js';

/**
 * The collector's binary (npm test's setup built it; this finds it in the cache, or builds it when the file
 * runs alone). A skip only where this machine cannot build it (no Go: the script exits 2); a build that
 * fails otherwise is a failure, not a skip.
 */
function buildCollector(): { bin?: string; skip?: string } {
  try {
    const out = execFileSync('bash', [path.join(ROOT, 'scripts/build-otelcol.sh')], {
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 900_000,
    });
    return { bin: out.toString().trim().split('\n').pop() };
  } catch (err) {
    if ((err as { status?: number }).status === 2) {
      return { skip: `no OpenTelemetry Collector: ${(err as Error).message.split('\n')[0]}` };
    }
    throw err;
  }
}

const collector = buildCollector();

interface Value {
  type: string;
  value: string;
}
interface Span {
  traceId: string;
  id: string;
  parentId: string;
  name: string;
  kind: string;
  attributes: Map<string, Value>;
}

/**
 * The debug exporter's detailed text → spans: each `Span #n` block's header fields and its `Attributes:`
 * lines (`-> key: Type(value)`), up to its events.
 */
function parseSpans(text: string): Span[] {
  const spans: Span[] = [];
  for (const block of text.split(/^Span #\d+$/m).slice(1)) {
    const field = (name: string): string =>
      new RegExp(`^\\s*${name}\\s*: ?(.*)$`, 'm').exec(block)?.[1]?.trim() ?? '';
    const attributes = new Map<string, Value>();
    const attrs = /^Attributes:\n([\s\S]*?)(?=^\S|$(?![\s\S]))/m.exec(block)?.[1] ?? '';
    for (const m of attrs.matchAll(/^\s+-> ([^:]+): (\w+)\((.*)\)$/gm))
      attributes.set(m[1], { type: m[2], value: m[3] });
    spans.push({
      traceId: field('Trace ID'),
      id: field('ID'),
      parentId: field('Parent ID'),
      name: field('Name'),
      kind: field('Kind'),
      attributes,
    });
  }
  return spans;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

const SIMPLE = {
  inputs: ['INPUT0', 'INPUT1'].map((name) => ({
    name,
    shape: [1, 16],
    datatype: 'INT32',
    data: Array.from({ length: 16 }, (_, i) => i),
  })),
};
const int32s = (v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);

/** Asserts the attribute is there with the collector's type, and returns its value. */
function attribute(span: Span, name: string, type: 'Str' | 'Int'): string {
  const a = span.attributes.get(name);
  assert.ok(
    a !== undefined,
    `${span.name} (${span.kind}) has ${name}: ${JSON.stringify([...span.attributes])}`,
  );
  assert.equal(a.type, type, `${span.name}: ${name} is ${type}`);
  return a.value;
}

describe(
  'spans at a real OpenTelemetry Collector, against the semantic conventions',
  { skip: collector.skip },
  () => {
    let dir: string;
    let otelcol: ChildProcess;
    let output = '';
    let server: TestServer;
    let grpcPort: number;
    let spans: Span[] = [];
    const ids = {
      http: '4bf92f3577b34da6a3ce929d0e0e4736',
      grpc: '0af7651916cd43dd8448eb211c80319c',
      ensemble: '5b8aa5a2d2c872e8321cf37308d69df2',
    };
    const caller = '00f067aa0ba902b7';
    const byTrace = (trace: string): Span[] => spans.filter((s) => s.traceId === trace);

    before(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'nereid-otelcol-'));
      const port = await freePort();
      writeFileSync(
        path.join(dir, 'config.yaml'),
        [
          'receivers:',
          '  otlp:',
          '    protocols:',
          '      http:',
          `        endpoint: 127.0.0.1:${port}`,
          'exporters:',
          '  debug:',
          '    verbosity: detailed',
          '    use_internal_logger: false',
          'service:',
          '  telemetry:',
          '    metrics:',
          '      level: none',
          '  pipelines:',
          '    traces:',
          '      receivers: [otlp]',
          '      exporters: [debug]',
          '',
        ].join('\n'),
      );
      otelcol = spawn(collector.bin!, [`--config=file:${path.join(dir, 'config.yaml')}`], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let log = '';
      otelcol.stdout!.on('data', (c: Buffer) => (output += c.toString()));
      otelcol.stderr!.on('data', (c: Buffer) => (log += c.toString()));
      const end = Date.now() + 60_000;
      while (!log.includes('Everything is ready')) {
        if (Date.now() > end || otelcol.exitCode !== null)
          assert.fail(`the collector did not start:\n${log}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      server = await startServer([
        `--model-repository=${EXAMPLES}`,
        '--model-control-mode=explicit',
        '--load-model=simple',
        '--load-model=simple_ensemble',
        '--trace-config=mode=opentelemetry',
        `--trace-config=opentelemetry,url=http://127.0.0.1:${port}/v1/traces`,
        '--trace-config=opentelemetry,resource=service.name=nereid-otlp-check',
        '--trace-config=rate=0',
        '--trace-config=level=TIMESTAMPS',
      ]);
      grpcPort = server.running.grpc!.port;
      const http = await post(`${server.url}/v2/models/simple/infer`, SIMPLE, {
        traceparent: `00-${ids.http}-${caller}-01`,
      });
      assert.equal(http.status, 200);
      const ensemble = await post(`${server.url}/v2/models/simple_ensemble/infer`, SIMPLE, {
        traceparent: `00-${ids.ensemble}-${caller}-01`,
      });
      assert.equal(ensemble.status, 200);
      const { Metadata } = await import('@grpc/grpc-js');
      const client = new TestClient(`127.0.0.1:${grpcPort}`);
      try {
        const metadata = new Metadata();
        metadata.set('traceparent', `00-${ids.grpc}-${caller}-01`);
        await client.call(
          'ModelInfer',
          {
            model_name: 'simple',
            id: 'g1',
            inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
            raw_input_contents: [0, 1].map(() => int32s(Array.from({ length: 16 }, (_, i) => i))),
          },
          metadata,
        );
      } finally {
        client.close();
      }
      await server.stop(); // the exporter's shutdown sends what is queued
      // The collector prints a batch when it has decoded it: wait for all three traces' edge spans.
      const until = Date.now() + 60_000;
      for (;;) {
        spans = parseSpans(output);
        const edges = Object.values(ids).map((t) => byTrace(t).some((s) => s.name === 'InferRequest'));
        if (edges.every(Boolean)) break;
        if (Date.now() > until) assert.fail(`the collector never printed every trace:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      // Children can come in a later batch than their parent: let one more export interval pass.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      spans = parseSpans(output);
    });

    after(() => {
      otelcol?.kill();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('an HTTP infer: a SERVER span with the HTTP server conventions, typed as they require', () => {
      const trace = byTrace(ids.http);
      const edge = trace.find((s) => s.name === 'InferRequest');
      assert.ok(edge !== undefined);
      assert.equal(edge.kind, 'Server');
      assert.equal(edge.parentId, caller);
      assert.equal(attribute(edge, ATTR_HTTP_REQUEST_METHOD, 'Str'), HTTP_REQUEST_METHOD_VALUE_POST);
      assert.equal(attribute(edge, ATTR_URL_PATH, 'Str'), '/v2/models/simple/infer');
      assert.equal(attribute(edge, ATTR_URL_SCHEME, 'Str'), 'http');
      assert.equal(attribute(edge, ATTR_HTTP_ROUTE, 'Str'), '/v2/models/{model_name}/infer');
      assert.equal(attribute(edge, ATTR_HTTP_RESPONSE_STATUS_CODE, 'Int'), '200');
      assert.equal(attribute(edge, ATTR_SERVER_ADDRESS, 'Str'), '127.0.0.1');
      assert.equal(attribute(edge, ATTR_SERVER_PORT, 'Int'), new URL(server.url).port);
      assert.match(attribute(edge, ATTR_NETWORK_PROTOCOL_VERSION, 'Str'), /^1\.[01]$/);
    });

    it('a gRPC infer: a SERVER span with the RPC conventions, typed as they require', () => {
      const edge = byTrace(ids.grpc).find((s) => s.name === 'InferRequest');
      assert.ok(edge !== undefined);
      assert.equal(edge.kind, 'Server');
      assert.equal(attribute(edge, ATTR_RPC_SYSTEM, 'Str'), RPC_SYSTEM_VALUE_GRPC);
      assert.equal(attribute(edge, ATTR_RPC_SERVICE, 'Str'), 'inference.GRPCInferenceService');
      assert.match(attribute(edge, ATTR_RPC_METHOD, 'Str'), /(^|\/)ModelInfer$/);
      assert.equal(attribute(edge, ATTR_RPC_GRPC_STATUS_CODE, 'Int'), '0');
      assert.equal(attribute(edge, ATTR_SERVER_ADDRESS, 'Str'), '127.0.0.1');
      assert.equal(attribute(edge, ATTR_SERVER_PORT, 'Int'), String(grpcPort));
      // No HTTP attributes on a gRPC call's span.
      assert.ok(!edge.attributes.has(ATTR_HTTP_REQUEST_METHOD));
    });

    it('an ensemble: one SERVER span at the edge, every step and compute span INTERNAL under it', () => {
      const trace = byTrace(ids.ensemble);
      const servers = trace.filter((s) => s.kind === 'Server');
      assert.deepEqual(
        servers.map((s) => s.name),
        ['InferRequest'],
      );
      const model = trace.filter((s) => s.name === 'simple_ensemble');
      const steps = trace.filter((s) => s.name === 'simple');
      assert.equal(model.length, 1);
      assert.equal(steps.length, 2, trace.map((s) => s.name).join());
      assert.ok(trace.some((s) => s.name === 'compute'));
      const inTrace = new Set(trace.map((s) => s.id));
      for (const s of trace.filter((x) => x.name !== 'InferRequest')) {
        assert.equal(s.kind, 'Internal', `${s.name} is INTERNAL`);
        assert.ok(inTrace.has(s.parentId), `${s.name}'s parent is in the trace`);
        // The conventions' request attributes belong to the edge span only.
        assert.ok(!s.attributes.has(ATTR_HTTP_REQUEST_METHOD) && !s.attributes.has(ATTR_RPC_SYSTEM), s.name);
      }
      for (const s of [...model, ...steps]) assert.equal(attribute(s, 'triton.model_name', 'Str'), s.name);
      assert.equal(attribute(servers[0], ATTR_URL_PATH, 'Str'), '/v2/models/simple_ensemble/infer');
    });

    it('every span of the three requests: a known kind, and no attribute the collector could not type', () => {
      const all = Object.values(ids).flatMap(byTrace);
      assert.ok(all.length >= 3 + 2 + 4, `${all.length} spans`);
      for (const s of all) {
        assert.ok(s.kind === 'Server' || s.kind === 'Internal', `${s.name}: ${s.kind}`);
        for (const [k, v] of s.attributes)
          assert.ok(['Str', 'Int', 'Double', 'Bool'].includes(v.type), `${k}: ${v.type}`);
      }
    });
  },
);
