/**
 * A request's model handle: what a frontend gets from InferenceServerApi.resolveModel(name, version) —
 * the model name and version resolved once, with everything the frontend asks before it runs the request
 * (decoupled, shared-memory use, metadata, config) and the calls that run it on that same version.
 *
 * The handle holds the version (core/model/holds.ts) as Triton's InferenceRequest holds the shared_ptr
 * to the model it was created for (TRITONSERVER_InferenceRequestNew → ModelLifeCycle::GetModel, the model
 * destroyed only when its last reference goes): a reload or unload between resolveModel() and the
 * execution does not move the request to another version. It runs on the version it resolved, whose unload
 * waits for it; the next resolveModel() finds the new version. If the unload stops waiting
 * (--model-unload-timeout-secs) before the request ran, the request fails with the version's UNAVAILABLE
 * error ("... is not at ready state").
 *
 * Ownership: the caller calls release() when done with the request (idempotent; in a `finally`). A run
 * started before release() is covered until the version has accepted it, so releasing right after starting
 * a run is also correct.
 */
import type { ModelChatTemplate } from '../backend-api/backend.js';
import { internal, unsupported } from '../common/errors.js';
import type { JsonObject } from '../model-config/json.js';
import { modelConfigToJson } from '../model-config/index.js';
import type { ServableVersion } from './model/servable.js';
import { inferWithSharedMemory, usesSharedMemory, type SystemSharedMemoryManager } from './shm/index.js';
import type { InferenceRequest, InferenceResponse, ModelMetadata } from './types.js';

export interface ResolvedModel {
  readonly name: string;
  /** The version resolved (its number), whatever the request asked ('' = the default one). */
  readonly version: string;
  /** model_transaction_policy.decoupled: answers through a stream only. */
  readonly decoupled: boolean;
  /**
   * The model reads input tensors in a SharedArrayBuffer without copying them (a JavaScript model), so a
   * frontend should read a large body into shared memory.
   */
  readonly sharesInputMemory: boolean;
  /** The version's metadata (inputs, outputs; `versions` lists this version). */
  readonly metadata: ModelMetadata;
  /**
   * The chat template the version's model file carries (ModelHandle.chatTemplate: a GGUF's, published by
   * the llamacpp backend); undefined when it has none.
   */
  readonly chatTemplate?: ModelChatTemplate | undefined;
  /** The config as Triton's JSON, built on first use. */
  configJson(): JsonObject;
  /** The version is READY and its model does not say otherwise (model-health.ts). */
  isReady(): boolean;
  /**
   * Runs one request on this version: 0..n responses, the last final. Validation errors are thrown
   * synchronously (nothing was accepted) or reject the first next().
   */
  stream(request: InferenceRequest): AsyncIterable<InferenceResponse>;
  /** A non-decoupled model's one (final) response; a decoupled model is refused (UNSUPPORTED). */
  infer(request: InferenceRequest): Promise<InferenceResponse>;
  /** Lets the version unload without this request (idempotent). */
  release(): void;
}

const NOTHING = (): void => {};

/**
 * A call that answers once cannot serve a decoupled model: UNSUPPORTED, in the caller's own words (each
 * protocol has its wording, some naming the model: a function of the handle's name, called only to refuse).
 * The one place a decoupled model is refused (call.ts).
 */
export function refuseDecoupled(
  handle: Pick<ResolvedModel, 'name' | 'decoupled'>,
  wording: string | ((model: string) => string),
): void {
  if (handle.decoupled) throw unsupported(typeof wording === 'string' ? wording : wording(handle.name));
}

/** How the handle's own infer() refuses a decoupled model (the in-process API's inferOnce). */
const STREAM_ONLY = (model: string): string =>
  `doesn't support models with decoupled transaction policy: use streaming inference for model '${model}'`;

/** The handle on one servable version, made by InferenceServer.resolveModel. */
export class VersionHandle implements ResolvedModel {
  readonly version: string;
  readonly decoupled: boolean;
  private releaseHold: () => void;
  private held: boolean;
  private config: JsonObject | undefined;

  constructor(
    readonly name: string,
    private readonly v: ServableVersion,
    private readonly sharedMemory: SystemSharedMemoryManager,
    /** When the request began waiting for this version (an on-demand load): its queue time starts then. */
    private readonly queuedSince?: bigint,
  ) {
    this.version = String(v.version);
    this.decoupled = v.decoupled;
    // Throws UNAVAILABLE when the version stopped being READY since the lookup.
    this.releaseHold = v.hold?.() ?? NOTHING;
    this.held = v.hold !== undefined;
  }

  get sharesInputMemory(): boolean {
    return this.v.sharesInputMemory === true;
  }

  get metadata(): ModelMetadata {
    return this.v.metadata;
  }

  get chatTemplate(): ModelChatTemplate | undefined {
    return this.v.chatTemplate;
  }

  configJson(): JsonObject {
    return (this.config ??= modelConfigToJson(this.v.config));
  }

  isReady(): boolean {
    return this.v.isReady();
  }

  stream(request: InferenceRequest): AsyncIterable<InferenceResponse> {
    const v = this.v;
    const held = this.held;
    const since = this.queuedSince;
    if (!usesSharedMemory(request)) return v.infer(request, held, since);
    // Inputs are read from shared memory first (asynchronously): the run holds the version on its own
    // until the version has accepted it, so the caller may release the handle meanwhile.
    const releaseRun = held ? v.hold!(true) : NOTHING;
    return inferWithSharedMemory(this.sharedMemory, request, (r) => v.infer(r, held, since), releaseRun);
  }

  async infer(request: InferenceRequest): Promise<InferenceResponse> {
    refuseDecoupled(this, STREAM_ONLY);
    // The iterator by hand rather than for-await (call.ts, performance rules).
    const responses = this.stream(request)[Symbol.asyncIterator]();
    for (;;) {
      const next = await responses.next();
      if (next.done) break;
      if (next.value.final) return next.value;
    }
    throw internal(`model '${this.name}' ended the request without a response`);
  }

  release(): void {
    this.held = false;
    const release = this.releaseHold;
    this.releaseHold = NOTHING;
    release();
  }
}
