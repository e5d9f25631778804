/**
 * Helpers for this backend's tests: complete configs, load contexts over the committed fixture models,
 * and requests whose sender records what the backend did with them.
 */
import { fileURLToPath } from 'node:url';
import type {
  BackendRequest,
  ModelLoadContext,
  ResponseSender,
  SendOptions,
} from '../../backend-api/backend.js';
import type { DataType } from '../../common/datatype.js';
import type { NereidError } from '../../common/errors.js';
import { silentLogger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
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

export class RecordingSender implements ResponseSender {
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

export type TestRequest = BackendRequest & { readonly sender: RecordingSender };

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
    sender: new RecordingSender(),
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
