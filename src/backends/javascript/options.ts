/**
 * Settings of the javascript backend, from the model config's `parameters` (per model) over
 * `--backend-config=javascript,<key>=<value>` (server-wide), over the defaults:
 *
 * | model parameter | backend-config key | default | meaning |
 * | --- | --- | --- | --- |
 * | `execution_timeout_ms` | `execution-timeout-ms` | 60000 | longest a batch may go without finishing or sending a response; then its requests fail and the worker is restarted (0 = never) |
 * | `initialize_timeout_ms` | `initialize-timeout-ms` | 30000 | bound on initialize(), finalize() and autoCompleteConfig() (0 = never) |
 * | `max_old_generation_mb` | `max-old-generation-mb` | (Node's) | V8 heap limit of each worker: a model that leaks crashes its worker, not the server |
 */
import { invalidArg } from '../../common/errors.js';
import type { FrozenModelConfig, ModelConfig } from '../../model-config/model-config.js';

export interface JavascriptOptions {
  readonly executionTimeoutMs: number;
  readonly initializeTimeoutMs: number;
  readonly maxOldGenerationSizeMb: number | undefined;
}

export const DEFAULT_EXECUTION_TIMEOUT_MS = 60_000;
export const DEFAULT_INITIALIZE_TIMEOUT_MS = 30_000;

function integer(text: string | undefined, what: string): number | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  if (!/^\d+$/.test(text.trim())) throw invalidArg(`${what} must be an integer >= 0, got '${text}'`);
  const n = Number(text.trim());
  if (!Number.isSafeInteger(n)) throw invalidArg(`${what} is too large: '${text}'`);
  return n;
}

export function javascriptOptions(
  config: FrozenModelConfig | ModelConfig,
  backendConfig: Readonly<Record<string, string>>,
): JavascriptOptions {
  const param = (key: string): string | undefined => config.parameters?.[key]?.string_value;
  const pick = (paramKey: string, configKey: string): number | undefined =>
    integer(param(paramKey), `model parameter '${paramKey}'`) ??
    integer(backendConfig[configKey], `--backend-config=javascript,${configKey}`);
  const heap = pick('max_old_generation_mb', 'max-old-generation-mb');
  return {
    executionTimeoutMs: pick('execution_timeout_ms', 'execution-timeout-ms') ?? DEFAULT_EXECUTION_TIMEOUT_MS,
    initializeTimeoutMs:
      pick('initialize_timeout_ms', 'initialize-timeout-ms') ?? DEFAULT_INITIALIZE_TIMEOUT_MS,
    maxOldGenerationSizeMb: heap === 0 ? undefined : heap,
  };
}
