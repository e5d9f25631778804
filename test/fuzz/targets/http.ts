/**
 * Fuzz targets for the HTTP frontend's decoders: the inference request (JSON header + binary tensor data,
 * Inference-Header-Content-Length, raw binary requests), the request JSON parser, JSON tensor data, the
 * generate extension's JSON, the path router and request content codings. Round-trips: the HTTP client's
 * request encoder → the server's decoder gives back the same request; the server's JSON tensor writer →
 * its JSON tensor reader gives back the same tensor; compressed bodies decompress to what was compressed.
 */
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { deflate, gzip } from 'node:zlib';
import fc from 'fast-check';
import { byteSizeOf, isDataType, type DataType } from '../../../src/common/datatype.js';
import { InferInput, InferRequestedOutput, type ParameterValue } from '../../../src/client/infer-input.js';
import { encodeInferRequest } from '../../../src/client/http/infer-codec.js';
import { jsonValues } from '../../../src/client/tensor-data.js';
import type { InferOptions } from '../../../src/client/types.js';
import type { ModelMetadata } from '../../../src/core/types.js';
import { chooseResponseCoding, decodeContentEncoding } from '../../../src/frontends/http/transport/body.js';
import { parseGenerateRequest, topLevelKeys } from '../../../src/frontends/http/generate-codec.js';
import { decodeInferRequest, inferenceHeaderLength } from '../../../src/frontends/http/infer-codec.js';
import {
  isRoundedIntegerError,
  parseJson,
  parseJsonExact,
  type JsonIn,
} from '../../../src/frontends/http/json.js';
import { deduceRawInput } from '../../../src/frontends/http/raw-input.js';
import { matchRoute } from '../../../src/frontends/http/router.js';
import { jsonToTensorData, tensorDataToJson } from '../../../src/frontends/http/tensor-json.js';
import {
  freezeModelConfig,
  modelConfigToJson,
  normalizeModelConfig,
  parseModelConfigText,
  validateModelConfig,
} from '../../../src/model-config/index.js';
import {
  hostileDim,
  hostileJsonValue,
  hostileNumber,
  hostileString,
  jsonOps,
  mutateNode,
  mutatedBytes,
  mutatedText,
  render,
  toNode,
  type JNode,
} from '../arbitraries.js';
import { target, type FuzzTarget } from '../harness.js';
import {
  datatypeArb,
  elementCountOf,
  sameTensorData,
  shapeArb,
  tensorNameArb,
  wireTensorArb,
  type WireTensor,
} from '../tensors.js';

/** --http-max-input-size: Triton's default, and a small one so the size checks trip. */
const MAX_INPUT_SIZES = [64 * 1024 * 1024, 256] as const;

// ---- a hostile inference request ----

/** Flat values nested by `shape` (JSON data may be nested or flat). */
function nest(values: unknown[], shape: readonly number[]): unknown {
  if (shape.length <= 1) return values;
  const inner = shape.slice(1);
  const step = elementCountOf(inner);
  const out: unknown[] = [];
  for (let i = 0; i < shape[0]; i++) out.push(nest(values.slice(i * step, (i + 1) * step), inner));
  return out;
}

/** A tensor's JSON `data` (whatever the datatype: FP16 and non-UTF-8 BYTES become numbers / strings). */
function jsonData(t: WireTensor, nested: boolean): unknown {
  let values: unknown[];
  try {
    values = jsonValues(t.datatype, t.data, 'fuzz');
  } catch {
    values = [...t.data.subarray(0, elementCountOf(t.shape))];
  }
  return nested ? nest(values, t.shape) : values;
}

const inputModeArb = fc.constantFrom('json', 'nested', 'binary', 'binary', 'shm', 'none', 'both');

interface BuiltInput {
  readonly json: Record<string, unknown>;
  readonly blob?: Buffer;
}

/** One input entry; `hostile` adds wrong datatypes, hostile shapes, stray parameters. */
const inputArb = (hostile: boolean): fc.Arbitrary<BuiltInput> =>
  fc
    .record({
      t: hostile
        ? wireTensorArb({ utf8: true })
        : wireTensorArb({ utf8: true, names: ['INPUT0', 'INPUT1', 'x'] }),
      mode: hostile ? inputModeArb : fc.constantFrom('json', 'nested', 'binary'),
      datatype: hostile
        ? fc.oneof(
            { arbitrary: fc.constant(undefined), weight: 6 },
            { arbitrary: fc.constantFrom('FLOAT', 'int32', '', 'TYPE_FP32'), weight: 1 },
          )
        : fc.constant(undefined),
      shape: hostile ? fc.option(fc.array(hostileDim, { maxLength: 5 }), { freq: 3 }) : fc.constant(null),
      shmSize: hostileNumber,
      shmOffset: fc.option(hostileNumber),
      extra: hostile ? fc.dictionary(hostileString, hostileNumber, { maxKeys: 1 }) : fc.constant({}),
    })
    .map(({ t, mode: chosen, datatype, shape, shmSize, shmOffset, extra }) => {
      // FP16 and BF16 have no JSON form: a clean request sends them binary.
      const half = t.datatype === 'FP16' || t.datatype === 'BF16';
      const mode = !hostile && half ? 'binary' : chosen;
      const params: Record<string, unknown> = { ...extra };
      const json: Record<string, unknown> = {
        name: t.name,
        datatype: datatype ?? t.datatype,
        shape: shape ?? t.shape,
      };
      let blob: Buffer | undefined;
      if (mode === 'json' || mode === 'nested' || mode === 'both') json.data = jsonData(t, mode === 'nested');
      if (mode === 'binary' || mode === 'both') {
        params.binary_data_size = t.data.length;
        blob = t.data;
      }
      if (mode === 'shm') {
        params.shared_memory_region = 'region';
        params.shared_memory_byte_size = shmSize;
        if (shmOffset !== null) params.shared_memory_offset = shmOffset;
      }
      if (Object.keys(params).length > 0) json.parameters = params;
      return { json, ...(blob !== undefined && { blob }) };
    });

const outputArb = (hostile: boolean): fc.Arbitrary<unknown> =>
  hostile
    ? fc.record(
        {
          name: tensorNameArb,
          parameters: fc.record(
            {
              binary_data: fc.oneof(fc.boolean(), fc.boolean(), hostileNumber),
              classification: fc.oneof(fc.nat(4), hostileNumber),
              shared_memory_region: fc.constantFrom('region', ''),
              shared_memory_byte_size: hostileNumber,
              shared_memory_offset: hostileNumber,
              custom: hostileString,
            },
            { requiredKeys: [] },
          ),
        },
        { requiredKeys: ['name'] },
      )
    : fc.record(
        {
          name: fc.constantFrom('OUTPUT0', 'OUTPUT1', 'y'),
          parameters: fc.record(
            { binary_data: fc.boolean(), classification: fc.nat(4) },
            { requiredKeys: [] },
          ),
        },
        { requiredKeys: ['name'] },
      );

const requestParametersArb = (hostile: boolean): fc.Arbitrary<unknown> =>
  hostile
    ? fc.record(
        {
          sequence_id: fc.oneof(fc.nat(), hostileNumber, hostileString),
          sequence_start: fc.boolean(),
          sequence_end: fc.oneof(fc.boolean(), hostileNumber),
          priority: fc.oneof(fc.nat(3), hostileNumber),
          timeout: fc.oneof(fc.nat(), hostileNumber),
          binary_data_output: fc.boolean(),
          custom: fc.oneof(hostileString, hostileNumber, fc.boolean()),
          triton_enable_empty_final_response: fc.boolean(),
        },
        { requiredKeys: [] },
      )
    : fc.record(
        {
          sequence_id: fc.oneof(fc.nat(), fc.string({ maxLength: 4 })),
          sequence_start: fc.boolean(),
          sequence_end: fc.boolean(),
          priority: fc.nat(3),
          timeout: fc.nat(),
          binary_data_output: fc.boolean(),
          custom: fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.boolean()),
        },
        { requiredKeys: [] },
      );

export interface InferBody {
  readonly body: Buffer;
  readonly header: string | string[] | undefined;
}

const headerArb = (
  jsonLength: number,
  bodyLength: number,
  hostile: boolean,
): fc.Arbitrary<string | string[] | undefined> =>
  !hostile
    ? fc.constant(bodyLength > jsonLength ? String(jsonLength) : undefined)
    : fc.oneof(
        { arbitrary: fc.constant(String(jsonLength)), weight: 6 },
        { arbitrary: fc.constant(undefined), weight: 2 },
        {
          arbitrary: fc.constantFrom(
            '0',
            String(bodyLength),
            String(bodyLength + 1),
            '-1',
            ` ${jsonLength}abc`,
          ),
          weight: 2,
        },
        {
          arbitrary: fc.constantFrom('', 'abc', '99999999999', '2147483648', '+5', '0x10', [
            String(jsonLength),
            '1',
          ]),
          weight: 1,
        },
        { arbitrary: fc.integer({ min: -10, max: bodyLength + 10 }).map(String), weight: 1 },
      );

/** An inference request body: mostly well formed (clean), or built hostile and then edited. */
export const inferBodyArb: fc.Arbitrary<InferBody> = fc.boolean().chain((hostile) =>
  fc
    .record(
      {
        id: hostile ? fc.oneof(hostileString, hostileNumber) : fc.string({ maxLength: 4 }),
        parameters: requestParametersArb(hostile),
        inputs: fc.array(inputArb(hostile), { maxLength: 4 }),
        outputs: fc.uniqueArray(outputArb(hostile), {
          maxLength: 3,
          selector: (o) => (o as { name: string }).name,
        }),
      },
      { requiredKeys: ['inputs'] },
    )
    .chain(({ inputs, ...rest }) => {
      const doc = { ...rest, inputs: inputs.map((i) => i.json) };
      const blobs = inputs.flatMap((i) => (i.blob === undefined ? [] : [i.blob]));
      return fc.tuple(
        fc.constant(toNode(doc)),
        fc.constant(blobs),
        hostile ? jsonOps(3) : fc.constant([]),
        fc.nat(4),
      );
    })
    .chain(([node, blobs, ops, bytesMutation]) => {
      const json = Buffer.from(render(mutateNode(node, ops)), 'utf8');
      const whole = Buffer.concat([json, ...blobs]);
      const body = hostile && bytesMutation === 0 ? mutatedBytes(fc.constant(whole), 2) : fc.constant(whole);
      return fc.record({ body, header: headerArb(json.length, whole.length, hostile) });
    }),
);

/** A model's config as Triton's JSON, for raw binary requests (Inference-Header-Content-Length: 0). */
const RAW_CONFIGS = [
  'name: "m" max_batch_size: 8 input { name: "I" data_type: TYPE_FP32 dims: [ -1 ] } output { name: "O" data_type: TYPE_FP32 dims: [ -1 ] }',
  'name: "m" input { name: "I" data_type: TYPE_INT64 dims: [ 2, -1 ] } output { name: "O" data_type: TYPE_INT64 dims: [ 2, -1 ] }',
  'name: "m" input { name: "I" data_type: TYPE_STRING dims: [ 1 ] } output { name: "O" data_type: TYPE_STRING dims: [ 1 ] }',
  'name: "m" input { name: "I" data_type: TYPE_STRING dims: [ -1 ] } output { name: "O" data_type: TYPE_STRING dims: [ 1 ] }',
  'name: "m" input { name: "I" data_type: TYPE_BOOL dims: [ -1, -1 ] } output { name: "O" data_type: TYPE_BOOL dims: [ 1 ] }',
  'name: "m" input { name: "I" data_type: TYPE_FP16 dims: [ 3, -1 ] } output { name: "O" data_type: TYPE_FP16 dims: [ 1 ] }',
  'name: "m" input { name: "A" data_type: TYPE_FP32 dims: [ 1 ] } input { name: "B" data_type: TYPE_FP32 dims: [ 1 ] } output { name: "O" data_type: TYPE_FP32 dims: [ 1 ] }',
].map((text) => {
  const cfg = normalizeModelConfig(parseModelConfigText(text, 'config.pbtxt'), { backend: 'identity' });
  validateModelConfig(cfg);
  return modelConfigToJson(freezeModelConfig(cfg));
});

export const httpInfer = target({
  name: 'http-infer',
  what: 'POST .../infer body + Inference-Header-Content-Length → inferenceHeaderLength → decodeInferRequest | deduceRawInput',
  weight: 14,
  arbitrary: fc.tuple(inferBodyArb, fc.constantFrom(...MAX_INPUT_SIZES), fc.nat(RAW_CONFIGS.length - 1)),
  run([{ body, header }, maxInputSize, rawConfig], ctx) {
    const headerLength = ctx.attempt('inferenceHeaderLength', () =>
      inferenceHeaderLength(header, body.length),
    );
    if (headerLength === undefined && header !== undefined) return;
    if (headerLength === 0) {
      const input = ctx.attempt('deduceRawInput', () => deduceRawInput(RAW_CONFIGS[rawConfig], 'm', body));
      if (input !== undefined) {
        ctx.note('raw request');
        assert.ok(
          input.shape.every((d) => Number.isSafeInteger(d) && d >= 0),
          `raw shape [${input.shape.join(',')}]`,
        );
      }
      return;
    }
    const decoded = ctx.attempt('decodeInferRequest', () =>
      decodeInferRequest(body, headerLength, { modelName: 'm', maxInputSize }),
    );
    if (decoded === undefined) return;
    ctx.note('decoded');
    for (const input of decoded.request.inputs) {
      // What the decoder promises the core: non-negative safe dims, and JSON data of exactly the shape's size.
      assert.ok(
        input.shape.every((d) => Number.isSafeInteger(d) && d >= 0),
        `shape [${input.shape.join(',')}]`,
      );
      assert.ok(isDataType(input.datatype));
      const size = byteSizeOf(input.datatype);
      if (input.sharedMemory === undefined && size > 0 && input.data.length !== 0) {
        const expected = elementCountOf(input.shape) * size;
        if (input.data.length !== expected) ctx.note('binary data of another size than its shape');
      }
    }
  },
});

// ---- client encoder → server decoder ----

/** Parameter keys a client may send without the server reading them as something else. */
/** Strings JSON can carry (rapidjson refuses an escaped lone surrogate, as Triton does). */
const wellFormed = (s: string): boolean => !/\p{Cs}/u.test(s);

const customKey = fc
  .oneof(
    { arbitrary: fc.constantFrom('p', 'max_tokens', 'x-y', ''), weight: 4 },
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
      ].includes(k) &&
      !['binary_data_size', 'binary_data', 'classification'].includes(k) &&
      !k.startsWith('shared_memory_'),
  );

const parameterValue: fc.Arbitrary<ParameterValue> = fc.oneof(
  fc.boolean(),
  fc.string({ maxLength: 8 }).filter(wellFormed),
  fc.integer(),
  fc.double({ noDefaultInfinity: true, noNaN: true }).filter((v) => !Object.is(v, -0)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
);

interface RoundTripCase {
  readonly inputs: {
    t: WireTensor;
    binary: boolean;
    shm?: { region: string; byteSize: number; offset: number };
    params: Record<string, ParameterValue>;
  }[];
  readonly options: InferOptions;
}

const shmRefArb = fc.record({
  region: fc.constantFrom('r', 'region-1'),
  byteSize: fc.nat(),
  offset: fc.nat(),
});

const roundTripArb: fc.Arbitrary<RoundTripCase> = fc.record({
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
          fc
            .record({
              name: tensorNameArb,
              binary: fc.boolean(),
              classCount: fc.nat(5),
              shm: fc.option(shmRefArb, { freq: 4, nil: undefined }),
            })
            .map((o) => {
              const out = new InferRequestedOutput(o.name, {
                binary: o.binary,
                classCount: o.shm ? 0 : o.classCount,
              });
              if (o.shm) out.setSharedMemory(o.shm.region, o.shm.byteSize, o.shm.offset);
              return out;
            }),
          { minLength: 1, maxLength: 3, selector: (o) => o.name },
        )
        .filter((outputs) => outputs.every((o) => wellFormed(o.name))),
    },
    { requiredKeys: [] },
  ),
});

/** What the server should read for a parameter value the client wrote (JSON has one number type). */
function expectedParameter(v: ParameterValue): ParameterValue {
  if (typeof v === 'bigint') {
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  // A double written as an integer literal beyond 2^53 (below 1e21 String() has no exponent) is read exactly.
  // The literal's own digits (String() writes the shortest text that reads back as the same double).
  if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v) && Math.abs(v) < 1e21) {
    return BigInt(String(v));
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

export const httpInferRoundTrip = target({
  name: 'http-infer-roundtrip',
  what: 'client encodeInferRequest (JSON and binary tensors) → server decodeInferRequest: the same request',
  weight: 8,
  arbitrary: roundTripArb,
  run({ inputs, options }, ctx) {
    const built: InferInput[] = [];
    for (const i of inputs) {
      const input = new InferInput(i.t.name, i.t.shape, i.t.datatype);
      if (i.shm) input.setSharedMemory(i.shm.region, i.shm.byteSize, i.shm.offset);
      else input.setRawData(i.t.data, { binary: i.binary });
      for (const [k, v] of Object.entries(i.params)) input.setParameter(k, v);
      built.push(input);
    }
    let encoded;
    try {
      encoded = encodeInferRequest(built, options);
    } catch (err) {
      // The client refuses what JSON cannot carry (FP16, non-UTF-8 BYTES): not the server's business.
      if (err instanceof TypeError) {
        ctx.note('client refused');
        return;
      }
      throw err;
    }
    const body = Buffer.concat(encoded.chunks);
    const decoded = decodeInferRequest(body, encoded.headerLength, {
      modelName: 'm',
      maxInputSize: 64 << 20,
    });
    const r = decoded.request;
    assert.equal(r.id, options.requestId ? options.requestId : undefined);
    assert.equal(r.inputs.length, inputs.length);
    inputs.forEach((i, n) => {
      const got = r.inputs[n];
      assert.equal(got.name, i.t.name);
      assert.equal(got.datatype, i.t.datatype);
      assert.deepEqual(got.shape, i.t.shape);
      if (i.shm) {
        assert.deepEqual({ ...got.sharedMemory }, { ...i.shm });
        assert.equal(got.data.length, 0);
      } else {
        assert.ok(
          sameTensorData(i.t.datatype, got.data, i.t.data),
          `data of input '${i.t.name}' (${i.t.datatype})`,
        );
      }
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
    assert.deepStrictEqual({ ...(r.parameters ?? {}) }, expected);
    if (options.outputs === undefined) {
      assert.equal(r.outputs, undefined);
      assert.equal(decoded.format.defaultBinary, true);
    } else {
      assert.deepEqual(
        r.outputs?.map((o) => [o.name, o.sharedMemory, o.parameters?.classification]),
        options.outputs.map((o) => [o.name, o.sharedMemory, o.classCount > 0 ? o.classCount : undefined]),
      );
      for (const o of options.outputs) {
        if (o.sharedMemory === undefined) assert.equal(decoded.format.binary.get(o.name), o.binary);
      }
    }
  },
});

// ---- JSON tensor data ----

/** The server's JSON reader as the infer decoder runs it: fast parse, exact re-parse where it matters. */
function readJsonTensor(text: string, t: WireTensor, maxInputSize: number): Buffer {
  const spec = { name: t.name, datatype: t.datatype, shape: t.shape, elementCount: elementCountOf(t.shape) };
  const doc = parseJson(text);
  assert.ok(Array.isArray(doc));
  try {
    return jsonToTensorData(spec, doc, maxInputSize, false);
  } catch (err) {
    if (!isRoundedIntegerError(err)) throw err;
    return jsonToTensorData(spec, parseJsonExact(text) as JsonIn[], maxInputSize, true);
  }
}

const jsonTypes: DataType[] = [
  'BOOL',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP32',
  'FP64',
  'BYTES',
];

export const httpTensorJson = target({
  name: 'http-tensor-json',
  what: 'tensorDataToJson (responses) → parseJson → jsonToTensorData (requests): the same bytes; hostile data arrays refused cleanly',
  weight: 6,
  arbitrary: fc.oneof(
    fc.tuple(
      fc.constant('roundtrip' as const),
      wireTensorArb({ utf8: true, datatypes: jsonTypes }),
      fc.constant(''),
    ),
    fc.tuple(
      fc.constant('hostile' as const),
      fc.record({
        name: fc.constant('x'),
        datatype: datatypeArb,
        shape: shapeArb,
        data: fc.constant(Buffer.alloc(0)),
      }),
      fc
        .array(hostileJsonValue, { maxLength: 8 })
        .chain((items) =>
          fc
            .tuple(fc.constant<JNode>({ k: 'arr', items }), jsonOps(2))
            .map(([n, ops]) => render(mutateNode(n, ops))),
        ),
    ),
  ),
  run([kind, t, text], ctx) {
    if (kind === 'roundtrip') {
      const json = tensorDataToJson(t.name, t.datatype, t.data, elementCountOf(t.shape));
      assert.ok(json !== undefined, 'UTF-8 tensors have a JSON form');
      const back = readJsonTensor(json, t, 64 << 20);
      assert.ok(sameTensorData(t.datatype, back, t.data), `${t.datatype} ${json}`);
      return;
    }
    const doc = ctx.attempt('parseJson', () => parseJson(text));
    if (!Array.isArray(doc)) return;
    ctx.attempt('jsonToTensorData', () => readJsonTensor(text, t, 1024));
  },
});

// ---- the request JSON parser ----

const JSON_VOCABULARY = [
  '{',
  '}',
  '[',
  ']',
  ',',
  ':',
  '"',
  '\\',
  '\\u',
  '\\ud800',
  '\\udc00',
  'NaN',
  '-Inf',
  'Infinity',
  'null',
  'tru',
  '1e',
  '1e400',
  '-',
  '0',
  '.',
  '\u0000',
  '\uFEFF',
  ' ',
  '\n',
  '\t',
  '\u00a0',
];

export const httpJson = target({
  name: 'http-json',
  what: 'request JSON bytes → parseJson / parseJsonExact (rapidjson rules): no crash, and the two agree',
  weight: 6,
  // Bytes, as they come off the socket (a JS string with a lone surrogate cannot arrive).
  arbitrary: fc.oneof(
    {
      arbitrary: mutatedText(
        fc.array(hostileJsonValue, { maxLength: 4 }).map((items) => render({ k: 'arr', items })),
        JSON_VOCABULARY,
        4,
      ).map((t) => Buffer.from(t, 'utf8')),
      weight: 4,
    },
    { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map((t) => Buffer.from(t, 'utf8')), weight: 1 },
    {
      arbitrary: mutatedBytes(
        fc.constantFrom(...JSON_VOCABULARY.map((v) => Buffer.from(`["${v}",{"${v}":1}]`))),
        3,
      ),
      weight: 1,
    },
    { arbitrary: fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b)), weight: 1 },
    {
      arbitrary: fc.integer({ min: 1, max: 100_000 }).map((n) => Buffer.from('['.repeat(n) + ']'.repeat(n))),
      weight: 1,
    },
  ),
  run(text, ctx) {
    const fast = ctx.attempt('parseJson', () => parseJson(text));
    const exact = ctx.attempt('parseJsonExact', () => parseJsonExact(text));
    // parseJson is JSON.parse with parseJsonExact as the fallback: whatever both take, they read the same.
    if (fast !== undefined && exact !== undefined) {
      assert.equal(canonical(exact), canonical(fast));
    }
  },
});

/**
 * A canonical text of a parsed value with bigints as JSON.parse's rounded numbers, written without
 * recursion (documents nest thousands deep): equal texts = the two parsers read the same value.
 */
function canonical(root: JsonIn): string {
  const out: string[] = [];
  // Text to write as is (closing brackets, member names) is wrapped so it cannot pass for a parsed value.
  class Literal {
    constructor(readonly text: string) {}
  }
  const stack: (JsonIn | Literal)[] = [root];
  while (stack.length > 0) {
    const v = stack.pop()!;
    if (v instanceof Literal) out.push(v.text);
    else if (typeof v === 'bigint') out.push(String(Number(v)) + ',');
    else if (typeof v === 'number') out.push((Object.is(v, -0) ? '-0' : String(v)) + ',');
    else if (v === null || typeof v !== 'object') out.push(JSON.stringify(v) + ',');
    else if (Array.isArray(v)) {
      out.push('[');
      stack.push(new Literal('],'));
      for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    } else {
      out.push('{');
      stack.push(new Literal('},'));
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push(v[keys[i]]);
        stack.push(new Literal(JSON.stringify(keys[i]) + ':'));
      }
    }
  }
  return out.join('');
}

// ---- generate ----

const generateMetadataArb: fc.Arbitrary<ModelMetadata> = fc
  .uniqueArray(
    fc.record({
      name: fc.constantFrom('text_input', 'max_tokens', 'stream', 'parameters', 'id', 'x'),
      datatype: fc.constantFrom<DataType>('BYTES', 'INT32', 'BOOL', 'FP32', 'UINT64', 'INT64', 'FP16'),
      shape: fc.array(fc.constantFrom(-1, 0, 1, 2, 3), { maxLength: 3 }),
    }),
    { maxLength: 3, selector: (i) => i.name },
  )
  .map((inputs) => ({ name: 'm', versions: ['1'], platform: 'p', inputs, outputs: [] }));

const generateValue = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.integer({ min: -3, max: 10 }),
  fc.boolean(),
  fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer({ min: -3, max: 10 }), fc.boolean()), {
    maxLength: 4,
  }),
  hostileNumber,
  hostileBigIntValue(),
);

function hostileBigIntValue(): fc.Arbitrary<bigint> {
  return fc.constantFrom(2n ** 53n + 1n, 2n ** 63n, 2n ** 64n - 1n, -(2n ** 63n));
}

export const httpGenerate = target({
  name: 'http-generate',
  what: 'POST .../generate JSON → parseGenerateRequest against model metadata; topLevelKeys sees every key',
  weight: 5,
  arbitrary: fc.tuple(
    generateMetadataArb,
    fc
      .dictionary(
        fc.constantFrom('text_input', 'max_tokens', 'stream', 'parameters', 'id', 'x', 'temperature'),
        generateValue,
        { maxKeys: 4 },
      )
      .chain((doc) =>
        fc.tuple(fc.constant(toNode(doc)), jsonOps(2), fc.constantFrom('', ' ', '\n', '\uFEFF', '\t')),
      )
      .map(([node, ops, lead]) => lead + render(mutateNode(node, ops))),
    fc.constantFrom(...MAX_INPUT_SIZES),
  ),
  run([metadata, text, maxInputSize], ctx) {
    const parts = ctx.attempt('parseGenerateRequest', () =>
      parseGenerateRequest(text, metadata, maxInputSize),
    );
    if (parts === undefined) return;
    ctx.note('decoded');
    // Every member of the document is an input or a parameter: none may be dropped on the way.
    const doc = parseJson(text) as Record<string, JsonIn>;
    const keys = new Set(topLevelKeys(text));
    for (const k of Object.keys(doc))
      assert.ok(keys.has(k), `topLevelKeys missed '${k}' in ${JSON.stringify(text)}`);
    for (const i of parts.inputs) {
      assert.ok(
        i.shape.every((d) => Number.isSafeInteger(d) && d >= 0),
        `shape [${i.shape.join(',')}]`,
      );
    }
  },
});

// ---- the router ----

const SEGMENTS = [
  '',
  'v2',
  'models',
  'm',
  'versions',
  '1',
  '01',
  'x1',
  'infer',
  'ready',
  'config',
  'stats',
  'generate',
  'generate_stream',
  'trace',
  'setting',
  'repository',
  'index',
  'load',
  'unload',
  'systemsharedmemory',
  'cudasharedmemory',
  'region',
  'r',
  'status',
  'register',
  'unregister',
  'health',
  'live',
  'logging',
  '%',
  '%zz',
  '%2F',
  '%00',
  '%E2%82',
  '%F0%9F%98%80',
  '__proto__',
  'constructor',
  'hasOwnProperty',
  '..',
];

export const httpRouter = target({
  name: 'http-router',
  what: 'request paths → matchRoute: a route, a 404 or INVALID_ARG, never anything else',
  weight: 3,
  arbitrary: fc.oneof(
    fc
      .array(
        fc.oneof(
          { arbitrary: fc.constantFrom(...SEGMENTS), weight: 6 },
          { arbitrary: hostileString, weight: 1 },
        ),
        { maxLength: 9 },
      )
      .map((segs) => '/v2/' + segs.join('/')),
    fc.array(fc.constantFrom(...SEGMENTS), { maxLength: 9 }).map((segs) => '/' + segs.join('/')),
    hostileString,
  ),
  run(path, ctx) {
    const match = ctx.attempt('matchRoute', () => matchRoute(path));
    if (match === undefined) return;
    ctx.note(match.name);
    if (match.model !== undefined) assert.ok(match.model.length > 0);
    if (match.version !== undefined) assert.match(match.version, /^\d+$/);
  },
});

// ---- content codings ----

const gzipAsync = promisify(gzip);
const deflateAsync = promisify(deflate);

export const httpContentEncoding = target({
  name: 'http-content-encoding',
  what: 'Content-Encoding gzip/deflate bodies (valid, corrupted, bombs) → decodeContentEncoding, bounded by the limit',
  weight: 3,
  arbitrary: fc.record({
    data: fc.oneof(
      fc.uint8Array({ maxLength: 300 }),
      fc.integer({ min: 0, max: 100_000 }).map((n) => new Uint8Array(n)),
    ),
    coding: fc.constantFrom(
      'gzip',
      'deflate',
      'GZIP',
      ' gzip ',
      'identity',
      '',
      'br',
      'gzip, deflate',
      'x-gzip',
    ),
    compress: fc.constantFrom('gzip', 'deflate', 'none'),
    mutations: fc.array(fc.nat(), { maxLength: 3 }),
    limit: fc.constantFrom(64, 4096, 1 << 20),
    accept: fc.oneof(
      fc.constantFrom('gzip;q=0.5, deflate', 'deflate;q=x', 'identity;q=0', '*', 'gzip;q', ';;,', ''),
      hostileString,
    ),
  }),
  async run({ data, coding, compress, mutations, limit, accept }, ctx) {
    const choice = chooseResponseCoding(accept);
    assert.ok(['identity', 'gzip', 'deflate'].includes(choice));
    let body = Buffer.from(
      compress === 'gzip' ? await gzipAsync(data) : compress === 'deflate' ? await deflateAsync(data) : data,
    );
    const pristine = mutations.length === 0;
    for (const m of mutations) {
      if (body.length === 0) break;
      body = Buffer.from(body);
      body[m % body.length] ^= 0x5a;
    }
    const out = await ctx.attemptAsync('decodeContentEncoding', () =>
      decodeContentEncoding(body, coding, limit),
    );
    if (out === undefined) return;
    const c = coding.trim().toLowerCase();
    if (c === 'gzip' || c === 'deflate') {
      assert.ok(out.length <= limit, `decompressed ${out.length} bytes past the limit ${limit}`);
      if (pristine && compress !== 'none') assert.ok(out.equals(Buffer.from(data)));
    }
  },
});

export const HTTP_TARGETS: readonly FuzzTarget<unknown>[] = [
  httpInfer,
  httpInferRoundTrip,
  httpTensorJson,
  httpJson,
  httpGenerate,
  httpRouter,
  httpContentEncoding,
];
