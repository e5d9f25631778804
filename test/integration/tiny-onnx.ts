/**
 * Writes small ONNX models from TypeScript (a minimal protobuf encoder for the few ModelProto fields they
 * need), so tests and benchmarks can build models that no fixture provides: `busyModel()`, whose run time
 * is set by the request's values (for deterministic scheduling tests), and `mlpModel()`, a small MLP where
 * per-request overhead dominates (bench/scheduling).
 */

type Field = Buffer;

function varint(n: number | bigint): Buffer {
  let v = BigInt.asUintN(64, BigInt(n));
  const bytes: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) b |= 0x80;
    bytes.push(b);
  } while (v !== 0n);
  return Buffer.from(bytes);
}

const tag = (field: number, wire: number): Buffer => varint((field << 3) | wire);
const int = (field: number, n: number): Field => Buffer.concat([tag(field, 0), varint(n)]);
const bytes = (field: number, b: Buffer): Field => Buffer.concat([tag(field, 2), varint(b.length), b]);
const str = (field: number, s: string): Field => bytes(field, Buffer.from(s, 'utf8'));
const msg = (field: number, parts: Field[]): Field => bytes(field, Buffer.concat(parts));
const float = (field: number, f: number): Field => {
  const b = Buffer.alloc(4);
  b.writeFloatLE(f);
  return Buffer.concat([tag(field, 5), b]);
};

const ELEM = { float: 1, int64: 7 } as const;
type Elem = keyof typeof ELEM;

export interface TinyTensor {
  readonly name?: string;
  readonly type: Elem;
  readonly dims: readonly number[];
  readonly values: ArrayLike<number>;
}

export interface TinyAttr {
  readonly name: string;
  readonly int?: number;
  readonly ints?: readonly number[];
  readonly float?: number;
  readonly tensor?: TinyTensor;
}

export interface TinyNode {
  readonly op: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly attrs?: readonly TinyAttr[];
}

export interface TinyValue {
  readonly name: string;
  readonly type: Elem;
  /** numbers are fixed sizes, strings symbolic (reported as -1). */
  readonly dims: readonly (number | string)[];
}

function tensorProto(t: TinyTensor): Field[] {
  const raw = Buffer.alloc(t.values.length * (t.type === 'float' ? 4 : 8));
  for (let i = 0; i < t.values.length; i++) {
    if (t.type === 'float') raw.writeFloatLE(t.values[i], i * 4);
    else raw.writeBigInt64LE(BigInt(t.values[i]), i * 8);
  }
  return [...t.dims.map((d) => int(1, d)), int(2, ELEM[t.type]), str(8, t.name ?? ''), bytes(9, raw)];
}

function attribute(a: TinyAttr): Field[] {
  const parts = [str(1, a.name)];
  if (a.float !== undefined) parts.push(float(2, a.float), int(20, 1));
  else if (a.int !== undefined) parts.push(int(3, a.int), int(20, 2));
  else if (a.tensor) parts.push(msg(5, tensorProto(a.tensor)), int(20, 4));
  else if (a.ints) parts.push(...a.ints.map((i) => int(8, i)), int(20, 7));
  return parts;
}

function valueInfo(field: number, v: TinyValue): Field {
  const dims = v.dims.map((d) => msg(1, [typeof d === 'number' ? int(1, d) : str(2, d)]));
  const tensorType = msg(1, [int(1, ELEM[v.type]), msg(2, dims)]);
  return msg(field, [str(1, v.name), msg(2, [tensorType])]);
}

export function encodeModel(spec: {
  readonly name: string;
  readonly inputs: readonly TinyValue[];
  readonly outputs: readonly TinyValue[];
  readonly nodes: readonly TinyNode[];
  readonly initializers?: readonly TinyTensor[];
  readonly opset?: number;
}): Buffer {
  const nodes = spec.nodes.map((n, i) =>
    msg(1, [
      ...n.inputs.map((x) => str(1, x)),
      ...n.outputs.map((x) => str(2, x)),
      str(3, `${n.op}_${i}`),
      str(4, n.op),
      ...(n.attrs ?? []).map((a) => msg(5, attribute(a))),
    ]),
  );
  const graph = msg(7, [
    ...nodes,
    str(2, spec.name),
    ...(spec.initializers ?? []).map((t) => msg(5, tensorProto(t))),
    ...spec.inputs.map((v) => valueInfo(11, v)),
    ...spec.outputs.map((v) => valueInfo(12, v)),
  ]);
  return Buffer.concat([
    int(1, 8),
    str(2, 'nereid-tests'),
    graph,
    msg(8, [str(1, ''), int(2, spec.opset ?? 17)]),
  ]);
}

/**
 * `INPUT0` FP32 [batch, 16] → `OUTPUT0` = INPUT0, after a chain of four k×k matrix products where k is
 * the largest input value: a request of ones returns at once, one holding 2800 keeps an instance busy
 * for a while (about 180 GFLOP, 30 MB per matrix). The answer is always the input.
 */
export function busyModel(): Buffer {
  return encodeModel({
    name: 'busy',
    inputs: [{ name: 'INPUT0', type: 'float', dims: ['batch', 16] }],
    outputs: [{ name: 'OUTPUT0', type: 'float', dims: ['batch', 16] }],
    initializers: [
      { name: 'axes0', type: 'int64', dims: [1], values: [0] },
      { name: 'zero', type: 'float', dims: [], values: [0] },
    ],
    nodes: [
      { op: 'ReduceMax', inputs: ['INPUT0'], outputs: ['kf'], attrs: [{ name: 'keepdims', int: 0 }] },
      { op: 'Cast', inputs: ['kf'], outputs: ['k'], attrs: [{ name: 'to', int: ELEM.int64 }] },
      { op: 'Unsqueeze', inputs: ['k', 'axes0'], outputs: ['k1'] },
      { op: 'Concat', inputs: ['k1', 'k1'], outputs: ['shape'], attrs: [{ name: 'axis', int: 0 }] },
      {
        op: 'ConstantOfShape',
        inputs: ['shape'],
        outputs: ['m'],
        attrs: [{ name: 'value', tensor: { type: 'float', dims: [1], values: [0.001] } }],
      },
      // A chain, so the work grows without the memory: four k×k products.
      { op: 'MatMul', inputs: ['m', 'm'], outputs: ['p1'] },
      { op: 'MatMul', inputs: ['p1', 'm'], outputs: ['p2'] },
      { op: 'MatMul', inputs: ['p2', 'm'], outputs: ['p3'] },
      { op: 'MatMul', inputs: ['p3', 'm'], outputs: ['p'] },
      { op: 'ReduceSum', inputs: ['p'], outputs: ['s'], attrs: [{ name: 'keepdims', int: 0 }] },
      { op: 'Mul', inputs: ['s', 'zero'], outputs: ['z'] },
      { op: 'Add', inputs: ['INPUT0', 'z'], outputs: ['OUTPUT0'] },
    ],
  });
}

/** Deterministic weights in [-scale, scale). */
function weights(count: number, seed: number, scale: number): number[] {
  let x = seed >>> 0 || 1;
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.push((((x >>> 0) / 2 ** 32) * 2 - 1) * scale);
  }
  return out;
}

/**
 * A small MLP: `INPUT0` FP32 [batch, inputs] → Dense(hidden) → ReLU → Dense(hidden) → ReLU →
 * Dense(outputs) → `OUTPUT0` FP32 [batch, outputs]. Cheap per row, so serving overhead dominates.
 */
export function mlpModel(inputs = 64, hidden = 256, outputs = 16): Buffer {
  const dense = (i: number, from: string, to: string): TinyNode[] => [
    { op: 'MatMul', inputs: [from, `W${i}`], outputs: [`h${i}`] },
    { op: 'Add', inputs: [`h${i}`, `b${i}`], outputs: [to] },
  ];
  const layers: [number, number][] = [
    [inputs, hidden],
    [hidden, hidden],
    [hidden, outputs],
  ];
  const initializers: TinyTensor[] = [];
  layers.forEach(([n, m], i) => {
    initializers.push({
      name: `W${i}`,
      type: 'float',
      dims: [n, m],
      values: weights(n * m, 7 + i, 1 / Math.sqrt(n)),
    });
    initializers.push({ name: `b${i}`, type: 'float', dims: [m], values: weights(m, 99 + i, 0.1) });
  });
  return encodeModel({
    name: 'mlp',
    inputs: [{ name: 'INPUT0', type: 'float', dims: ['batch', inputs] }],
    outputs: [{ name: 'OUTPUT0', type: 'float', dims: ['batch', outputs] }],
    initializers,
    nodes: [
      ...dense(0, 'INPUT0', 'a0'),
      { op: 'Relu', inputs: ['a0'], outputs: ['r0'] },
      ...dense(1, 'r0', 'a1'),
      { op: 'Relu', inputs: ['a1'], outputs: ['r1'] },
      ...dense(2, 'r1', 'OUTPUT0'),
    ],
  });
}
