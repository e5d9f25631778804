/**
 * What the server and the ensemble runner need from a loaded version beyond the repository's contract:
 * it takes requests and keeps statistics. Both a ModelVersion and an EnsembleVersion are servable, so an
 * ensemble step can name a plain model or another ensemble. The loader (core/loader.ts) makes only
 * servable versions and the repository manager hands back what its loader made, so every version the
 * server or an ensemble looks up is known to be servable when the code is compiled.
 */
import type { ModelChatTemplate } from '../../backend-api/backend.js';
import type { LoadedVersion } from '../repository/contract.js';
import type { ModelStats } from '../stats/model-stats.js';
import type { InferenceRequest, InferenceResponse } from '../types.js';

export interface ServableVersion extends LoadedVersion {
  readonly stats: ModelStats;
  /**
   * model_transaction_policy.decoupled (an ensemble's set from its members), settled once at load: what a
   * request's handle (model-handle.ts) and the version's own scheduling read.
   */
  readonly decoupled: boolean;
  /** The backend reads inputs in shared memory in place (ModelHandle.sharesInputMemory). */
  readonly sharesInputMemory?: boolean;
  /** The chat template the model file carries (ModelHandle.chatTemplate). */
  readonly chatTemplate?: ModelChatTemplate | undefined;
  /**
   * Holds the version for one request (core/model/holds.ts): returns the release. Throws UNAVAILABLE
   * unless READY (`again`: the caller already holds it). Absent: the version cannot be held.
   */
  hold?(again?: boolean): () => void;
  /**
   * Validates and accepts a request; validation errors throw synchronously (nothing was accepted).
   * `held`: the caller holds the version, so it is accepted although the version is unloading.
   * `queuedSince`: when the request began waiting for the version (an on-demand load), default now.
   */
  infer(request: InferenceRequest, held?: boolean, queuedSince?: bigint): AsyncIterable<InferenceResponse>;
}

/** Finds the version that serves a request (the repository manager): '' / undefined = the default one. */
export interface VersionLookup {
  getVersion(name: string, version?: string): ServableVersion;
}
