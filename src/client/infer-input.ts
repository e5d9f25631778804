/**
 * The request side of an inference, as in Triton's Python client: InferInput (a named, typed, shaped
 * tensor whose data is held in wire form, sent as binary by default) and InferRequestedOutput (which
 * output to return, binary or JSON, optionally as top-N classification). Both are protocol-neutral: the
 * HTTP and gRPC clients read the same objects.
 */
import { isDataType, type DataType } from '../common/datatype.js';
import { setOwn } from '../common/own.js';
import type { ParameterValue } from '../common/parameters.js';
import type { SharedMemoryRef } from '../common/shared-memory-ref.js';
import { countElements, encodeValues, type TensorValues } from './tensor-data.js';

// A request, input or output parameter value: common/parameters.ts.
export type { ParameterValue };

// A tensor placed in a registered shared-memory region: common/shared-memory-ref.ts.
export type { SharedMemoryRef };

function checkName(kind: string, name: unknown): string {
  if (typeof name !== 'string' || name === '') throw new TypeError(`${kind} name must be a non-empty string`);
  return name;
}

function checkShape(what: string, shape: readonly number[]): number[] {
  // A plain boolean check: Array.isArray would narrow `shape` to any[].
  const isArray: boolean = Array.isArray(shape);
  if (!isArray) throw new TypeError(`${what}: shape must be an array of dimensions`);
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new RangeError(`${what}: shape [${shape.join(',')}] must hold non-negative integers`);
    }
  }
  return [...shape];
}

function elementCountOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

function checkSharedMemory(what: string, region: string, byteSize: number, offset: number): SharedMemoryRef {
  checkName('shared-memory region', region);
  if (!Number.isSafeInteger(byteSize) || byteSize < 0)
    throw new RangeError(`${what}: invalid byte size ${byteSize}`);
  if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`${what}: invalid offset ${offset}`);
  return { region, byteSize, offset };
}

export interface SetDataOptions {
  /** Send as binary tensor data (default) or as JSON / typed gRPC contents. */
  readonly binary?: boolean;
}

export class InferInput {
  readonly name: string;
  readonly datatype: DataType;
  #shape: number[];
  #data: Buffer | undefined;
  #count = 0;
  #binary = true;
  #sharedMemory: SharedMemoryRef | undefined;
  readonly #parameters: Record<string, ParameterValue> = {};

  constructor(name: string, shape: readonly number[], datatype: DataType) {
    this.name = checkName('input', name);
    if (typeof datatype !== 'string' || !isDataType(datatype)) {
      throw new TypeError(`input '${name}': unknown datatype '${String(datatype)}'`);
    }
    this.datatype = datatype;
    this.#shape = checkShape(`input '${name}'`, shape);
  }

  get shape(): readonly number[] {
    return this.#shape;
  }

  /** Changes the shape (data already set must still fit when the request is built). */
  setShape(shape: readonly number[]): this {
    this.#shape = checkShape(`input '${this.name}'`, shape);
    return this;
  }

  /**
   * Sets the tensor's values, flat and row-major; their count must match the shape. A typed array of the
   * datatype's own type (Int32Array for INT32, Uint16Array bit patterns for FP16/BF16, Uint8Array 0/1
   * for BOOL, BigInt64Array for INT64 ...) is sent without a copy: do not change it until the call
   * returns. Other arrays are converted with range checks.
   */
  setData(values: TensorValues, options: SetDataOptions = {}): this {
    const what = `input '${this.name}'`;
    if (values === null || typeof values !== 'object' || typeof values.length !== 'number') {
      throw new TypeError(`${what}: data must be an array or a typed array`);
    }
    this.#checkCount(values.length);
    return this.#set(encodeValues(this.datatype, values, what), values.length, options);
  }

  /**
   * Sets the tensor's bytes in wire form as they are: row-major little-endian elements, BOOL one byte
   * each, BYTES as 4-byte little-endian lengths each followed by the element's bytes.
   */
  setRawData(bytes: Uint8Array, options: SetDataOptions = {}): this {
    if (!(bytes instanceof Uint8Array))
      throw new TypeError(`input '${this.name}': raw data must be a Uint8Array`);
    const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let count: number;
    try {
      count = countElements(this.datatype, data);
    } catch (err) {
      throw new RangeError(`input '${this.name}': ${(err as Error).message}`);
    }
    this.#checkCount(count);
    return this.#set(data, count, options);
  }

  /** Takes the tensor from a registered shared-memory region; clears data set before. */
  setSharedMemory(region: string, byteSize: number, offset = 0): this {
    this.#sharedMemory = checkSharedMemory(`input '${this.name}'`, region, byteSize, offset);
    this.#data = undefined;
    return this;
  }

  /** An input parameter sent with the tensor (reserved keys of the protocol are refused by the server). */
  setParameter(key: string, value: ParameterValue): this {
    setOwn(this.#parameters, checkName('parameter', key), value);
    return this;
  }

  get parameters(): Readonly<Record<string, ParameterValue>> {
    return this.#parameters;
  }

  /** The tensor's bytes in wire form; undefined before setData or when in shared memory. */
  get data(): Buffer | undefined {
    return this.#data;
  }

  get binary(): boolean {
    return this.#binary;
  }

  get sharedMemory(): SharedMemoryRef | undefined {
    return this.#sharedMemory;
  }

  /**
   * Throws unless the input is ready to send: data or a shared-memory region set, and data that still
   * fits the shape (after setShape). The clients call this before building a request.
   */
  validate(): void {
    if (this.#sharedMemory !== undefined) return;
    if (this.#data === undefined) throw new TypeError(`input '${this.name}': no data set`);
    this.#checkCount(this.#count);
  }

  #checkCount(count: number): void {
    const expected = elementCountOf(this.#shape);
    if (count !== expected) {
      throw new RangeError(
        `input '${this.name}': got ${count} elements for shape [${this.#shape.join(',')}], which has ${expected}`,
      );
    }
  }

  #set(data: Buffer, count: number, options: SetDataOptions): this {
    this.#data = data;
    this.#count = count;
    this.#binary = options.binary ?? true;
    this.#sharedMemory = undefined;
    return this;
  }
}

export interface RequestedOutputOptions {
  /** Return the output as binary tensor data (default) or as JSON / typed gRPC contents. */
  readonly binary?: boolean;
  /** Return the top-N classes as BYTES "<score>:<index>[:<label>]" instead of the tensor (0 = off). */
  readonly classCount?: number;
}

export class InferRequestedOutput {
  readonly name: string;
  readonly binary: boolean;
  readonly classCount: number;
  #sharedMemory: SharedMemoryRef | undefined;
  readonly #parameters: Record<string, ParameterValue> = {};

  constructor(name: string, options: RequestedOutputOptions = {}) {
    this.name = checkName('output', name);
    this.binary = options.binary ?? true;
    const classCount = options.classCount ?? 0;
    if (!Number.isSafeInteger(classCount) || classCount < 0) {
      throw new RangeError(`output '${name}': classCount must be a non-negative integer`);
    }
    this.classCount = classCount;
  }

  /** Asks the server to write this output into a registered shared-memory region. */
  setSharedMemory(region: string, byteSize: number, offset = 0): this {
    this.#sharedMemory = checkSharedMemory(`output '${this.name}'`, region, byteSize, offset);
    return this;
  }

  unsetSharedMemory(): this {
    this.#sharedMemory = undefined;
    return this;
  }

  setParameter(key: string, value: ParameterValue): this {
    setOwn(this.#parameters, checkName('parameter', key), value);
    return this;
  }

  get parameters(): Readonly<Record<string, ParameterValue>> {
    return this.#parameters;
  }

  get sharedMemory(): SharedMemoryRef | undefined {
    return this.#sharedMemory;
  }
}
