/**
 * Fuzz targets for the gRPC frontend's decoders: ModelInferRequest bytes (the hand-written wire reader and
 * Triton's request rules, typed contents, parameters), the message framing (length prefixes split across
 * DATA chunks, compression), and the cold rpcs decoded by protobufjs and handled against a real in-process
 * server. Round-trips: the gRPC client's request encoder → the server's decoder; the server's parameter
 * writer → its parameter reader; framed messages → MessageReader; grpc-message percent-encoding.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { deflate, gzip } from 'node:zlib';
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { encodeInferRequest } from '../../../src/client/grpc/infer-codec.js';
import { encodeMessage, messageType } from '../../../src/client/grpc/proto.js';
import { InferInput, InferRequestedOutput, type ParameterValue } from '../../../src/client/infer-input.js';
import type { InferOptions } from '../../../src/client/types.js';
import type { Parameters } from '../../../src/core/types.js';
import type { InferenceServerApi } from '../../../src/core/server-api.js';
import {
  MessageReader,
  decodeGrpcMessage,
  encodeGrpcMessage,
  frame,
  parseTimeout,
} from '../../../src/frontends/grpc/transport/framing.js';
import { decompress } from '../../../src/frontends/grpc/transport/compression.js';
import { COLD_RPCS } from '../../../src/frontends/grpc/handlers.js';
import { parseInferRequest, toInferenceRequest } from '../../../src/frontends/grpc/infer-request.js';
import { codec, protoRoot } from '../../../src/frontends/grpc/messages.js';
import {
  parameterMapSize,
  readParameterEntry,
  writeParameterMap,
  type WireParameters,
} from '../../../src/frontends/grpc/parameters.js';
import { ProtoReader, ProtoWriter } from '../../../src/frontends/grpc/wire.js';
import { Nereid, type NereidServer } from '../../../src/index.js';
import { hostileBigInt, hostileNumber, hostileString, mutatedBytes } from '../arbitraries.js';
import { target, type FuzzTarget } from '../harness.js';
import { sameTensorData, tensorNameArb, wireTensorArb, type WireTensor } from '../tensors.js';

const wellFormed = (s: string): boolean => !/\p{Cs}/u.test(s);

// ---- ModelInferRequest from hostile bytes ----

const int64Text = fc.oneof(
  { arbitrary: fc.integer({ min: -2, max: 6 }).map(String), weight: 6 },
  { arbitrary: hostileBigInt.filter((v) => v >= -(2n ** 63n) && v < 2n ** 63n).map(String), weight: 1 },
);

/** An InferParameter as protobufjs plain data: one member of the oneof (or none). */
const inferParameterArb = fc.oneof(
  fc.record({ bool_param: fc.boolean() }),
  fc.record({ int64_param: int64Text }),
  fc.record({ string_param: hostileString.filter(wellFormed) }),
  fc.record({ double_param: hostileNumber }),
  fc.record({
    uint64_param: fc.oneof(
      fc.nat(5).map(String),
      fc.constantFrom('18446744073709551615', '9223372036854775808'),
    ),
  }),
  fc.constant({}),
);

const PARAMETER_KEYS = [
  'sequence_id',
  'sequence_start',
  'sequence_end',
  'priority',
  'timeout',
  'triton_enable_empty_final_response',
  'triton_other',
  'shared_memory_region',
  'shared_memory_offset',
  'shared_memory_byte_size',
  'classification',
  'custom',
  '__proto__',
];
const parameterMapArb = fc.dictionary(
  fc.oneof(
    { arbitrary: fc.constantFrom(...PARAMETER_KEYS), weight: 4 },
    { arbitrary: hostileString.filter(wellFormed), weight: 1 },
  ),
  inferParameterArb,
  { maxKeys: 3 },
);

const contentsArb = fc.record(
  {
    bool_contents: fc.array(fc.boolean(), { maxLength: 4 }),
    int_contents: fc.array(fc.integer(), { maxLength: 4 }),
    int64_contents: fc.array(int64Text, { maxLength: 4 }),
    uint_contents: fc.array(fc.nat(), { maxLength: 4 }),
    uint64_contents: fc.array(fc.nat().map(String), { maxLength: 4 }),
    fp32_contents: fc.array(hostileNumber, { maxLength: 4 }),
    fp64_contents: fc.array(hostileNumber, { maxLength: 4 }),
    bytes_contents: fc.array(fc.uint8Array({ maxLength: 6 }), { maxLength: 4 }),
  },
  { requiredKeys: [] },
);

const inferRequestPlainArb = fc.record(
  {
    model_name: fc.constantFrom('m', '', 'id'),
    model_version: fc.constantFrom('', '1', '-1', 'x'),
    id: fc.string({ maxLength: 4 }),
    parameters: parameterMapArb,
    inputs: fc.array(
      fc.record(
        {
          name: tensorNameArb.filter(wellFormed),
          datatype: fc.oneof(
            fc.constantFrom(
              'FP32',
              'INT32',
              'INT8',
              'UINT16',
              'BYTES',
              'BOOL',
              'INT64',
              'UINT64',
              'FP64',
              'FP16',
            ),
            fc.constantFrom('', 'float', 'TYPE_FP32'),
          ),
          shape: fc.array(int64Text, { maxLength: 4 }),
          parameters: parameterMapArb,
          contents: contentsArb,
        },
        { requiredKeys: ['name', 'datatype', 'shape'] },
      ),
      { maxLength: 3 },
    ),
    outputs: fc.array(fc.record({ name: tensorNameArb.filter(wellFormed), parameters: parameterMapArb }), {
      maxLength: 3,
    }),
    raw_input_contents: fc.array(fc.uint8Array({ maxLength: 24 }), { maxLength: 3 }),
  },
  { requiredKeys: [] },
);

const INFER_REQUEST = 'inference.ModelInferRequest';

/** Bytes of a ModelInferRequest built from plain data, then mutated; or plain garbage. */
export const inferRequestBytesArb: fc.Arbitrary<Buffer> = fc.oneof(
  { arbitrary: inferRequestPlainArb.map((p) => encodePlain(INFER_REQUEST, p)), weight: 4 },
  {
    arbitrary: mutatedBytes(
      inferRequestPlainArb.map((p) => encodePlain(INFER_REQUEST, p)),
      3,
    ),
    weight: 4,
  },
  { arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)), weight: 1 },
);

function encodePlain(typeName: string, plain: object): Buffer {
  const type = protoRoot().lookupType(typeName);
  return Buffer.from(type.encode(type.fromObject(plain)).finish());
}

export const grpcInfer = target({
  name: 'grpc-infer',
  what: 'ModelInferRequest bytes (structured, mutated, random) → parseInferRequest → toInferenceRequest',
  weight: 14,
  arbitrary: inferRequestBytesArb,
  run(bytes, ctx) {
    const wire = ctx.attempt('parseInferRequest', () => parseInferRequest(bytes));
    if (wire === undefined) return;
    const converted = ctx.attempt('toInferenceRequest', () => toInferenceRequest(wire));
    if (converted === undefined) return;
    ctx.note('decoded');
    for (const input of converted.request.inputs) {
      // gRPC shapes may be negative (the core refuses them with Triton's message), never beyond 2^53.
      assert.ok(
        input.shape.every((d) => Number.isSafeInteger(d)),
        `shape [${input.shape.join(',')}]`,
      );
      if (input.sharedMemory !== undefined) {
        assert.ok(Number.isSafeInteger(input.sharedMemory.offset) && input.sharedMemory.offset >= 0);
        assert.ok(Number.isSafeInteger(input.sharedMemory.byteSize) && input.sharedMemory.byteSize >= 0);
      }
    }
  },
});

// ---- client encoder → server decoder ----

const customKey = fc
  .oneof(
    { arbitrary: fc.constantFrom('p', 'max_tokens', '__proto__', 'constructor'), weight: 4 },
    { arbitrary: hostileString, weight: 1 },
  )
  .filter(
    (k) =>
      k !== '' &&
      wellFormed(k) &&
      !k.startsWith('triton_') &&
      ![
        'sequence_id',
        'sequence_start',
        'sequence_end',
        'priority',
        'timeout',
        'binary_data_output',
        'classification',
      ].includes(k) &&
      !k.startsWith('shared_memory_'),
  );

const parameterValue: fc.Arbitrary<ParameterValue> = fc.oneof(
  fc.boolean(),
  fc.string({ maxLength: 8 }),
  fc.integer(),
  // An integer-valued number travels as an integer: -0 arrives as 0 (the server writes it the same way).
  fc.double().filter((v) => !Object.is(v, -0)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
);

/** What the server reads for a value the gRPC client sent (int64 / uint64 / double / bool / string). */
function expectedParameter(v: ParameterValue): ParameterValue {
  if (typeof v === 'bigint') {
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  return v;
}

function expectedParameters(p: Readonly<Record<string, ParameterValue>>): Record<string, ParameterValue> {
  const out: Record<string, ParameterValue> = {};
  for (const [k, v] of Object.entries(p)) {
    Object.defineProperty(out, k, {
      value: expectedParameter(v),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

interface RoundTripInput {
  readonly t: WireTensor;
  readonly binary: boolean;
  readonly shm?: { region: string; byteSize: number; offset: number };
  readonly params: Record<string, ParameterValue>;
}

const shmRefArb = fc.record({
  region: fc.constantFrom('r', 'region-1'),
  byteSize: fc.nat(),
  offset: fc.nat(),
});

const roundTripArb = fc.record({
  inputs: fc
    .uniqueArray(
      fc.record({
        t: wireTensorArb(),
        binary: fc.boolean(),
        shm: fc.option(shmRefArb, { freq: 5, nil: undefined }),
        params: fc.dictionary(customKey, parameterValue, { maxKeys: 2 }),
      }),
      { maxLength: 3, selector: (i) => i.t.name },
    )
    .filter((inputs) => inputs.every((i) => wellFormed(i.t.name))),
  options: fc.record(
    {
      modelVersion: fc.oneof(fc.nat(5), fc.constantFrom('', '2')),
      requestId: fc.string({ maxLength: 6 }),
      sequenceId: fc.oneof(
        fc.nat(),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.string({ maxLength: 4 }),
      ),
      sequenceStart: fc.boolean(),
      sequenceEnd: fc.boolean(),
      priority: fc.nat(),
      timeout: fc.nat(),
      parameters: fc.dictionary(customKey, parameterValue, { maxKeys: 3 }),
      outputs: fc
        .uniqueArray(
          fc.record({
            name: tensorNameArb,
            classCount: fc.nat(5),
            shm: fc.option(shmRefArb, { freq: 4, nil: undefined }),
            params: fc.dictionary(customKey, parameterValue, { maxKeys: 1 }),
          }),
          { minLength: 1, maxLength: 3, selector: (o) => o.name },
        )
        .filter((outputs) => outputs.every((o) => wellFormed(o.name))),
    },
    { requiredKeys: [] },
  ),
});

export const grpcInferRoundTrip = target({
  name: 'grpc-infer-roundtrip',
  what: 'gRPC client encodeInferRequest (raw and typed contents) → protobuf bytes → server decoder: the same request',
  weight: 8,
  arbitrary: roundTripArb,
  run({ inputs, options: generated }, ctx) {
    const built = inputs.map((i: RoundTripInput) => {
      const input = new InferInput(i.t.name, i.t.shape, i.t.datatype);
      if (i.shm) input.setSharedMemory(i.shm.region, i.shm.byteSize, i.shm.offset);
      else input.setRawData(i.t.data, { binary: i.binary });
      for (const [k, v] of Object.entries(i.params)) input.setParameter(k, v);
      return input;
    });
    const outputs: InferRequestedOutput[] | undefined = generated.outputs?.map((o) => {
      const out = new InferRequestedOutput(o.name, { classCount: o.shm ? 0 : o.classCount });
      if (o.shm) out.setSharedMemory(o.shm.region, o.shm.byteSize, o.shm.offset);
      for (const [k, v] of Object.entries(o.params)) out.setParameter(k, v);
      return out;
    });
    const { outputs: _plain, ...rest } = generated;
    const options: InferOptions = { ...rest, ...(outputs !== undefined && { outputs }) };
    let msg;
    try {
      msg = encodeInferRequest('m', built, options);
    } catch (err) {
      // Typed contents have no FP16/BF16 field: the client says so before sending.
      if (err instanceof TypeError) {
        ctx.note('client refused');
        return;
      }
      throw err;
    }
    const bytes = encodeMessage(messageType('ModelInferRequest'), msg);
    const { request } = toInferenceRequest(parseInferRequest(bytes));
    assert.equal(request.modelName, 'm');
    assert.equal(
      request.modelVersion,
      options.modelVersion === undefined ? '' : String(options.modelVersion),
    );
    assert.equal(request.id, options.requestId ?? '');
    assert.equal(request.inputs.length, inputs.length);
    inputs.forEach((i, n) => {
      const got = request.inputs[n];
      assert.equal(got.name, i.t.name);
      assert.equal(got.datatype, i.t.datatype);
      assert.deepEqual(got.shape, i.t.shape);
      if (i.shm) assert.deepEqual({ ...got.sharedMemory }, { ...i.shm });
      else
        assert.ok(
          sameTensorData(i.t.datatype, got.data, i.t.data),
          `data of '${i.t.name}' (${i.t.datatype})`,
        );
      assert.deepStrictEqual({ ...got.parameters }, expectedParameters(i.params));
    });
    const expected: Record<string, ParameterValue> = expectedParameters(options.parameters ?? {});
    const seq = options.sequenceId;
    if (seq !== undefined && seq !== 0 && seq !== 0n && seq !== '')
      expected.sequence_id = expectedParameter(seq);
    if (options.sequenceStart) expected.sequence_start = true;
    if (options.sequenceEnd) expected.sequence_end = true;
    if (options.priority) expected.priority = options.priority;
    if (options.timeout !== undefined) expected.timeout = options.timeout;
    assert.deepStrictEqual({ ...(request.parameters ?? {}) }, expected);
    assert.deepStrictEqual(
      request.outputs?.map((o) => [o.name, o.sharedMemory && { ...o.sharedMemory }, { ...o.parameters }]),
      generated.outputs?.map((o) => {
        const params: Parameters = expectedParameters(o.params);
        if (!o.shm && o.classCount > 0) params.classification = o.classCount;
        return [o.name, o.shm && { ...o.shm }, params];
      }),
    );
  },
});

// ---- parameters: the server's writer → its reader ----

export const grpcParameters = target({
  name: 'grpc-parameters',
  what: 'writeParameterMap (responses) → readParameterEntry: the same values; hostile entries refused cleanly',
  weight: 3,
  arbitrary: fc.tuple(
    fc.dictionary(
      fc.oneof(fc.constantFrom('a', '__proto__', ''), hostileString.filter(wellFormed)),
      parameterValue,
      { maxKeys: 4 },
    ),
    mutatedBytes(
      parameterMapArb.map((m) => encodePlain('inference.ModelInferRequest', { parameters: m })),
      3,
    ),
  ),
  run([params, hostile], ctx) {
    const size = parameterMapSize(4, params);
    const buf = Buffer.alloc(size);
    const w = new ProtoWriter(buf);
    writeParameterMap(w, 4, params);
    assert.equal(w.pos, size, 'parameterMapSize matches what writeParameterMap wrote');
    const read: WireParameters = new Map();
    const r = new ProtoReader(buf);
    while (r.more()) {
      assert.equal(r.tag(), (4 << 3) | 2);
      readParameterEntry(r, read);
    }
    const back: Record<string, ParameterValue> = {};
    for (const [k, p] of read) {
      assert.notEqual(p.kind, 'unset');
      if (p.kind !== 'unset')
        Object.defineProperty(back, k, {
          value: p.value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
    const expected: Record<string, ParameterValue> = {};
    for (const [k, v] of Object.entries(params)) {
      // Integers that are not safe numbers travel as doubles; bigints come back as numbers when safe.
      const e = typeof v === 'bigint' ? expectedParameter(v) : v;
      Object.defineProperty(expected, k, { value: e, enumerable: true, writable: true, configurable: true });
    }
    assert.deepStrictEqual(back, expected);
    ctx.attempt('parseInferRequest(parameters)', () => toInferenceRequest(parseInferRequest(hostile)));
  },
});

// ---- framing ----

const gzipAsync = promisify(gzip);
const deflateAsync = promisify(deflate);

export const grpcFraming = target({
  name: 'grpc-framing',
  what: 'length-prefixed messages split into random DATA chunks → MessageReader (+ decompress, grpc-timeout, grpc-message)',
  weight: 6,
  arbitrary: fc.record({
    messages: fc.array(fc.record({ data: fc.uint8Array({ maxLength: 40 }), compressed: fc.boolean() }), {
      maxLength: 4,
    }),
    cuts: fc.array(fc.nat(), { maxLength: 6 }),
    garbage: fc.option(
      fc.oneof(
        fc.uint8Array({ maxLength: 12 }),
        fc.constantFrom(
          Uint8Array.from([0, 0xff, 0xff, 0xff, 0xff]),
          Uint8Array.from([0, 0x7f, 0xff, 0xff, 0xff, 1]),
          Uint8Array.from([2, 0, 0, 0, 0]),
          Uint8Array.from([1, 0, 0, 0, 3, 1, 2, 3]),
          Uint8Array.from([0, 0, 1, 0, 0]),
        ),
      ),
    ),
    max: fc.constantFrom(64, 1 << 20),
  }),
  run({ messages, cuts, garbage, max }, ctx) {
    const framed = messages.map((m) => {
      const f = frame(m.data);
      f[0] = m.compressed ? 1 : 0;
      return f;
    });
    const stream = Buffer.concat([...framed, ...(garbage ? [Buffer.from(garbage)] : [])]);
    // The same bytes in DATA chunks cut anywhere.
    const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
    const chunks: Buffer[] = [];
    let from = 0;
    for (const p of [...points, stream.length]) {
      chunks.push(stream.subarray(from, p));
      from = p;
    }
    const reader = new MessageReader(max);
    const got: { data: Buffer; compressed: boolean }[] = [];
    const all = ctx.attempt('MessageReader.push', () => {
      for (const c of chunks) got.push(...reader.push(c));
      return true;
    });
    const expectedCount = messages.filter((m) => m.data.length <= max).length;
    // Every message before the first refused one comes out, whole and in order.
    const firstTooBig = messages.findIndex((m) => m.data.length > max);
    const complete = firstTooBig === -1 ? messages : messages.slice(0, firstTooBig);
    for (let i = 0; i < Math.min(got.length, complete.length); i++) {
      assert.ok(got[i].data.equals(Buffer.from(complete[i].data)), `message ${i}`);
      assert.equal(got[i].compressed, complete[i].compressed);
    }
    if (all !== undefined && garbage === null) {
      assert.equal(got.length, expectedCount);
      assert.equal(reader.partial, false);
    }
    const timeout = parseTimeout(String.fromCharCode(...(garbage ?? [])) + 'S');
    assert.ok(timeout === undefined || (Number.isFinite(timeout) && timeout >= 0));
  },
});

export const grpcDecompress = target({
  name: 'grpc-decompress',
  what: 'compressed messages (valid, corrupted, bombs) → decompress, bounded by the message limit',
  weight: 3,
  arbitrary: fc.record({
    data: fc.oneof(
      fc.uint8Array({ maxLength: 200 }),
      fc.integer({ min: 0, max: 50_000 }).map((n) => new Uint8Array(n)),
    ),
    coding: fc.constantFrom('gzip', 'deflate', 'identity', 'snappy'),
    flips: fc.array(fc.nat(), { maxLength: 2 }),
    max: fc.constantFrom(100, 1 << 20),
    message: hostileString,
  }),
  async run({ data, coding, flips, max, message }, ctx) {
    let body = Buffer.from(
      coding === 'gzip' ? await gzipAsync(data) : coding === 'deflate' ? await deflateAsync(data) : data,
    );
    for (const f of flips) {
      if (body.length === 0) break;
      body = Buffer.from(body);
      body[f % body.length] ^= 0x21;
    }
    const out = await ctx.attemptAsync('decompress', () => decompress(body, coding, max));
    if (out !== undefined) {
      assert.ok(out.length <= max);
      if (flips.length === 0) assert.ok(out.equals(Buffer.from(data)));
    }
    // grpc-message: percent-encoding round-trips every well-formed string, and stays printable ASCII.
    if (wellFormed(message)) {
      const encoded = encodeGrpcMessage(message);
      assert.match(encoded, /^[\x20-\x7e]*$/);
      assert.equal(decodeGrpcMessage(encoded), message);
    }
  },
});

// ---- cold rpcs against a real server ----

const FIELD_POOLS: Readonly<Record<string, readonly string[]>> = {
  name: ['', 'id', 'missing', 'r', '__proto__'],
  model_name: ['', 'id', 'missing', 'constructor'],
  version: ['', '1', '2', '-1', 'x', '99999999999999999999'],
  repository_name: ['', 'repo'],
  key: ['', '/nereid-fuzz-missing', '/', '../etc', 'a/b'],
  settings: [
    'trace_level',
    'trace_rate',
    'trace_count',
    'log_frequency',
    'trace_file',
    'trace_mode',
    'log_info',
    'log_warning',
    'log_error',
    'log_verbose_level',
    'log_format',
    'log_file',
    'unknown',
  ],
  parameters: ['config', 'file:1/model.py', 'file:', 'unload_dependents', 'other'],
  value: ['TIMESTAMPS', 'TENSORS', 'OFF', '0', '1', '-1', 'x', 'default', 'ISO8601', '18446744073709551616'],
  string_param: ['{}', '{"backend":"identity"}', 'default', 'ISO8601', 'x'],
};

function scalarPlainArb(type: string, field: string): fc.Arbitrary<unknown> {
  const pool = FIELD_POOLS[field];
  switch (type) {
    case 'string':
      return pool
        ? fc.oneof(
            { arbitrary: fc.constantFrom(...pool), weight: 4 },
            { arbitrary: hostileString.filter(wellFormed), weight: 1 },
          )
        : hostileString.filter(wellFormed);
    case 'bool':
      return fc.boolean();
    case 'int64':
    case 'uint64':
    case 'sint64':
    case 'fixed64':
      return fc.oneof(
        fc.nat(4).map(String),
        hostileBigInt.filter((v) => v >= -(2n ** 63n) && v < 2n ** 64n).map(String),
      );
    case 'int32':
    case 'sint32':
      return fc.oneof(fc.integer({ min: -2, max: 5 }), fc.integer());
    case 'uint32':
    case 'fixed32':
      return fc.oneof(fc.nat(5), fc.nat());
    case 'double':
    case 'float':
      return hostileNumber;
    case 'bytes':
      return fc.uint8Array({ maxLength: 16 });
    default:
      return fc.constant(undefined);
  }
}

const plainCache = new Map<string, fc.Arbitrary<Record<string, unknown>>>();

/** Random plain data for any protobufjs message type (maps, repeated fields, oneofs, nested messages). */
function plainArb(type: protobuf.Type, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const known = plainCache.get(type.fullName);
  if (known !== undefined) return known;
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const f of type.fieldsArray) {
    f.resolve();
    let single: fc.Arbitrary<unknown>;
    if (f.resolvedType instanceof protobuf.Type) {
      single = depth > 4 ? fc.constant({}) : plainArb(f.resolvedType, depth + 1);
    } else if (f.resolvedType instanceof protobuf.Enum) {
      single = fc.constantFrom(...Object.keys(f.resolvedType.values));
    } else {
      single = scalarPlainArb(f.type, f.name);
    }
    if (f instanceof protobuf.MapField) {
      fields[f.name] = fc.dictionary(scalarPlainArb(f.keyType, f.name).map(String), single, { maxKeys: 3 });
    } else if (f.repeated) fields[f.name] = fc.array(single, { maxLength: 3 });
    else fields[f.name] = single;
  }
  const arb = fc.record(fields, { requiredKeys: [] });
  plainCache.set(type.fullName, arb);
  return arb;
}

const COLD = [...COLD_RPCS.entries()];

let server: NereidServer | undefined;
let repo: string | undefined;

/** The real server's API (in-process, no sockets); load/unload only ever see names it does not have. */
function api(): InferenceServerApi {
  if (server === undefined) throw new Error('grpc-cold-rpcs: setup() did not run');
  return server.api;
}

export const grpcColdRpcs = target({
  name: 'grpc-cold-rpcs',
  what: 'every cold rpc: request bytes → protobufjs decode → handler on a real in-process server → response encode',
  weight: 6,
  arbitrary: fc.nat(COLD.length - 1).chain((i) => {
    const [, rpc] = COLD[i];
    const type = protoRoot().lookupType(rpc.request);
    return fc.tuple(
      fc.constant(i),
      fc.oneof(
        { arbitrary: plainArb(type).map((p) => encodePlain(rpc.request, p)), weight: 4 },
        {
          arbitrary: mutatedBytes(
            plainArb(type).map((p) => encodePlain(rpc.request, p)),
            3,
          ),
          weight: 2,
        },
        { arbitrary: fc.uint8Array({ maxLength: 32 }).map((b) => Buffer.from(b)), weight: 1 },
      ),
    );
  }),
  async setup() {
    repo = mkdtempSync(path.join(tmpdir(), 'nereid-fuzz-repo-'));
    server = await Nereid.start({ modelRepository: repo, modelControlMode: 'explicit', log: false });
  },
  async teardown() {
    await server?.close();
    server = undefined;
    if (repo !== undefined) rmSync(repo, { recursive: true, force: true });
  },
  async run([i, bytes], ctx) {
    const [pathName, rpc] = COLD[i];
    ctx.note(pathName.slice(pathName.lastIndexOf('/') + 1));
    const request = ctx.attempt('decode', () => codec(rpc.request).decode(bytes));
    if (request === undefined) return;
    const response = await ctx.attemptAsync('handle', async () => await rpc.handle(api(), request));
    if (response === undefined) return;
    codec(rpc.response).encode(response);
  },
});

export const GRPC_TARGETS: readonly FuzzTarget<unknown>[] = [
  grpcInfer,
  grpcInferRoundTrip,
  grpcParameters,
  grpcFraming,
  grpcDecompress,
  grpcColdRpcs,
];
