/**
 * What the repository manager needs from the rest of the core: turning a raw config into a complete,
 * frozen one (auto-complete needs the backend) and loading one version into a servable object. Keeping it
 * an interface lets repository tests use tiny fakes and keeps core/model independent of repository rules.
 */
import type { FrozenModelConfig, ModelConfig } from '../../model-config/model-config.js';
import type { ModelMetadata } from '../types.js';

export interface ModelLocation {
  readonly modelName: string;
  /** `<repository>/<model>` (for a load with file overrides, a private temporary copy). */
  readonly modelDir: string;
  /** The repository root the model was found in. */
  readonly repositoryPath: string;
}

export interface VersionLocation extends ModelLocation {
  readonly version: number;
  readonly versionDir: string;
}

/** A loaded, servable model version. Owned by the repository manager; created by a VersionLoader. */
export interface LoadedVersion {
  readonly modelName: string;
  readonly version: number;
  readonly config: FrozenModelConfig;
  readonly metadata: ModelMetadata;
  /** True while instances are up and accepting. */
  isReady(): boolean;
  /** Stops accepting new requests, waits for accepted ones to finish, then frees instances. */
  unload(): Promise<void>;
  /** Optional: requests are held or in flight (on-demand mode never unloads it then). */
  isBusy?(): boolean;
  /** Optional: the memory the version holds, measured (core/model/memory.ts), in bytes. */
  residentBytes?(): number;
}

/** Loads versions of type `V`: the manager hands back what its loader made, typed (no run-time check). */
export interface VersionLoader<V extends LoadedVersion = LoadedVersion> {
  /**
   * read → auto-complete → normalise → validate. `raw` is undefined when the model folder has no config
   * file (then auto-complete must derive everything). `availableVersions` are the numeric folders found.
   */
  completeConfig(
    raw: ModelConfig | undefined,
    location: ModelLocation,
    availableVersions: readonly number[],
  ): Promise<FrozenModelConfig>;
  /**
   * Optional: checks a whole load before any of its versions loads (the server's instance limits), for
   * `versions` versions of `config`. Throws to refuse it; starts nothing.
   */
  admit?(config: FrozenModelConfig, location: ModelLocation, versions: number): Promise<void>;
  /**
   * `signal` aborts when the load is no longer wanted (an unload of the model, shutdown): the loader stops
   * what it can stop (warmup, between its iterations) and rejects with the signal's reason.
   */
  loadVersion(config: FrozenModelConfig, location: VersionLocation, signal?: AbortSignal): Promise<V>;
}
