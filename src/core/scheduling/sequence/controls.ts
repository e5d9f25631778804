/**
 * The sequence batcher's control tensors (`sequence_batching.control_input`): START, END and READY as
 * one-element booleans in the model's chosen encoding (int32, fp32 or bool false/true pairs), CORRID as the
 * request's correlation id in the configured datatype. The client never sends these; the batcher adds them
 * to every request it hands to a backend, and all-false ones (READY = false) to the padding rows of a
 * direct-strategy batch. Pure functions over the frozen config.
 */
import { fromConfigDataType, type DataType } from '../../../common/datatype.js';
import { internal } from '../../../common/errors.js';
import type { Tensor } from '../../../common/tensor.js';
import type { FrozenModelConfig, SequenceControlKind } from '../../../model-config/model-config.js';

/** A boolean control: the tensor name and the encoded false / true element. */
export interface BooleanControl {
  readonly name: string;
  readonly datatype: DataType;
  readonly falseValue: Buffer;
  readonly trueValue: Buffer;
}

export interface CorridControl {
  readonly name: string;
  readonly datatype: DataType;
}

export interface ControlSpec {
  readonly start?: BooleanControl;
  readonly end?: BooleanControl;
  readonly ready?: BooleanControl;
  readonly corrid?: CorridControl;
  /** The model has a batch dimension, so each control is [1, 1] rather than [1]. */
  readonly batching: boolean;
}

export interface ControlValues {
  readonly start: boolean;
  readonly end: boolean;
  readonly ready: boolean;
  readonly correlationId: bigint | string;
}

/** The controls of a padding row: not ready, and so nothing else means anything either (CORRID 0). */
export const NOT_READY: ControlValues = { start: false, end: false, ready: false, correlationId: 0n };

function int32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(v);
  return b;
}

function fp32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeFloatLE(v);
  return b;
}

function findControl(config: FrozenModelConfig, kind: SequenceControlKind) {
  for (const input of config.sequence_batching?.control_input ?? []) {
    for (const control of input.control) {
      if (control.kind === kind) return { name: input.name, control };
    }
  }
  return undefined;
}

function booleanControl(config: FrozenModelConfig, kind: SequenceControlKind): BooleanControl | undefined {
  const found = findControl(config, kind);
  if (!found) return undefined;
  const { name, control } = found;
  // The config validator already demanded exactly one pair of exactly two values.
  if (control.int32_false_true.length === 2) {
    const [f, t] = control.int32_false_true;
    return { name, datatype: 'INT32', falseValue: int32(f), trueValue: int32(t) };
  }
  if (control.fp32_false_true.length === 2) {
    const [f, t] = control.fp32_false_true;
    return { name, datatype: 'FP32', falseValue: fp32(f), trueValue: fp32(t) };
  }
  if (control.bool_false_true.length === 2) {
    const [f, t] = control.bool_false_true;
    return {
      name,
      datatype: 'BOOL',
      falseValue: Buffer.from([f ? 1 : 0]),
      trueValue: Buffer.from([t ? 1 : 0]),
    };
  }
  throw internal(`sequence control '${name}' of model '${config.name}' has no false/true values`);
}

export function compileControls(config: FrozenModelConfig): ControlSpec {
  const corrid = findControl(config, 'CONTROL_SEQUENCE_CORRID');
  let corridControl: CorridControl | undefined;
  if (corrid) {
    const datatype = fromConfigDataType(corrid.control.data_type);
    if (!datatype) {
      throw internal(`sequence control '${corrid.name}' of model '${config.name}' has no usable data type`);
    }
    corridControl = { name: corrid.name, datatype };
  }
  return {
    start: booleanControl(config, 'CONTROL_SEQUENCE_START'),
    end: booleanControl(config, 'CONTROL_SEQUENCE_END'),
    ready: booleanControl(config, 'CONTROL_SEQUENCE_READY'),
    corrid: corridControl,
    batching: config.max_batch_size > 0,
  };
}

/**
 * A correlation id as an unsigned 64-bit number for a numeric CORRID. A string id counts when it is a
 * decimal integer (wrapped to 64 bits); any other string gives 0. Triton leaves the tensor unset in that
 * case; a defined value is kinder to models.
 */
function numericId(id: bigint | string): bigint {
  if (typeof id === 'bigint') return id;
  return /^[0-9]{1,30}$/.test(id) ? BigInt.asUintN(64, BigInt(id)) : 0n;
}

export function encodeCorrelationId(datatype: DataType, id: bigint | string): Buffer {
  if (datatype === 'BYTES') {
    const text = Buffer.from(typeof id === 'string' ? id : id.toString(10), 'utf8');
    const out = Buffer.alloc(4 + text.length);
    out.writeUInt32LE(text.length, 0);
    text.copy(out, 4);
    return out;
  }
  const n = numericId(id);
  switch (datatype) {
    case 'UINT64': {
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(BigInt.asUintN(64, n));
      return b;
    }
    case 'INT64': {
      const b = Buffer.alloc(8);
      b.writeBigInt64LE(BigInt.asIntN(64, n));
      return b;
    }
    case 'UINT32': {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(Number(BigInt.asUintN(32, n)));
      return b;
    }
    case 'INT32': {
      const b = Buffer.alloc(4);
      b.writeInt32LE(Number(BigInt.asIntN(32, n)));
      return b;
    }
    default:
      throw internal(`unexpected CORRID data type ${datatype}`);
  }
}

/** The control tensors of one request (or padding row), in config order: START, END, READY, CORRID. */
export function controlTensors(spec: ControlSpec, values: ControlValues): Tensor[] {
  const shape = spec.batching ? [1, 1] : [1];
  const out: Tensor[] = [];
  const add = (c: BooleanControl | undefined, on: boolean): void => {
    if (c) out.push({ name: c.name, datatype: c.datatype, shape, data: on ? c.trueValue : c.falseValue });
  };
  add(spec.start, values.start);
  add(spec.end, values.end);
  add(spec.ready, values.ready);
  if (spec.corrid) {
    out.push({
      name: spec.corrid.name,
      datatype: spec.corrid.datatype,
      shape,
      data: encodeCorrelationId(spec.corrid.datatype, values.correlationId),
    });
  }
  return out;
}
