/**
 * The embedded API's requests and responses: SDK Tensors in and out, converted to and from the core's
 * tensors as views over the same bytes (no copies). Inputs given as a record of plain arrays or typed
 * arrays get their datatype and shape from the model's metadata.
 */
import { invalidArg } from '../common/errors.js';
import type {
  DecodedRequest as CoreRequest,
  InferenceResponse as CoreResponse,
  InferInput,
  ModelMetadata,
} from '../core/index.js';
import { InferenceResponse, type Parameters } from '../sdk/response.js';
import { Tensor, type TensorSource } from '../sdk/tensor.js';

export interface InferRequest {
  readonly model: string;
  /** '' or omitted = the version policy's default. */
  readonly version?: string | number;
  readonly id?: string;
  /**
   * Tensors, or a record name → Tensor / values. Bare values take the input's datatype and shape from the
   * model's metadata: the fixed dims divide the count and the one -1 left takes the rest; of two -1 dims
   * the outer (a batching model's batch dimension) is 1 (32 values for [-1, 16] are a batch of 2).
   */
  readonly inputs: readonly Tensor[] | Readonly<Record<string, Tensor | TensorSource>>;
  /** Output names (or `{ name, classification }` for top-N labels); omitted = every output. */
  readonly outputs?: readonly (string | { readonly name: string; readonly classification?: number })[];
  /** Request parameters: sequence_id, sequence_start, sequence_end, priority, timeout, custom keys. */
  readonly parameters?: Readonly<Parameters>;
  readonly signal?: AbortSignal;
}

const toBuffer = (d: Uint8Array): Buffer =>
  Buffer.isBuffer(d) ? d : Buffer.from(d.buffer, d.byteOffset, d.byteLength);

function coreInput(t: Tensor): InferInput {
  return { name: t.name, datatype: t.datatype, shape: t.shape, data: toBuffer(t.data) };
}

function shapeFor(dims: readonly number[], length: number, name: string): number[] {
  const shape = [...dims];
  let unknown = shape.flatMap((d, i) => (d < 0 ? [i] : []));
  if (unknown.length > 1) {
    shape[unknown[0]] = 1; // the batch dimension
    unknown = unknown.slice(1);
  }
  const known = shape.reduce((p, d) => (d < 0 ? p : p * d), 1);
  const where = `input '${name}' (${length} values for [${dims.join(',')}])`;
  if (unknown.length > 1) throw invalidArg(`cannot tell the shape of ${where}: pass a Tensor`);
  if (unknown.length === 1) {
    if (known === 0 || length % known !== 0)
      throw invalidArg(`the values of ${where} do not fill its shape: pass a Tensor`);
    shape[unknown[0]] = length / known;
  } else if (known !== length) {
    throw invalidArg(`the values of ${where} do not fill its shape: pass a Tensor`);
  }
  return shape;
}

/**
 * The core's request, without the call's context (its signal: server.ts runs it with core/call.ts);
 * `metadata` is asked only when some input is given as bare values.
 */
export function toCoreRequest(r: InferRequest, metadata: () => ModelMetadata): CoreRequest {
  let inputs: InferInput[];
  if (Array.isArray(r.inputs)) {
    inputs = (r.inputs as readonly Tensor[]).map(coreInput);
  } else {
    inputs = Object.entries(r.inputs as Record<string, Tensor | TensorSource>).map(([name, v]) => {
      if (v instanceof Tensor) return coreInput(v.name === name ? v : v.withName(name));
      const meta = metadata().inputs.find((i) => i.name === name);
      if (!meta) throw invalidArg(`unexpected inference input '${name}' for model '${r.model}'`);
      const length = (v as ArrayLike<unknown>).length;
      return coreInput(
        Tensor.from(name, v, { datatype: meta.datatype, shape: shapeFor(meta.shape, length, name) }),
      );
    });
  }
  return {
    modelName: r.model,
    modelVersion: r.version === undefined ? '' : String(r.version),
    id: r.id,
    inputs,
    outputs: r.outputs?.map((o) =>
      typeof o === 'string'
        ? { name: o }
        : { name: o.name, ...(o.classification ? { parameters: { classification: o.classification } } : {}) },
    ),
    parameters: r.parameters,
  };
}

export function fromCoreResponse(r: CoreResponse): InferenceResponse {
  return new InferenceResponse({
    outputs: r.outputs.map((t) => new Tensor(t.name, t.datatype, t.shape, t.data)),
    parameters: r.parameters,
    modelName: r.modelName,
    modelVersion: r.modelVersion,
    id: r.id,
    final: r.final,
  });
}
