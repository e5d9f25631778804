/**
 * A version's admission of one request, the same for a model (model-version.ts) and an ensemble
 * (ensemble/ensemble-version.ts): the version takes it only while READY, or while UNLOADING when the
 * caller holds it (holds.ts); the request is checked and prepared against the version's config (a
 * refused request is traced as refused and its error names the request id); then its statistics record
 * starts and its trace gets REQUEST_START and QUEUE_START. All of it is synchronous: a refusal throws
 * before anything was accepted, and an admitted request costs no extra turn of the event loop.
 */
import { unavailable } from '../../common/errors.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { prepareRequest, withRequestId, type PreparedRequest } from '../inference.js';
import type { ModelStats } from '../stats/model-stats.js';
import { recordRequestStart } from '../stats/record-trace.js';
import type { RequestRecord } from '../stats/request-record.js';
import { traceRefused } from '../trace/report.js';
import type { InferenceRequest } from '../types.js';
import type { VersionHolds } from './holds.js';

/** What admission reads of the version. */
export interface AdmittingVersion {
  readonly modelName: string;
  readonly version: number;
  readonly config: FrozenModelConfig;
  readonly stats: ModelStats;
}

export interface Admitted {
  readonly prepared: PreparedRequest;
  readonly record: RequestRecord;
}

/** Triton's answer for a version that does not take requests. */
export function versionNotReady(modelName: string, version: number): Error {
  return unavailable(`Request for unknown model: '${modelName}' version ${version} is not at ready state`);
}

/**
 * Admits `request` or throws. `state`: the version's own; `held`: the caller holds the version.
 * `requestStart`: when the request arrived (for a request that waited for an on-demand load, when it began
 * waiting); `queueStart`: when its queue time starts (undefined: now).
 */
export function admitRequest(
  version: AdmittingVersion,
  state: string,
  holds: VersionHolds,
  held: boolean,
  request: InferenceRequest,
  requestStart: bigint,
  queueStart: bigint | undefined,
): Admitted {
  if (state !== 'READY' && !(held && state === 'UNLOADING' && holds.honoured)) {
    throw versionNotReady(version.modelName, version.version);
  }
  let prepared;
  try {
    prepared = prepareRequest(version.config, request);
  } catch (err) {
    if (request.trace) traceRefused(request.trace, version.modelName, version.version, request, requestStart);
    throw withRequestId(err, request.id);
  }
  const record = version.stats.startRequest(requestStart, prepared.batchSize, queueStart);
  recordRequestStart(record, request, version.modelName, version.version, requestStart);
  return { prepared, record };
}
