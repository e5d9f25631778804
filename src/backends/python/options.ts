/**
 * The python backend's settings from `--backend-config=python,<key>=<value>`: Triton's keys (shm sizes,
 * stub timeout, shm name prefix; the message-queue and thread-pool sizes are accepted and unused, as
 * Nereid has neither) plus Nereid's own (the interpreter, the inline/shared-memory threshold, the cache
 * for unpacked execution environments, the execution timeout, the stub memory limit and where execution
 * environments outside the model folder may live, the pipeline depth). Checked once per model load; a bad value fails the
 * load. Two of them a model's config may set for itself (pythonModelSettings), like the javascript
 * backend's parameters:
 *
 * | model parameter | backend-config key | default | meaning |
 * | --- | --- | --- | --- |
 * | `execution_timeout_seconds` | `execution-timeout-seconds` | 300 | longest a batch may go without the model's execute returning or sending a response; then its requests fail and the stub is restarted (0 = never) |
 * | `stub_memory_limit_mb` | `stub-memory-limit-mb` | half the memory | resident memory a stub may reach; then it is restarted, failing the requests it holds (0 = no limit) |
 */
import os from 'node:os';
import path from 'node:path';
import { invalidArg } from '../../common/errors.js';
import type { FrozenModelConfig, ModelConfig } from '../../model-config/model-config.js';

export interface PythonBackendOptions {
  readonly shmDefaultByteSize: number;
  readonly shmGrowthByteSize: number;
  readonly stubTimeoutMs: number;
  readonly shmRegionPrefix: string;
  /** An explicit interpreter for every Python model without EXECUTION_ENV_PATH. */
  readonly pythonExecutable: string | undefined;
  /** Tensors of at least this many bytes go through /dev/shm; smaller ones ride inline on the socket. */
  readonly shmThreshold: number;
  /** Disables /dev/shm altogether (every tensor inline). */
  readonly shmDisabled: boolean;
  /** Where packed EXECUTION_ENV_PATH archives are unpacked (once). */
  readonly envCacheDir: string;
  /** Folders (absolute) an EXECUTION_ENV_PATH outside the model folder may name; empty = none. */
  readonly executionEnvAllowedPaths: readonly string[];
  /** Server-wide execution timeout (ms, 0 = none); a model parameter may set its own. */
  readonly executionTimeoutMs: number;
  /** Server-wide resident-memory limit of a stub (bytes, 0 = none); a model parameter may set its own. */
  readonly stubMemoryLimitBytes: number;
  /** Batches the core may hand one instance at once (InstanceHandle.pipelineDepth; 1 = one at a time). */
  readonly pipelineDepth: number;
}

/** What one model's stubs run with: the server-wide settings, or the model's own parameters. */
export interface PythonModelSettings {
  readonly executionTimeoutMs: number;
  readonly stubMemoryLimitBytes: number;
}

export const DEFAULT_SHM_BYTE_SIZE = 1 << 20;
export const DEFAULT_STUB_TIMEOUT_SECONDS = 30;
export const DEFAULT_SHM_PREFIX = 'triton_python_backend_shm_region_';
/** Chosen by measurement (docs/python-backend.md): below this, inline on the socket is as fast or faster. */
export const DEFAULT_SHM_THRESHOLD = 64 * 1024;
/**
 * Long enough for a slow batch of a CPU-bound model (Triton itself has no such limit), short enough that
 * a hung model comes back within minutes rather than never.
 */
export const DEFAULT_EXECUTION_TIMEOUT_SECONDS = 300;
/**
 * Two batches per instance: the next one waits in the stub's socket while the model runs the current one,
 * so the stub goes straight on to it (no sleep and wake-up, no round trip through the host's scheduler).
 * More buys nothing measurable (docs/python-backend.md) and makes a batch wait longer behind others.
 */
export const DEFAULT_PIPELINE_DEPTH = 2;
/** A bound on pipeline-depth: every pipelined batch holds its inputs in memory until it runs. */
export const MAX_PIPELINE_DEPTH = 16;
const MIB = 1024 * 1024;

/** Half the memory the server may use (its cgroup limit, when lower than the machine's). */
export function defaultStubMemoryLimitBytes(): number {
  const total = os.totalmem();
  const constrained =
    typeof process.constrainedMemory === 'function' ? (process.constrainedMemory() ?? 0) : 0;
  const usable = constrained > 0 && constrained < total ? constrained : total;
  return Math.floor(usable / 2 / MIB) * MIB;
}

const KNOWN_KEYS = new Set([
  'shm-default-byte-size',
  'shm-growth-byte-size',
  'stub-timeout-seconds',
  'shm-region-prefix-name',
  'shm_message_queue_size',
  'thread-pool-size',
  'python-executable',
  'shm-tensor-threshold-byte-size',
  'disable-shm',
  'execution-env-cache-directory',
  'execution-env-allowed-paths',
  'execution-timeout-seconds',
  'stub-memory-limit-mb',
  'pipeline-depth',
  // global keys every backend receives
  'default-max-batch-size',
  'backend-directory',
  'min-compute-capability',
  'auto-complete-config',
]);

function integer(
  config: Readonly<Record<string, string>>,
  key: string,
  fallback: number,
  min: number,
): number {
  const raw = config[key];
  if (raw === undefined) return fallback;
  const v = Number(raw.trim());
  if (!/^\s*\d+\s*$/.test(raw) || !Number.isSafeInteger(v) || v < min) {
    throw invalidArg(`--backend-config=python,${key}='${raw}' must be an integer of at least ${min}`);
  }
  return v;
}

/** Seconds as a number >= 0 (fractions allowed, tests want short timeouts), in ms; undefined when unset. */
function seconds(raw: string | undefined, what: string): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const secs = Number(raw.trim());
  if (!/^\s*\d+(\.\d+)?\s*$/.test(raw) || !Number.isFinite(secs)) {
    throw invalidArg(`${what}='${raw}' must be a number of seconds >= 0`);
  }
  return Math.round(secs * 1000);
}

function megabytes(raw: string | undefined, what: string): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const mb = Number(raw.trim());
  if (!/^\s*\d+\s*$/.test(raw) || !Number.isSafeInteger(mb * MIB)) {
    throw invalidArg(`${what}='${raw}' must be a whole number of MiB >= 0`);
  }
  return mb * MIB;
}

function allowedPaths(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(':').map((p) => {
    const dir = p.trim();
    if (!path.isAbsolute(dir) || dir.includes('\0')) {
      throw invalidArg(
        `--backend-config=python,execution-env-allowed-paths='${raw}' must be absolute folders separated by ':'`,
      );
    }
    return path.resolve(dir);
  });
}

/** The model's own `execution_timeout_seconds` / `stub_memory_limit_mb` parameters over the server's. */
export function pythonModelSettings(
  config: FrozenModelConfig | ModelConfig,
  options: PythonBackendOptions,
): PythonModelSettings {
  const param = (key: string): string | undefined => config.parameters?.[key]?.string_value;
  return {
    executionTimeoutMs:
      seconds(param('execution_timeout_seconds'), "model parameter 'execution_timeout_seconds'") ??
      options.executionTimeoutMs,
    stubMemoryLimitBytes:
      megabytes(param('stub_memory_limit_mb'), "model parameter 'stub_memory_limit_mb'") ??
      options.stubMemoryLimitBytes,
  };
}

function bool(config: Readonly<Record<string, string>>, key: string): boolean {
  const raw = config[key];
  if (raw === undefined) return false;
  if (/^(true|1|yes|on)$/i.test(raw)) return true;
  if (/^(false|0|no|off)$/i.test(raw)) return false;
  throw invalidArg(`--backend-config=python,${key}='${raw}' must be true or false`);
}

export function pythonBackendOptions(
  config: Readonly<Record<string, string>>,
  warn?: (message: string) => void,
): PythonBackendOptions {
  for (const key of Object.keys(config)) {
    if (!KNOWN_KEYS.has(key)) warn?.(`unknown python backend config key '${key}' is ignored`);
  }
  const shmDefaultByteSize = integer(config, 'shm-default-byte-size', DEFAULT_SHM_BYTE_SIZE, 1);
  if (shmDefaultByteSize < DEFAULT_SHM_BYTE_SIZE) {
    throw invalidArg(
      `shm-default-byte-size must be at least ${DEFAULT_SHM_BYTE_SIZE} bytes (1 MiB), got ${shmDefaultByteSize}`,
    );
  }
  const timeoutRaw = config['stub-timeout-seconds'];
  let stubTimeoutMs = DEFAULT_STUB_TIMEOUT_SECONDS * 1000;
  if (timeoutRaw !== undefined) {
    // Triton takes whole seconds; fractions are accepted too (tests want short timeouts).
    const secs = Number(timeoutRaw);
    if (!/^\s*\d+(\.\d+)?\s*$/.test(timeoutRaw) || !(secs > 0)) {
      throw invalidArg(`--backend-config=python,stub-timeout-seconds='${timeoutRaw}' must be a number > 0`);
    }
    stubTimeoutMs = Math.round(secs * 1000);
  }
  const prefix = config['shm-region-prefix-name'] ?? DEFAULT_SHM_PREFIX;
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(prefix)) {
    throw invalidArg(
      `--backend-config=python,shm-region-prefix-name='${prefix}' must be 1-128 characters of letters, digits, '_', '.' or '-'`,
    );
  }
  integer(config, 'shm_message_queue_size', 1000, 1);
  const pipelineDepth = integer(config, 'pipeline-depth', DEFAULT_PIPELINE_DEPTH, 1);
  if (pipelineDepth > MAX_PIPELINE_DEPTH) {
    throw invalidArg(
      `--backend-config=python,pipeline-depth='${config['pipeline-depth']}' must be at most ${MAX_PIPELINE_DEPTH}`,
    );
  }
  integer(config, 'thread-pool-size', 32, 1);
  const exe = config['python-executable']?.trim();
  return {
    shmDefaultByteSize,
    shmGrowthByteSize: integer(config, 'shm-growth-byte-size', DEFAULT_SHM_BYTE_SIZE, 1),
    stubTimeoutMs,
    shmRegionPrefix: prefix,
    pythonExecutable: exe ? exe : undefined,
    shmThreshold: integer(config, 'shm-tensor-threshold-byte-size', DEFAULT_SHM_THRESHOLD, 0),
    shmDisabled: bool(config, 'disable-shm'),
    envCacheDir: config['execution-env-cache-directory'] ?? path.join(os.tmpdir(), 'nereid-python-envs'),
    executionEnvAllowedPaths: allowedPaths(config['execution-env-allowed-paths']),
    executionTimeoutMs:
      seconds(config['execution-timeout-seconds'], '--backend-config=python,execution-timeout-seconds') ??
      DEFAULT_EXECUTION_TIMEOUT_SECONDS * 1000,
    stubMemoryLimitBytes:
      megabytes(config['stub-memory-limit-mb'], '--backend-config=python,stub-memory-limit-mb') ??
      defaultStubMemoryLimitBytes(),
    pipelineDepth,
  };
}
