/**
 * The response side of an inference: InferResult holds each output's metadata and its bytes in wire
 * form (whether they came as binary data, JSON or gRPC typed contents) and reads them as typed arrays,
 * plain arrays or BYTES elements on demand. `raw` keeps what the server sent (HTTP: the JSON header;
 * gRPC: the decoded ModelInferResponse).
 */
import type { DataType } from '../common/datatype.js';
import { NereidClientError } from './errors.js';
import type { ParameterValue, SharedMemoryRef } from './infer-input.js';
import {
  decodeArray,
  decodeBytesElements,
  decodeTypedArray,
  type ArrayOf,
  type FixedDataType,
  type TensorArray,
  type TypedArray,
  type TypedArrayOf,
} from './tensor-data.js';

/** An output as the server described it. */
export interface OutputInfo {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  readonly parameters: Readonly<Record<string, ParameterValue>>;
  /** Set when the server wrote the output into a shared-memory region (then there is no data here). */
  readonly sharedMemory?: SharedMemoryRef;
}

/** An output with its bytes in wire form (undefined when in shared memory). */
export interface OutputTensor extends OutputInfo {
  readonly data: Buffer | undefined;
}

export interface InferResultInit {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly parameters: Readonly<Record<string, ParameterValue>>;
  readonly outputs: readonly OutputTensor[];
  readonly raw: unknown;
}

export class InferResult {
  readonly modelName: string;
  readonly modelVersion: string;
  /** The request id echoed by the server ('' when none was given). */
  readonly id: string;
  readonly parameters: Readonly<Record<string, ParameterValue>>;
  /** The server's response as received (HTTP: parsed JSON header; gRPC: ModelInferResponse object). */
  readonly raw: unknown;
  readonly #outputs: readonly OutputTensor[];
  readonly #byName = new Map<string, OutputTensor>();

  constructor(init: InferResultInit) {
    this.modelName = init.modelName;
    this.modelVersion = init.modelVersion;
    this.id = init.id;
    this.parameters = init.parameters;
    this.raw = init.raw;
    this.#outputs = init.outputs;
    for (const o of init.outputs) this.#byName.set(o.name, o);
  }

  /** Metadata of every output, in the server's order. */
  get outputs(): readonly OutputInfo[] {
    return this.#outputs.map(({ data: _data, ...info }) => info);
  }

  /**
   * False only for a non-final response of a decoupled model (gRPC stream), which Triton marks with the
   * `triton_final_response` parameter.
   */
  get final(): boolean {
    return this.parameters.triton_final_response !== false;
  }

  /** One output's metadata, or undefined when the response has no such output. */
  output(name: string): OutputInfo | undefined {
    const o = this.#byName.get(name);
    if (o === undefined) return undefined;
    const { data: _data, ...info } = o;
    return info;
  }

  /** One output with its wire-form bytes (BYTES: length-prefixed elements). */
  tensor(name: string): OutputTensor {
    const o = this.#byName.get(name);
    if (o === undefined) {
      const names = this.#outputs.map((x) => `'${x.name}'`).join(', ');
      throw new NereidClientError(`the response has no output '${name}' (outputs: ${names || 'none'})`);
    }
    return o;
  }

  /**
   * The output as a typed array (a view of the response when aligned). FP16/BF16 come as Uint16Array bit
   * patterns, BOOL as 0/1 bytes, INT64/UINT64 as BigInt64Array/BigUint64Array. Passing the expected
   * datatype narrows the type and checks it.
   */
  asTypedArray<D extends FixedDataType>(name: string, datatype: D): TypedArrayOf[D];
  asTypedArray(name: string): TypedArray;
  asTypedArray(name: string, datatype?: FixedDataType): TypedArray {
    const o = this.#withData(name, datatype);
    if (o.datatype === 'BYTES') {
      throw new NereidClientError(`output '${name}' is BYTES: read it with asArray() or asBytes()`);
    }
    return this.#decode(name, () => decodeTypedArray(o.datatype as FixedDataType, o.data));
  }

  /**
   * The output as a plain array: numbers (FP16/BF16 converted), bigints for INT64/UINT64, booleans for
   * BOOL, UTF-8 strings for BYTES. Passing the expected datatype narrows the type and checks it.
   */
  asArray<D extends DataType>(name: string, datatype: D): ArrayOf[D];
  asArray(name: string): TensorArray;
  asArray(name: string, datatype?: DataType): TensorArray {
    const o = this.#withData(name, datatype);
    return this.#decode(name, () => decodeArray(o.datatype, o.data));
  }

  /** A BYTES output's elements as byte buffers (views of the response, no copies). */
  asBytes(name: string): Buffer[] {
    const o = this.#withData(name, 'BYTES');
    return this.#decode(name, () => decodeBytesElements(o.data));
  }

  #withData(name: string, datatype: DataType | undefined): OutputTensor & { data: Buffer } {
    const o = this.tensor(name);
    if (datatype !== undefined && o.datatype !== datatype) {
      throw new NereidClientError(`output '${name}' is ${o.datatype}, not ${datatype}`);
    }
    if (o.data === undefined) {
      const where = o.sharedMemory
        ? `in shared-memory region '${o.sharedMemory.region}'`
        : 'not in the response';
      throw new NereidClientError(`the data of output '${name}' is ${where}`);
    }
    return o as OutputTensor & { data: Buffer };
  }

  #decode<T>(name: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw new NereidClientError(`malformed data for output '${name}': ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
}
