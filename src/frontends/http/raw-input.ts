/**
 * Triton's raw binary request (Inference-Header-Content-Length: 0): the whole body is the bytes of the
 * model's only input, and name, datatype and shape are deduced from the model config the way Triton's core
 * does it (InferenceRequest::Normalize), with the same error texts. Outputs then all come back binary.
 */
import { fromConfigDataType, byteSizeOf } from '../../common/datatype.js';
import { internal, invalidArg } from '../../common/errors.js';
import type { InferInput } from '../../core/index.js';
import type { JsonObject, JsonValue } from '../../model-config/json.js';

/**
 * Triton deduces the raw input in its core's request normalisation, whose errors start with the request's
 * id; a raw request has none.
 */
function refuse(message: string): never {
  throw invalidArg(`[request id: <id_unknown>] ${message}`);
}

function asInt(v: JsonValue | undefined): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return Number(v);
  return undefined;
}

/** The single input of a raw request, built from the model's config JSON (GET .../config form). */
export function deduceRawInput(config: JsonObject, modelName: string, body: Buffer): InferInput {
  const inputs = Array.isArray(config.input) ? config.input : [];
  if (inputs.length !== 1) {
    refuse(
      `Raw request must only have 1 input (found 1) to be deduced but got ${inputs.length} inputs in ` +
        `'${modelName}' model configuration`,
    );
  }
  const input = inputs[0];
  if (typeof input !== 'object' || input === null || Array.isArray(input) || typeof input.name !== 'string') {
    throw internal(`model '${modelName}' has a malformed input in its configuration`);
  }
  const name = input.name;
  const datatype = typeof input.data_type === 'string' ? fromConfigDataType(input.data_type) : undefined;
  if (datatype === undefined) throw internal(`model '${modelName}' input '${name}' has no valid data_type`);
  const dims = Array.isArray(input.dims) ? input.dims.map(asInt) : [];

  const shape: number[] = [];
  if ((asInt(config.max_batch_size) ?? 0) !== 0) shape.push(1);
  let dynamicAxis = -1;
  let elementCount = 1;
  for (const d of dims) {
    if (d === undefined) throw internal(`model '${modelName}' input '${name}' has malformed dims`);
    if (d === -1) {
      if (dynamicAxis !== -1) {
        refuse(
          `The shape of the raw input '${name}' can not be deduced because there are more than one variable-sized dimension`,
        );
      }
      dynamicAxis = shape.length;
    } else {
      elementCount *= d;
    }
    shape.push(d);
  }

  if (datatype === 'BYTES') {
    if (dynamicAxis !== -1 || elementCount !== 1) {
      refuse(`For BYTE datatype raw input '${name}', the model must have input shape [1]`);
    }
    // The body is one element; BYTES tensors carry a 4-byte length prefix, so this is one copy.
    const data = Buffer.allocUnsafe(4 + body.length);
    data.writeUInt32LE(body.length, 0);
    body.copy(data, 4);
    return { name, datatype, shape, data };
  }
  if (dynamicAxis !== -1) {
    const per = elementCount * byteSizeOf(datatype);
    shape[dynamicAxis] = per === 0 ? 0 : Math.floor(body.length / per);
  }
  return { name, datatype, shape, data: body };
}
