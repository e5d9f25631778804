/**
 * Test support for the repository manager: a VersionLoader fake that records calls and can be told to
 * fail or to wait, LoadedVersions whose unload() drains simulated in-flight requests, a JSON stand-in for
 * the config parsers, and helpers that write model folders into temporary repositories.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { NereidError, invalidArg } from '../../common/errors.js';
import type { FrozenModelConfig, ModelConfig } from '../../model-config/model-config.js';
import type { ModelMetadata } from '../types.js';
import type { LoadedVersion, ModelLocation, VersionLoader, VersionLocation } from './contract.js';

export interface Deferred<T = void> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every queued promise callback run. */
export async function flush(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Waits (bounded) until `cond` holds; for steps that need real file-system I/O to progress. */
export async function waitFor(cond: () => boolean, what = 'condition', timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise<void>((r) => setTimeout(r, 1));
  }
}

export function baseConfig(name = ''): ModelConfig {
  return {
    name,
    platform: '',
    backend: '',
    runtime: '',
    version_policy: {},
    max_batch_size: 0,
    input: [],
    output: [],
    batch_input: [],
    batch_output: [],
    instance_group: [],
    default_model_filename: '',
    cc_model_filenames: {},
    metric_tags: {},
    parameters: {},
    model_warmup: [],
  };
}

/** Stand-in for parseModelConfigText: test configs are written as JSON. */
export function parseTestConfig(text: string, fileName: string): ModelConfig {
  let parsed: unknown;
  try {
    parsed = text.trim() === '' ? {} : JSON.parse(text);
  } catch (err) {
    throw invalidArg(`failed to parse ${fileName}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalidArg(`failed to parse ${fileName}: not an object`);
  }
  return { ...baseConfig(), ...(parsed as Partial<ModelConfig>) };
}

export const parsers = {
  parseConfigText: parseTestConfig,
  parseConfigJson: (json: string, origin: string): ModelConfig => parseTestConfig(json, origin),
};

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

let nextSerial = 1;

export class FakeVersion implements LoadedVersion {
  readonly serial = nextSerial++;
  readonly metadata: ModelMetadata;
  inFlight = 0;
  accepting = true;
  healthy = true;
  unloadCalls = 0;
  unloaded = false;
  private drained: Deferred | undefined;

  constructor(
    readonly modelName: string,
    readonly version: number,
    readonly config: FrozenModelConfig,
    readonly location: VersionLocation,
  ) {
    this.metadata = { name: modelName, versions: [String(version)], platform: '', inputs: [], outputs: [] };
  }

  isReady(): boolean {
    return this.accepting && this.healthy;
  }

  /** Simulates an accepted request; call the returned function when it finishes. */
  begin(): () => void {
    if (!this.accepting) throw new NereidError('UNAVAILABLE', 'not accepting');
    this.inFlight++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.inFlight--;
      if (this.inFlight === 0) this.drained?.resolve();
    };
  }

  async unload(): Promise<void> {
    this.unloadCalls++;
    this.accepting = false;
    if (this.inFlight > 0) {
      this.drained ??= deferred();
      await this.drained.promise;
    }
    this.unloaded = true;
  }
}

export class FakeLoader implements VersionLoader {
  readonly calls: string[] = [];
  readonly versions: FakeVersion[] = [];
  /** `model` → error thrown by completeConfig. */
  readonly failComplete = new Map<string, Error>();
  /** `model:version` → error thrown by loadVersion. */
  readonly failLoad = new Map<string, Error>();
  /** `model:version` → loadVersion waits for this promise. */
  readonly gates = new Map<string, Promise<void>>();
  /** The raw configs completeConfig was given, by model. */
  readonly rawSeen = new Map<string, ModelConfig | undefined>();
  readonly locations = new Map<string, ModelLocation>();
  active = 0;
  maxActive = 0;

  async completeConfig(
    raw: ModelConfig | undefined,
    location: ModelLocation,
    availableVersions: readonly number[],
  ): Promise<FrozenModelConfig> {
    this.calls.push(`complete:${location.modelName}:${availableVersions.join(',')}`);
    this.rawSeen.set(location.modelName, raw);
    this.locations.set(location.modelName, location);
    await Promise.resolve();
    const fail = this.failComplete.get(location.modelName);
    if (fail) throw fail;
    const config = { ...baseConfig(location.modelName), ...(raw ?? {}) };
    if (!config.name) config.name = location.modelName;
    const p = config.version_policy;
    if (!p || (!p.latest && !p.all && !p.specific)) config.version_policy = { latest: { num_versions: 1 } };
    return deepFreeze(config);
  }

  async loadVersion(config: FrozenModelConfig, location: VersionLocation): Promise<FakeVersion> {
    const key = `${location.modelName}:${location.version}`;
    this.calls.push(`load:${key}`);
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      const gate = this.gates.get(key);
      if (gate) await gate;
      else await Promise.resolve();
      const fail = this.failLoad.get(key);
      if (fail) throw fail;
      const v = new FakeVersion(location.modelName, location.version, config, location);
      this.versions.push(v);
      return v;
    } finally {
      this.active--;
    }
  }

  /** The most recent version object loaded for `model:version`. */
  latest(name: string, version: number): FakeVersion | undefined {
    return this.versions.filter((v) => v.modelName === name && v.version === version).pop();
  }

  loadsOf(name: string): string[] {
    return this.calls.filter((c) => c.startsWith(`load:${name}:`));
  }
}

export interface ModelSpec {
  /** Written as JSON into config.pbtxt (or the raw string); omit for no config file. */
  readonly config?: Partial<ModelConfig> | string;
  readonly versions?: readonly (number | string)[];
  /** Extra files, relative to the model folder. */
  readonly files?: Readonly<Record<string, string>>;
}

export async function tempRepo(prefix = 'nereid-repo-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

export async function writeModel(repo: string, name: string, spec: ModelSpec = {}): Promise<string> {
  const dir = path.join(repo, name);
  await mkdir(dir, { recursive: true });
  if (spec.config !== undefined) {
    const text = typeof spec.config === 'string' ? spec.config : JSON.stringify(spec.config);
    await writeFile(path.join(dir, 'config.pbtxt'), text);
  }
  for (const v of spec.versions ?? [1]) {
    await mkdir(path.join(dir, String(v)), { recursive: true });
    await writeFile(path.join(dir, String(v), 'model.bin'), `model ${name} v${v}`);
  }
  for (const [rel, content] of Object.entries(spec.files ?? {})) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  return dir;
}

export async function removeRepo(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** An ensemble config whose steps name `members`. */
export function ensembleConfig(members: readonly (string | [string, number])[]): Partial<ModelConfig> {
  return {
    platform: 'ensemble',
    ensemble_scheduling: {
      step: members.map((m) => {
        const [model_name, model_version] = typeof m === 'string' ? [m, -1] : m;
        return { model_name, model_version, input_map: {}, output_map: {} };
      }),
    },
  };
}
