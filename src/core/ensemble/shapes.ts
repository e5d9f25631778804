/**
 * Shapes across the batching boundary inside an ensemble: a tensor written by a non-batching model may
 * feed a batching one and the other way round (the load-time check accepts it when the full shapes
 * agree). This adds or strips the batch dimension the way Triton's ensemble scheduler does.
 */
import { dimsCompatible } from './members.js';

/**
 * The shape to give a tensor when a consumer with `configDims` (without the batch dimension) and
 * `consumerBatching` reads it. `producedBatchSize` is the batch size of the request that produced it,
 * 0 when that model does not batch.
 */
export function shapeForConsumer(
  configDims: readonly number[],
  consumerBatching: boolean,
  producedBatchSize: number,
  shape: readonly number[],
): readonly number[] {
  if (consumerBatching === (producedBatchSize !== 0)) return shape;
  if (consumerBatching) {
    // Written unbatched: if it already has the consumer's dims, it is one sample (batch 1); otherwise it
    // is taken to carry the batch dimension itself.
    return dimsCompatible(configDims, shape) ? [1, ...shape] : shape;
  }
  // Written batched: a single sample may drop its batch dimension if the consumer wants it without.
  if (!dimsCompatible(configDims, shape) && producedBatchSize === 1) return shape.slice(1);
  return shape;
}
