/**
 * A small honest InferenceServerApi for the HTTP frontend's tests (the real core is tested on its own):
 * a few models that really compute (add/sub on INT32, identity on anything), a decoupled one, one that
 * waits for cancellation, one that answers after 150 ms, one that throws a non-Nereid error, plus a repository that records its calls.
 */
import type { DataType } from '../../common/datatype.js';
import { NereidError, invalidArg, notFound, unsupported } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import type {
  CudaSharedMemoryRegionStatus,
  InferenceRequest,
  InferenceResponse,
  InferenceServerApi,
  LoadOptions,
  LogSettingsView,
  ModelMetadata,
  ModelStatistics,
  Parameters,
  RepositoryIndexEntry,
  ResolvedModel,
  ServerMetadata,
  SystemSharedMemoryRegionStatus,
  TraceSettings,
} from '../../core/index.js';
import type { JsonObject } from '../../model-config/json.js';

interface FakeModel {
  readonly metadata: ModelMetadata;
  readonly config: JsonObject;
  readonly decoupled?: boolean;
  run(request: InferenceRequest): Promise<Tensor[]> | Tensor[];
}

function addSub(request: InferenceRequest): Tensor[] {
  const a = request.inputs.find((i) => i.name === 'INPUT0');
  const b = request.inputs.find((i) => i.name === 'INPUT1');
  if (a === undefined || b === undefined) throw invalidArg("expected inputs 'INPUT0' and 'INPUT1'");
  if (a.data.length !== 64 || b.data.length !== 64) throw invalidArg('input byte size mismatch');
  const sum = Buffer.alloc(64);
  const diff = Buffer.alloc(64);
  for (let i = 0; i < 16; i++) {
    const x = a.data.readInt32LE(i * 4);
    const y = b.data.readInt32LE(i * 4);
    sum.writeInt32LE((x + y) | 0, i * 4);
    diff.writeInt32LE((x - y) | 0, i * 4);
  }
  return [
    { name: 'OUTPUT0', datatype: 'INT32', shape: [16], data: sum },
    { name: 'OUTPUT1', datatype: 'INT32', shape: [16], data: diff },
  ];
}

/** INPUTn → OUTPUTn, same datatype, shape and bytes. */
function identity(request: InferenceRequest): Tensor[] {
  return request.inputs.map((i) => ({
    name: i.name.replace('INPUT', 'OUTPUT'),
    datatype: i.datatype,
    shape: [...i.shape],
    data: i.data,
  }));
}

function meta(name: string, inputs: [string, DataType, number[]][], outputs: [string, DataType, number[]][]) {
  const t = ([n, datatype, shape]: [string, DataType, number[]]) => ({ name: n, datatype, shape });
  return { name, versions: ['1'], platform: 'fake', inputs: inputs.map(t), outputs: outputs.map(t) };
}

function config(name: string, maxBatch: number, inputs: [string, string, number[]][]): JsonObject {
  return {
    name,
    max_batch_size: maxBatch,
    input: inputs.map(([n, dt, dims]) => ({ name: n, data_type: dt, dims })),
    output: [],
  };
}

export class FakeApi implements InferenceServerApi {
  live = true;
  ready = true;
  readonly loads: { name: string; options: LoadOptions | undefined }[] = [];
  readonly unloads: { name: string; options: { unloadDependents?: boolean } | undefined }[] = [];
  /** The last inference request seen. */
  lastRequest: InferenceRequest | undefined;
  /** Model handles resolved and released (every handle a frontend takes must be released). */
  resolved = 0;
  released = 0;
  /** Signals of requests to `wait`, to observe cancellation. */
  readonly waiting: AbortSignal[] = [];
  /** What the `fixed_outputs` model answers, whatever it is sent (a test sets it). */
  fixedOutputs: Tensor[] = [];

  private readonly models = new Map<string, FakeModel>([
    [
      'fixed_outputs',
      {
        metadata: meta('fixed_outputs', [['INPUT0', 'FP32', [-1]]], [['OUTPUT0', 'FP32', [-1]]]),
        config: config('fixed_outputs', 0, [['INPUT0', 'TYPE_FP32', [-1]]]),
        run: () => this.fixedOutputs,
      },
    ],
    [
      'add_sub',
      {
        metadata: meta(
          'add_sub',
          [
            ['INPUT0', 'INT32', [16]],
            ['INPUT1', 'INT32', [16]],
          ],
          [
            ['OUTPUT0', 'INT32', [16]],
            ['OUTPUT1', 'INT32', [16]],
          ],
        ),
        config: config('add_sub', 0, [
          ['INPUT0', 'TYPE_INT32', [16]],
          ['INPUT1', 'TYPE_INT32', [16]],
        ]),
        run: addSub,
      },
    ],
    [
      'identity',
      {
        metadata: meta('identity', [['INPUT0', 'FP32', [-1]]], [['OUTPUT0', 'FP32', [-1]]]),
        config: config('identity', 0, [['INPUT0', 'TYPE_FP32', [-1]]]),
        run: identity,
      },
    ],
    [
      'raw_batch',
      {
        metadata: meta('raw_batch', [['INPUT0', 'FP32', [-1, -1]]], [['OUTPUT0', 'FP32', [-1, -1]]]),
        config: config('raw_batch', 8, [['INPUT0', 'TYPE_FP32', [-1]]]),
        run: identity,
      },
    ],
    [
      'raw_bytes',
      {
        metadata: meta('raw_bytes', [['INPUT0', 'BYTES', [1]]], [['OUTPUT0', 'BYTES', [1]]]),
        config: config('raw_bytes', 0, [['INPUT0', 'TYPE_STRING', [1]]]),
        run: identity,
      },
    ],
    [
      'bytes_many',
      {
        metadata: meta('bytes_many', [['INPUT0', 'BYTES', [-1]]], [['OUTPUT0', 'BYTES', [-1]]]),
        config: config('bytes_many', 0, [['INPUT0', 'TYPE_STRING', [-1]]]),
        run: identity,
      },
    ],
    [
      'two_var_dims',
      {
        metadata: meta('two_var_dims', [['INPUT0', 'FP16', [-1, -1]]], [['OUTPUT0', 'FP16', [-1, -1]]]),
        config: config('two_var_dims', 0, [['INPUT0', 'TYPE_FP16', [-1, -1]]]),
        run: identity,
      },
    ],
    [
      'three_inputs',
      {
        metadata: meta('three_inputs', [], []),
        config: config('three_inputs', 0, [
          ['INPUT0', 'TYPE_FP32', [8]],
          ['INPUT1', 'TYPE_FP32', [8]],
          ['INPUT2', 'TYPE_FP32', [8]],
        ]),
        run: identity,
      },
    ],
    [
      'repeat',
      {
        metadata: meta('repeat', [['IN', 'INT32', [-1]]], [['OUT', 'INT32', [1]]]),
        config: config('repeat', 0, [['IN', 'TYPE_INT32', [-1]]]),
        decoupled: true,
        run: identity,
      },
    ],
    [
      'wait',
      {
        metadata: meta('wait', [['INPUT0', 'FP32', [-1]]], [['OUTPUT0', 'FP32', [-1]]]),
        config: config('wait', 0, [['INPUT0', 'TYPE_FP32', [-1]]]),
        run: (request) =>
          new Promise<Tensor[]>((_resolve, reject) => {
            const signal = request.signal!;
            this.waiting.push(signal);
            signal.addEventListener('abort', () => reject(new NereidError('CANCELLED', 'request cancelled')));
          }),
      },
    ],
    [
      'sleep',
      {
        metadata: meta('sleep', [['INPUT0', 'FP32', [-1]]], [['OUTPUT0', 'FP32', [-1]]]),
        config: config('sleep', 0, [['INPUT0', 'TYPE_FP32', [-1]]]),
        run: (request) =>
          new Promise<Tensor[]>((resolve) => setTimeout(() => resolve(identity(request)), 150)),
      },
    ],
    [
      'boom',
      {
        metadata: meta('boom', [], []),
        config: config('boom', 0, []),
        run: () => {
          throw new TypeError('kaboom');
        },
      },
    ],
  ]);

  private model(name: string, version?: string): FakeModel {
    const m = this.models.get(name);
    if (m === undefined || (version !== undefined && version !== '' && version !== '1')) {
      throw notFound(
        `Request for unknown model: '${name}' ${version ? `version ${version} ` : ''}is not found`,
      );
    }
    return m;
  }

  isLive(): boolean {
    return this.live;
  }
  isReady(): boolean {
    return this.ready;
  }
  serverMetadata(): ServerMetadata {
    return { name: 'triton', version: '0.1.0', extensions: ['binary_tensor_data', 'statistics'] };
  }
  isModelReady(name: string, version?: string): boolean {
    return this.models.has(name) && (version === undefined || version === '' || version === '1');
  }
  modelMetadata(name: string, version?: string): ModelMetadata {
    return this.model(name, version).metadata;
  }
  modelConfigJson(name: string, version?: string): JsonObject {
    return this.model(name, version).config;
  }
  /** Resolves now (unknown model → NOT_FOUND); runs through infer()/inferOnce(), so overrides apply. */
  resolveModel(name: string, version?: string): ResolvedModel {
    const m = this.model(name, version);
    this.resolved++;
    return {
      name,
      version: '1',
      decoupled: m.decoupled === true,
      sharesInputMemory: false,
      metadata: m.metadata,
      configJson: () => m.config,
      isReady: () => true,
      stream: (request) => this.infer(request),
      infer: (request) => this.inferOnce(request),
      release: () => {
        this.released++;
      },
    };
  }

  async *infer(request: InferenceRequest): AsyncIterable<InferenceResponse> {
    yield await this.inferOnce(request);
  }

  async inferOnce(request: InferenceRequest): Promise<InferenceResponse> {
    this.lastRequest = request;
    const model = this.model(request.modelName, request.modelVersion);
    let outputs = await model.run(request);
    if (request.outputs !== undefined) {
      const wanted = request.outputs.map((o) => o.name);
      for (const w of wanted) {
        if (!outputs.some((o) => o.name === w)) {
          throw invalidArg(`unexpected inference output '${w}' for model '${request.modelName}'`);
        }
      }
      outputs = outputs.filter((o) => wanted.includes(o.name));
    }
    const parameters: Parameters = { ...request.parameters };
    return {
      modelName: request.modelName,
      modelVersion: '1',
      id: request.id ?? '',
      outputs,
      parameters,
      final: true,
    };
  }

  modelStatistics(name?: string, version?: string): ModelStatistics[] {
    const names = name === undefined ? [...this.models.keys()] : [(this.model(name, version), name)];
    const zero = { count: 0, ns: 0 };
    return names.map((n) => ({
      name: n,
      version: '1',
      last_inference: 0,
      inference_count: 0,
      execution_count: 0,
      inference_stats: {
        success: zero,
        fail: zero,
        queue: zero,
        compute_input: zero,
        compute_infer: zero,
        compute_output: zero,
        cache_hit: zero,
        cache_miss: zero,
      },
      batch_stats: [],
      memory_usage: [],
      response_stats: {},
    }));
  }

  repositoryIndex(readyOnly: boolean): RepositoryIndexEntry[] {
    const all: RepositoryIndexEntry[] = [...this.models.keys()].map((n) => ({
      name: n,
      version: '1',
      state: 'READY',
      reason: '',
    }));
    all.push({ name: 'broken', state: 'UNAVAILABLE', reason: 'failed to load' });
    return readyOnly ? all.filter((e) => e.state === 'READY') : all;
  }

  loadModel(name: string, options?: LoadOptions): Promise<void> {
    this.loads.push({ name, options });
    if (name === 'missing')
      return Promise.reject(notFound(`failed to load '${name}', no version is available`));
    return Promise.resolve();
  }

  unloadModel(name: string, options?: { unloadDependents?: boolean }): Promise<void> {
    this.unloads.push({ name, options });
    return Promise.resolve();
  }

  // Extensions the HTTP tests of this file do not exercise.
  systemSharedMemoryStatus(): SystemSharedMemoryRegionStatus[] {
    throw unsupported('not in the fake');
  }
  registerSystemSharedMemory(): Promise<void> {
    return Promise.reject(unsupported('not in the fake'));
  }
  unregisterSystemSharedMemory(): Promise<void> {
    return Promise.reject(unsupported('not in the fake'));
  }
  cudaSharedMemoryStatus(): CudaSharedMemoryRegionStatus[] {
    throw unsupported('not in the fake');
  }
  registerCudaSharedMemory(): void {
    throw unsupported('not in the fake');
  }
  unregisterCudaSharedMemory(): void {
    throw unsupported('not in the fake');
  }
  logSettings(): LogSettingsView {
    throw unsupported('not in the fake');
  }
  updateLogSettings(): LogSettingsView {
    throw unsupported('not in the fake');
  }
  traceSettings(): TraceSettings {
    throw unsupported('not in the fake');
  }
  updateTraceSettings(): TraceSettings {
    throw unsupported('not in the fake');
  }
}
