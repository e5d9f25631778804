/**
 * Helpers for this backend's tests: complete configs, load contexts over the committed fixture models,
 * and requests whose sender records what the backend did with them.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type {
  BackendRequest,
  InstanceSpec,
  ModelLoadContext,
  ResponseSender,
  SendOptions,
} from '../../backend-api/backend.js';
import { byteSizeOf, toConfigDataType, type DataType } from '../../common/datatype.js';
import type { NereidError } from '../../common/errors.js';
import { silentLogger } from '../../common/logger.js';
import { joinBytesElements, type Tensor } from '../../common/tensor.js';
import type { ModelConfig } from '../../model-config/model-config.js';

/** test/fixtures/models, seen from dist/src/backends/onnxruntime/ where the compiled tests run. */
const FIXTURES = new URL('../../../../test/fixtures/models/', import.meta.url);

export function fixture(file: string): string {
  return fileURLToPath(new URL(file, FIXTURES));
}

export function modelConfig(fields: Partial<ModelConfig> & { name: string }): ModelConfig {
  return {
    platform: 'onnxruntime_onnx',
    backend: 'onnxruntime',
    runtime: '',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: 0,
    input: [],
    output: [],
    batch_input: [],
    batch_output: [],
    instance_group: [
      {
        name: fields.name,
        kind: 'KIND_CPU',
        count: 1,
        gpus: [],
        secondary_devices: [],
        profile: [],
        passive: false,
        host_policy: '',
      },
    ],
    default_model_filename: 'model.onnx',
    cc_model_filenames: {},
    metric_tags: {},
    parameters: {},
    model_warmup: [],
    ...fields,
  };
}

export function loadContext(
  config: ModelConfig,
  modelPath: string,
  backendConfig: Record<string, string> = {},
): ModelLoadContext {
  return {
    config,
    modelName: config.name,
    version: 1,
    modelDir: '/nonexistent',
    versionDir: '/nonexistent/1',
    modelPath,
    backendConfig,
    log: silentLogger(),
  };
}

export class OrtRecordingSender implements ResponseSender {
  readonly sent: { outputs: readonly Tensor[]; options: SendOptions }[] = [];
  error: NereidError | undefined;
  done = false;

  send(outputs: readonly Tensor[], options: SendOptions): void {
    if (this.done) throw new Error('send() after the stream ended');
    this.sent.push({ outputs, options });
    if (options.final) this.done = true;
  }

  fail(error: NereidError): void {
    if (this.done) throw new Error('fail() after the stream ended');
    this.error = error;
    this.done = true;
  }

  /** The outputs of the single final response, by name; throws if the request failed. */
  outputs(): Map<string, Tensor> {
    if (this.error) throw this.error;
    if (this.sent.length !== 1 || !this.sent[0].options.final) {
      throw new Error(`expected one final response, got ${this.sent.length}`);
    }
    return new Map(this.sent[0].outputs.map((t) => [t.name, t]));
  }
}

export type TestRequest = BackendRequest & { readonly sender: OrtRecordingSender };

export function request(
  id: string,
  inputs: readonly Tensor[],
  requestedOutputs: readonly string[],
  batchSize = 1,
): TestRequest {
  return {
    id,
    inputs: new Map(inputs.map((t) => [t.name, t])),
    requestedOutputs: new Set(requestedOutputs),
    parameters: {},
    correlationId: 0n,
    flags: 0,
    batchSize,
    signal: new AbortController().signal,
    sender: new OrtRecordingSender(),
  };
}

export function tensor(name: string, datatype: DataType, shape: number[], data: Buffer): Tensor {
  return { name, datatype, shape, data };
}

export function fp32(name: string, shape: number[], values: readonly number[]): Tensor {
  return tensor(name, 'FP32', shape, Buffer.from(new Float32Array(values).buffer));
}

export function readFp32(t: Tensor): number[] {
  // A copy into a fresh, aligned ArrayBuffer: a view may start at any byte.
  return Array.from(
    new Float32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.length)),
  );
}

/** The spec of instance `index` of a model's one CPU group, named as the core names it. */
export const instanceSpec = (name: string, index = 0): InstanceSpec => ({
  name: `${name}_0_${index}`,
  groupName: `${name}_0`,
  index,
  kind: 'KIND_CPU',
  deviceId: 0,
});

/** The identity_<dt>.onnx fixtures: INPUT0 → OUTPUT0, any length, batching. */
export function identityConfig(dt: DataType, fields: Partial<ModelConfig> = {}): ModelConfig {
  return modelConfig({
    name: `identity_${dt.toLowerCase()}`,
    max_batch_size: 8,
    input: [{ name: 'INPUT0', data_type: toConfigDataType(dt), dims: [-1] }],
    output: [{ name: 'OUTPUT0', data_type: toConfigDataType(dt), dims: [-1] }],
    ...fields,
  });
}

/** Test data for `rows`×3 elements, as a slice of a larger buffer (as a request body would hold it). */
export function sample(dt: DataType, rows: number): Tensor {
  const n = rows * 3;
  let data: Buffer;
  if (dt === 'BYTES')
    data = joinBytesElements(Array.from({ length: n }, (_, i) => (i % 3 === 0 ? '' : `é${i}✓`.repeat(i))));
  else if (dt === 'BOOL') data = Buffer.from(Array.from({ length: n }, (_, i) => i % 2));
  else data = randomBytes(n * byteSizeOf(dt));
  const body = Buffer.concat([Buffer.from('header'), data, Buffer.from('trailer')]);
  return tensor('INPUT0', dt, [rows, 3], body.subarray(6, 6 + data.length));
}

/** The add_sub_fp32.onnx fixture: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, [16] each. */
export const addSubConfig = (fields: Partial<ModelConfig> = {}): ModelConfig =>
  modelConfig({
    name: 'add_sub_fp32',
    max_batch_size: 8,
    input: [
      { name: 'INPUT0', data_type: 'TYPE_FP32', dims: [16] },
      { name: 'INPUT1', data_type: 'TYPE_FP32', dims: [16] },
    ],
    output: [
      { name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [16] },
      { name: 'OUTPUT1', data_type: 'TYPE_FP32', dims: [16] },
    ],
    ...fields,
  });

/** The slow_fp32.onnx fixture (hundreds of ms per run) with `count` instances. */
export function slowConfig(count = 1, fields: Partial<ModelConfig> = {}): ModelConfig {
  const c = modelConfig({
    name: 'slow_fp32',
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [1, 16] }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [1, 16] }],
    ...fields,
  });
  c.instance_group = [{ ...c.instance_group[0], count }];
  return c;
}
