/**
 * `InferParameter` on the wire (the oneof bool / int64 / string / double / uint64) and what Triton's gRPC
 * frontend makes of it: request parameters (sequence_id, sequence_start/end, priority, timeout, the
 * reserved `triton_*` keys, custom keys), the shared-memory parameters of inputs and requested outputs, and
 * an output's `classification`. Error texts are Triton's (clients and its QA match on them).
 */
import { invalidArg } from '../../common/errors.js';
import { setOwn } from '../../common/own.js';
import type { Parameters, ParameterValue, SharedMemoryRef } from '../../core/index.js';
import {
  ProtoReader,
  ProtoWriter,
  WIRE_FIXED64,
  WIRE_LEN,
  WIRE_VARINT,
  int64Size,
  lenFieldSize,
  varintSize,
} from './wire.js';

/** One decoded InferParameter: which member of the oneof was set, and its value. */
export type WireParameter =
  | { readonly kind: 'bool'; readonly value: boolean }
  | { readonly kind: 'int64'; readonly value: number | bigint }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'double'; readonly value: number }
  | { readonly kind: 'uint64'; readonly value: number | bigint }
  | { readonly kind: 'unset' };

export type WireParameters = Map<string, WireParameter>;

const UNSET: WireParameter = { kind: 'unset' };

/** Reads an InferParameter message body (the reader is narrowed to it). The last member set wins. */
export function readInferParameter(r: ProtoReader): WireParameter {
  let p: WireParameter = UNSET;
  while (r.more()) {
    const tag = r.tag();
    switch (tag) {
      case (1 << 3) | WIRE_VARINT:
        p = { kind: 'bool', value: r.bool() };
        break;
      case (2 << 3) | WIRE_VARINT:
        p = { kind: 'int64', value: r.int64Value() };
        break;
      case (3 << 3) | WIRE_LEN:
        p = { kind: 'string', value: r.string() };
        break;
      case (4 << 3) | WIRE_FIXED64:
        p = { kind: 'double', value: r.double() };
        break;
      case (5 << 3) | WIRE_VARINT:
        p = { kind: 'uint64', value: r.uint64Value() };
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return p;
}

/** Reads one `map<string, InferParameter>` entry (the reader is at its length prefix) into `into`. */
export function readParameterEntry(r: ProtoReader, into: WireParameters): void {
  const outer = r.enter();
  let key = '';
  let value: WireParameter = UNSET;
  while (r.more()) {
    const tag = r.tag();
    if (tag === ((1 << 3) | WIRE_LEN)) key = r.string();
    else if (tag === ((2 << 3) | WIRE_LEN)) {
      const inner = r.enter();
      value = readInferParameter(r);
      r.leave(inner);
    } else r.skip(tag & 7);
  }
  r.leave(outer);
  into.set(key, value);
}

// ---- request parameters ----

/** Request parameter keys starting with `triton_` that clients may send. */
export const TRITON_RESERVED_REQUEST_PARAMS = ['triton_enable_empty_final_response'] as const;

export interface RequestParameters {
  readonly parameters: Parameters;
  /** `triton_enable_empty_final_response`: send an empty response carrying only the final flag. */
  readonly enableEmptyFinalResponse: boolean;
}

const badType = (key: string, expected: string): Error =>
  invalidArg(`invalid value type for '${key}' parameter, expected ${expected}.`);

/** Triton's SetInferenceRequestMetadata: checks the well-known keys and passes the custom ones on. */
export function requestParameters(wire: WireParameters): RequestParameters {
  const parameters: Parameters = {};
  let enableEmptyFinalResponse = false;
  for (const [key, p] of wire) {
    switch (key) {
      case 'sequence_id':
        if (p.kind === 'int64') {
          // A negative int64 is the same 64 bits as Triton's uint64 correlation id.
          parameters[key] =
            typeof p.value === 'number' && p.value >= 0 ? p.value : BigInt.asUintN(64, BigInt(p.value));
        } else if (p.kind === 'string' || p.kind === 'uint64') parameters[key] = p.value;
        else throw badType(key, 'int64_param or string_param');
        break;
      case 'sequence_start':
      case 'sequence_end':
        if (p.kind !== 'bool') throw badType(key, 'bool_param');
        parameters[key] = p.value;
        break;
      case 'priority':
        if (p.kind === 'int64') {
          if (p.value < 0) throw invalidArg("invalid value for 'priority', expected value >= 0.");
          parameters[key] = p.value;
        } else if (p.kind === 'uint64') parameters[key] = p.value;
        else throw badType(key, 'int64_param or uint64_param');
        break;
      case 'timeout':
        if (p.kind !== 'int64') throw badType(key, 'int64_param');
        parameters[key] = p.value;
        break;
      default:
        if (key.startsWith('triton_')) {
          if (!(TRITON_RESERVED_REQUEST_PARAMS as readonly string[]).includes(key)) {
            throw invalidArg(
              "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys " +
                `starting with 'triton_' are allowed: ${TRITON_RESERVED_REQUEST_PARAMS.join(' ')}`,
            );
          }
          if (p.kind !== 'bool') throw badType(key, 'bool_param');
          enableEmptyFinalResponse = p.value;
          break;
        }
        setOwn(parameters, key, customValue(key, p));
    }
  }
  return { parameters, enableEmptyFinalResponse };
}

/** A pass-through parameter value (uint64 accepted too, as the proto allows it). */
export function customValue(key: string, p: WireParameter): ParameterValue {
  if (p.kind === 'unset') throw badType(key, 'int64_param, bool_param, or string_param');
  return p.value;
}

// ---- tensor parameters ----

/** Triton's ParseSharedMemoryParams: region (string), offset (int64, default 0), byte size (int64). */
export function sharedMemoryOf(
  tensor: string,
  wire: WireParameters | undefined,
): SharedMemoryRef | undefined {
  if (wire === undefined) return undefined;
  const region = wire.get('shared_memory_region');
  const offset = wire.get('shared_memory_offset');
  const size = wire.get('shared_memory_byte_size');
  if (region !== undefined && region.kind !== 'string') {
    throw invalidArg(
      `invalid value type for 'shared_memory_region' parameter for tensor '${tensor}', expected string_param.`,
    );
  }
  if (offset !== undefined) {
    if (region === undefined) {
      throw invalidArg(
        `'shared_memory_offset' can not be specified without 'shared_memory_region' parameter for tensor '${tensor}'`,
      );
    }
    if (offset.kind !== 'int64') {
      throw invalidArg(
        `invalid value type for 'shared_memory_offset' parameter for tensor '${tensor}', expected int64_param.`,
      );
    }
  }
  if (size !== undefined) {
    if (region === undefined) {
      throw invalidArg(
        `'shared_memory_byte_size' can not be specified without 'shared_memory_region' parameter for tensor '${tensor}'`,
      );
    }
    if (size.kind !== 'int64') {
      throw invalidArg(
        `invalid value type for 'shared_memory_byte_size' parameter for tensor '${tensor}', expected int64_param.`,
      );
    }
  } else if (region !== undefined) {
    throw invalidArg(
      `'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor '${tensor}'`,
    );
  }
  if (region === undefined) return undefined;
  return {
    region: region.value,
    offset: offset === undefined ? 0 : nonNegative(tensor, 'shared_memory_offset', offset.value),
    byteSize: nonNegative(tensor, 'shared_memory_byte_size', size!.value),
  };
}

function nonNegative(tensor: string, key: string, v: ParameterValue): number {
  if (typeof v !== 'number' || v < 0) {
    throw invalidArg(
      `invalid value for '${key}' parameter for tensor '${tensor}', expected a value in [0, 2^53)`,
    );
  }
  return v;
}

const SHM_KEYS = new Set(['shared_memory_region', 'shared_memory_offset', 'shared_memory_byte_size']);

/** Tensor parameters other than the shared-memory ones, as core parameters (undefined when none). */
export function otherTensorParameters(
  wire: WireParameters | undefined,
  skip?: string,
): Parameters | undefined {
  if (wire === undefined) return undefined;
  let out: Parameters | undefined;
  for (const [key, p] of wire) {
    if (SHM_KEYS.has(key) || key === skip) continue;
    setOwn((out ??= {}), key, customValue(key, p));
  }
  return out;
}

/** Triton's ParseClassificationParams: int64_param > 0, as a number. */
export function classificationOf(wire: WireParameters | undefined): number | undefined {
  const p = wire?.get('classification');
  if (p === undefined) return undefined;
  if (p.kind !== 'int64') {
    throw invalidArg("invalid value type for 'classification' parameter, expected int64_param");
  }
  if (p.value <= 0) throw invalidArg("invalid value for 'classification' parameter, expected >= 0");
  if (typeof p.value !== 'number')
    throw invalidArg("invalid value for 'classification' parameter, too large");
  return p.value;
}

// ---- encoding (response parameters) ----

/** Size of an InferParameter message body for a core parameter value. */
export function parameterBodySize(v: ParameterValue): number {
  switch (typeof v) {
    case 'boolean':
      return 2;
    case 'string': {
      const n = Buffer.byteLength(v, 'utf8');
      return 1 + varintSize(n) + n;
    }
    case 'number':
      return Number.isSafeInteger(v) ? 1 + int64Size(v) : 9;
    case 'bigint':
      return 1 + int64Size(v > INT64_MAX ? v : BigInt.asIntN(64, v));
  }
}

const INT64_MAX = (1n << 63n) - 1n;

/** Writes an InferParameter body: bool → bool_param, integer → int64_param (uint64_param beyond int64),
 * other numbers → double_param, string → string_param. */
export function writeParameterBody(w: ProtoWriter, v: ParameterValue): void {
  switch (typeof v) {
    case 'boolean':
      w.tag(1, WIRE_VARINT);
      w.varint(v ? 1 : 0);
      return;
    case 'string':
      w.string(3, v, Buffer.byteLength(v, 'utf8'));
      return;
    case 'number':
      if (Number.isSafeInteger(v)) {
        w.tag(2, WIRE_VARINT);
        w.int64(v);
      } else w.double(4, v);
      return;
    case 'bigint':
      if (v > INT64_MAX) {
        w.tag(5, WIRE_VARINT);
        w.int64(BigInt.asUintN(64, v));
      } else {
        w.tag(2, WIRE_VARINT);
        w.int64(v);
      }
      return;
  }
}

/** Size of one map entry `{key = 1; value = 2}` (without its own tag and length). */
export function parameterEntrySize(key: string, v: ParameterValue): number {
  const k = Buffer.byteLength(key, 'utf8');
  return lenFieldSize(1, k) + lenFieldSize(2, parameterBodySize(v));
}

/** Size of a whole `map<string, InferParameter>` field (every entry with its tag and length). */
export function parameterMapSize(field: number, params: Readonly<Parameters>): number {
  let size = 0;
  for (const key of Object.keys(params)) size += lenFieldSize(field, parameterEntrySize(key, params[key]));
  return size;
}

export function writeParameterMap(w: ProtoWriter, field: number, params: Readonly<Parameters>): void {
  for (const key of Object.keys(params)) {
    const v = params[key];
    w.lenPrefix(field, parameterEntrySize(key, v));
    w.string(1, key, Buffer.byteLength(key, 'utf8'));
    w.lenPrefix(2, parameterBodySize(v));
    writeParameterBody(w, v);
  }
}
