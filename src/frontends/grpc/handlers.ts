/**
 * One handler per cold rpc of `inference.GRPCInferenceService` plus `grpc.health.v1.Health/Check`. Handlers
 * only translate: a decoded request (protobufjs plain object) → InferenceServerApi calls → a response
 * object; they throw NereidError and the server's one funnel (status.ts) turns that into the status.
 * Texts of errors raised here are Triton's (src/grpc/grpc_server.cc).
 */
import { invalidArg, unsupported } from '../../common/errors.js';
import type {
  InferenceServerApi,
  LoadOptions,
  LogSettingsUpdate,
  TraceSettingsUpdate,
} from '../../core/index.js';
import type { Plain } from './messages.js';

export interface ColdRpc {
  /** Full protobuf type names of the request and response. */
  readonly request: string;
  readonly response: string;
  handle(api: InferenceServerApi, request: Plain): object | Promise<object>;
}

const SERVICE = '/inference.GRPCInferenceService/';
const T = (name: string): string => `inference.${name}`;

function rpc<Req>(
  name: string,
  handle: (api: InferenceServerApi, req: Req) => object | Promise<object>,
): ColdRpc {
  return {
    request: T(`${name}Request`),
    response: T(`${name}Response`),
    handle: (api, request) => handle(api, request as Req),
  };
}

interface NameVersion {
  name: string;
  version: string;
}

/** `version` '' selects the default version, as the api expects undefined. */
const versionOf = (v: string): string | undefined => (v === '' ? undefined : v);

/** A oneof-valued parameter as protobufjs plain data (`parameter_choice` names the member set). */
interface PlainParameter {
  parameter_choice?: string;
  bool_param?: boolean;
  int64_param?: string;
  string_param?: string;
  bytes_param?: Buffer;
  uint32_param?: number;
}

interface RepositoryRequest {
  repository_name: string;
  model_name: string;
  parameters: Record<string, PlainParameter>;
}

function rejectRepositoryName(req: { repository_name: string }): void {
  if (req.repository_name !== '') throw unsupported("'repository_name' specification is not supported");
}

function loadOptions(params: Record<string, PlainParameter>): LoadOptions | undefined {
  let config: string | undefined;
  let files: Map<string, Buffer> | undefined;
  for (const [key, p] of Object.entries(params)) {
    if (key === 'config') {
      if (p.parameter_choice !== 'string_param') {
        throw invalidArg(`invalid value type for load parameter '${key}', expected string_param.`);
      }
      config = p.string_param!;
    } else if (key.startsWith('file:')) {
      if (p.parameter_choice !== 'bytes_param') {
        throw invalidArg(`invalid value type for load parameter '${key}', expected bytes_param.`);
      }
      (files ??= new Map()).set(key.slice('file:'.length), Buffer.from(p.bytes_param!));
    } else {
      throw invalidArg(`unrecognized load parameter '${key}'.`);
    }
  }
  if (config === undefined && files === undefined) return undefined;
  return { ...(config !== undefined && { config }), ...(files !== undefined && { files }) };
}

/** A uint64 (decimal string) that must fit a number, e.g. a shared-memory offset. */
function safeUint(field: string, v: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n))
    throw invalidArg(`'${field}' ${v} is larger than this server supports (2^53)`);
  return n;
}

interface TraceSettingRequest {
  settings: Record<string, { value: string[] }>;
  model_name: string;
}

function traceUpdate(settings: TraceSettingRequest['settings']): TraceSettingsUpdate {
  const update: TraceSettingsUpdate = {};
  for (const [key, { value }] of Object.entries(settings)) {
    // No value clears a model's setting (back to the global one), as in Triton.
    update[key] = value.length === 0 ? null : value.length === 1 && key !== 'trace_level' ? value[0] : value;
  }
  return update;
}

function logUpdate(settings: Record<string, PlainParameter>): LogSettingsUpdate {
  const update: Record<string, boolean | number | string> = {};
  for (const [key, p] of Object.entries(settings)) {
    switch (key) {
      case 'log_file':
        throw unsupported('log file location can not be updated through network protocol');
      case 'log_info':
      case 'log_warning':
      case 'log_error':
        if (p.parameter_choice !== 'bool_param') throw invalidArg(`expect boolean for '${key}'`);
        update[key] = p.bool_param!;
        break;
      case 'log_verbose_level':
        if (p.parameter_choice !== 'uint32_param') throw invalidArg(`expect int32 for '${key}'`);
        update[key] = p.uint32_param!;
        break;
      case 'log_format':
        if (p.parameter_choice !== 'string_param') throw invalidArg(`expect string for '${key}'`);
        update[key] = p.string_param!;
        break;
      default:
      // Triton ignores keys it does not know.
    }
  }
  return update;
}

/** Every cold rpc by HTTP/2 path. */
export const COLD_RPCS: ReadonlyMap<string, ColdRpc> = new Map<string, ColdRpc>([
  [SERVICE + 'ServerLive', rpc('ServerLive', (api) => ({ live: api.isLive() }))],
  [SERVICE + 'ServerReady', rpc('ServerReady', (api) => ({ ready: api.isReady() }))],
  [
    SERVICE + 'ModelReady',
    rpc<NameVersion>('ModelReady', (api, r) => ({ ready: api.isModelReady(r.name, versionOf(r.version)) })),
  ],
  [SERVICE + 'ServerMetadata', rpc('ServerMetadata', (api) => api.serverMetadata())],
  [
    SERVICE + 'ModelMetadata',
    rpc<NameVersion>('ModelMetadata', (api, r) => api.modelMetadata(r.name, versionOf(r.version))),
  ],
  [
    SERVICE + 'ModelConfig',
    rpc<NameVersion>('ModelConfig', (api, r) => ({
      config: api.modelConfigJson(r.name, versionOf(r.version)),
    })),
  ],
  [
    SERVICE + 'ModelStatistics',
    rpc<NameVersion>('ModelStatistics', (api, r) => ({
      model_stats: api.modelStatistics(r.name === '' ? undefined : r.name, versionOf(r.version)),
    })),
  ],
  [
    SERVICE + 'RepositoryIndex',
    rpc<{ repository_name: string; ready: boolean }>('RepositoryIndex', (api, r) => {
      rejectRepositoryName(r);
      return {
        models: api.repositoryIndex(r.ready).map((e) => ({
          name: e.name,
          version: e.version ?? '',
          // A model never loaded has no state in Triton's index (empty on the wire), as over HTTP.
          state: e.state === 'UNKNOWN' ? '' : e.state,
          reason: e.reason,
        })),
      };
    }),
  ],
  [
    SERVICE + 'RepositoryModelLoad',
    rpc<RepositoryRequest>('RepositoryModelLoad', async (api, r) => {
      rejectRepositoryName(r);
      await api.loadModel(r.model_name, loadOptions(r.parameters));
      return {};
    }),
  ],
  [
    SERVICE + 'RepositoryModelUnload',
    rpc<RepositoryRequest>('RepositoryModelUnload', async (api, r) => {
      rejectRepositoryName(r);
      const p = r.parameters.unload_dependents;
      if (p !== undefined && p.parameter_choice !== 'bool_param') {
        throw invalidArg("invalid value type for 'unload_dependents' parameter, expected bool_param.");
      }
      await api.unloadModel(r.model_name, { unloadDependents: p?.bool_param === true });
      return {};
    }),
  ],
  [
    SERVICE + 'SystemSharedMemoryStatus',
    rpc<{ name: string }>('SystemSharedMemoryStatus', (api, r) => {
      const regions: Record<string, object> = {};
      for (const s of api.systemSharedMemoryStatus(r.name === '' ? undefined : r.name)) regions[s.name] = s;
      return { regions };
    }),
  ],
  [
    SERVICE + 'SystemSharedMemoryRegister',
    rpc<{ name: string; key: string; offset: string; byte_size: string }>(
      'SystemSharedMemoryRegister',
      async (api, r) => {
        await api.registerSystemSharedMemory(
          r.name,
          r.key,
          safeUint('offset', r.offset),
          safeUint('byte_size', r.byte_size),
        );
        return {};
      },
    ),
  ],
  [
    SERVICE + 'SystemSharedMemoryUnregister',
    rpc<{ name: string }>('SystemSharedMemoryUnregister', async (api, r) => {
      await api.unregisterSystemSharedMemory(r.name === '' ? undefined : r.name);
      return {};
    }),
  ],
  [
    SERVICE + 'CudaSharedMemoryStatus',
    rpc<{ name: string }>('CudaSharedMemoryStatus', (api, r) => {
      const regions: Record<string, object> = {};
      for (const s of api.cudaSharedMemoryStatus(r.name === '' ? undefined : r.name)) regions[s.name] = s;
      return { regions };
    }),
  ],
  [
    SERVICE + 'CudaSharedMemoryRegister',
    rpc<{ name: string; raw_handle: Buffer; device_id: string; byte_size: string }>(
      'CudaSharedMemoryRegister',
      (api, r) => {
        // Triton's gRPC path takes the fields as they come; the core refuses (no GPU).
        api.registerCudaSharedMemory(r.name, r.raw_handle, Number(r.device_id), Number(r.byte_size));
        return {};
      },
    ),
  ],
  [
    SERVICE + 'CudaSharedMemoryUnregister',
    rpc<{ name: string }>('CudaSharedMemoryUnregister', (api, r) => {
      api.unregisterCudaSharedMemory(r.name === '' ? undefined : r.name);
      return {};
    }),
  ],
  [
    SERVICE + 'TraceSetting',
    rpc<TraceSettingRequest>('TraceSetting', (api, r) => {
      const model = r.model_name === '' ? undefined : r.model_name;
      const current =
        Object.keys(r.settings).length === 0
          ? api.traceSettings(model)
          : api.updateTraceSettings(model, traceUpdate(r.settings));
      const settings: Record<string, { value: string[] }> = {};
      for (const [key, v] of Object.entries(current)) settings[key] = { value: Array.isArray(v) ? v : [v] };
      return { settings };
    }),
  ],
  [
    SERVICE + 'LogSettings',
    rpc<{ settings: Record<string, PlainParameter> }>('LogSettings', (api, r) => {
      const s =
        Object.keys(r.settings).length === 0
          ? api.logSettings()
          : api.updateLogSettings(logUpdate(r.settings));
      return {
        settings: {
          log_file: { string_param: s.log_file },
          log_info: { bool_param: s.log_info },
          log_warning: { bool_param: s.log_warning },
          log_error: { bool_param: s.log_error },
          log_verbose_level: { uint32_param: s.log_verbose_level },
          log_format: { string_param: s.log_format },
        },
      };
    }),
  ],
  [
    '/grpc.health.v1.Health/Check',
    {
      request: 'grpc.health.v1.HealthCheckRequest',
      response: 'grpc.health.v1.HealthCheckResponse',
      handle: (api) => ({ status: api.isReady() ? 'SERVING' : 'NOT_SERVING' }),
    },
  ],
]);
