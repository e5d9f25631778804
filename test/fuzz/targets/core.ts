/**
 * End-to-end fuzz targets against a real server (live-server.ts): decoded HTTP and gRPC inference requests
 * run through the core's checks (model and version lookup, datatypes, shapes against the config, batch
 * sizes, BYTES framing, sequence and priority parameters, shared memory) into a model and back through the
 * response encoders; and hostile requests to every HTTP route over a real socket, where the answer must be a
 * JSON error with a non-5xx status unless Triton itself answers 5xx there.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeInferResponse as encodeGrpcResponse } from '../../../src/frontends/grpc/infer-response.js';
import { parseInferRequest, toInferenceRequest } from '../../../src/frontends/grpc/infer-request.js';
import {
  decodeInferRequest,
  encodeInferResponse as encodeHttpResponse,
  inferenceHeaderLength,
} from '../../../src/frontends/http/infer-codec.js';
import { encodeInferRequest as encodeGrpc } from '../../../src/client/grpc/infer-codec.js';
import { encodeMessage, messageType } from '../../../src/client/grpc/proto.js';
import { encodeInferRequest as encodeHttp } from '../../../src/client/http/infer-codec.js';
import { InferInput, InferRequestedOutput } from '../../../src/client/infer-input.js';
import type { InferOptions } from '../../../src/client/types.js';
import type { InferenceResponse } from '../../../src/core/types.js';
import { hostileNumber, hostileString, jsonOps, mutateNode, render, toNode } from '../arbitraries.js';
import { target, type FuzzTarget } from '../harness.js';
import { LIVE_MODELS, liveServer, stopLiveServer, type LiveInput, type LiveModel } from '../live-server.js';
import { dataArb, elementCountOf } from '../tensors.js';
import { inferRequestBytesArb } from './grpc.js';
import { inferBodyArb } from './http.js';

const MODELS = [...Object.keys(LIVE_MODELS), 'missing'];
const modelArb = fc.constantFrom(...MODELS);
const versionArb = fc.constantFrom(undefined, '1', '2', '');

/**
 * Errors a model or the core may answer with INTERNAL for a request Triton also answers with INTERNAL.
 * (None so far: every refusal of a request's content is INVALID_ARG, NOT_FOUND, UNAVAILABLE or UNSUPPORTED.)
 */
const CORE_INTERNAL: readonly RegExp[] = [];

// ---- requests built from the models' own metadata, then spoilt ----

type Spoil = 'drop-input' | 'extra-input' | 'shape' | 'datatype' | 'over-batch' | 'short-data' | 'bad-output';

interface ModelRequest {
  readonly model: string;
  readonly inputs: { input: LiveInput; shape: number[]; data: Buffer; binary: boolean }[];
  readonly outputs: string[] | undefined;
  readonly options: InferOptions;
  readonly spoils: Spoil[];
}

const modelRequestArb: fc.Arbitrary<ModelRequest> = fc
  .constantFrom(...Object.entries(LIVE_MODELS))
  .chain(([model, spec]: [string, LiveModel]) =>
    fc
      .record({
        batch: spec.maxBatchSize > 0 ? fc.integer({ min: 1, max: spec.maxBatchSize }) : fc.constant(0),
        present: fc.array(fc.boolean(), { minLength: spec.inputs.length, maxLength: spec.inputs.length }),
        free: fc.array(fc.nat(3), { minLength: 8, maxLength: 8 }),
        binary: fc.boolean(),
        outputs: fc.option(
          fc.subarray(
            spec.inputs.map((i) => `OUTPUT${i.name.slice(5)}`),
            { minLength: 1 },
          ),
          { nil: undefined },
        ),
        // Half the requests unspoilt, so the models' success paths get as many cases as the refusals.
        spoils: fc.oneof(
          fc.constant<Spoil[]>([]),
          fc.array(
            fc.constantFrom<Spoil>(
              'drop-input',
              'extra-input',
              'shape',
              'datatype',
              'over-batch',
              'short-data',
              'bad-output',
            ),
            { minLength: 1, maxLength: 2 },
          ),
        ),
        sequence: fc.record({ id: fc.integer({ min: 1, max: 3 }), start: fc.boolean(), end: fc.boolean() }),
        priority: fc.option(fc.nat(3), { nil: undefined }),
        timeout: fc.option(fc.nat(1000), { nil: undefined }),
        utf8: fc.boolean(),
      })
      .chain((r) => {
        const chosen = spec.inputs.filter((i, k) => !i.optional || r.present[k]);
        const shapes = chosen.map((i) => {
          let f = 0;
          const dims = i.dims.map((d) => (d === -1 ? r.free[f++ % r.free.length] : d));
          return r.batch > 0 ? [r.batch, ...dims] : dims;
        });
        return fc
          .tuple(...chosen.map((i, k) => dataArb(i.datatype, elementCountOf(shapes[k]), r.utf8 || !r.binary)))
          .map((datas): ModelRequest => {
            const isSequence = model === 'id_sequence';
            return {
              model,
              inputs: chosen.map((input, k) => ({
                input,
                shape: shapes[k],
                data: datas[k],
                binary: r.binary,
              })),
              outputs: r.outputs,
              spoils: r.spoils,
              options: {
                requestId: 'fuzz',
                ...(isSequence && {
                  sequenceId: r.sequence.id,
                  sequenceStart: r.sequence.start,
                  sequenceEnd: r.sequence.end,
                }),
                ...(model === 'id_batched' && r.priority !== undefined && { priority: r.priority }),
                ...(model === 'id_batched' && r.timeout !== undefined && { timeout: r.timeout }),
              },
            };
          });
      }),
  );

/** The client's InferInputs for a request, spoilt as asked. */
function clientInputs(r: ModelRequest): {
  inputs: InferInput[];
  outputs: InferRequestedOutput[] | undefined;
} {
  const parts = r.inputs.map((i) => ({ ...i, name: i.input.name, datatype: i.input.datatype }));
  for (const s of r.spoils) {
    const first = parts[0];
    if (first === undefined) break;
    if (s === 'drop-input') parts.shift();
    else if (s === 'extra-input') parts.push({ ...first, name: 'INPUT9' });
    else if (s === 'shape') first.shape = [...first.shape, 1, 0];
    else if (s === 'datatype') first.datatype = first.datatype === 'INT32' ? 'INT64' : 'INT32';
    else if (s === 'over-batch') first.shape = [99, ...first.shape.slice(1)];
    else if (s === 'short-data') first.data = first.data.subarray(0, Math.max(0, first.data.length - 1));
  }
  const inputs: InferInput[] = [];
  for (const p of parts) {
    const input = new InferInput(p.name, p.shape, p.datatype);
    // Raw bytes go as they are even when they no longer fit the shape (spoilt on purpose).
    try {
      input.setRawData(p.data, { binary: p.binary });
    } catch {
      continue;
    }
    inputs.push(input);
  }
  const names = r.spoils.includes('bad-output') ? [...(r.outputs ?? []), 'OUTPUT9'] : r.outputs;
  return { inputs, outputs: names?.map((n) => new InferRequestedOutput(n, { binary: true })) };
}

/**
 * A request every model must serve: nothing spoilt, no sequence (whose state other cases change), no queue
 * timeout, and no output asked of an optional input left out (the identity backend refuses that, as
 * Triton's does).
 */
function mustSucceed(r: ModelRequest): boolean {
  if (r.spoils.length > 0 || r.model === 'id_sequence') return false;
  // A queue timeout of a few microseconds may expire before the batcher takes the request on a loaded
  // machine: a clean UNAVAILABLE then, so such a request only has to end in an allowed answer.
  if (r.options.timeout !== undefined && r.options.timeout > 0) return false;
  const present = new Set(r.inputs.map((i) => `OUTPUT${i.input.name.slice('INPUT'.length)}`));
  const asked = r.outputs ?? LIVE_MODELS[r.model].inputs.map((i) => `OUTPUT${i.name.slice('INPUT'.length)}`);
  return asked.every((o) => present.has(o));
}

// ---- the core behind the HTTP decoder ----

const httpCaseArb = fc.oneof(
  { arbitrary: modelRequestArb.map((r) => ({ kind: 'model' as const, r })), weight: 3 },
  {
    arbitrary: fc
      .tuple(inferBodyArb, modelArb, versionArb)
      .map(([b, model, version]) => ({ kind: 'hostile' as const, b, model, version })),
    weight: 2,
  },
);

export const coreInferHttp = target({
  name: 'core-infer-http',
  what: 'HTTP inference requests (the client encoder, spoilt, or hostile) → decoder → the real core → response encoder',
  weight: 6,
  allowedInternal: CORE_INTERNAL,
  arbitrary: httpCaseArb,
  async setup() {
    await liveServer();
  },
  async run(c, ctx) {
    let body: Buffer;
    let header: string | string[] | undefined;
    let model: string;
    let version: string | undefined;
    if (c.kind === 'model') {
      const { inputs, outputs } = clientInputs(c.r);
      let encoded;
      try {
        encoded = encodeHttp(inputs, { ...c.r.options, ...(outputs !== undefined && { outputs }) });
      } catch (err) {
        if (err instanceof TypeError || err instanceof RangeError) return ctx.note('client refused');
        throw err;
      }
      body = Buffer.concat(encoded.chunks);
      header = encoded.headerLength === undefined ? undefined : String(encoded.headerLength);
      model = c.r.model;
    } else {
      ({ body, header } = c.b);
      model = c.model;
      version = c.version;
    }
    const headerLength = ctx.attempt('inferenceHeaderLength', () =>
      inferenceHeaderLength(header, body.length),
    );
    if ((headerLength === undefined && header !== undefined) || headerLength === 0) return;
    const decoded = ctx.attempt('decodeInferRequest', () =>
      decodeInferRequest(body, headerLength, {
        modelName: model,
        modelVersion: version,
        maxInputSize: 64 << 20,
      }),
    );
    if (decoded === undefined) return;
    const { api } = await liveServer();
    const run = (): Promise<InferenceResponse> =>
      api.inferOnce({ ...decoded.request, signal: new AbortController().signal });
    const must = c.kind === 'model' && mustSucceed(c.r);
    if (must) ctx.note('must succeed');
    const response = must ? await run() : await ctx.attemptAsync('inferOnce', run);
    if (response === undefined) return;
    ctx.note('inferred');
    // A response the core accepted must encode: a failure here would be a 500 for the client.
    encodeHttpResponse(response, decoded.format);
  },
});

// ---- the core behind the gRPC decoder ----

const grpcCaseArb = fc.oneof(
  { arbitrary: modelRequestArb.map((r) => ({ kind: 'model' as const, r })), weight: 3 },
  {
    arbitrary: fc
      .tuple(inferRequestBytesArb, modelArb, versionArb)
      .map(([bytes, model, version]) => ({ kind: 'hostile' as const, bytes, model, version })),
    weight: 2,
  },
);

export const coreInferGrpc = target({
  name: 'core-infer-grpc',
  what: 'gRPC ModelInferRequests (the client encoder, spoilt, or hostile bytes) → decoder → the real core → encoder',
  weight: 6,
  allowedInternal: CORE_INTERNAL,
  arbitrary: grpcCaseArb,
  async setup() {
    await liveServer();
  },
  async run(c, ctx) {
    let bytes: Buffer;
    if (c.kind === 'model') {
      const { inputs, outputs } = clientInputs(c.r);
      try {
        bytes = encodeMessage(
          messageType('ModelInferRequest'),
          encodeGrpc(c.r.model, inputs, { ...c.r.options, ...(outputs !== undefined && { outputs }) }),
        );
      } catch (err) {
        if (err instanceof TypeError || err instanceof RangeError) return ctx.note('client refused');
        throw err;
      }
    } else bytes = c.bytes;
    const wire = ctx.attempt('parseInferRequest', () => parseInferRequest(bytes));
    if (wire === undefined) return;
    if (c.kind === 'hostile') {
      wire.modelName = c.model;
      wire.modelVersion = c.version ?? '';
    }
    const converted = ctx.attempt('toInferenceRequest', () => toInferenceRequest(wire));
    if (converted === undefined) return;
    const { api } = await liveServer();
    const run = (): Promise<InferenceResponse> =>
      api.inferOnce({ ...converted.request, signal: new AbortController().signal });
    const must = c.kind === 'model' && mustSucceed(c.r);
    if (must) ctx.note('must succeed');
    const response = must ? await run() : await ctx.attemptAsync('inferOnce', run);
    if (response === undefined) return;
    ctx.note('inferred');
    encodeGrpcResponse(response);
  },
});

// ---- every HTTP route, over a socket ----

/** Model names load/unload may see: none of them is in the repository (loads there are another target's job). */
const CONTROL_NAMES = ['missing', '', '..', '%2e%2e', 'a%2Fb', '__proto__'];

const jsonBody = (base: fc.Arbitrary<unknown>): fc.Arbitrary<Buffer> =>
  fc.tuple(base, jsonOps(2)).map(([v, ops]) => Buffer.from(render(mutateNode(toNode(v), ops))));

interface RouteCase {
  readonly method: string;
  readonly path: string;
  readonly body?: Buffer;
  readonly headers?: Record<string, string>;
}

const routeCaseArb: fc.Arbitrary<RouteCase> = fc.oneof(
  fc.record({
    method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'),
    path: fc.constantFrom(
      '/v2',
      '/v2/health/live',
      '/v2/health/ready',
      '/v2/models/stats',
      '/v2/trace/setting',
      '/v2/logging',
      '/v2/systemsharedmemory/status',
      '/v2/cudasharedmemory/status',
    ),
  }),
  fc.record({
    method: fc.constantFrom('GET', 'POST'),
    path: fc
      .tuple(
        modelArb,
        fc.constantFrom('', '/versions/1', '/versions/9', '/versions/x'),
        fc.constantFrom('', '/ready', '/config', '/stats', '/trace/setting'),
      )
      .map(([m, v, a]) => `/v2/models/${m}${a === '/trace/setting' ? '' : v}${a}`),
  }),
  fc.record({
    method: fc.constant('POST'),
    path: fc
      .tuple(fc.constantFrom(...CONTROL_NAMES), fc.constantFrom('load', 'unload'))
      .map(([m, a]) => `/v2/repository/models/${m}/${a}`),
    body: jsonBody(
      fc.record(
        {
          parameters: fc.dictionary(
            fc.constantFrom('config', 'file:1/model.py', 'file:../x', 'unload_dependents', 'x'),
            fc.oneof(
              hostileString,
              fc.boolean(),
              hostileNumber,
              fc.constantFrom('{"backend":"identity"}', 'AAAA', '===='),
            ),
            { maxKeys: 2 },
          ),
        },
        { requiredKeys: [] },
      ),
    ),
  }),
  fc.record({
    method: fc.constant('POST'),
    path: fc.constant('/v2/repository/index'),
    body: jsonBody(fc.record({ ready: fc.oneof(fc.boolean(), hostileString) }, { requiredKeys: [] })),
  }),
  fc.record({
    method: fc.constant('POST'),
    path: fc.constantFrom('/v2/logging'),
    body: jsonBody(
      fc.dictionary(
        fc.constantFrom(
          'log_info',
          'log_warning',
          'log_error',
          'log_verbose_level',
          'log_format',
          'log_file',
          'other',
        ),
        fc.oneof(fc.boolean(), hostileNumber, fc.constantFrom('default', 'ISO8601', 'x')),
        { maxKeys: 3 },
      ),
    ),
  }),
  fc.record({
    method: fc.constant('POST'),
    path: fc.oneof(
      fc.constant('/v2/trace/setting'),
      modelArb.map((m) => `/v2/models/${m}/trace/setting`),
    ),
    body: jsonBody(
      fc.dictionary(
        fc.constantFrom(
          'trace_level',
          'trace_rate',
          'trace_count',
          'log_frequency',
          'trace_file',
          'trace_mode',
          'other',
        ),
        fc.oneof(
          fc.constantFrom('OFF', 'TIMESTAMPS', 'TENSORS', '10', '-1', 'triton', 'opentelemetry'),
          hostileNumber,
          fc.array(fc.constantFrom('TIMESTAMPS', 'OFF', 'x')),
          fc.constant(null),
        ),
        { maxKeys: 3 },
      ),
    ),
  }),
  fc.record({
    method: fc.constantFrom('POST', 'GET'),
    path: fc
      .tuple(
        fc.constantFrom('', '/region/r', '/region/%2e', '/region/x%00'),
        fc.constantFrom('register', 'unregister', 'status'),
      )
      .map(([r, a]) => `/v2/systemsharedmemory${r}/${a}`),
    body: jsonBody(
      fc.record(
        {
          // Never a real object's name: only keys refused before open(), or a name nothing has.
          key: fc.oneof(
            fc.constantFrom(
              '/nereid-fuzz-no-such-object',
              '/',
              'a/b',
              '..',
              '/triton_python_backend_shm_region_1',
              'x\u0000',
            ),
            hostileNumber,
          ),
          offset: hostileNumber,
          byte_size: hostileNumber,
        },
        { requiredKeys: [] },
      ),
    ),
  }),
  fc.record({
    method: fc.constant('POST'),
    path: fc
      .tuple(modelArb, fc.constantFrom('infer', 'generate', 'generate_stream'))
      .map(([m, a]) => `/v2/models/${m}/${a}`),
    body: inferBodyArb.map((b) => b.body),
    headers: fc.constantFrom<Record<string, string>>(
      {},
      { 'content-encoding': 'gzip' },
      { 'content-type': 'application/octet-stream' },
    ),
  }),
);

/**
 * The 5xx a client can get by design, both 501 as in Triton: CUDA shared memory on a server without GPUs,
 * and trace settings that name the trace file (which only the command line sets). A refused model load is
 * a 500 too, as Triton answers it (checked where the status is read).
 */
const ROUTE_5XX: readonly RegExp[] = [
  /^CUDA shared memory is not supported/,
  /^trace file location can not be updated through network protocol$/,
];

export const httpRoutes = target({
  name: 'http-routes',
  what: "hostile requests to every HTTP route over a real socket: JSON errors, no 5xx beyond Triton's own, still serving",
  weight: 4,
  arbitrary: routeCaseArb,
  async setup() {
    await liveServer();
  },
  async run({ method, path, body, headers }, ctx) {
    const { http } = await liveServer();
    const res = await http(method, path, body, headers);
    ctx.note(String(res.status));
    if (res.status !== 200) {
      const text = res.body.toString('utf8');
      if (res.status === 404 || res.status === 405) return; // the router's plain answers
      let message: unknown;
      try {
        message = (JSON.parse(text) as { error?: unknown }).error;
      } catch {
        assert.fail(`${method} ${path} → ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
      }
      assert.equal(typeof message, 'string', `${method} ${path} → ${res.status}: ${text.slice(0, 200)}`);
      // A refused load request is Triton's INTERNAL (500) by default (--load-error-status): Triton's own.
      const tritonLoad500 =
        res.status === 500 && /^\/v2\/repository\/models\/[^/]*\/load$/.test(path.split('?')[0]);
      if (res.status >= 500 && !tritonLoad500) {
        assert.ok(
          ROUTE_5XX.some((re) => re.test(message as string)),
          `${method} ${path} → ${res.status}: ${String(message)}`,
        );
      }
    }
    // Whatever happened, the server still answers.
    if (path.includes('region')) await http('POST', '/v2/systemsharedmemory/unregister');
  },
  async teardown() {
    const { http } = await liveServer();
    assert.equal((await http('GET', '/v2/health/live')).status, 200);
  },
});

export const CORE_TARGETS: readonly FuzzTarget<unknown>[] = [coreInferHttp, coreInferGrpc, httpRoutes];

export { stopLiveServer };
