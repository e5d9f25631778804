/**
 * Model configurations for the fuzzer, driven by the same descriptor table the readers use
 * (src/model-config/schema.ts): random messages of any type with plausible values (tensor names, dims,
 * platforms) mixed with hostile ones, a text-format printer that writes them in every syntax protobuf's
 * TextFormat accepts (`{}` or `<>`, lists or repeated keys, optional colons and separators, quoted strings
 * with escapes, hex and octal integers, enum numbers, comments), and protobuf's JSON form. Also the seed
 * configs: the repository's examples and the reader's test fixtures.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import * as fixtures from '../../src/model-config/example-configs.testkit.js';
import {
  enumDescriptor,
  messageDescriptor,
  type FieldDescriptor,
  type MessageDescriptor,
  type ScalarType,
} from '../../src/model-config/schema.js';
import { hostileString } from './arbitraries.js';

/** A generated message: proto field names → values (maps as plain records, enums by name). */
export type GenValue = string | number | boolean | GenMessage | GenValue[];
export interface GenMessage {
  [field: string]: GenValue;
}

const TENSOR_NAMES = ['INPUT0', 'INPUT1', 'OUTPUT0', 'OUTPUT1', 'IN', 'OUT', 'x', 'y'];
const STRING_POOL: Readonly<Record<string, readonly string[]>> = {
  name: TENSOR_NAMES,
  platform: ['onnxruntime_onnx', 'ensemble', 'pytorch_libtorch', 'tensorflow_savedmodel', 'tensorrt_plan'],
  backend: ['onnxruntime', 'python', 'identity', 'repeat', 'square', 'javascript', 'tensorflow'],
  model_name: ['m1', 'm2', 'simple', 'identity_fp32'],
  input_name: TENSOR_NAMES,
  output_name: TENSOR_NAMES,
  target_name: TENSOR_NAMES,
  source_input: TENSOR_NAMES,
  default_model_filename: ['model.onnx', 'model.py', 'model.ts', '../model.onnx', '/etc/passwd'],
  label_filename: ['labels.txt', '../labels.txt'],
  string_value: ['1', 'true', 'abc', '-5', ''],
};

const INTEGER_EDGES: Readonly<Record<string, readonly bigint[]>> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n, 2n ** 31n],
  uint32: [2n ** 32n - 1n, 2n ** 32n, -1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n, 2n ** 53n + 1n],
  uint64: [2n ** 64n - 1n, 2n ** 53n + 1n, -1n],
};

export interface GenOptions {
  /** Values only inside their field's range (for properties that compare two readers). */
  readonly inRange: boolean;
}

const SAFE_INT = BigInt(Number.MAX_SAFE_INTEGER);

function integerArb(type: ScalarType, field: string, opts: GenOptions): fc.Arbitrary<bigint> {
  const small =
    field === 'dims' || field === 'shape' || field === 'dim' ? fc.bigInt(-2n, 8n) : fc.bigInt(-1n, 16n);
  const unsigned = type === 'uint32' || type === 'uint64';
  const plausible = unsigned ? small.map((v) => (v < 0n ? -v : v)) : small;
  if (opts.inRange) {
    const [lo, hi] =
      type === 'int32'
        ? [-(2n ** 31n), 2n ** 31n - 1n]
        : type === 'uint32'
          ? [0n, 2n ** 32n - 1n]
          : type === 'int64'
            ? [-SAFE_INT, SAFE_INT]
            : [0n, SAFE_INT];
    return fc.oneof({ arbitrary: plausible, weight: 6 }, { arbitrary: fc.bigInt(lo, hi), weight: 1 });
  }
  return fc.oneof(
    { arbitrary: plausible, weight: 8 },
    { arbitrary: fc.constantFrom(...INTEGER_EDGES[type]), weight: 1 },
    { arbitrary: fc.bigInt(-(2n ** 70n), 2n ** 70n), weight: 1 },
  );
}

function scalarArb(type: ScalarType, field: string, opts: GenOptions): fc.Arbitrary<GenValue> {
  switch (type) {
    case 'string': {
      const pool = STRING_POOL[field];
      const plausible = pool ? fc.constantFrom(...pool) : fc.constantFrom(...TENSOR_NAMES, '', 'value');
      const any = fc.oneof({ arbitrary: plausible, weight: 4 }, { arbitrary: hostileString, weight: 1 });
      // Text format carries bytes: a lone surrogate cannot survive it, so in-range strings are well formed.
      return opts.inRange ? any.filter((s) => !/\p{Cs}/u.test(s)) : any;
    }
    case 'bool':
      return fc.boolean();
    case 'float':
    case 'double':
      return fc.oneof(
        fc.constantFrom(0, 0.5, 1, -1, 100),
        opts.inRange ? fc.float({ noDefaultInfinity: false }).map(Math.fround) : fc.double(),
      );
    default:
      // Integers travel as bigint so a printer can write values beyond 2^53 exactly.
      return integerArb(type, field, opts).map((v) => v as unknown as GenValue);
  }
}

function enumArb(typeName: string): fc.Arbitrary<GenValue> {
  const names = enumDescriptor(typeName).values.map((v) => v.name);
  return fc.constantFrom(...names);
}

const cache = new Map<string, fc.Arbitrary<GenMessage>>();

function fieldValueArb(f: FieldDescriptor, opts: GenOptions): fc.Arbitrary<GenValue> {
  if (f.type === 'message') return messageArb(f.typeName ?? '', opts);
  if (f.type === 'enum') return enumArb(f.typeName ?? '');
  return scalarArb(f.type, f.name, opts);
}

/** A random message of `name` (package-relative, e.g. 'ModelConfig'); each oneof keeps one member. */
export function messageArb(name: string, opts: GenOptions): fc.Arbitrary<GenMessage> {
  const key = `${name}/${opts.inRange}`;
  const known = cache.get(key);
  if (known !== undefined) return known;
  const desc = messageDescriptor(name);
  // Set lazily: the schema has no recursive messages, but building on demand keeps start-up cheap.
  const arb = fc.constant(null).chain(() => {
    const fields: Record<string, fc.Arbitrary<GenValue>> = {};
    for (const f of desc.fields) {
      const single = fieldValueArb(f, opts);
      if (f.label === 'repeated') fields[f.name] = fc.array(single, { maxLength: 3 });
      else if (f.label === 'map') {
        const keyArb = scalarArb(f.keyType ?? 'string', `${f.name}.key`, opts).map(scalarString);
        fields[f.name] = fc.dictionary(keyArb, single, { maxKeys: 2 }).map((d) => d as GenValue);
      } else fields[f.name] = single;
    }
    return fc.record(fields, { requiredKeys: [] }).map((m) => keepOneMemberPerOneof(desc, m));
  });
  cache.set(key, arb);
  return arb;
}

function keepOneMemberPerOneof(desc: MessageDescriptor, m: Partial<GenMessage>): GenMessage {
  const out: GenMessage = {};
  const taken = new Set<string>();
  for (const f of desc.fields) {
    const v = m[f.name];
    if (v === undefined) continue;
    if (f.oneof !== undefined) {
      if (taken.has(f.oneof)) continue;
      taken.add(f.oneof);
    }
    out[f.name] = v;
  }
  return out;
}

/** A plausible ModelConfig: the common fields set with sensible values, the rest random. */
export function modelConfigArb(opts: GenOptions): fc.Arbitrary<GenMessage> {
  const tensor = (names: string[], withFormat: boolean): fc.Arbitrary<GenMessage> =>
    fc.record(
      {
        name: fc.constantFrom(...names),
        data_type: fc.constantFrom(
          'TYPE_FP32',
          'TYPE_INT32',
          'TYPE_STRING',
          'TYPE_BOOL',
          'TYPE_INT64',
          'TYPE_FP16',
        ),
        dims: fc.array(
          fc.oneof(fc.bigInt(-1n, 8n), fc.constant(-1n)).map((v) => v as unknown as GenValue),
          { minLength: 1, maxLength: 3 },
        ),
        ...(withFormat && { optional: fc.boolean() }),
      },
      { requiredKeys: ['name', 'data_type', 'dims'] },
    );
  return fc
    .tuple(
      fc.record({
        name: fc.constantFrom('m', 'simple', 'm', 'simple', ''),
        // A backend and platform that go together, mostly.
        kind: fc.constantFrom<Record<string, GenValue>>(
          { backend: 'onnxruntime', platform: 'onnxruntime_onnx' },
          { backend: 'onnxruntime' },
          { platform: 'onnxruntime_onnx' },
          { backend: 'python' },
          { backend: 'identity' },
          { backend: 'javascript' },
          { platform: 'ensemble' },
          {},
        ),
        max_batch_size: fc
          .oneof(fc.integer({ min: 0, max: 8 }), fc.constant(-1))
          .map((v) => BigInt(v) as unknown as GenValue),
        input: fc.array(tensor(['INPUT0', 'INPUT1', 'IN'], true), { minLength: 1, maxLength: 3 }),
        output: fc.array(tensor(['OUTPUT0', 'OUTPUT1', 'OUT'], false), { minLength: 1, maxLength: 3 }),
      }),
      messageArb('ModelConfig', opts),
      fc.subarray(
        [
          'dynamic_batching',
          'sequence_batching',
          'ensemble_scheduling',
          'instance_group',
          'optimization',
          'parameters',
          'model_warmup',
          'version_policy',
          'model_transaction_policy',
          'batch_input',
          'batch_output',
        ],
        { maxLength: 3 },
      ),
    )
    .map(([{ kind, ...base }, random, extra]) => {
      const out: GenMessage = { ...base, ...kind };
      if (out.name === '') delete out.name;
      let scheduling = false;
      for (const k of extra) {
        const v = random[k];
        if (v === undefined) continue;
        if (['dynamic_batching', 'sequence_batching', 'ensemble_scheduling'].includes(k)) {
          if (scheduling) continue; // one member of the oneof
          scheduling = true;
        }
        out[k] = v;
      }
      return out;
    });
}

// ---- printing ----

/** A scalar value's text (integers are held as bigint). */
function scalarString(v: GenValue): string {
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** A source of style choices: the same tape always prints the same text. */
export class Tape {
  private i = 0;
  constructor(private readonly values: readonly number[]) {}
  pick(n: number): number {
    if (this.values.length === 0) return 0;
    return this.values[this.i++ % this.values.length] % n;
  }
  /** True about one time in `n`. */
  oneIn(n: number): boolean {
    return this.pick(n) === 0;
  }
}

export const tapeArb: fc.Arbitrary<number[]> = fc.array(fc.nat(1000), { minLength: 1, maxLength: 48 });

function quote(s: string, t: Tape): string {
  const q = t.oneIn(4) ? "'" : '"';
  // One unit per byte (a character or an escape), so a split never cuts an escape in two.
  const units: string[] = [];
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    if (c === q || c === '\\') units.push('\\' + c);
    else if (b === 0x0a) units.push('\\n');
    else if (b < 0x20 || b === 0x7f) units.push('\\x' + b.toString(16).padStart(2, '0'));
    else if (b >= 0x80)
      units.push(t.oneIn(2) ? '\\' + b.toString(8).padStart(3, '0') : '\\x' + b.toString(16));
    else units.push(c);
  }
  // Adjacent literals concatenate.
  if (units.length > 1 && t.oneIn(5)) {
    const cut = Math.floor(units.length / 2);
    return `${q}${units.slice(0, cut).join('')}${q} ${q}${units.slice(cut).join('')}${q}`;
  }
  return q + units.join('') + q;
}

function integerText(v: bigint, t: Tape): string {
  const neg = v < 0n;
  const mag = neg ? -v : v;
  const style = t.pick(6);
  const body =
    style === 0 && mag > 0n
      ? '0x' + mag.toString(16)
      : style === 1 && mag > 0n
        ? '0' + mag.toString(8)
        : mag.toString();
  return (neg ? '-' : '') + body;
}

function floatText(v: number, t: Tape): string {
  if (Number.isNaN(v)) return t.oneIn(2) ? 'nan' : 'NaN';
  if (v === Infinity) return t.oneIn(2) ? 'inf' : 'Infinity';
  if (v === -Infinity) return t.oneIn(2) ? '-inf' : '-Infinity';
  if (Object.is(v, -0)) return '-0';
  const s = String(v);
  if (Number.isInteger(v) && !s.includes('e') && t.oneIn(3)) return s + '.0' + (t.oneIn(2) ? 'f' : '');
  return s;
}

function scalarText(type: ScalarType, v: GenValue, t: Tape): string {
  switch (type) {
    case 'string':
      return quote(scalarString(v), t);
    case 'bool':
      return [v ? 'true' : 'false', v ? 'True' : 'False', v ? 't' : 'f', v ? '1' : '0'][t.pick(4)];
    case 'float':
    case 'double':
      return floatText(v as number, t);
    default:
      return integerText(BigInt(v as unknown as bigint), t);
  }
}

function sep(t: Tape): string {
  return ['\n', ' ', '; ', ', ', '\n# a comment\n'][t.pick(5)];
}

function valueText(f: FieldDescriptor, v: GenValue, t: Tape, indent: string): string {
  if (f.type === 'message') return bodyText(messageDescriptor(f.typeName ?? ''), v as GenMessage, t, indent);
  if (f.type === 'enum') {
    if (t.oneIn(6)) {
      const num = enumDescriptor(f.typeName ?? '').values.find((x) => x.name === v)?.number;
      if (num !== undefined) return String(num);
    }
    return scalarString(v);
  }
  return scalarText(f.type, v, t);
}

function bodyText(desc: MessageDescriptor, m: GenMessage, t: Tape, indent: string): string {
  const [open, close] = t.oneIn(5) ? ['<', '>'] : ['{', '}'];
  return `${open}${messageText(desc, m, t, indent + '  ')}${indent}${close}`;
}

function colonFor(f: FieldDescriptor, t: Tape): string {
  const messageLike = f.type === 'message' || f.label === 'map';
  return messageLike && t.oneIn(2) ? ' ' : ': ';
}

/** The text-format body of a message (its fields, one after another). */
export function messageText(desc: MessageDescriptor, m: GenMessage, t: Tape, indent = ''): string {
  let out = '';
  const fieldLine = (text: string): void => {
    out += `\n${indent}${text}${sep(t)}`;
  };
  for (const f of desc.fields) {
    const v = m[f.name];
    if (v === undefined) continue;
    if (f.label === 'repeated') {
      const items = v as GenValue[];
      if (items.length === 0) {
        if (t.oneIn(3)) fieldLine(`${f.name}${colonFor(f, t)}[]`);
        continue;
      }
      if (t.oneIn(2)) {
        fieldLine(`${f.name}${colonFor(f, t)}[${items.map((x) => valueText(f, x, t, indent)).join(', ')}]`);
      } else {
        for (const x of items) fieldLine(`${f.name}${colonFor(f, t)}${valueText(f, x, t, indent)}`);
      }
    } else if (f.label === 'map') {
      for (const [k, x] of Object.entries(v as GenMessage)) {
        const keyText = scalarText(
          f.keyType ?? 'string',
          f.keyType === 'string' ? k : (BigInt(k) as unknown as GenValue),
          t,
        );
        const valueColon = f.type === 'message' && t.oneIn(2) ? ' ' : ': ';
        const entry = [`key: ${keyText}`, `value${valueColon}${valueText(f, x, t, indent)}`];
        if (t.oneIn(3)) entry.reverse();
        fieldLine(`${f.name}${colonFor(f, t)}{ ${entry.join(sep(t))} }`);
      }
    } else {
      fieldLine(`${f.name}${colonFor(f, t)}${valueText(f, v, t, indent)}`);
    }
  }
  return out + '\n';
}

/** protobuf's JSON form: enums by name, 64-bit integers as strings or numbers, non-finite floats as strings. */
export function messageJson(desc: MessageDescriptor, m: GenMessage, t: Tape): unknown {
  const out: Record<string, unknown> = {};
  const one = (f: FieldDescriptor, v: GenValue): unknown => {
    if (f.type === 'message') return messageJson(messageDescriptor(f.typeName ?? ''), v as GenMessage, t);
    if (f.type === 'enum') return v;
    if (f.type === 'float' || f.type === 'double') {
      const n = v as number;
      if (Number.isNaN(n)) return 'NaN';
      if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
      return Object.is(n, -0) ? '-0' : n;
    }
    if (f.type === 'string' || f.type === 'bool') return v;
    const big = BigInt(v as unknown as bigint);
    return t.oneIn(2) ? big.toString() : Number(big);
  };
  for (const f of desc.fields) {
    const v = m[f.name];
    if (v === undefined) continue;
    const name = t.oneIn(4) ? f.jsonName : f.name;
    if (f.label === 'repeated') out[name] = (v as GenValue[]).map((x) => one(f, x));
    else if (f.label === 'map') {
      const entries: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as GenMessage)) {
        Object.defineProperty(entries, k, {
          value: one(f, x),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      out[name] = entries;
    } else out[name] = one(f, v);
  }
  return out;
}

// ---- seeds ----

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** Real configs: every examples/model_repository/*\/config.pbtxt and the reader's fixtures. */
export function seedConfigs(): string[] {
  const out = Object.values(fixtures as Record<string, unknown>).filter(
    (v): v is string => typeof v === 'string',
  );
  const examples = path.join(ROOT, 'examples/model_repository');
  if (existsSync(examples)) {
    for (const m of readdirSync(examples)) {
      const file = path.join(examples, m, 'config.pbtxt');
      if (existsSync(file)) out.push(readFileSync(file, 'utf8'));
    }
  }
  return out;
}

/** Tokens of the text format, for text-level mutation. */
export const PBTXT_VOCABULARY = [
  '{',
  '}',
  '<',
  '>',
  '[',
  ']',
  ':',
  ';',
  ',',
  '-',
  '"',
  "'",
  '#',
  '\n',
  ' ',
  'name',
  'input',
  'output',
  'dims',
  'data_type',
  'TYPE_FP32',
  'TYPE_STRING',
  'max_batch_size',
  'instance_group',
  'count',
  'kind',
  'KIND_CPU',
  'dynamic_batching',
  'sequence_batching',
  'ensemble_scheduling',
  'step',
  'input_map',
  'key',
  'value',
  'parameters',
  'string_value',
  'version_policy',
  'specific',
  'versions',
  'reshape',
  'shape',
  'optimization',
  'model_warmup',
  'inputs',
  'zero_data',
  'batch_input',
  'control_input',
  'control',
  'int32_false_true',
  'preferred_batch_size',
  'priority_queue_policy',
  'default_model_filename',
  '0',
  '-1',
  '1',
  '8',
  '0x7fffffff',
  '9223372036854775807',
  '18446744073709551616',
  '1e309',
  '1.5f',
  'nan',
  'inf',
  '-inf',
  '0777',
  '09',
  '"\\x"',
  '"\\u12"',
  '"\\777"',
  "'unterminated",
  'true',
  'True',
  't',
  '[extension.field]',
  '{{{{{{{{{{{{{{{{{{{{',
  '\uFEFF',
  '\u0000',
];
