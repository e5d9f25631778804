/**
 * Response paths and repository files (issue 33):
 * - http-json-answer: generated responses (every datatype, sizes across slice boundaries, NaN/Infinity,
 *   BYTES that are not UTF-8, shared-memory outputs, binary or JSON per output) → planJsonAnswer +
 *   jsonAnswerPieces: the same text as encodeInferResponse, or the same refusal;
 * - http-answer-stream: large answers and decoupled streams over a real socket to the live server, read
 *   whole, with pauses (a slow reader) or abandoned after the first bytes; every complete answer holds the
 *   values sent, and health answers after every case;
 * - repository-files: hostile model folders written into the live server's repository (config.pbtxt as a
 *   link out of the folder, a FIFO, a device, huge, deeply nested, token soup; model files that are FIFOs,
 *   devices or links) → load over HTTP: a JSON error or a load, never a hang, never a token of a file outside
 *   the folder in the answer; the server stays live.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { joinBytesElements } from '../../../src/common/tensor.js';
import type { InferenceResponse, OutputTensor } from '../../../src/core/types.js';
import { encodeInferResponse, type OutputFormat } from '../../../src/frontends/http/infer-codec.js';
import { jsonAnswerPieces, planJsonAnswer, SLICE_ELEMENTS } from '../../../src/frontends/http/json-answer.js';
import { target, type FuzzTarget } from '../harness.js';
import { liveServer } from '../live-server.js';

type NumericType = 'FP32' | 'FP64' | 'INT32' | 'INT64' | 'UINT8' | 'BOOL' | 'INT8' | 'UINT64';
const NUMERIC: readonly NumericType[] = ['FP32', 'FP64', 'INT32', 'INT64', 'UINT8', 'BOOL', 'INT8', 'UINT64'];
const SIZE: Record<NumericType, number> = {
  FP32: 4,
  FP64: 8,
  INT32: 4,
  INT64: 8,
  UINT8: 1,
  BOOL: 1,
  INT8: 1,
  UINT64: 8,
};

/** Element counts around the slice size and its multiples, and small ones. */
const countArb = fc.oneof(
  fc.integer({ min: 0, max: 40 }),
  fc.constantFrom(SLICE_ELEMENTS - 1, SLICE_ELEMENTS, SLICE_ELEMENTS + 1, 2 * SLICE_ELEMENTS + 3),
);

interface OutputSpec {
  readonly name: string;
  readonly kind: NumericType | 'BYTES' | 'FP16' | 'SHM';
  readonly count: number;
  readonly seed: number;
  readonly binary: boolean | undefined;
  /** Spoil: data one element short of the shape. */
  readonly short: boolean;
  readonly badUtf8: boolean;
}

const outputArb: fc.Arbitrary<OutputSpec> = fc.record({
  name: fc.oneof(
    fc.constantFrom('OUTPUT0', 'out"quote', '__proto__', 'é\u2028'),
    fc.string({ maxLength: 6 }),
  ),
  kind: fc.constantFrom(...NUMERIC, 'BYTES', 'FP16', 'SHM'),
  count: countArb,
  seed: fc.integer(),
  binary: fc.option(fc.boolean(), { nil: undefined }),
  short: fc.integer({ min: 0, max: 4 }).map((v) => v === 0),
  badUtf8: fc.boolean(),
});

function numericData(kind: NumericType, count: number, seed: number): Buffer {
  const b = Buffer.alloc(count * SIZE[kind]);
  let x = seed | 0;
  for (let i = 0; i < b.length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) | 0;
    b[i] = x >>> 24;
  }
  if (kind === 'BOOL') for (let i = 0; i < b.length; i++) b[i] &= 1;
  return b; // floats: every bit pattern, NaN and ±Infinity included
}

function tensorOf(s: OutputSpec): OutputTensor {
  if (s.kind === 'SHM') {
    return {
      name: s.name,
      datatype: 'FP32',
      shape: [s.count],
      data: Buffer.alloc(0),
      sharedMemory: { region: 'r', offset: 4, byteSize: 4 * s.count },
    };
  }
  if (s.kind === 'FP16')
    return { name: s.name, datatype: 'FP16', shape: [s.count], data: Buffer.alloc(2 * s.count) };
  if (s.kind === 'BYTES') {
    const els = Array.from({ length: s.count }, (_, i) => Buffer.from(`${s.seed % 97}"\\${i}\u00e9`));
    if (s.badUtf8 && s.count > 0) els[s.count - 1] = Buffer.from([0xc3, 0x28]);
    const data = joinBytesElements(els);
    return { name: s.name, datatype: 'BYTES', shape: [s.count + (s.short ? 1 : 0)], data };
  }
  const data = numericData(s.kind, s.count, s.seed);
  return { name: s.name, datatype: s.kind, shape: [s.count + (s.short ? 1 : 0)], data };
}

const answerArb = fc.record({
  outputs: fc.array(outputArb, { maxLength: 4 }),
  defaultBinary: fc.boolean(),
  id: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
  limit: fc.oneof(fc.constant(256 * 1024 * 1024), fc.integer({ min: 50, max: 200_000 })),
});

export const httpJsonAnswer = target({
  name: 'http-json-answer',
  what: 'generated responses → planJsonAnswer + jsonAnswerPieces (sliced answers) ≡ encodeInferResponse (whole), or the same refusal',
  weight: 4,
  arbitrary: answerArb,
  async run(input, ctx) {
    const outputs = input.outputs.map(tensorOf);
    const response: InferenceResponse = {
      modelName: 'm',
      modelVersion: '1',
      id: input.id ?? '',
      parameters: {},
      outputs,
      final: true,
    };
    const binary = new Map<string, boolean>();
    for (const s of input.outputs) if (s.binary !== undefined) binary.set(s.name, s.binary);
    const format: OutputFormat = { defaultBinary: input.defaultBinary, binary };
    let whole: ReturnType<typeof encodeInferResponse> | Error;
    try {
      whole = encodeInferResponse(response, format, input.limit);
    } catch (err) {
      whole = err as Error;
    }
    const sliced = await ctx.attemptAsync('planJsonAnswer', async () => {
      const plan = await planJsonAnswer(response, format, input.limit, () => Promise.resolve());
      return { plan, json: [...jsonAnswerPieces(plan)].join('') };
    });
    if (whole instanceof Error) {
      // The sliced path refuses what the whole one refuses; the whole one may also refuse an answer whose
      // full text (not just its shortest) passes the limit, which the sliced path streams.
      if (sliced !== undefined) {
        assert.match(whole.message, /too large to be returned as JSON/);
        ctx.note('streamed past the whole limit');
      }
      return;
    }
    assert.ok(sliced !== undefined, 'the sliced path refused what the whole encoder answered');
    assert.equal(sliced.json, whole.json);
    assert.equal(sliced.plan.hasBinary, whole.hasBinary);
    assert.deepEqual(sliced.plan.binary, whole.binary);
    ctx.note(whole.hasBinary ? 'answered with binary' : 'answered as JSON');
  },
  allowedInternal: [/output tensor shape does not match size of output/], // a model's bad output: INTERNAL, as Triton
});

/** Reads a response: whole, with a pause after every chunk (slow reader), or abandoned after the first. */
function readAs(res: IncomingMessage, how: 'whole' | 'slow' | 'abandon'): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => {
      chunks.push(c);
      if (how === 'abandon') {
        res.destroy();
        resolve(undefined);
      } else if (how === 'slow') {
        res.pause();
        setTimeout(() => res.resume(), 1);
      }
    });
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', () => resolve(undefined));
    res.on('close', () => resolve(how === 'abandon' ? undefined : Buffer.concat(chunks)));
  });
}

function post(
  port: number,
  urlPath: string,
  body: Buffer,
  headers: Record<string, string | number>,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'POST', path: urlPath, agent: false, headers },
      resolve,
    );
    req.on('error', reject);
    req.end(body);
  });
}

const streamArb = fc.record({
  kind: fc.constantFrom('json', 'decoupled'),
  n: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 65_536, max: 200_000 })),
  how: fc.constantFrom('whole' as const, 'slow' as const, 'abandon' as const),
  gzip: fc.boolean(),
});

export const httpAnswerStream = target({
  name: 'http-answer-stream',
  what: 'large JSON answers and decoupled generate_stream over a real socket, read whole, slowly or abandoned → complete answers hold what was sent; health answers after',
  weight: 1,
  arbitrary: streamArb,
  async setup() {
    await liveServer();
  },
  async run(input, ctx) {
    const live = await liveServer();
    if (input.kind === 'json') {
      const n = input.n;
      const values = new Float32Array(n).map((_, i) => (i % 7) - 3.5);
      const data = Buffer.from(values.buffer);
      const header = Buffer.from(
        JSON.stringify({
          inputs: [
            {
              name: 'INPUT0',
              datatype: 'FP32',
              shape: [1, n],
              parameters: { binary_data_size: data.length },
            },
          ],
        }),
      );
      const res = await post(live.port, '/v2/models/id_fp32/infer', Buffer.concat([header, data]), {
        'Content-Type': 'application/octet-stream',
        'Inference-Header-Content-Length': header.length,
        'Content-Length': header.length + data.length,
        ...(input.gzip && { 'Accept-Encoding': 'gzip' }),
      });
      const body = await readAs(res, input.how);
      ctx.note(`json ${res.statusCode} ${input.how}`);
      if (body !== undefined && input.how !== 'abandon') {
        assert.equal(res.statusCode, 200);
        const { gunzipSync } = await import('node:zlib');
        const text = (res.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString('utf8');
        const got = (JSON.parse(text) as { outputs: { data: number[] }[] }).outputs[0].data;
        assert.equal(got.length, n);
        for (let i = 0; i < n; i += Math.max(1, Math.floor(n / 50))) assert.equal(got[i], values[i]);
      }
    } else {
      const n = Math.min(input.n, 5000);
      const body = Buffer.from(JSON.stringify({ IN: n }));
      const res = await post(live.port, '/v2/models/square_int32/generate_stream', body, {
        'Content-Type': 'application/json',
        'Content-Length': body.length,
      });
      const text = await readAs(res, input.how);
      ctx.note(`decoupled ${res.statusCode} ${input.how}`);
      if (text !== undefined && input.how !== 'abandon') {
        assert.equal(res.statusCode, 200);
        const events = text
          .toString('utf8')
          .split('\n\n')
          .filter((e) => e.startsWith('data:'));
        assert.ok(
          events.every((e) => !e.includes('"error"')),
          'an error event in a complete stream',
        );
        assert.equal(events.length, n, 'one event per response');
      }
    }
    const health = await live.http('GET', '/v2/health/live');
    assert.equal(health.status, 200);
  },
});

/** Hostile repository entries. */
type EntryKind = 'link-out' | 'dangling-out' | 'fifo' | 'device' | 'huge' | 'deep' | 'soup' | 'valid';
const SECRET = 'secret_token_zq81';

const repoArb = fc.record({
  config: fc.constantFrom<EntryKind>(
    'link-out',
    'dangling-out',
    'fifo',
    'device',
    'huge',
    'deep',
    'soup',
    'valid',
  ),
  modelFile: fc.constantFrom('none', 'fifo', 'device', 'link-out', 'folder'),
  depth: fc.integer({ min: 50, max: 20_000 }),
  soup: fc.string({ maxLength: 200 }),
});

let caseNo = 0;
let outsideDir: string | undefined;

export const repositoryFiles = target({
  name: 'repository-files',
  what: 'hostile model folders (config.pbtxt linked out, FIFO, device, huge, deep, token soup; FIFO/device/linked model files) → load over HTTP: a clean answer, no outside token, still live',
  weight: 1,
  arbitrary: repoArb,
  async setup() {
    await liveServer();
    outsideDir = path.join(tmpdir(), `nereid-fuzz-outside-${process.pid}`);
    mkdirSync(outsideDir, { recursive: true });
    writeFileSync(path.join(outsideDir, 'secret.pbtxt'), `${SECRET} { x: 1 }\n`);
  },
  teardown() {
    if (outsideDir !== undefined) rmSync(outsideDir, { recursive: true, force: true });
    return Promise.resolve();
  },
  async run(input, ctx) {
    const live = await liveServer();
    const name = `hostile_${process.pid}_${caseNo++}`;
    const dir = path.join(live.repository, name);
    mkdirSync(path.join(dir, '1'), { recursive: true });
    const configPath = path.join(dir, 'config.pbtxt');
    const valid =
      `name: "${name}" backend: "onnxruntime" max_batch_size: 0 ` +
      'input { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } output { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] }';
    try {
      switch (input.config) {
        case 'link-out':
          symlinkSync(path.join(outsideDir!, 'secret.pbtxt'), configPath);
          break;
        case 'dangling-out':
          symlinkSync(path.join(outsideDir!, 'missing.pbtxt'), configPath);
          break;
        case 'fifo':
          execFileSync('mkfifo', [configPath]);
          break;
        case 'device':
          symlinkSync('/dev/zero', configPath);
          break;
        case 'huge':
          writeFileSync(configPath, valid + ' '.repeat(3 * 1024 * 1024) + '\n');
          break;
        case 'deep':
          writeFileSync(
            configPath,
            'parameters { key: "k" value: '.repeat(1) + '{ '.repeat(input.depth) + '}'.repeat(input.depth),
          );
          break;
        case 'soup':
          writeFileSync(configPath, input.soup);
          break;
        case 'valid':
          writeFileSync(configPath, valid);
      }
      const modelPath = path.join(dir, '1', 'model.onnx');
      if (input.modelFile === 'fifo') execFileSync('mkfifo', [modelPath]);
      else if (input.modelFile === 'device') symlinkSync('/dev/zero', modelPath);
      else if (input.modelFile === 'link-out') symlinkSync(path.join(outsideDir!, 'secret.pbtxt'), modelPath);
      else if (input.modelFile === 'folder') mkdirSync(modelPath);

      const r = await live.http('POST', `/v2/repository/models/${name}/load`, Buffer.alloc(0));
      ctx.note(`${input.config}/${input.modelFile} → ${r.status}`);
      assert.ok([200, 400, 404, 500].includes(r.status), `load answered ${r.status}`);
      const text = r.body.toString('utf8');
      if (r.status !== 200) {
        const doc = JSON.parse(text) as { error?: unknown };
        assert.equal(typeof doc.error, 'string', 'an error answer without an error message');
      }
      assert.ok(!text.includes(SECRET), 'a token of a file outside the repository reached the client');
      assert.ok(!text.includes(outsideDir!), 'a path outside the repository reached the client');
      if (r.status === 200) await live.http('POST', `/v2/repository/models/${name}/unload`, Buffer.alloc(0));
      const health = await live.http('GET', '/v2/health/live');
      assert.equal(health.status, 200);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
});

export const RESPONSE_TARGETS: readonly FuzzTarget<unknown>[] = [
  httpJsonAnswer,
  httpAnswerStream,
  repositoryFiles,
];
