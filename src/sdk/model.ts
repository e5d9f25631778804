/**
 * The shape of a JavaScript/TypeScript model, with the lifecycle of Triton's Python models: an optional
 * static autoCompleteConfig(config), initialize(args, context), execute(requests) for each batch,
 * finalize() on unload, and an optional isReady(). Streaming models may instead write execute as a
 * generator over one request (`async *execute(request)`, GeneratorModel), yielding its responses. A module exports the class as its default export or
 * as `Model`, or a factory `createModel(args, context)` (default export functions that are not classes
 * count as factories too).
 */
import type { AutoCompleteConfig, ModelConfigJson } from './config.js';
import type { ModelLogger } from './logger.js';
import type { InferenceRequest, InferenceRequestInit } from './request.js';
import type { InferenceResponse, InferenceResponseInit } from './response.js';

/** What Triton passes to a Python model's initialize(args): every value a string. */
export interface ModelInitializeArgs {
  /** The model config as Triton's JSON. */
  readonly model_config: string;
  /** 'CPU', 'GPU' or 'MODEL'. */
  readonly model_instance_kind: string;
  /** e.g. `tokenizer_ts_0_0`. */
  readonly model_instance_name: string;
  readonly model_instance_device_id: string;
  /** The model's folder (`<repository>/<model>`), as Triton passes it. */
  readonly model_repository: string;
  readonly model_version: string;
  readonly model_name: string;
}

/** The same facts typed, plus the services of the runtime. */
export interface ModelContext {
  readonly modelName: string;
  readonly modelVersion: number;
  readonly instanceName: string;
  readonly instanceKind: 'CPU' | 'GPU' | 'MODEL';
  readonly deviceId: number;
  /** `<repository>/<model>` */
  readonly modelDir: string;
  /** The module file being run. */
  readonly modelPath: string;
  readonly config: ModelConfigJson;
  readonly decoupled: boolean;
  readonly log: ModelLogger;
  /** BLS: calls any model on this server; resolves with its (first) response, rejects on error. */
  infer(request: InferenceRequestInit & { modelName: string }): Promise<InferenceResponse>;
  /** BLS: every response (decoupled targets), the last with `final` set. */
  inferStream(request: InferenceRequestInit & { modelName: string }): AsyncIterable<InferenceResponse>;
}

/**
 * Default mode: one response per request, in request order (InferenceResponse objects or plain
 * `{ outputs }` / `{ error }`), or nothing when every request was answered through its sender.
 * Decoupled mode: nothing (undefined); responses go through the senders.
 */
export type ExecuteResult = readonly (InferenceResponse | InferenceResponseInit)[] | void | undefined;

export interface Model {
  initialize?(args: ModelInitializeArgs, context: ModelContext): void | Promise<void>;
  execute(requests: InferenceRequest[]): ExecuteResult | Promise<ExecuteResult>;
  finalize?(): void | Promise<void>;
  /** Readiness of this instance (polled by JsInstance.isReady()). */
  isReady?(): boolean | Promise<boolean>;
}

/** What a generator execute() yields (or returns, for a last response sent with the final flag). */
export type YieldedResponse = InferenceResponse | InferenceResponseInit | null | undefined;

/**
 * The generator form: `async *execute(request)` (or a sync `*execute(request)`) is called once per request
 * and each yielded value is one response; the final flag is sent when it returns (with the returned
 * response, if any). A throw ends the request with that error. A cancelled request stops the generator with
 * return(), so its `finally` blocks run. Works for decoupled models (any number of yields) and for
 * default-mode ones (exactly one response: one yield, or a return value).
 */
export interface GeneratorModel {
  initialize?(args: ModelInitializeArgs, context: ModelContext): void | Promise<void>;
  execute(
    request: InferenceRequest,
  ): AsyncIterator<YieldedResponse, YieldedResponse> | Iterator<YieldedResponse, YieldedResponse>;
  finalize?(): void | Promise<void>;
  isReady?(): boolean | Promise<boolean>;
}

export interface ModelClass {
  new (): Model;
  autoCompleteConfig?(
    config: AutoCompleteConfig,
  ): AutoCompleteConfig | ModelConfigJson | Promise<AutoCompleteConfig | ModelConfigJson>;
}

export type ModelFactory = (args: ModelInitializeArgs, context: ModelContext) => Model | Promise<Model>;
