/**
 * ModelInferRequest bytes → the core's InferenceRequest, in two steps: parseInferRequest() reads the wire
 * format (hostile bytes end in INVALID_ARG "malformed protobuf message"), toInferenceRequest() applies
 * Triton's rules for parameters, shared memory, typed contents versus raw_input_contents, and requested
 * outputs, with Triton's error texts. raw_input_contents become the inputs' data as views into the
 * received message: no tensor byte is copied.
 */
import { isDataType } from '../../common/datatype.js';
import { invalidArg } from '../../common/errors.js';
import type { DecodedRequest, InferInput, Parameters, RequestedOutput } from '../../core/index.js';
import { contentsToRaw } from './contents.js';
import {
  classificationOf,
  otherTensorParameters,
  readParameterEntry,
  requestParameters,
  sharedMemoryOf,
  type WireParameters,
} from './parameters.js';
import { ProtoReader, WIRE_LEN, WIRE_VARINT } from './wire.js';

export interface WireInput {
  name: string;
  datatype: string;
  shape: number[];
  parameters: WireParameters | undefined;
  /** Bodies of the `contents` sub-messages (protobuf merges repeated occurrences). */
  contents: Buffer[] | undefined;
}

export interface WireOutput {
  name: string;
  parameters: WireParameters | undefined;
}

/** A ModelInferRequest as read from the wire, before Triton's rules are applied. */
export interface WireInferRequest {
  modelName: string;
  modelVersion: string;
  id: string;
  parameters: WireParameters;
  inputs: WireInput[];
  outputs: WireOutput[];
  raw: Buffer[];
}

const T_STRING_1 = (1 << 3) | WIRE_LEN;
const T_STRING_2 = (2 << 3) | WIRE_LEN;
const T_3_LEN = (3 << 3) | WIRE_LEN;
const T_3_VARINT = (3 << 3) | WIRE_VARINT;
const T_4_LEN = (4 << 3) | WIRE_LEN;
const T_5_LEN = (5 << 3) | WIRE_LEN;
const T_6_LEN = (6 << 3) | WIRE_LEN;
const T_7_LEN = (7 << 3) | WIRE_LEN;

function readDim(r: ProtoReader, shape: number[], tensor: string): void {
  const d = r.int64Number();
  if (d === undefined) {
    throw invalidArg(`shape of tensor '${tensor}' has a dimension beyond ±2^53, which is not supported`);
  }
  shape.push(d);
}

function readInput(r: ProtoReader): WireInput {
  const input: WireInput = { name: '', datatype: '', shape: [], parameters: undefined, contents: undefined };
  const outer = r.enter();
  while (r.more()) {
    const tag = r.tag();
    switch (tag) {
      case T_STRING_1:
        input.name = r.string();
        break;
      case T_STRING_2:
        input.datatype = r.string();
        break;
      case T_3_LEN: {
        const inner = r.enter();
        while (r.more()) readDim(r, input.shape, input.name);
        r.leave(inner);
        break;
      }
      case T_3_VARINT:
        readDim(r, input.shape, input.name);
        break;
      case T_4_LEN:
        readParameterEntry(r, (input.parameters ??= new Map() as WireParameters));
        break;
      case T_5_LEN:
        (input.contents ??= []).push(r.bytes());
        break;
      default:
        r.skip(tag & 7);
    }
  }
  r.leave(outer);
  return input;
}

function readOutput(r: ProtoReader): WireOutput {
  const output: WireOutput = { name: '', parameters: undefined };
  const outer = r.enter();
  while (r.more()) {
    const tag = r.tag();
    if (tag === T_STRING_1) output.name = r.string();
    else if (tag === T_STRING_2) readParameterEntry(r, (output.parameters ??= new Map() as WireParameters));
    else r.skip(tag & 7);
  }
  r.leave(outer);
  return output;
}

/** Reads a ModelInferRequest message (without the gRPC 5-byte prefix). */
export function parseInferRequest(message: Buffer): WireInferRequest {
  const req: WireInferRequest = {
    modelName: '',
    modelVersion: '',
    id: '',
    parameters: new Map(),
    inputs: [],
    outputs: [],
    raw: [],
  };
  const r = new ProtoReader(message);
  while (r.more()) {
    const tag = r.tag();
    switch (tag) {
      case T_STRING_1:
        req.modelName = r.string();
        break;
      case T_STRING_2:
        req.modelVersion = r.string();
        break;
      case T_3_LEN:
        req.id = r.string();
        break;
      case T_4_LEN:
        readParameterEntry(r, req.parameters);
        break;
      case T_5_LEN:
        req.inputs.push(readInput(r));
        break;
      case T_6_LEN:
        req.outputs.push(readOutput(r));
        break;
      case T_7_LEN:
        req.raw.push(r.bytes());
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return req;
}

const EMPTY = Buffer.alloc(0);

/** An object under construction: its readonly fields still assignable. */
export type Writable<T> = { -readonly [K in keyof T]: T[K] };

export interface ConvertedRequest {
  /** The request without the call's context (the frontend runs it with core/call.ts runCall/streamCall). */
  readonly request: DecodedRequest;
  /** `triton_enable_empty_final_response` (streaming). */
  readonly enableEmptyFinalResponse: boolean;
}

function toInput(
  w: WireInput,
  model: string,
  hasRaw: boolean,
  raw: Buffer[],
  next: { i: number },
): InferInput {
  const { name } = w;
  const sharedMemory = sharedMemoryOf(name, w.parameters);
  const parameters = otherTensorParameters(w.parameters);
  if (!isDataType(w.datatype)) {
    throw invalidArg(`inference input '${name}' for model '${model}' has invalid datatype '${w.datatype}'`);
  }
  let data: Buffer;
  if (sharedMemory !== undefined) {
    if (w.contents !== undefined) {
      throw invalidArg(
        `unexpected 'content' provided when using shared memory for input tensor '${name}' for model '${model}'`,
      );
    }
    data = EMPTY;
  } else if (w.contents !== undefined && hasRaw) {
    throw invalidArg(
      `contents field must not be specified when using raw_input_contents for '${name}' for model '${model}'`,
    );
  } else if (w.contents !== undefined) {
    data = contentsToRaw(w.contents, w.datatype, name, model);
  } else if (next.i < raw.length) {
    data = raw[next.i++];
  } else {
    throw invalidArg(`unable to find data for input tensor '${name}' for model '${model}' in request.`);
  }
  // Built by assignment, not by spreading conditional parts: spreads go through V8's slow object-clone
  // path on every request (measured: the largest self time of the ModelInfer path).
  const input: Writable<InferInput> = { name, datatype: w.datatype, shape: w.shape, data };
  if (sharedMemory !== undefined) input.sharedMemory = sharedMemory;
  if (parameters !== undefined) input.parameters = parameters;
  return input;
}

function toOutput(w: WireOutput): RequestedOutput {
  const sharedMemory = sharedMemoryOf(w.name, w.parameters);
  const classification = classificationOf(w.parameters);
  if (sharedMemory !== undefined && classification !== undefined) {
    throw invalidArg("output can't set both 'shared_memory_region' and 'classification'");
  }
  let parameters: Parameters | undefined = otherTensorParameters(w.parameters, 'classification');
  if (classification !== undefined) parameters = { ...parameters, classification };
  const output: Writable<RequestedOutput> = { name: w.name };
  if (parameters !== undefined) output.parameters = parameters;
  if (sharedMemory !== undefined) output.sharedMemory = sharedMemory;
  return output;
}

/** Applies Triton's request rules (SetInferenceRequestMetadata, InferGRPCToInput, InferAllocatorPayload). */
export function toInferenceRequest(w: WireInferRequest): ConvertedRequest {
  const { parameters, enableEmptyFinalResponse } = requestParameters(w.parameters);
  const next = { i: 0 };
  const hasRaw = w.raw.length > 0;
  const inputs = w.inputs.map((i) => toInput(i, w.modelName, hasRaw, w.raw, next));
  const outputs = w.outputs.length > 0 ? w.outputs.map(toOutput) : undefined;
  // One literal, every member written out (core/call.ts, performance rules).
  const request: DecodedRequest = {
    modelName: w.modelName,
    modelVersion: w.modelVersion,
    id: w.id,
    inputs,
    outputs,
    parameters: Object.keys(parameters).length > 0 ? parameters : undefined,
  };
  return { request, enableEmptyFinalResponse };
}
