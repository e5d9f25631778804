/**
 * Checks of a config's inputs, outputs, batch inputs and batch outputs, as Triton's ValidateModelIOConfig
 * does them (same order, same messages, each ending in " for <model>"), plus a duplicate-name check
 * Triton lacks (it keeps the last of two same-named inputs silently).
 */
import { invalidArg } from '../common/errors.js';
import type { DeepReadonly, FrozenModelConfig, ModelInput, ModelOutput } from './model-config.js';

const WILDCARD_DIM = -1;
const INT64_MAX = 2n ** 63n - 1n;
const TENSORRT_PLATFORM = 'tensorrt_plan';

const badDim = (d: number): boolean => !Number.isSafeInteger(d) || (d < 1 && d !== WILDCARD_DIM);

type IO = DeepReadonly<ModelInput> | DeepReadonly<ModelOutput>;

/** Triton's GetElementCount: -1 when any dim is a wildcard, 'overflow' past INT64_MAX. */
function elementCount(dims: readonly number[]): bigint | 'overflow' {
  let count = 0n;
  let first = true;
  for (const d of dims) {
    if (d === WILDCARD_DIM) return -1n;
    const dim = BigInt(d);
    count = first ? dim : count * dim;
    first = false;
    if (count > INT64_MAX) return 'overflow';
  }
  return count;
}

/** Products of the runs of fixed dims between wildcards: [2, 4, -1, 6] → [8, 6]. */
function chunkCounts(dims: readonly number[]): bigint[] {
  const out: bigint[] = [];
  let current = 1n;
  for (const d of dims) {
    if (d === WILDCARD_DIM) {
      out.push(current);
      current = 1n;
    } else {
      current *= BigInt(d);
    }
  }
  out.push(current);
  return out;
}

/** Triton's ValidateIOShape; returns the message or undefined. */
function ioShapeProblem(io: IO, maxBatchSize: number, prefix: string): string | undefined {
  if (!io.name) return `${prefix}must specify 'name'`;
  const named = `${prefix}'${io.name}' `;
  if (io.data_type === 'TYPE_INVALID') return `${named}must specify 'data_type'`;
  if (io.dims.length === 0) return `${named}must specify 'dims'`;
  const reshape = io.reshape?.shape;
  if (reshape !== undefined && reshape.length === 0 && maxBatchSize === 0) {
    return `${named}cannot have empty reshape for non-batching model as scalar tensors are not supported`;
  }
  if (io.dims.some(badDim)) {
    return `${named}dimension must be integer >= 1, or ${WILDCARD_DIM} to indicate a variable-size dimension`;
  }
  if (reshape === undefined) return undefined;
  if (reshape.some(badDim)) {
    return `${named}reshape dimensions must be integer >= 1, or ${WILDCARD_DIM} to indicate a variable-size dimension`;
  }
  const dimsSize = elementCount(io.dims);
  if (dimsSize === 'overflow')
    return `element count for tensor '${io.name} dims' exceeds maximum size of ${INT64_MAX}`;
  const reshapeSize = elementCount(reshape);
  if (reshapeSize === 'overflow') {
    return `element count for tensor '${io.name} reshape' exceeds maximum size of ${INT64_MAX}`;
  }
  // An empty reshape stands for a scalar, which matches dims whose element count is 1.
  if (dimsSize !== reshapeSize && (reshapeSize !== 0n || dimsSize !== 1n)) {
    return `${named}has different size for dims and reshape`;
  }
  if (dimsSize === -1n) {
    const a = chunkCounts(io.dims);
    const b = chunkCounts(reshape);
    if (a.length !== b.length) {
      return `${named}has different number of variable-size dimensions for dims and reshape`;
    }
    if (a.some((n, i) => n !== b[i])) return `${named}has different size for dims and reshape`;
  }
  return undefined;
}

function inputProblem(
  io: DeepReadonly<ModelInput>,
  maxBatchSize: number,
  platform: string,
): string | undefined {
  const shape = ioShapeProblem(io, maxBatchSize, 'model input ');
  if (shape !== undefined) return shape;
  if ((io.format === 'FORMAT_NHWC' || io.format === 'FORMAT_NCHW') && io.dims.length !== 3) {
    return 'model input NHWC/NCHW require 3 dims';
  }
  if (platform !== TENSORRT_PLATFORM && io.is_shape_tensor) {
    return 'shape tensors are only supported for TensorRT platform';
  }
  return nonLinearProblem(io, platform, 'input');
}

function outputProblem(
  io: DeepReadonly<ModelOutput>,
  maxBatchSize: number,
  platform: string,
): string | undefined {
  const shape = ioShapeProblem(io, maxBatchSize, 'model output ');
  if (shape !== undefined) return shape;
  if (platform !== TENSORRT_PLATFORM && io.is_shape_tensor) {
    return 'shape tensors are only supported for TensorRT platform';
  }
  return nonLinearProblem(io, platform, 'output');
}

function nonLinearProblem(io: IO, platform: string, kind: 'input' | 'output'): string | undefined {
  if (!io.is_non_linear_format_io) return undefined;
  if (platform !== TENSORRT_PLATFORM)
    return 'Non-linear IO format is only supported for the TensorRT platform';
  if (io.dims.length !== 3) return `Non-linear IO format ${kind} requires 3 dims`;
  return undefined;
}

function duplicateProblem(names: readonly string[], what: string): string | undefined {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) return `${what} '${n}' is specified more than once`;
    seen.add(n);
  }
  return undefined;
}

/** Triton's ValidateBatchIO. */
function batchIoProblem(cfg: FrozenModelConfig): string | undefined {
  const inputNames = new Set(cfg.input.map((i) => i.name));
  const outputNames = new Set(cfg.output.map((o) => o.name));
  for (const bi of cfg.batch_input) {
    if (bi.source_input.length !== 1) {
      return `batch input kind '${bi.kind}' expects 1 source input, got ${bi.source_input.length}`;
    }
    if (bi.data_type !== 'TYPE_INT32' && bi.data_type !== 'TYPE_FP32') {
      return 'batch input data type must be TYPE_INT32 or TYPE_FP32';
    }
    const unknown = bi.source_input.find((s) => !inputNames.has(s));
    if (unknown !== undefined) return `unknown source input name '${unknown}'`;
  }
  for (const bo of cfg.batch_output) {
    if (bo.source_input.length !== 1) {
      return `batch output kind '${bo.kind}' expects 1 source input, got ${bo.source_input.length}`;
    }
    const unknown = bo.source_input.find((s) => !inputNames.has(s));
    if (unknown !== undefined) return `unknown source input name '${unknown}'`;
    const targets = new Set<string>();
    for (const t of bo.target_name) {
      if (!outputNames.has(t)) return `unknown target output name '${t}'`;
      if (targets.has(t)) return `target output name '${t}' can only be specified once`;
      targets.add(t);
    }
  }
  return undefined;
}

/** Triton's ValidateModelIOConfig. Throws INVALID_ARG. */
export function validateModelIo(cfg: FrozenModelConfig): void {
  const problem =
    cfg.input.map((io) => inputProblem(io, cfg.max_batch_size, cfg.platform)).find((p) => p !== undefined) ??
    duplicateProblem(
      cfg.input.map((i) => i.name),
      'model input',
    ) ??
    cfg.output
      .map((io) => outputProblem(io, cfg.max_batch_size, cfg.platform))
      .find((p) => p !== undefined) ??
    duplicateProblem(
      cfg.output.map((o) => o.name),
      'model output',
    ) ??
    batchIoProblem(cfg);
  if (problem !== undefined) throw invalidArg(`${problem} for ${cfg.name}`);
}
