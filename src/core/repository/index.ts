/** The model repository manager's public surface (the core server and the CLI import from here). */
export type { LoadedVersion, ModelLocation, VersionLoader, VersionLocation } from './contract.js';
export {
  ModelRepositoryManager,
  type ModelLoadFailure,
  type OnDemandStatus,
  type PollSummary,
  type VersionStatus,
} from './manager.js';
export type {
  ConfigJsonParser,
  ConfigTextParser,
  ModelControlMode,
  LoadErrorStatus,
  RepositoryOptions,
  ResolvedRepositoryOptions,
} from './options.js';
export { DEFAULT_LOAD_THREADS, DEFAULT_MAX_CONFIG_BYTES, DEFAULT_POLL_SECS } from './options.js';
export { parseModelVersion } from './lifecycle.js';
export { selectVersions, type VersionSelection } from './version-policy.js';
export { REASON_DUPLICATE, REASON_UNLOADED } from './messages.js';
