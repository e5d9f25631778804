/**
 * Session options for a model, read the way Triton's onnxruntime backend reads them: config `parameters`
 * (intra_op_thread_count, inter_op_thread_count, execution_mode, enable_mem_arena, enable_mem_pattern,
 * session.use_device_allocator_for_initializers), `optimization.graph.level`, Nereid's own
 * `execution_thread`, and the thread counts and `execution_thread` from
 * `--backend-config=onnxruntime,...` as a fallback. Pure: the caller passes the CPU count.
 */
import { invalidArg } from '../../common/errors.js';
import type { DeepReadonly, ModelConfig } from '../../model-config/model-config.js';
import type { OrtSessionSettings } from './protocol.js';

export interface SettingsEnvironment {
  /** os.availableParallelism() in production. */
  readonly cpuCount: number;
  /** Server log verbosity > 0: let ORT log warnings too. */
  readonly verbose: boolean;
}

/**
 * Where an instance's session runs: its own worker thread (the default), or the event loop, for models
 * whose runs take microseconds (`parameters { key: "execution_thread" value: { string_value: "event_loop" } }`):
 * the hop to a worker and back costs more than such a run, but a slow run there stalls every request.
 */
export type ExecutionThread = 'worker' | 'event_loop';

export interface SettingsResult {
  readonly settings: OrtSessionSettings;
  readonly executionThread: ExecutionThread;
  /** Things accepted but not honoured, for the load log. */
  readonly warnings: readonly string[];
}

type Config = DeepReadonly<ModelConfig>;

function parameter(config: Config, key: string): string | undefined {
  return config.parameters?.[key]?.string_value;
}

function parseCount(modelName: string, key: string, value: string): number {
  const n = Number(value.trim());
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < 0) {
    throw invalidArg(
      `unable to load model '${modelName}': '${key}' must be a non-negative integer, got '${value}'`,
    );
  }
  return n;
}

function parseBool(modelName: string, key: string, value: string): boolean {
  const v = value.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw invalidArg(`unable to load model '${modelName}': '${key}' must be a boolean, got '${value}'`);
}

/** Triton's mapping of optimization.graph.level: -1 basic, 1 extended, 2 disabled, anything else all. */
export function graphOptimizationLevel(config: Config): OrtSessionSettings['graphOptimizationLevel'] {
  const level = config.optimization?.graph?.level;
  if (level === -1) return 'basic';
  if (level === 1) return 'extended';
  if (level === 2) return 'disabled';
  return 'all';
}

/** Instances of the model that may run at once (sum of instance_group counts, at least 1). */
export function instanceCount(config: Config): number {
  let n = 0;
  for (const g of config.instance_group ?? []) n += Math.max(0, g.count);
  return Math.max(1, n);
}

export function sessionSettings(
  config: Config,
  backendConfig: Readonly<Record<string, string>>,
  env: SettingsEnvironment,
): SettingsResult {
  const name = config.name;
  const warnings: string[] = [];

  const countSetting = (key: string): number | undefined => {
    const fromModel = parameter(config, key);
    if (fromModel !== undefined) return parseCount(name, key, fromModel);
    const fromBackend = backendConfig[key];
    if (fromBackend !== undefined) return parseCount(name, key, fromBackend);
    return undefined;
  };

  // ORT's own default gives every session one intra-op thread per physical core. Each instance owns a
  // session, so N instances on a 2-core machine would run 2N busy (by default spinning) threads on 2
  // cores and slow each other down. Splitting the cores between the instances keeps the total near the
  // core count: one instance still uses every core, two instances get one each and truly run side by side.
  // 0 still means "ORT decides", as in Triton.
  const intra =
    countSetting('intra_op_thread_count') ?? Math.max(1, Math.floor(env.cpuCount / instanceCount(config)));
  const inter = countSetting('inter_op_thread_count');

  const modeText = parameter(config, 'execution_mode') ?? '0';
  if (modeText.trim() !== '0' && modeText.trim() !== '1') {
    throw invalidArg(
      `unable to load model '${name}': expected values for execution_mode are 0 or 1 but got ${modeText}`,
    );
  }

  const settings: OrtSessionSettings = {
    intraOpNumThreads: intra,
    executionMode: modeText.trim() === '1' ? 'parallel' : 'sequential',
    graphOptimizationLevel: graphOptimizationLevel(config),
    logSeverityLevel: env.verbose ? 2 : 3,
    configEntries: {},
  };
  if (inter !== undefined && inter > 0) settings.interOpNumThreads = inter;

  // The model's own choice first; `--backend-config=onnxruntime,execution_thread=event_loop` (or an
  // embedding's backendConfig) sets it for every model that names none: an application whose models are
  // all tiny opts in once, without editing their configs.
  const fromModel = parameter(config, 'execution_thread');
  const threadText = (fromModel ?? backendConfig['execution_thread'] ?? 'worker').trim();
  if (threadText !== 'worker' && threadText !== 'event_loop') {
    const where = fromModel === undefined ? ' (from --backend-config=onnxruntime)' : '';
    throw invalidArg(
      `unable to load model '${name}': 'execution_thread'${where} must be 'worker' or 'event_loop', got '${threadText}'`,
    );
  }
  const executionThread: ExecutionThread = threadText;

  const arena = parameter(config, 'enable_mem_arena');
  if (arena !== undefined) settings.enableCpuMemArena = parseBool(name, 'enable_mem_arena', arena);
  const pattern = parameter(config, 'enable_mem_pattern');
  if (pattern !== undefined) settings.enableMemPattern = parseBool(name, 'enable_mem_pattern', pattern);

  const initializersKey = 'session.use_device_allocator_for_initializers';
  const initializers = parameter(config, initializersKey);
  if (initializers !== undefined) settings.configEntries[initializersKey] = initializers;

  if (parameter(config, 'memory.enable_memory_arena_shrinkage') !== undefined) {
    warnings.push(
      `model '${name}': 'memory.enable_memory_arena_shrinkage' is ignored (onnxruntime-node has no run option for it)`,
    );
  }
  const globalPool = backendConfig['enable-global-threadpool'];
  if (globalPool !== undefined && parseBool(name, 'enable-global-threadpool', globalPool)) {
    warnings.push(
      `'enable-global-threadpool' is ignored: onnxruntime-node has no global thread pool, each instance keeps its own`,
    );
  }
  return { settings, executionThread, warnings };
}
