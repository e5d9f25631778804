/**
 * Settings of the model repository manager (the repository flags of tritonserver) plus the logger and
 * config parsers it uses. Options are validated and frozen once in the constructor; nothing here reads
 * the environment.
 */
import path from 'node:path';
import os from 'node:os';
import type { Logger } from '../../common/logger.js';
import { silentLogger } from '../../common/logger.js';
import { invalidArg } from '../../common/errors.js';
import { parseModelConfigJson, parseModelConfigText } from '../../model-config/index.js';
import type { ModelConfig } from '../../model-config/model-config.js';
import { isObjectStoreUrl, parseLocation } from '../storage/location.js';
import type { RepositoryStorage } from '../storage/storage.js';
import { msg } from './messages.js';

export type ModelControlMode = 'none' | 'poll' | 'explicit' | 'on-demand';

/**
 * The status of a load request the repository refuses before any version loads (a config override that is
 * not JSON, a bad `file:` parameter, a model no repository has): 'triton' answers INTERNAL (HTTP 500), as
 * Triton does and its client examples and QA tests expect (simple_grpc_model_control.py,
 * test_load_oversized_file_parameter); 'client-error' answers what the mistake is, INVALID_ARG (400) or
 * NOT_FOUND (404). `--load-error-status`, docs/from-triton.md.
 */
export type LoadErrorStatus = 'triton' | 'client-error';

/** Parses config.pbtxt text (model-config's parseModelConfigText). */
export type ConfigTextParser = (text: string, fileName: string) => ModelConfig;
/** Parses a load request's `config` JSON (model-config's parseModelConfigJson). */
export type ConfigJsonParser = (json: string, origin: string) => ModelConfig;

export interface RepositoryOptions {
  /**
   * `--model-repository` (repeatable): local folders (resolved to absolute paths) and `s3://`, `gs://`,
   * `as://` URLs (in canonical form); duplicates collapse.
   */
  readonly repositoryPaths: readonly string[];
  /**
   * Opens repositories (local folders and object stores, their credentials and download cache). Default:
   * one owned by the manager with the SDKs' default credentials, closed with it.
   */
  readonly storage?: RepositoryStorage;
  /** `--model-control-mode`, default 'none'. */
  readonly controlMode?: ModelControlMode;
  /** `--load-model` (explicit and on-demand modes); `['*']` loads every model. */
  readonly startupModels?: readonly string[];
  /** `--max-loaded-models` (on-demand mode): most models loaded at once; 0 (default) = no limit. */
  readonly maxLoadedModels?: number;
  /** `--model-memory-budget` in bytes (on-demand mode): most resident bytes of loaded models; 0 = none. */
  readonly memoryBudgetBytes?: number;
  /** `--model-load-wait-secs` in ms (on-demand mode): longest a request waits for its model; default 60 s. */
  readonly loadWaitMs?: number;
  /** `--model-config-name`: prefer `<model>/configs/<name>.pbtxt` when it exists. */
  readonly modelConfigName?: string;
  /** `--repository-poll-secs`, default 15 (poll mode only); 0 = no timer, rescans only on pollOnce(). */
  readonly repositoryPollSecs?: number;
  /**
   * `--watch` (poll mode, local folders only): file events trigger a poll at once, and a model whose load
   * failed is not tried again until its files change.
   */
  readonly watch?: boolean;
  /** `--watch-max-directories`, default 1024: most folders watched. */
  readonly watchMaxDirectories?: number;
  /** `--model-load-thread-count`, default 4: loader calls that may run at once. */
  readonly modelLoadThreadCount?: number;
  /** `--load-error-status`, default 'triton'. */
  readonly loadErrorStatus?: LoadErrorStatus;
  /** Largest config file read (bytes), default 1 MiB. */
  readonly maxConfigFileBytes?: number;
  /** Where file-override models are materialised, default os.tmpdir(). */
  readonly tempDirectory?: string;
  readonly log?: Logger;
  /** Defaults to model-config's parseModelConfigText (tests may pass a stand-in). */
  readonly parseConfigText?: ConfigTextParser;
  /** Defaults to model-config's parseModelConfigJson (tests may pass a stand-in). */
  readonly parseConfigJson?: ConfigJsonParser;
}

export interface ResolvedRepositoryOptions {
  readonly repositoryPaths: readonly string[];
  /** Canonical repository path → the value as configured (credentials match what was written). */
  readonly repositorySources: ReadonlyMap<string, string>;
  readonly controlMode: ModelControlMode;
  readonly startupModels: readonly string[];
  readonly maxLoadedModels: number;
  readonly memoryBudgetBytes: number;
  readonly loadWaitMs: number;
  readonly modelConfigName: string;
  readonly repositoryPollSecs: number;
  readonly watch: boolean;
  readonly watchMaxDirectories: number;
  readonly modelLoadThreadCount: number;
  readonly loadErrorStatus: LoadErrorStatus;
  readonly maxConfigFileBytes: number;
  readonly tempDirectory: string;
  readonly log: Logger;
  readonly parseConfigText: ConfigTextParser;
  readonly parseConfigJson: ConfigJsonParser;
}

export const DEFAULT_POLL_SECS = 15;
export const DEFAULT_LOAD_THREADS = 4;
export const DEFAULT_WATCH_MAX_DIRECTORIES = 1024;
export const DEFAULT_MAX_CONFIG_BYTES = 1024 * 1024;
export const DEFAULT_LOAD_WAIT_MS = 60_000;

function intAtLeast(min: number, value: number | undefined, fallback: number, flag: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min) {
    throw invalidArg(`${flag} must be an integer >= ${min}`);
  }
  return value;
}

export function resolveOptions(options: RepositoryOptions): ResolvedRepositoryOptions {
  const mode = options.controlMode ?? 'none';
  if (mode !== 'none' && mode !== 'poll' && mode !== 'explicit' && mode !== 'on-demand') {
    throw invalidArg(`unexpected model control mode '${String(mode)}'`);
  }
  const sources = new Map<string, string>();
  for (const p of options.repositoryPaths) {
    const canonical = isObjectStoreUrl(p) ? parseLocation(p).href : path.resolve(p);
    if (!sources.has(canonical)) sources.set(canonical, p);
  }
  const paths = [...sources.keys()];
  if (paths.length === 0) throw invalidArg('at least one model repository path is required');
  const startup = [...(options.startupModels ?? [])];
  if (startup.includes('*') && startup.length > 1) throw msg.wildcardNotAlone();
  const configName = options.modelConfigName ?? '';
  if (
    configName.includes('/') ||
    configName.includes('\\') ||
    configName.includes('\0') ||
    configName === '..'
  ) {
    throw invalidArg(`invalid model config name '${configName}'`);
  }
  if (mode !== 'on-demand' && ((options.maxLoadedModels ?? 0) > 0 || (options.memoryBudgetBytes ?? 0) > 0)) {
    throw invalidArg(
      `--max-loaded-models and --model-memory-budget need --model-control-mode=on-demand, got '${mode}'`,
    );
  }
  if (mode === 'on-demand' && startup.includes('*')) {
    throw invalidArg(
      "--load-model='*' cannot be used with --model-control-mode=on-demand: name the models to pin",
    );
  }
  const watch = options.watch === true;
  if (watch && mode !== 'poll') {
    throw invalidArg(`--watch needs --model-control-mode=poll, got '${mode}'`);
  }
  const remote = paths.filter(isObjectStoreUrl);
  if (watch && remote.length > 0) {
    throw invalidArg(
      `--watch works on local folders only; '${remote[0]}' is an object store: use --model-control-mode=poll with --repository-poll-secs for it`,
    );
  }
  return Object.freeze({
    repositoryPaths: Object.freeze(paths),
    repositorySources: sources,
    controlMode: mode,
    startupModels: Object.freeze(startup),
    maxLoadedModels: intAtLeast(0, options.maxLoadedModels, 0, '--max-loaded-models'),
    memoryBudgetBytes: intAtLeast(0, options.memoryBudgetBytes, 0, '--model-memory-budget'),
    loadWaitMs: intAtLeast(0, options.loadWaitMs, DEFAULT_LOAD_WAIT_MS, '--model-load-wait-secs'),
    modelConfigName: configName,
    repositoryPollSecs: intAtLeast(
      0,
      options.repositoryPollSecs,
      DEFAULT_POLL_SECS,
      '--repository-poll-secs',
    ),
    watch,
    watchMaxDirectories: intAtLeast(
      1,
      options.watchMaxDirectories,
      DEFAULT_WATCH_MAX_DIRECTORIES,
      '--watch-max-directories',
    ),
    loadErrorStatus: options.loadErrorStatus ?? 'triton',
    modelLoadThreadCount: intAtLeast(
      1,
      options.modelLoadThreadCount,
      DEFAULT_LOAD_THREADS,
      '--model-load-thread-count',
    ),
    maxConfigFileBytes: intAtLeast(
      1,
      options.maxConfigFileBytes,
      DEFAULT_MAX_CONFIG_BYTES,
      'maxConfigFileBytes',
    ),
    tempDirectory: path.resolve(options.tempDirectory ?? os.tmpdir()),
    log: options.log ?? silentLogger(),
    parseConfigText: options.parseConfigText ?? parseModelConfigText,
    parseConfigJson: options.parseConfigJson ?? defaultJsonParser,
  });
}

const defaultJsonParser: ConfigJsonParser = (json, origin) => parseModelConfigJson(json, origin);
