/**
 * Generators shared by the fuzz targets: hostile scalars (names, numbers, 64-bit values), a JSON model that
 * can say what JSON.stringify cannot (NaN and Infinity literals, integers beyond 2^53, repeated keys, deep
 * nesting) with random edits, and byte and text mutators (truncate, flip, insert, delete, duplicate, huge
 * lengths). Targets build valid-ish inputs from their own structure, then run them through these.
 */
import fc from 'fast-check';

// ---- scalars ----

const LONE_SURROGATES = fc.constantFrom('\ud800', '\udfff', 'a\udc00b');

/** Strings a client may send as a name, key or value: plausible ones, and every kind of trouble. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ maxLength: 12 }), weight: 4 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 8 }), weight: 2 },
  { arbitrary: LONE_SURROGATES, weight: 1 },
  {
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '__proto__',
      'constructor',
      'prototype',
      'toString',
      'hasOwnProperty',
      '../../etc/passwd',
      '/',
      '.',
      '..',
      '%',
      '%zz',
      '%2F',
      '\u0000',
      'a\u0000b',
      '\n',
      '"',
      '\\',
      '{}',
      '[]',
      'NaN',
      '-1',
      '1e309',
      '\u202e',
      '\uFEFF',
      '😀',
      'x'.repeat(300),
    ),
    weight: 3,
  },
);

/** Numbers that break arithmetic: edges of every integer width, non-finite values, fractions, -0. */
export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  { arbitrary: fc.integer({ min: -3, max: 20 }), weight: 4 },
  { arbitrary: fc.integer(), weight: 1 },
  {
    arbitrary: fc.constantFrom(
      -1,
      -0,
      0.5,
      1.5,
      -1.5,
      2 ** 31 - 1,
      2 ** 31,
      2 ** 32 - 1,
      2 ** 32,
      2 ** 53 - 1,
      2 ** 53,
      2 ** 53 + 2,
      2 ** 63,
      2 ** 64,
      -(2 ** 53),
      -(2 ** 63),
      1e308,
      Number.MAX_VALUE,
      Number.MIN_VALUE,
      NaN,
      Infinity,
      -Infinity,
    ),
    weight: 3,
  },
  { arbitrary: fc.double(), weight: 1 },
);

/** 64-bit values and beyond, as bigint. */
export const hostileBigInt: fc.Arbitrary<bigint> = fc.oneof(
  fc.bigInt({ min: -(2n ** 66n), max: 2n ** 66n }),
  fc.constantFrom(
    2n ** 53n + 1n,
    2n ** 63n - 1n,
    2n ** 63n,
    2n ** 64n - 1n,
    2n ** 64n,
    -(2n ** 63n),
    -(2n ** 63n) - 1n,
    10n ** 30n,
  ),
);

/** A tensor dimension: mostly small, sometimes negative, zero, huge or overflowing when multiplied. */
export const hostileDim: fc.Arbitrary<number> = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 4 }), weight: 8 },
  {
    arbitrary: fc.constantFrom(-1, -2, 2 ** 31, 2 ** 32 + 1, 2 ** 40, 2 ** 53 - 1, 2 ** 62, -(2 ** 62)),
    weight: 1,
  },
);

// ---- a JSON model that can say anything ----

/** A JSON document node: `raw` is written as is (e.g. `NaN`, `1e999`, `18446744073709551616`, `-0`). */
export type JNode =
  | { readonly k: 'raw'; readonly text: string }
  | { readonly k: 'arr'; items: JNode[] }
  | { readonly k: 'obj'; entries: [string, JNode][] }
  | { readonly k: 'v'; readonly v: null | boolean | string };

export type JsonLike = null | boolean | number | bigint | string | JsonLike[] | { [key: string]: JsonLike };

/** A plain value as a node (numbers and bigints become their exact text). */
export function toNode(v: unknown): JNode {
  if (v === null || v === undefined) return { k: 'v', v: null };
  if (typeof v === 'boolean' || typeof v === 'string') return { k: 'v', v };
  if (typeof v === 'number') return { k: 'raw', text: numberText(v) };
  if (typeof v === 'bigint') return { k: 'raw', text: v.toString() };
  if (Array.isArray(v)) return { k: 'arr', items: v.map(toNode) };
  return { k: 'obj', entries: Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, toNode(x)]) };
}

/** A number as a JSON literal the way a hostile client writes it (rapidjson takes NaN / Infinity). */
export function numberText(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  if (Object.is(v, -0)) return '-0';
  return String(v);
}

export function render(n: JNode): string {
  switch (n.k) {
    case 'raw':
      return n.text;
    case 'v':
      return JSON.stringify(n.v);
    case 'arr':
      return '[' + n.items.map(render).join(',') + ']';
    case 'obj':
      return '{' + n.entries.map(([k, v]) => JSON.stringify(k) + ':' + render(v)).join(',') + '}';
  }
}

/** Scalars and small containers that replace a value of the expected type. */
export const hostileJsonValue: fc.Arbitrary<JNode> = fc.oneof(
  hostileNumber.map((v) => toNode(v)),
  hostileBigInt.map((v) => toNode(v)),
  hostileString.map((v) => toNode(v)),
  fc.constantFrom<JNode>(
    { k: 'v', v: null },
    { k: 'v', v: true },
    { k: 'v', v: false },
    { k: 'arr', items: [] },
    { k: 'obj', entries: [] },
    { k: 'raw', text: '1e400' },
    { k: 'raw', text: '-1e400' },
    { k: 'raw', text: '123456789012345678901234567890' },
    { k: 'raw', text: '0.0000000000000000000000000001e-400' },
    { k: 'raw', text: 'Inf' },
    { k: 'raw', text: '-NaN' },
    { k: 'arr', items: [{ k: 'v', v: null }] },
  ),
);

type JsonOp =
  | { op: 'replace'; at: number; with: JNode }
  | { op: 'delete'; at: number }
  | { op: 'duplicate'; at: number; with: JNode }
  | { op: 'rename'; at: number; key: string }
  | { op: 'nest'; at: number; depth: number }
  | { op: 'retype'; at: number };

const jsonOp: fc.Arbitrary<JsonOp> = fc.oneof(
  {
    arbitrary: fc.record({ op: fc.constant('replace' as const), at: fc.nat(), with: hostileJsonValue }),
    weight: 5,
  },
  { arbitrary: fc.record({ op: fc.constant('delete' as const), at: fc.nat() }), weight: 3 },
  {
    arbitrary: fc.record({ op: fc.constant('duplicate' as const), at: fc.nat(), with: hostileJsonValue }),
    weight: 2,
  },
  {
    arbitrary: fc.record({ op: fc.constant('rename' as const), at: fc.nat(), key: hostileString }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('nest' as const),
      at: fc.nat(),
      depth: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.constantFrom(99, 100, 101, 5000)),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ op: fc.constant('retype' as const), at: fc.nat() }), weight: 1 },
);

interface Slot {
  readonly node: JNode;
  /** The container holding it and the index there (undefined for the root). */
  readonly parent?: { readonly items: JNode[] } | { readonly entries: [string, JNode][] };
  readonly index: number;
}

function slots(root: JNode): Slot[] {
  const out: Slot[] = [{ node: root, index: 0 }];
  for (let i = 0; i < out.length; i++) {
    const n = out[i].node;
    if (n.k === 'arr') n.items.forEach((c, index) => out.push({ node: c, parent: n, index }));
    else if (n.k === 'obj') n.entries.forEach(([, c], index) => out.push({ node: c, parent: n, index }));
  }
  return out;
}

function clone(n: JNode): JNode {
  if (n.k === 'arr') return { k: 'arr', items: n.items.map(clone) };
  if (n.k === 'obj') return { k: 'obj', entries: n.entries.map(([k, v]) => [k, clone(v)]) };
  return n;
}

function put(slot: Slot, value: JNode, root: { node: JNode }): void {
  const p = slot.parent;
  if (p === undefined) root.node = value;
  else if ('items' in p) p.items[slot.index] = value;
  else p.entries[slot.index][1] = value;
}

function applyJsonOp(root: { node: JNode }, op: JsonOp): void {
  const all = slots(root.node);
  const slot = all[op.at % all.length];
  const p = slot.parent;
  switch (op.op) {
    case 'replace':
      put(slot, op.with, root);
      return;
    case 'delete':
      if (p === undefined) return;
      if ('items' in p) p.items.splice(slot.index, 1);
      else p.entries.splice(slot.index, 1);
      return;
    case 'duplicate':
      if (p === undefined) return;
      // A repeated object key, or a repeated array element (duplicate tensor names, outputs, ...).
      if ('items' in p) p.items.push(clone(slot.node));
      else p.entries.push([p.entries[slot.index][0], op.with]);
      return;
    case 'rename':
      if (p !== undefined && 'entries' in p) p.entries[slot.index][0] = op.key;
      return;
    case 'nest': {
      // Written as text: deep trees would overflow this module's own recursive helpers.
      const inner = render(slot.node);
      put(slot, { k: 'raw', text: '['.repeat(op.depth) + inner + ']'.repeat(op.depth) }, root);
      return;
    }
    case 'retype': {
      const n = slot.node;
      if (n.k === 'obj') put(slot, { k: 'arr', items: n.entries.map(([, v]) => v) }, root);
      else if (n.k === 'arr') put(slot, { k: 'obj', entries: n.items.map((v, i) => [String(i), v]) }, root);
      else put(slot, { k: 'arr', items: [n] }, root);
      return;
    }
  }
}

/** A JSON document built from `base`, then edited 0..`maxOps` times. */
export function mutatedJson(base: fc.Arbitrary<unknown>, maxOps = 3): fc.Arbitrary<JNode> {
  return fc.tuple(base, fc.array(jsonOp, { maxLength: maxOps })).map(([v, ops]) => {
    const root = { node: toNode(v) };
    for (const op of ops) applyJsonOp(root, op);
    return root.node;
  });
}

/** Edits an existing node tree (a copy): for documents built as nodes already. */
export function mutateNode(n: JNode, ops: readonly unknown[]): JNode {
  const root = { node: clone(n) };
  for (const op of ops as JsonOp[]) applyJsonOp(root, op);
  return root.node;
}
export const jsonOps = (maxOps = 3): fc.Arbitrary<unknown[]> => fc.array(jsonOp, { maxLength: maxOps });

// ---- bytes ----

type ByteOp =
  | { op: 'truncate'; at: number }
  | { op: 'flip'; at: number; bit: number }
  | { op: 'set'; at: number; byte: number }
  | { op: 'insert'; at: number; bytes: Uint8Array }
  | { op: 'delete'; at: number; len: number }
  | { op: 'duplicate'; at: number; len: number }
  | { op: 'u32'; at: number; value: number; le: boolean }
  | { op: 'varint'; at: number; kind: number };

const byteOp: fc.Arbitrary<ByteOp> = fc.oneof(
  fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ op: fc.constant('set' as const), at: fc.nat(), byte: fc.constantFrom(0, 1, 0x7f, 0x80, 0xff) }),
  fc.record({ op: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ maxLength: 12 }) }),
  fc.record({ op: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 16 }) }),
  fc.record({ op: fc.constant('duplicate' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 32 }) }),
  fc.record({
    op: fc.constant('u32' as const),
    at: fc.nat(),
    value: fc.constantFrom(0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0x40000000, 1 << 20),
    le: fc.boolean(),
  }),
  fc.record({ op: fc.constant('varint' as const), at: fc.nat(), kind: fc.integer({ min: 0, max: 3 }) }),
);

/** Varints that are too long, too big, or negative int64s. */
const VARINTS = [
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]),
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
  Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0x07]),
];

function applyByteOp(b: Buffer, op: ByteOp): Buffer {
  const at = op.at % (b.length + 1);
  switch (op.op) {
    case 'truncate':
      return b.subarray(0, at);
    case 'flip':
      if (at >= b.length) return b;
      b[at] ^= 1 << op.bit;
      return b;
    case 'set':
      if (at >= b.length) return b;
      b[at] = op.byte;
      return b;
    case 'insert':
      return Buffer.concat([b.subarray(0, at), op.bytes, b.subarray(at)]);
    case 'delete':
      return Buffer.concat([b.subarray(0, at), b.subarray(at + op.len)]);
    case 'duplicate':
      return Buffer.concat([b.subarray(0, at + op.len), b.subarray(at)]);
    case 'u32': {
      const v = Buffer.alloc(4);
      if (op.le) v.writeUInt32LE(op.value);
      else v.writeUInt32BE(op.value);
      return Buffer.concat([b.subarray(0, at), v, b.subarray(at + 4)]);
    }
    case 'varint':
      return Buffer.concat([b.subarray(0, at), VARINTS[op.kind], b.subarray(at)]);
  }
}

/** Bytes from `base`, then mutated 0..`maxOps` times (copies; `base` values are never changed). */
export function mutatedBytes(base: fc.Arbitrary<Uint8Array>, maxOps = 3): fc.Arbitrary<Buffer> {
  return fc.tuple(base, fc.array(byteOp, { maxLength: maxOps })).map(([b, ops]) => {
    let out: Buffer = Buffer.from(b);
    for (const op of ops) out = applyByteOp(out, op);
    return out;
  });
}

// ---- text ----

type TextOp =
  | { op: 'truncate'; at: number }
  | { op: 'insert'; at: number; text: string }
  | { op: 'delete'; at: number; len: number }
  | { op: 'duplicate'; at: number; len: number };

/** Text from `base`, edited 0..`maxOps` times with pieces of `vocabulary` and hostile strings. */
export function mutatedText(
  base: fc.Arbitrary<string>,
  vocabulary: readonly string[],
  maxOps = 3,
): fc.Arbitrary<string> {
  const piece = fc.oneof(
    { arbitrary: fc.constantFrom(...vocabulary), weight: 4 },
    { arbitrary: hostileString, weight: 1 },
  );
  const op: fc.Arbitrary<TextOp> = fc.oneof(
    fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({ op: fc.constant('insert' as const), at: fc.nat(), text: piece }),
    fc.record({ op: fc.constant('insert' as const), at: fc.nat(), text: piece }),
    fc.record({ op: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 12 }) }),
    fc.record({ op: fc.constant('duplicate' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 40 }) }),
  );
  return fc.tuple(base, fc.array(op, { maxLength: maxOps })).map(([text, ops]) => {
    let s = text;
    for (const o of ops) {
      const at = o.at % (s.length + 1);
      if (o.op === 'truncate') s = s.slice(0, at);
      else if (o.op === 'insert') s = s.slice(0, at) + o.text + s.slice(at);
      else if (o.op === 'delete') s = s.slice(0, at) + s.slice(at + o.len);
      else s = s.slice(0, at + o.len) + s.slice(at);
    }
    return s;
  });
}
