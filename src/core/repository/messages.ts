/**
 * The repository manager's error and state texts, worded as Triton's core words them
 * (model_repository_manager.cc, model_lifecycle.cc) because clients and Triton's QA match on substrings.
 * One place, so the wording is checked once.
 */
import { NereidError, type ErrorCode } from '../../common/errors.js';

/** Reason shown for a version after it was unloaded. Strict readiness tolerates it. */
export const REASON_UNLOADED = 'unloaded';
/** Index reason for a model folder found in more than one repository. */
export const REASON_DUPLICATE = 'model appears in two or more repositories';

const CODE_STRINGS: Record<ErrorCode, string> = {
  UNKNOWN: 'Unknown',
  INTERNAL: 'Internal',
  NOT_FOUND: 'Not found',
  INVALID_ARG: 'Invalid argument',
  UNAVAILABLE: 'Unavailable',
  UNSUPPORTED: 'Unsupported',
  ALREADY_EXISTS: 'Already exists',
  CANCELLED: 'Cancelled',
};

/** Triton's Status::AsString(): `<Code>: <message>`, the form a failed version's reason takes. */
export function statusString(err: unknown): string {
  const e = NereidError.from(err);
  return `${CODE_STRINGS[e.code]}: ${e.message}`;
}

export const msg = {
  controlNotAllowed: (): NereidError =>
    new NereidError('UNAVAILABLE', 'explicit model load / unload is not allowed if polling is enabled'),
  pollingDisabled: (): NereidError => new NereidError('UNAVAILABLE', 'polling is disabled'),
  emptyModelName: (): NereidError =>
    new NereidError('INVALID_ARG', 'Model name cannot be empty. Please enter a valid name to deploy.'),
  traversalModelName: (name: string): NereidError =>
    new NereidError(
      'INVALID_ARG',
      `invalid model name '${name}', model name must not contain path traversal characters`,
    ),
  /** Anything that stops the requested model (or a model it needs) from being read from the repository. */
  pollFailed: (name: string, detail: string | undefined, code: ErrorCode = 'INTERNAL'): NereidError =>
    new NereidError(
      code,
      `failed to load '${name}', failed to poll from model repository` + (detail ? `: ${detail}` : ''),
    ),
  /** The API's load error: one line per failed model, as Triton joins them (trailing newline included). */
  loadFailed: (name: string, reason: string): NereidError =>
    new NereidError('INVALID_ARG', `load failed for model '${name}': ${reason}\n`),
  nameMismatch: (dir: string, configName: string): string =>
    `unexpected directory name '${dir}' for model '${configName}', directory name must equal model name`,
  notUnique: (name: string): string =>
    `failed to poll model '${name}': not unique across all model repositories`,
  notInAnyRepository: (name: string): string =>
    `failed to poll model '${name}': model not found in any model repository.`,
  noVersionUnderPolicy: (name: string): string =>
    `at least one version must be available under the version policy of model '${name}'`,
  specificVersionMissing: (name: string, version: number): string =>
    `version ${version} is specified for model '${name}', but the version directory is not present`,
  versionFailed: (version: number, reason: string): string =>
    `version ${version} is at UNAVAILABLE state: ${reason};`,
  configOverrideRequired: (): string => "Load parameter 'config' must be specified for model file override",
  invalidConfigOverride: (detail: string): string => `Invalid config override: ${detail}`,
  ensembleMissing: (ensemble: string, missing: readonly string[]): string =>
    `ensemble ${ensemble} contains models that are not available or ambiguous: ${missing.join(', ')}`,
  ensembleInvalidMember: (ensemble: string, member: string, detail: string): string =>
    `ensemble '${ensemble}' depends on '${member}' which is not valid. Model '${member}' failed with error: ${detail}`,
  ensembleMemberNotLoaded: (ensemble: string, member: string, detail?: string): string =>
    `ensemble '${ensemble}' depends on '${member}' which has no loaded version.` +
    (detail ? ` Model '${member}' loading failed with error: ${detail}` : ''),
  ensembleVersionNotLoaded: (ensemble: string, member: string, version: number): string =>
    `ensemble '${ensemble}' depends on '${member}' whose required version ${version} is not loaded.`,
  circular: (chain: readonly string[]): string =>
    `circular dependency between ensembles: ${chain[0]} -> ... -> ${chain[chain.length - 2]} -> ${chain[0]}`,
  unknownModel: (name: string): NereidError =>
    new NereidError('NOT_FOUND', `Request for unknown model: '${name}' is not found`),
  unknownVersion: (name: string, version: number): NereidError =>
    new NereidError('NOT_FOUND', `Request for unknown model: '${name}' version ${version} is not found`),
  noAvailableVersion: (name: string): NereidError =>
    new NereidError('NOT_FOUND', `Request for unknown model: '${name}' has no available versions`),
  versionNotReady: (name: string, version: number): NereidError =>
    new NereidError(
      'UNAVAILABLE',
      `Request for unknown model: '${name}' version ${version} is not at ready state`,
    ),
  badVersionString: (v: string): NereidError =>
    new NereidError(
      'INVALID_ARG',
      `failed to get model version from specified version string '${v}' (details: stol), version should be an integral value > 0`,
    ),
  negativeVersion: (v: string): NereidError =>
    new NereidError(
      'INVALID_ARG',
      `invalid model version specified '${v}' , version should be an integral value > 0`,
    ),
  wildcardNotAlone: (): NereidError =>
    new NereidError(
      'INVALID_ARG',
      "Wildcard model name '*' must be the ONLY startup model if specified at all.",
    ),
  notADirectory: (p: string): NereidError =>
    new NereidError('INVALID_ARG', `repository path is not a valid directory: '${p}'`),
  closed: (): NereidError => new NereidError('UNAVAILABLE', 'the model repository manager is shut down'),
  /** A load (its warmup) stopped because the model is being unloaded or the server shuts down. */
  loadCancelled: (why: string): NereidError => new NereidError('UNAVAILABLE', `load cancelled: ${why}`),
};
