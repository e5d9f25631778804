/**
 * The contract between the core and every backend (onnxruntime, python, javascript, builtin). Backends
 * import only this folder, model-config/ and common/.
 *
 * Lifecycle: Backend.loadModel() once per model version → ModelHandle.createInstance() once per instance
 * (instance_group × count) → InstanceHandle.execute() many times → InstanceHandle.close() → ModelHandle.unload().
 *
 * Ownership and concurrency:
 * - The core never calls execute() on one instance while a previous execute() on it is still pending,
 *   unless the instance declares `pipelineDepth` N > 1: then it may hand the instance up to N executions
 *   at once (a new execute() before earlier ones settled). The backend runs them strictly in the order
 *   execute() was called, one at a time as the model sees it (a model that does not batch still gets one
 *   request per call, as in Triton); what it gains is that the next batch is already there when the
 *   previous one returns. Each execute() still settles on its own, with its own requests, timings and
 *   result. Different instances of a model execute concurrently.
 * - execute() receives a whole batch (1..max_batch_size requests, or more requests when each carries its
 *   own batch dimension). For each request the backend must end the response stream exactly once: either
 *   `sender.send(outputs, { final: true })` (possibly after earlier non-final sends, decoupled models only)
 *   or `sender.fail(error)`. If execute() rejects, the core fails every request whose stream has not ended.
 * - The instance is free again when execute() settles. Models that are not decoupled must have ended every
 *   request by then (the core fails any still open). A decoupled model's request may stay open after
 *   execute() resolved, as in Triton, where a decoupled backend's execute returns while other threads keep
 *   sending: the backend ends it later (final send or fail), and must fail it if the instance that owns it
 *   crashes or closes. Senders stay usable until the request ended; its AbortSignal still reports
 *   cancellation. The core counts the execution when execute() settles and each request when it ends.
 * - Input tensors belong to the core and stay valid until execute() settles; outputs handed to send()
 *   belong to the core from then on (the backend must not reuse their Buffers).
 * - Work must not block the event loop: CPU-bound execution happens off the main thread.
 */
import type { ParameterValue } from '../common/parameters.js';
import type { Tensor } from '../common/tensor.js';
import type { NereidError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { CustomMetricFamily, CustomMetricKind, CustomMetricSample } from '../common/metric-family.js';
import type { FrozenModelConfig, ModelConfig } from '../model-config/model-config.js';

// Request/response parameter values: common/parameters.ts.
export type { ParameterValue };

/** Request parameters Triton consumes itself (sequence, scheduling and output-format ones). */
const SERVER_PARAMETERS: ReadonlySet<string> = new Set([
  'sequence_id',
  'sequence_start',
  'sequence_end',
  'priority',
  'timeout',
  'binary_data_output',
]);

/**
 * True for a request parameter the server consumed itself (those above and every `triton_*` key): a
 * backend leaves it out of what a model sees as the request's parameters, as Triton does.
 */
export function isServerParameter(key: string): boolean {
  return SERVER_PARAMETERS.has(key) || key.startsWith('triton_');
}

export interface SendOptions {
  /** This is the last response for the request. */
  final: boolean;
  parameters?: Readonly<Record<string, ParameterValue>>;
}

export interface FailOptions {
  /**
   * How the request counts in the statistics. 'failure' (the default): a failed request
   * (inference_stats.fail). 'success': the model ran the request and this error is its answer (a Python
   * model's `InferenceResponse(error=TritonError(...))`), which Triton's backend reports as a successful
   * inference (success, inference_count). The client gets the error either way.
   */
  readonly countAs?: 'success' | 'failure';
}

export interface ResponseSender {
  /** Sends a response; `outputs` may be empty (e.g. a final-only flag for decoupled models). */
  send(outputs: readonly Tensor[], options: SendOptions): void;
  /** Ends the request with an error. */
  fail(error: NereidError, options?: FailOptions): void;
  /** True once the stream has ended (final sent, failed, or cancelled). */
  readonly done: boolean;
  /**
   * Resolves when the request's queue of undelivered responses has room (`--max-undelivered-responses`),
   * at once while it has. A decoupled backend awaits it before each send, so a client that reads slowly
   * slows the model down instead of the server buffering its responses. It also resolves when the request
   * ends or is cancelled (check `done` / the signal afterwards). Absent on senders without a bound.
   */
  whenWritable?(): Promise<void>;
  /**
   * True while the request's queue of undelivered responses is at its bound (whenWritable() would wait).
   * A backend that cannot await per send (a Python stub writing into a socket) checks it after each
   * response and stops reading its producer until whenWritable() resolves. Absent: never full.
   */
  readonly full?: boolean;
}

/**
 * How long the phases of one execution took, in nanoseconds, as a backend measured them: preparing
 * inputs for the framework (copies, conversions), running the model, extracting outputs. Triton's
 * compute_input / compute_infer / compute_output statistics.
 */
export interface PhaseTimings {
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
}

export interface BackendRequest {
  readonly id: string;
  /** Inputs by name, already checked against the config (dtype, shape, byte size) and reshaped. */
  readonly inputs: ReadonlyMap<string, Tensor>;
  /** Names of outputs to produce; the backend may produce more, the core drops the extra ones. */
  readonly requestedOutputs: ReadonlySet<string>;
  readonly parameters: Readonly<Record<string, ParameterValue>>;
  /** Sequence correlation id (0 / '' when not in a sequence). */
  readonly correlationId: bigint | string;
  /** TRITONSERVER_REQUEST_FLAG_* bits: 1 = SEQUENCE_START, 2 = SEQUENCE_END. */
  readonly flags: number;
  /** Size of the leading batch dimension (1 for models with max_batch_size 0). */
  readonly batchSize: number;
  /** Aborted when the client goes away or cancels; backends may stop early. */
  readonly signal: AbortSignal;
  readonly sender: ResponseSender;
  /**
   * Optional: reports this request's phase timings for the statistics (compute_input / compute_infer /
   * compute_output). Call it any time before execute() settles; the last call wins. A batch usually
   * reports the same timings for each of its requests. When a backend reports nothing, the core counts
   * the execute() wall time as compute_infer and its own output handling as compute_output. Absent when
   * the caller keeps no statistics.
   */
  readonly reportTiming?: (timings: PhaseTimings) => void;
  /**
   * Optional: hands the request back to the scheduler instead of ending it (Triton's
   * TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, for `sequence_batching { iterative_sequence: true }` models).
   * Call it before execute() settles and do not end the request's stream in that execute(); the core queues
   * the same request (same inputs, same sender) for a later execution. Absent when the model's scheduler
   * cannot reschedule; a backend must then fail the request with a clear error.
   */
  readonly reschedule?: () => void;
  /**
   * Set when the request is traced: a backend that lets its model call the server (BLS) passes it back as
   * ServerInferRequest.parentTrace when the model asks (Python's `trace=request.trace()`), so the call is
   * traced as a child of this request.
   */
  readonly trace?: BackendTraceToken;
}

/** A traced request's trace, opaque to backends. */
export interface BackendTraceToken {
  /** The trace id (Triton's), so a backend can name it across a process boundary. */
  readonly id: number;
  /** W3C trace context JSON (OpenTelemetry mode), what Python's `request.trace().get_context()` returns. */
  context(): string | undefined;
}

export interface InstanceSpec {
  /** `<group name>_<index>` like Triton's model_instance_name, e.g. `simple_0_0`. */
  readonly name: string;
  readonly groupName: string;
  readonly index: number;
  readonly kind: 'KIND_CPU' | 'KIND_GPU' | 'KIND_MODEL';
  readonly deviceId: number;
}

/** What execute() may resolve with; resolving with nothing is the same as `{}`. */
export interface ExecuteResult {
  /**
   * Whether the model ran this batch, for the statistics (execution_count, batch_stats). true: count it
   * even if every request failed (Triton's Python backend reports the batch once its stub answered, also
   * when the model's execute raised). false: do not count it. Absent: counted when a request succeeded
   * or is still being answered (a decoupled stream) — the onnxruntime backend's rule, where a batch whose
   * run failed is not an execution.
   */
  readonly executed?: boolean;
}

export interface InstanceHandle {
  readonly name: string;
  /**
   * Optional: how many executions the core may hand this instance at once (see the contract above); absent
   * or 1: one at a time. The core uses the extra slots only when no instance is idle, and never under the
   * rate limiter or for the sequence batcher's lanes.
   */
  readonly pipelineDepth?: number;
  execute(requests: readonly BackendRequest[]): Promise<ExecuteResult | void>;
  /** Releases the instance (threads, sessions, processes). Called after the last execute() settled. */
  close(): Promise<void>;
  /**
   * Optional: ends the instance's work at once, for an unload that waited long enough (a hung model).
   * Fails every request the instance still holds with `error` (open decoupled streams included), stops
   * its thread or process without waiting for the model, and makes a pending execute() settle soon; no
   * replacement is started. close() follows as usual. Instances without it are waited for.
   */
  abort?(error: NereidError): void;
  /**
   * Optional: the id of the child process that runs this instance (a Python stub), when it runs outside
   * the server's process; the core reads its memory from /proc for on-demand mode's budget.
   */
  readonly pid?: number;
}

// The model-defined metric types live in common/ (the model authors' SDK builds them too).
export type { CustomMetricFamily, CustomMetricKind, CustomMetricSample };

export interface ModelHandle {
  createInstance(spec: InstanceSpec): Promise<InstanceHandle>;
  /**
   * Optional: true when the model's instances read input tensors in place if they sit in a
   * SharedArrayBuffer (a JavaScript model's worker thread). Frontends then read large request bodies into
   * shared memory; for every other model an ordinary buffer is cheaper (no zero-filled fresh pages).
   */
  readonly sharesInputMemory?: boolean;
  /**
   * Optional: the model's own readiness (a JavaScript model's isReady()). The core polls it while the
   * model is loaded; false makes the model report not ready without unloading it.
   */
  isReady?(): Promise<boolean>;
  /** Optional: the metric families the model's instances defined, merged per family name and labels. */
  customMetrics?(): Promise<readonly CustomMetricFamily[]>;
  /**
   * Optional: the chat template the model file carries (a GGUF's `tokenizer.chat_template`, read by the
   * llamacpp backend), which the OpenAI frontend uses when the model's config and folder give none.
   */
  readonly chatTemplate?: ModelChatTemplate | undefined;
  /** Called after every instance was closed. */
  unload(): Promise<void>;
}

/** A chat template (Jinja, as Hugging Face tokenizers store it) a model publishes (ModelHandle.chatTemplate). */
export interface ModelChatTemplate {
  readonly text: string;
  /** The text of the model's BOS and EOS tokens, for the template's bos_token / eos_token ('' if none). */
  readonly bosToken: string;
  readonly eosToken: string;
  /** Where it was read, for messages (e.g. '1/model.gguf metadata'). */
  readonly origin: string;
}

/**
 * Checks paths a backend derives from a model's config or folder (a model file inside a folder, an
 * execution environment): the core's rules for config paths (core/model/model-paths.ts). `candidate` is
 * absolute; the result is the path to open. Throws INVALID_ARG with a message relative to the model
 * folder when the path leaves the model folder, as text or through a symbolic link, or (mustExist) when
 * it does not exist.
 */
export interface ModelFiles {
  check(candidate: string, what: string, options?: { readonly mustExist?: boolean }): Promise<string>;
}

export interface BackendContext {
  /** `--backend-config=<backend>,<key>=<value>` settings for this backend, plus `default` ones. */
  readonly backendConfig: Readonly<Record<string, string>>;
  /**
   * For a backend hosted by another (Backend.hostBackend: a Python-based backend runs on the python
   * backend), the host's `--backend-config` settings plus `default` ones; absent otherwise.
   */
  readonly hostBackendConfig?: Readonly<Record<string, string>>;
  readonly log: Logger;
}

/**
 * A request a backend sends back into the server (Python BLS: a model calling another model). Shaped like
 * the core's InferenceRequest, which accepts it as it is; backend-api does not import core.
 */
export interface ServerInferRequest {
  readonly modelName: string;
  /** '' or undefined = the version policy's default. */
  readonly modelVersion?: string;
  readonly id?: string;
  readonly inputs: readonly Tensor[];
  /** Omitted or empty = every output of the model. */
  readonly outputs?: readonly { readonly name: string }[];
  readonly parameters?: Readonly<Record<string, ParameterValue>>;
  readonly signal?: AbortSignal;
  /** The calling request's trace (BackendRequest.trace): the call is traced as its child. */
  readonly parentTrace?: BackendTraceToken;
  /** The model that sends the request (BLS): on-demand mode keeps the callee loaded while it is busy. */
  readonly callerModel?: string;
}

/** One response of a ServerInferRequest; the last one has `final` set. */
export interface ServerInferResponse {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly outputs: readonly Tensor[];
  readonly parameters: Readonly<Record<string, ParameterValue>>;
  readonly final: boolean;
}

/** The part of the server a backend may call back into. */
export interface ServerApi {
  /** Same semantics as the server's own infer(): 0..n responses, the last final; errors reject. */
  infer(request: ServerInferRequest): AsyncIterable<ServerInferResponse>;
  /**
   * Repository control from a model (pb_utils.load_model / unload_model / is_model_ready). Optional: an
   * embedding may offer inference only. Same rules as the repository API (explicit model control only).
   */
  loadModel?(
    name: string,
    options?: { config?: string; files?: Readonly<Record<string, Buffer>> },
  ): Promise<void>;
  unloadModel?(name: string, options?: { unloadDependents?: boolean }): Promise<void>;
  isModelReady?(name: string, version?: string): boolean;
}

export interface ModelLoadContext extends BackendContext {
  readonly config: FrozenModelConfig;
  readonly modelName: string;
  readonly version: number;
  /** `<repository>/<model>` */
  readonly modelDir: string;
  /** `<repository>/<model>/<version>` */
  readonly versionDir: string;
  /** `<versionDir>/<default_model_filename>` (a file or a folder), already checked to stay inside. */
  readonly modelPath: string;
  /**
   * Checks further paths the backend derives (see ModelFiles). The loader always sets it; a context built
   * by hand (a unit test, a bench) may leave it out, and the backend then uses paths as given.
   */
  readonly files?: ModelFiles;
  /** Calls back into the server (BLS); absent when the embedding offers none. */
  readonly serverApi?: ServerApi;
  /**
   * `--strict-model-outputs`: a response naming an output the config does not declare, or (not decoupled)
   * missing a requested one, fails its request instead of logging a warning once (backends/output-check.ts).
   */
  readonly strictModelOutputs?: boolean;
}

export interface AutoCompleteContext extends BackendContext {
  /** The config as read so far (may lack inputs, outputs, max_batch_size). */
  readonly config: ModelConfig;
  readonly modelDir: string;
  readonly versionDir: string;
  readonly modelPath: string;
  /** As ModelLoadContext.files. */
  readonly files?: ModelFiles;
}

export interface Backend {
  /** Backend name as in config.pbtxt `backend:` (e.g. 'onnxruntime'). */
  readonly name: string;
  /** config.pbtxt `platform:` values that select this backend (e.g. 'onnxruntime_onnx'). */
  readonly platforms: readonly string[];
  /** The platform Triton reports for this backend when the config names none (e.g. 'onnxruntime_onnx'). */
  readonly defaultPlatform?: string;
  /** File or folder looked up in a version folder when the config names none (e.g. 'model.onnx'). */
  readonly defaultModelFilename: string;
  /**
   * false: the backend reads no model file (Triton's `repeat`, `square`, `identity` test backends), so the
   * loader only needs the version folder, and never picks this backend by probing for a file. Default true.
   */
  readonly requiresModelFile?: boolean;
  /**
   * true: each instance is an OS process of its own (Python stubs), so it also counts against the
   * server's tighter limits for process-backed instances. Default false (threads, or the event loop).
   */
  readonly processPerInstance?: boolean;
  /**
   * The backend this one runs on, whose `--backend-config` settings its contexts also receive
   * (hostBackendConfig): 'python' for a Python-based backend. Absent for a backend of its own.
   */
  readonly hostBackend?: string;
  /**
   * Fills in what the model file can tell: inputs, outputs, max_batch_size. Returns the completed config.
   * Called unless --disable-auto-complete-config.
   */
  autoCompleteConfig?(ctx: AutoCompleteContext): Promise<ModelConfig>;
  loadModel(ctx: ModelLoadContext): Promise<ModelHandle>;
}

/**
 * Backends found when a model asks for them rather than built in: Triton's Python-based backends
 * (`<backend-directory>/<name>/model.py`). The loader asks it for a backend name no built-in backend has.
 */
export interface BackendCatalog {
  /** The backend called `name`, or undefined when there is none. */
  find(name: string): Promise<Backend | undefined>;
  /** The names of the backends it can find (for messages listing what the server serves). */
  names(): Promise<readonly string[]>;
}
