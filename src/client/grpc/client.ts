/**
 * GrpcClient: Triton's gRPC protocol (`inference.GRPCInferenceService`) over @grpc/grpc-js, with the same
 * calls and answers as HttpClient plus streamInfer() for ModelStreamInfer. Messages are protobufjs types
 * loaded from proto/; answers are normalised to the HTTP JSON shapes of types.ts. gRPC failures become
 * NereidClientError with the gRPC code, the server's message and the equivalent HTTP status.
 */
import {
  Client,
  credentials,
  Metadata,
  type ChannelCredentials,
  type ChannelOptions,
  type ServiceError,
} from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import { freezeModelConfig, modelConfigToJson, parseModelConfigJson } from '../../model-config/index.js';
import { indexEntries, loadParameters, modelMetadata, serverMetadata } from '../answers.js';
import { GrpcStatus, NereidClientError } from '../errors.js';
import type { InferInput } from '../infer-input.js';
import type { InferResult } from '../infer-result.js';
import { malformed, versionString } from '../request.js';
import type {
  CallOptions,
  CudaSharedMemoryStatus,
  InferenceClient,
  InferOptions,
  LoadModelOptions,
  LogSettings,
  ModelConfigJson,
  ModelMetadata,
  ModelStatistics,
  RepositoryIndexEntry,
  RepositoryIndexOptions,
  ServerMetadata,
  SystemSharedMemoryStatus,
  TraceSettings,
  TraceSettingsUpdate,
  UnloadModelOptions,
} from '../types.js';
import {
  cudaRegions,
  logSettingsOf,
  modelStatistics,
  systemRegions,
  traceSettingsOf,
  type Obj,
} from './answers.js';
import { decodeInferResponse, encodeInferRequest, type ModelInferResponseMsg } from './infer-codec.js';
import { encodeMessage, messageType, SERVICE } from './proto.js';
import { InferStream, type ModelStreamInferResponseMsg } from './stream.js';

export interface GrpcClientOptions {
  /** Default: insecure (plain-text HTTP/2), as Triton's default endpoint. */
  readonly credentials?: ChannelCredentials;
  /** grpc-js channel options; message size limits default to unlimited (Triton's server has none). */
  readonly channelOptions?: ChannelOptions;
  /** Metadata sent with every call. */
  readonly headers?: Readonly<Record<string, string>>;
}

export type StreamOptions = CallOptions;

/** Conversion for answers read as numbers (counters, sizes, shapes). */
const AS_NUMBERS: protobuf.IConversionOptions = {
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
  objects: true,
};

/** Conversion for the model config: exact 64-bit strings and only fields that are set, as proto3 JSON. */
const AS_PROTO_JSON: protobuf.IConversionOptions = { longs: String, enums: String, bytes: String };

function checkName(name: string, what = 'name'): string {
  if (typeof name !== 'string' || name === '') throw new TypeError(`${what} must be a non-empty string`);
  return name;
}

function target(address: string): string {
  checkName(address, 'address');
  return address.replace(/^(grpc|http):\/\//i, '').replace(/\/+$/, '');
}

export class GrpcClient implements InferenceClient {
  readonly #client: Client;
  readonly #headers: Readonly<Record<string, string>>;

  /** `address`: `host:port`, as Triton's clients take it. */
  constructor(address: string, options: GrpcClientOptions = {}) {
    this.#client = new Client(target(address), options.credentials ?? credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      ...options.channelOptions,
    });
    this.#headers = options.headers ?? {};
  }

  async isServerLive(options?: CallOptions): Promise<boolean> {
    return (await this.#unary('ServerLive', {}, options)).live === true;
  }

  async isServerReady(options?: CallOptions): Promise<boolean> {
    return (await this.#unary('ServerReady', {}, options)).ready === true;
  }

  async isModelReady(name: string, version?: string | number, options?: CallOptions): Promise<boolean> {
    const request = { name: checkName(name), version: versionString(version) };
    try {
      return (await this.#unary('ModelReady', request, options)).ready === true;
    } catch (err) {
      // As over HTTP, "no such model" is an answer (not ready), not a failure.
      if (err instanceof NereidClientError && err.grpcCode === GrpcStatus.NOT_FOUND) return false;
      throw err;
    }
  }

  async serverMetadata(options?: CallOptions): Promise<ServerMetadata> {
    return serverMetadata(await this.#unary('ServerMetadata', {}, options));
  }

  async modelMetadata(
    name: string,
    version?: string | number,
    options?: CallOptions,
  ): Promise<ModelMetadata> {
    const request = { name: checkName(name), version: versionString(version) };
    return modelMetadata(await this.#unary('ModelMetadata', request, options));
  }

  async modelConfig(
    name: string,
    version?: string | number,
    options?: CallOptions,
  ): Promise<ModelConfigJson> {
    const request = { name: checkName(name), version: versionString(version) };
    const res = await this.#unary('ModelConfig', request, options, AS_PROTO_JSON);
    // The same JSON the HTTP endpoint prints (Triton's printer: every scalar, 64-bit rules), via the one
    // model-config schema, so both clients answer alike.
    try {
      const cfg = parseModelConfigJson(JSON.stringify(res.config ?? {}), 'ModelConfigResponse');
      return modelConfigToJson(freezeModelConfig(cfg));
    } catch (err) {
      throw malformed(`the model config does not read back: ${(err as Error).message}`);
    }
  }

  async infer(
    model: string,
    inputs: readonly InferInput[],
    options: InferOptions = {},
  ): Promise<InferResult> {
    const request = encodeInferRequest(checkName(model, 'model name'), inputs, options);
    const type = messageType('ModelInferResponse');
    return this.#call(
      'ModelInfer',
      request,
      (buf) => decodeInferResponse(type.decode(buf) as unknown as ModelInferResponseMsg),
      options,
    );
  }

  /** Opens a ModelStreamInfer stream: send() requests, iterate responses, end() when done. */
  streamInfer(options: StreamOptions = {}): InferStream {
    const reqType = messageType('ModelInferRequest');
    const resType = messageType('ModelStreamInferResponse');
    const call = this.#client.makeBidiStreamRequest(
      `/${SERVICE}/ModelStreamInfer`,
      (msg: object) => encodeMessage(reqType, msg),
      (buf: Buffer) => resType.decode(buf) as unknown as ModelStreamInferResponseMsg,
      this.#metadata(options),
    );
    return new InferStream(call, options.signal);
  }

  async modelStatistics(
    name?: string,
    version?: string | number,
    options?: CallOptions,
  ): Promise<ModelStatistics[]> {
    const request = { name: name ?? '', version: versionString(version) };
    const res = await this.#unary('ModelStatistics', request, options);
    return ((res.model_stats ?? []) as Obj[]).map(modelStatistics);
  }

  async repositoryIndex(options: RepositoryIndexOptions = {}): Promise<RepositoryIndexEntry[]> {
    const res = await this.#unary(
      'RepositoryIndex',
      { repository_name: '', ready: options.ready ?? false },
      options,
    );
    return indexEntries(res.models ?? []);
  }

  async loadModel(name: string, options: LoadModelOptions = {}): Promise<void> {
    const parameters: Record<string, object> = {};
    for (const [k, v] of Object.entries(loadParameters(options, (b) => b))) {
      parameters[k] = typeof v === 'string' ? { string_param: v } : { bytes_param: v };
    }
    await this.#unary(
      'RepositoryModelLoad',
      { repository_name: '', model_name: checkName(name), parameters },
      options,
    );
  }

  async unloadModel(name: string, options: UnloadModelOptions = {}): Promise<void> {
    const parameters = { unload_dependents: { bool_param: options.unloadDependents ?? false } };
    await this.#unary(
      'RepositoryModelUnload',
      { repository_name: '', model_name: checkName(name), parameters },
      options,
    );
  }

  async systemSharedMemoryStatus(
    region?: string,
    options?: CallOptions,
  ): Promise<SystemSharedMemoryStatus[]> {
    const res = await this.#unary('SystemSharedMemoryStatus', { name: region ?? '' }, options);
    return systemRegions(res);
  }

  async registerSystemSharedMemory(
    region: string,
    key: string,
    byteSize: number,
    offset = 0,
    options?: CallOptions,
  ): Promise<void> {
    const request = { name: checkName(region), key, offset, byte_size: byteSize };
    await this.#unary('SystemSharedMemoryRegister', request, options);
  }

  async unregisterSystemSharedMemory(region?: string, options?: CallOptions): Promise<void> {
    await this.#unary('SystemSharedMemoryUnregister', { name: region ?? '' }, options);
  }

  async cudaSharedMemoryStatus(region?: string, options?: CallOptions): Promise<CudaSharedMemoryStatus[]> {
    const res = await this.#unary('CudaSharedMemoryStatus', { name: region ?? '' }, options);
    return cudaRegions(res);
  }

  async registerCudaSharedMemory(
    region: string,
    rawHandle: Uint8Array,
    deviceId: number,
    byteSize: number,
    options?: CallOptions,
  ): Promise<void> {
    const request = {
      name: checkName(region),
      raw_handle: rawHandle,
      device_id: deviceId,
      byte_size: byteSize,
    };
    await this.#unary('CudaSharedMemoryRegister', request, options);
  }

  async unregisterCudaSharedMemory(region?: string, options?: CallOptions): Promise<void> {
    await this.#unary('CudaSharedMemoryUnregister', { name: region ?? '' }, options);
  }

  async logSettings(options?: CallOptions): Promise<LogSettings> {
    return logSettingsOf(await this.#unary('LogSettings', { settings: {} }, options));
  }

  async updateLogSettings(settings: Readonly<LogSettings>, options?: CallOptions): Promise<LogSettings> {
    const values: Record<string, object> = {};
    for (const [k, v] of Object.entries(settings)) {
      if (typeof v === 'boolean') values[k] = { bool_param: v };
      else if (typeof v === 'number') values[k] = { uint32_param: v };
      else if (typeof v === 'string') values[k] = { string_param: v };
    }
    return logSettingsOf(await this.#unary('LogSettings', { settings: values }, options));
  }

  async traceSettings(model?: string, options?: CallOptions): Promise<TraceSettings> {
    return traceSettingsOf(
      await this.#unary('TraceSetting', { settings: {}, model_name: model ?? '' }, options),
    );
  }

  async updateTraceSettings(
    settings: Readonly<TraceSettingsUpdate>,
    model?: string,
    options?: CallOptions,
  ): Promise<TraceSettings> {
    const values: Record<string, { value: string[] }> = {};
    for (const [k, v] of Object.entries(settings)) {
      // An empty list clears a model's setting back to the global value (HTTP's null).
      values[k] = { value: v === null ? [] : Array.isArray(v) ? v : [String(v)] };
    }
    const res = await this.#unary('TraceSetting', { settings: values, model_name: model ?? '' }, options);
    return traceSettingsOf(res);
  }

  close(): void {
    this.#client.close();
  }

  #metadata(options: CallOptions | undefined): Metadata {
    const md = new Metadata();
    for (const [k, v] of Object.entries(this.#headers)) md.set(k, v);
    for (const [k, v] of Object.entries(options?.headers ?? {})) md.set(k, v);
    return md;
  }

  /** A unary call whose answer is converted to a plain object. */
  #unary(
    rpc: string,
    request: object,
    options: CallOptions | undefined,
    conversion: protobuf.IConversionOptions = AS_NUMBERS,
  ): Promise<Obj> {
    const resType = messageType(`${rpc}Response`);
    return this.#call(rpc, request, (buf) => resType.toObject(resType.decode(buf), conversion), options);
  }

  #call<T>(
    rpc: string,
    request: object,
    decode: (buf: Buffer) => T,
    options: CallOptions | undefined,
  ): Promise<T> {
    const reqType = messageType(`${rpc}Request`);
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<T>((resolve, reject) => {
      let decodeError: unknown;
      const call = this.#client.makeUnaryRequest<object, T | undefined>(
        `/${SERVICE}/${rpc}`,
        (msg) => encodeMessage(reqType, msg),
        (buf) => {
          try {
            return decode(buf);
          } catch (err) {
            decodeError = err;
            return undefined;
          }
        },
        request,
        this.#metadata(options),
        {},
        (err: ServiceError | null, value?: T) => {
          signal?.removeEventListener('abort', onAbort);
          if (err) {
            reject(
              signal?.aborted ? abortReason(signal) : NereidClientError.fromGrpc(err.code, err.details, err),
            );
          } else if (decodeError !== undefined || value === undefined) {
            reject(
              decodeError instanceof NereidClientError
                ? decodeError
                : malformed(`${rpc} answer: ${decodeError instanceof Error ? decodeError.message : 'empty'}`),
            );
          } else {
            resolve(value);
          }
        },
      );
      const onAbort = (): void => call.cancel();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
}
