/**
 * The HTTP frontend's fake InferenceServerApi, extended for the gRPC tests with what only streaming can
 * reach: a decoupled `repeat` model that answers one response per element of IN (each after DELAY ms when
 * given), then a flag-only final response, and settable log / trace / shared-memory answers.
 */
import { NereidError, invalidArg } from '../../common/errors.js';
import type {
  CudaSharedMemoryRegionStatus,
  InferenceRequest,
  InferenceResponse,
  LogSettingsUpdate,
  LogSettingsView,
  SystemSharedMemoryRegionStatus,
  TraceSettings,
  TraceSettingsUpdate,
} from '../../core/index.js';
import { FakeApi } from '../http/fake-api.testkit.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class GrpcFakeApi extends FakeApi {
  /** Requests the decoupled model saw (to observe cancellation). */
  readonly repeatSignals: AbortSignal[] = [];
  readonly shmCalls: unknown[][] = [];
  log: LogSettingsView = {
    log_file: '',
    log_info: true,
    log_warning: true,
    log_error: true,
    log_verbose_level: 0,
    log_format: 'default',
  };
  trace: TraceSettings = { trace_level: ['OFF'], trace_rate: '1000' };
  lastTraceUpdate: { model: string | undefined; update: TraceSettingsUpdate } | undefined;

  override infer(request: InferenceRequest): AsyncIterable<InferenceResponse> {
    if (request.modelName !== 'repeat') return super.infer(request);
    const input = request.inputs.find((i) => i.name === 'IN');
    if (input === undefined) throw invalidArg("expected input 'IN' for model 'repeat'");
    this.repeatSignals.push(request.signal!);
    const delay = request.inputs.find((i) => i.name === 'DELAY');
    return this.repeat(request, input.data, delay?.data);
  }

  private async *repeat(request: InferenceRequest, values: Buffer, delays: Buffer | undefined) {
    const count = values.length / 4;
    for (let i = 0; i < count; i++) {
      if (delays !== undefined) await sleep(delays.readInt32LE(i * 4));
      if (request.signal?.aborted) throw new NereidError('CANCELLED', 'cancelled');
      const out = Buffer.alloc(4);
      out.writeInt32LE(values.readInt32LE(i * 4));
      const idx = Buffer.alloc(4);
      idx.writeUInt32LE(i);
      yield {
        modelName: 'repeat',
        modelVersion: '1',
        id: request.id ?? '',
        outputs: [
          { name: 'OUT', datatype: 'INT32' as const, shape: [1], data: out },
          { name: 'IDX', datatype: 'UINT32' as const, shape: [1], data: idx },
        ],
        parameters: {},
        final: false,
      };
    }
    yield {
      modelName: 'repeat',
      modelVersion: '1',
      id: request.id ?? '',
      outputs: [],
      parameters: {},
      final: true,
    };
  }

  override systemSharedMemoryStatus(name?: string): SystemSharedMemoryRegionStatus[] {
    this.shmCalls.push(['status', name]);
    return [{ name: 'r0', key: '/shm0', offset: 8, byte_size: 64 }];
  }
  // The base class declares these without parameters; rest parameters keep the override compatible.
  override registerSystemSharedMemory(...args: unknown[]): Promise<void> {
    this.shmCalls.push(['register', ...args]);
    return Promise.resolve();
  }
  override unregisterSystemSharedMemory(name?: string): Promise<void> {
    this.shmCalls.push(['unregister', name]);
    return Promise.resolve();
  }
  override cudaSharedMemoryStatus(name?: string): CudaSharedMemoryRegionStatus[] {
    this.shmCalls.push(['cuda status', name]);
    return name === 'c0' ? [{ name: 'c0', device_id: 1, byte_size: 64 }] : [];
  }
  override registerCudaSharedMemory(...args: unknown[]): void {
    this.shmCalls.push(['cuda register', ...args]);
    throw invalidArg(
      `failed to register CUDA shared memory region: '${String(args[0])}', GPUs not supported`,
    );
  }
  override unregisterCudaSharedMemory(name?: string): void {
    this.shmCalls.push(['cuda unregister', name]);
  }
  override logSettings(): LogSettingsView {
    return this.log;
  }
  override updateLogSettings(...args: unknown[]): LogSettingsView {
    this.log = { ...this.log, ...(args[0] as LogSettingsUpdate) };
    return this.log;
  }
  override traceSettings(): TraceSettings {
    return this.trace;
  }
  override updateTraceSettings(...args: unknown[]): TraceSettings {
    this.lastTraceUpdate = { model: args[0] as string | undefined, update: args[1] as TraceSettingsUpdate };
    return this.trace;
  }
}
