/**
 * Which requests may share a batch: Triton's RequiredEqualInputs (core/src/scheduler_utils.cc) turned into
 * a string per request, so that "may join" is plain equality. The key holds the shape (without the batch
 * dimension) of every input whose config dims have a variable size and that is not `allow_ragged_batch`,
 * the contents of every shape tensor, and, for models with optional inputs, the names of the inputs given.
 * Inputs with fixed dims always match and stay out of the key.
 */
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import type { PreparedRequest } from '../inference.js';

export type BatchKeyFn = (request: PreparedRequest) => string;

const CONSTANT: BatchKeyFn = () => '';

export function batchKeyFunction(config: FrozenModelConfig): BatchKeyFn {
  const batching = config.max_batch_size > 0;
  const byContent = new Set<string>();
  const byShape = new Set<string>();
  for (const input of config.input) {
    if (input.is_shape_tensor) byContent.add(input.name);
    else if (!input.allow_ragged_batch && input.dims.includes(-1)) byShape.add(input.name);
  }
  const optional = config.input.some((i) => i.optional);
  if (byContent.size === 0 && byShape.size === 0 && !optional) return CONSTANT;

  return (request) => {
    const parts: string[] = [];
    const names = [...request.inputs.keys()].sort();
    for (const name of names) {
      const t = request.inputs.get(name)!;
      if (byContent.has(name)) {
        const dims = batching ? t.shape.slice(1) : t.shape;
        parts.push(`${name}[${dims.join(',')}]=${t.data.toString('base64')}`);
      } else if (byShape.has(name)) {
        const dims = batching ? t.shape.slice(1) : t.shape;
        parts.push(`${name}[${dims.join(',')}]`);
      } else if (optional) {
        parts.push(name);
      }
    }
    // JSON keeps names containing separators from forging another request's key.
    return JSON.stringify(parts);
  };
}
