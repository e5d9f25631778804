/**
 * KServe v2 inference over gRPC, client side: InferInputs and options → a ModelInferRequest (tensors in
 * raw_input_contents by default, or typed InferTensorContents when every input asks for non-binary), and
 * a decoded ModelInferResponse → InferResult (raw_output_contents used as they are, no copies).
 */
import type { DataType } from '../../common/datatype.js';
import { setOwn } from '../../common/own.js';
import { splitBytesElements } from '../../common/tensor.js';
import { NereidClientError } from '../errors.js';
import type { InferInput, InferRequestedOutput, ParameterValue, SharedMemoryRef } from '../infer-input.js';
import { InferResult, type OutputTensor } from '../infer-result.js';
import {
  checkOutputData,
  checkOutputHeader,
  malformed,
  requestParameters,
  versionString,
} from '../request.js';
import { decodeArray, encodeValues } from '../tensor-data.js';
import type { InferOptions } from '../types.js';
import { longOf, numberOrBigint, type ProtoInt64 } from './proto.js';

/** InferParameter as protobufjs reads and writes it (exactly one member set). */
export interface InferParameterMsg {
  bool_param?: boolean;
  int64_param?: ProtoInt64;
  string_param?: string;
  double_param?: number;
  uint64_param?: ProtoInt64;
}

/** InferTensorContents: repeated fields by element type. */
export interface ContentsMsg {
  bool_contents?: boolean[];
  int_contents?: number[];
  int64_contents?: ProtoInt64[];
  uint_contents?: number[];
  uint64_contents?: ProtoInt64[];
  fp32_contents?: number[];
  fp64_contents?: number[];
  bytes_contents?: Uint8Array[];
}

interface TensorMsg {
  name: string;
  datatype: string;
  shape: ProtoInt64[];
  parameters?: Record<string, InferParameterMsg>;
  contents?: ContentsMsg | null;
}

export interface ModelInferRequestMsg {
  model_name: string;
  model_version: string;
  id: string;
  parameters: Record<string, InferParameterMsg>;
  inputs: TensorMsg[];
  outputs: { name: string; parameters: Record<string, InferParameterMsg> }[];
  raw_input_contents: Uint8Array[];
}

export interface ModelInferResponseMsg {
  model_name?: string;
  model_version?: string;
  id?: string;
  parameters?: Record<string, InferParameterMsg>;
  outputs?: TensorMsg[];
  raw_output_contents?: Uint8Array[];
}

const INT64_MAX = 2n ** 63n - 1n;

/** A parameter value as InferParameter; `unsigned` picks uint64_param for integers (Triton's priority). */
export function toInferParameter(v: ParameterValue, unsigned = false): InferParameterMsg {
  switch (typeof v) {
    case 'boolean':
      return { bool_param: v };
    case 'string':
      return { string_param: v };
    case 'bigint':
      if (unsigned || v > INT64_MAX) return { uint64_param: longOf(v, true) };
      return { int64_param: longOf(v, false) };
    default:
      // Integers beyond 2^53 are doubles already (and beyond 2^63 an int64 would wrap): send the double,
      // as the server does with its own response parameters. bigint is the way to send exact 64-bit values.
      if (!Number.isSafeInteger(v)) return { double_param: v };
      return unsigned ? { uint64_param: v } : { int64_param: v };
  }
}

const own = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);

/** An InferParameter's value: whichever member is set (64-bit as number when exact, else bigint). */
export function fromInferParameter(p: InferParameterMsg): ParameterValue | undefined {
  if (own(p, 'bool_param')) return p.bool_param;
  if (own(p, 'string_param')) return p.string_param;
  if (own(p, 'int64_param')) return numberOrBigint(p.int64_param!);
  if (own(p, 'uint64_param')) return numberOrBigint(p.uint64_param!);
  if (own(p, 'double_param')) return p.double_param;
  return undefined;
}

function parametersMsg(params: Readonly<Record<string, ParameterValue>>): Record<string, InferParameterMsg> {
  const out: Record<string, InferParameterMsg> = {};
  for (const [k, v] of Object.entries(params)) setOwn(out, k, toInferParameter(v, k === 'priority'));
  return out;
}

export function parametersOf(
  msg: Record<string, InferParameterMsg> | undefined,
  drop?: string,
): Record<string, ParameterValue> {
  const out: Record<string, ParameterValue> = {};
  for (const [k, p] of Object.entries(msg ?? {})) {
    if (k === drop) continue;
    const v = fromInferParameter(p);
    if (v !== undefined) setOwn(out, k, v);
  }
  return out;
}

function shmParameters(p: Record<string, InferParameterMsg>, ref: SharedMemoryRef): void {
  p.shared_memory_region = { string_param: ref.region };
  p.shared_memory_byte_size = { int64_param: ref.byteSize };
  if (ref.offset !== 0) p.shared_memory_offset = { int64_param: ref.offset };
}

/** Typed contents for a non-binary input (FP16/BF16 have no field: those must go raw). */
function contentsOf(input: InferInput): ContentsMsg {
  const data = input.data!;
  switch (input.datatype) {
    case 'BOOL':
      return { bool_contents: decodeArray('BOOL', data) };
    case 'INT8':
    case 'INT16':
    case 'INT32':
      return { int_contents: decodeArray(input.datatype, data) };
    case 'UINT8':
    case 'UINT16':
    case 'UINT32':
      return { uint_contents: decodeArray(input.datatype, data) };
    case 'INT64':
      return { int64_contents: decodeArray('INT64', data).map((v) => longOf(v, false)) };
    case 'UINT64':
      return { uint64_contents: decodeArray('UINT64', data).map((v) => longOf(v, true)) };
    case 'FP32':
      return { fp32_contents: decodeArray('FP32', data) };
    case 'FP64':
      return { fp64_contents: decodeArray('FP64', data) };
    case 'BYTES':
      return { bytes_contents: splitBytesElements(data) };
    default:
      throw new TypeError(
        `input '${input.name}': ${input.datatype} has no typed gRPC contents; send it as binary data`,
      );
  }
}

function outputMsg(o: InferRequestedOutput): ModelInferRequestMsg['outputs'][number] {
  const p = parametersMsg(o.parameters);
  if (o.classCount > 0) p.classification = { int64_param: o.classCount };
  if (o.sharedMemory) shmParameters(p, o.sharedMemory);
  return { name: o.name, parameters: p };
}

export function encodeInferRequest(
  model: string,
  inputs: readonly InferInput[],
  options: InferOptions,
): ModelInferRequestMsg {
  const withData = inputs.filter((i) => {
    i.validate();
    return i.sharedMemory === undefined;
  });
  // Triton takes either raw contents for every input with data, or typed contents: binary wins.
  const raw = withData.length === 0 || withData.some((i) => i.binary);
  const rawContents: Uint8Array[] = [];
  const tensors: TensorMsg[] = inputs.map((input) => {
    const p = parametersMsg(input.parameters);
    const t: TensorMsg = {
      name: input.name,
      datatype: input.datatype,
      shape: [...input.shape],
      parameters: p,
    };
    if (input.sharedMemory) shmParameters(p, input.sharedMemory);
    else if (raw) rawContents.push(input.data!);
    else t.contents = contentsOf(input);
    return t;
  });
  if (options.outputs !== undefined && options.outputs.length === 0) {
    throw new TypeError('outputs: give at least one output, or omit the option');
  }
  return {
    model_name: model,
    model_version: versionString(options.modelVersion),
    id: options.requestId ?? '',
    parameters: parametersMsg(requestParameters(options)),
    inputs: tensors,
    outputs: (options.outputs ?? []).map(outputMsg),
    raw_input_contents: rawContents,
  };
}

/** Typed contents → wire-form bytes. */
function contentsToBytes(name: string, datatype: DataType, c: ContentsMsg): Buffer {
  const what = `output '${name}'`;
  const pick = (): ArrayLike<unknown> => {
    switch (datatype) {
      case 'BOOL':
        return c.bool_contents ?? [];
      case 'INT8':
      case 'INT16':
      case 'INT32':
        return c.int_contents ?? [];
      case 'UINT8':
      case 'UINT16':
      case 'UINT32':
        return c.uint_contents ?? [];
      case 'INT64':
        return (c.int64_contents ?? []).map((v) => numberOrBigint(v));
      case 'UINT64':
        return (c.uint64_contents ?? []).map((v) => numberOrBigint(v));
      case 'FP32':
        return c.fp32_contents ?? [];
      case 'FP64':
        return c.fp64_contents ?? [];
      case 'BYTES':
        return c.bytes_contents ?? [];
      default:
        throw malformed(`${what}: ${datatype} cannot arrive as typed contents`);
    }
  };
  try {
    return encodeValues(datatype, pick(), what);
  } catch (err) {
    if (err instanceof NereidClientError) throw err;
    throw malformed(`${what}: ${(err as Error).message}`);
  }
}

const asBuffer = (b: Uint8Array): Buffer =>
  Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);

function shapeOf(name: string, shape: readonly ProtoInt64[] | undefined): number[] {
  return (shape ?? []).map((d) => {
    const v = numberOrBigint(d);
    if (typeof v !== 'number') throw malformed(`output '${name}' has a dimension beyond 2^53`);
    return v;
  });
}

export function decodeInferResponse(msg: ModelInferResponseMsg): InferResult {
  const raw = msg.raw_output_contents ?? [];
  const outputs: OutputTensor[] = (msg.outputs ?? []).map((o, index) => {
    const [name, datatype, shape] = checkOutputHeader(o.name, o.datatype, shapeOf(o.name, o.shape));
    const parameters = parametersOf(o.parameters);
    const region = parameters.shared_memory_region;
    let data: Buffer | undefined;
    // raw_output_contents is indexed by output position (as Triton's clients read it).
    if (typeof region === 'string') {
      data = undefined;
    } else if (index < raw.length) {
      data = asBuffer(raw[index]);
    } else if (o.contents != null) {
      data = contentsToBytes(name, datatype, o.contents);
    } else {
      throw malformed(`output '${name}' has neither raw nor typed contents`);
    }
    if (data !== undefined) checkOutputData(name, datatype, shape, data);
    const sharedMemory: SharedMemoryRef | undefined =
      typeof region === 'string'
        ? {
            region,
            byteSize: Number(parameters.shared_memory_byte_size ?? 0),
            offset: Number(parameters.shared_memory_offset ?? 0),
          }
        : undefined;
    return { name, datatype, shape, parameters, data, ...(sharedMemory ? { sharedMemory } : {}) };
  });
  return new InferResult({
    modelName: msg.model_name ?? '',
    modelVersion: msg.model_version ?? '',
    id: msg.id ?? '',
    parameters: parametersOf(msg.parameters),
    outputs,
    raw: msg,
  });
}
