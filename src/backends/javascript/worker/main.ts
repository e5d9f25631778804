/**
 * The worker thread of one JavaScript model instance: imports the model module (TypeScript through the
 * hooks in hooks.ts), builds the model, runs initialize(), then serves execute batches one at a time,
 * turning what the model returns or sends into response messages. BLS calls, log lines and metric
 * queries go through the same port. In 'autocomplete' mode it only runs the model's static
 * autoCompleteConfig() and reports the result.
 *
 * Anything the model throws inside execute() becomes an error for the requests of that batch; an
 * uncaught exception or process.exit() ends this thread, and the main thread restarts it.
 */
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';
import { MessageChannel, parentPort, workerData } from 'node:worker_threads';
import { AutoCompleteConfig, type ModelConfigJson } from '../../../sdk/config.js';
import { logger } from '../../../sdk/logger.js';
import { defaultMetricRegistry } from '../../../sdk/metrics.js';
import type { GeneratorModel, Model, ModelContext, ModelInitializeArgs } from '../../../sdk/model.js';
import { InferenceRequest, type InferenceRequestInit } from '../../../sdk/request.js';
import { toNereidError } from '../../../sdk/response.js';
import { NereidError } from '../../../common/errors.js';
import { bindRuntime, type BlsCall, type BlsResult, type LogLevel } from '../../../sdk/runtime.js';
import { Tensor } from '../../../sdk/tensor.js';
import type {
  JsFromWorker,
  QueryAnswer,
  JsToWorker,
  WireError,
  WireRequest,
  WireResponse,
  JsWorkerInit,
} from '../protocol.js';
import type { ModelPhase } from '../../model-errors.js';
import { copyToWire, newCounters } from '../tensors.js';
import { AsyncQueue } from './async-queue.js';
import { WorkerSender, responseToWire, setDeclaredOutputs } from './sender.js';
import { driveGenerator, isGeneratorFunction } from './generator.js';

const init = workerData as JsWorkerInit;
const port = parentPort!;
const counters = newCounters();

function post(message: JsFromWorker, transfer: readonly ArrayBuffer[] = []): void {
  port.postMessage(message, transfer as ArrayBuffer[]);
}

/** Which of the model's hooks is running (the label of a load error: build, import, initialize()). */
let phase: ModelPhase = 'import';

function wireError(err: unknown, during?: ModelPhase): WireError {
  const e = toNereidError(err);
  const out: WireError = { code: e.code, message: e.message };
  if (err instanceof Error || (typeof err === 'object' && err !== null && 'stack' in err)) {
    const x = err as { stack?: unknown; name?: unknown; buildErrors?: unknown };
    if (typeof x.stack === 'string') out.stack = x.stack;
    if (typeof x.name === 'string') out.name = x.name;
    if (out.name === 'NereidError' || err instanceof NereidError) out.chosen = true;
    if (Array.isArray(x.buildErrors) && x.buildErrors.length > 0) {
      out.build = x.buildErrors[0] as NonNullable<WireError['build']>;
      out.phase = 'build';
      return out;
    }
  }
  if (during) out.phase = during;
  return out;
}

// --- the SDK's runtime: logging and BLS through the main thread ----------------------------------------

let nextCall = 1;
const blsCalls = new Map<number, AsyncQueue<BlsResult>>();

async function* blsInfer(call: BlsCall, signal: AbortSignal | undefined): AsyncGenerator<BlsResult> {
  signal?.throwIfAborted();
  const id = nextCall++;
  const queue = new AsyncQueue<BlsResult>();
  blsCalls.set(id, queue);
  const transfer: ArrayBuffer[] = [];
  const inputs = call.inputs.map((t) => copyToWire(t, transfer));
  post(
    {
      kind: 'bls',
      call: id,
      request: {
        modelName: call.modelName,
        modelVersion: call.modelVersion,
        id: call.id,
        inputs,
        outputs: [...call.requestedOutputNames],
        parameters: { ...call.parameters },
      },
    },
    transfer,
  );
  const onAbort = (): void => post({ kind: 'bls-cancel', call: id });
  signal?.addEventListener('abort', onAbort, { once: true });
  let finished = false;
  try {
    for (;;) {
      const r = await queue.next();
      if (r.final) finished = true;
      yield r;
      if (r.final) return;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    blsCalls.delete(id);
    // The caller stopped early (break, throw): the main thread stops the call too.
    if (!finished && !queue.failed) post({ kind: 'bls-cancel', call: id });
  }
}

bindRuntime({
  log: (level: LogLevel, message: string) => post({ kind: 'log', level, message }),
  infer: blsInfer,
});

// --- loading the model -----------------------------------------------------------------------------------

const hooksChannel = new MessageChannel();
register(new URL('./hooks.js', import.meta.url), {
  data: { sdkUrl: new URL('../../../sdk/index.js', import.meta.url).href, port: hooksChannel.port2 },
  transferList: [hooksChannel.port2],
});
// Stack traces of TypeScript models point at their .ts lines (esbuild emits inline source maps).
process.setSourceMapsEnabled(true);

type Loaded =
  | { kind: 'class'; ctor: (new () => Model) & { autoCompleteConfig?: (c: AutoCompleteConfig) => unknown } }
  | { kind: 'factory'; fn: (args: ModelInitializeArgs, ctx: ModelContext) => Model | Promise<Model> }
  | { kind: 'object'; model: Model };

const isClass = (fn: unknown): boolean =>
  typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn));

function pickExport(mod: Record<string, unknown>): Loaded {
  const d = mod.default;
  if (isClass(d)) return { kind: 'class', ctor: d as Extract<Loaded, { kind: 'class' }>['ctor'] };
  if (isClass(mod.Model))
    return { kind: 'class', ctor: mod.Model as Extract<Loaded, { kind: 'class' }>['ctor'] };
  if (typeof mod.createModel === 'function') {
    return { kind: 'factory', fn: mod.createModel as Extract<Loaded, { kind: 'factory' }>['fn'] };
  }
  if (typeof d === 'function')
    return { kind: 'factory', fn: d as Extract<Loaded, { kind: 'factory' }>['fn'] };
  if (typeof d === 'object' && d !== null && typeof (d as Model).execute === 'function') {
    return { kind: 'object', model: d as Model };
  }
  throw new Error(
    `'${init.modelPath}' exports no model: export a class (as default or as 'Model') or a 'createModel' factory`,
  );
}

async function importModel(): Promise<Loaded> {
  try {
    return pickExport((await import(pathToFileURL(init.modelPath).href)) as Record<string, unknown>);
  } finally {
    hooksChannel.port1.postMessage('loaded');
    hooksChannel.port1.close();
  }
}

async function autocomplete(): Promise<void> {
  const loaded = await importModel();
  phase = 'autocomplete';
  const ctor = loaded.kind === 'class' ? loaded.ctor : undefined;
  const fn = ctor?.autoCompleteConfig;
  if (typeof fn !== 'function') {
    post({ kind: 'autocompleted', configJson: undefined });
    return;
  }
  const helper = new AutoCompleteConfig(JSON.parse(init.configJson) as ModelConfigJson);
  const result: unknown = await fn.call(ctor, helper);
  const config = result instanceof AutoCompleteConfig ? result.asObject() : (result ?? helper.asObject());
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new Error('autoCompleteConfig() must return the config it was given (or a config object)');
  }
  post({ kind: 'autocompleted', configJson: JSON.stringify(config) });
}

// --- serving ---------------------------------------------------------------------------------------------

let model: Model;
/** execute is a generator function: called once per request, its yields are the responses. */
let generatorForm = false;
let decoupled = false;
let modelName = '';
let modelVersion = '';

interface Live {
  readonly sender: WorkerSender;
  readonly controller: AbortController;
}
const live = new Map<number, Live>();

function toRequest(w: WireRequest): InferenceRequest {
  const controller = new AbortController();
  if (w.cancelled) controller.abort();
  const sender = new WorkerSender(w.rid, w.outputs, decoupled, controller.signal, post, counters, () =>
    live.delete(w.rid),
  );
  live.set(w.rid, { sender, controller });
  const init: InferenceRequestInit = {
    modelName,
    modelVersion,
    requestId: w.id,
    inputs: w.inputs.map((t) => new Tensor(t.name, t.datatype, t.shape, t.data)),
    requestedOutputNames: w.outputs,
    correlationId: w.correlationId,
    flags: w.flags,
    parameters: w.parameters,
  };
  return new InferenceRequest(init, { sender, signal: controller.signal, batchSize: w.batchSize });
}

/** Ends a request with an error when its sender cannot (the sender refused, or nothing was sent). */
function failRequest(w: WireRequest, sender: WorkerSender, err: unknown): void {
  sender.close();
  post({
    kind: 'response',
    response: { rid: w.rid, outputs: [], final: true, error: wireError(err, 'execute') },
  });
}

/**
 * The generator form: one generator per request, driven concurrently on this thread. The batch counts as
 * executed once they have started, as a sender-form execute() that starts its streams and returns.
 */
function executeGenerators(batch: number, wire: WireRequest[], requests: InferenceRequest[]): void {
  const m = model as unknown as GeneratorModel;
  requests.forEach((request, i) => {
    const sender = live.get(wire[i].rid)!.sender;
    void driveGenerator(
      () => m.execute(request),
      request,
      sender,
      (err) => failRequest(wire[i], sender, err),
    );
  });
  post({ kind: 'executed', batch });
}

async function execute(batch: number, wire: WireRequest[]): Promise<void> {
  const requests = wire.map(toRequest);
  if (generatorForm) {
    executeGenerators(batch, wire, requests);
    return;
  }
  const senders = wire.map((w) => live.get(w.rid)!.sender);
  let result: unknown;
  try {
    result = await model.execute(requests);
  } catch (err) {
    for (const s of senders) s.close();
    post({ kind: 'executed', batch, error: wireError(err, 'execute') });
    return;
  }
  if (decoupled || result === undefined || result === null) {
    if (decoupled && result !== undefined && result !== null) {
      logger.warn(
        `decoupled model '${modelName}': execute() returned a value; it is ignored (use the response senders)`,
      );
    }
    post({ kind: 'executed', batch });
    return;
  }
  if (!Array.isArray(result)) {
    for (const s of senders) s.close();
    post({
      kind: 'executed',
      batch,
      error: {
        code: 'INTERNAL',
        message: 'execute() must return an array of responses (one per request) or nothing',
      },
    });
    return;
  }
  if (result.length !== requests.length) {
    for (const s of senders) s.close();
    post({
      kind: 'executed',
      batch,
      error: {
        code: 'INTERNAL',
        message:
          'Number of InferenceResponse objects do not match the number of InferenceRequest objects. ' +
          `InferenceRequest(s) size is:${requests.length}, and InferenceResponse(s) size is:${result.length}`,
      },
    });
    return;
  }
  const responses: WireResponse[] = [];
  const transfer = new Set<ArrayBuffer>();
  result.forEach((r: unknown, i) => {
    const sender = senders[i];
    if (sender.done) return; // answered through its sender already
    sender.close();
    try {
      if (r === undefined || r === null) throw new Error(`execute() returned no response for request ${i}`);
      responses.push(responseToWire(wire[i].rid, wire[i].outputs, r, true, transfer, counters));
    } catch (err) {
      responses.push({ rid: wire[i].rid, outputs: [], final: true, error: wireError(err) });
    }
  });
  post({ kind: 'executed', batch, responses }, [...transfer]);
}

async function answer(q: number, what: 'ready' | 'metrics' | 'counters'): Promise<void> {
  try {
    let a: QueryAnswer;
    if (what === 'ready') a = { what, ready: model.isReady ? (await model.isReady()) !== false : true };
    else if (what === 'metrics') a = { what, families: defaultMetricRegistry.snapshot() };
    else a = { what, counters: { ...counters } };
    post({ kind: 'answer', q, answer: a });
  } catch (err) {
    post({ kind: 'answer', q, error: wireError(err) });
  }
}

function onMessage(msg: JsToWorker): void {
  switch (msg.kind) {
    case 'execute':
      void execute(msg.batch, msg.requests);
      break;
    case 'cancel':
      live.get(msg.rid)?.controller.abort();
      break;
    case 'taken':
      for (let i = 0; i < msg.rids.length; i++) live.get(msg.rids[i])?.sender.taken(msg.counts[i]);
      break;
    case 'drop': {
      const l = live.get(msg.rid);
      l?.controller.abort();
      l?.sender.close();
      break;
    }
    case 'bls-result': {
      const r = msg.result;
      blsCalls.get(msg.call)?.push({
        ...r,
        outputs: r.outputs.map((t) => new Tensor(t.name, t.datatype, t.shape, t.data)),
      });
      break;
    }
    case 'bls-error':
      blsCalls.get(msg.call)?.fail(new NereidError(msg.error.code, msg.error.message));
      break;
    case 'query':
      void answer(msg.q, msg.what);
      break;
    case 'finalize':
      void (async () => {
        try {
          await model.finalize?.();
          post({ kind: 'finalized' });
        } catch (err) {
          post({ kind: 'finalized', error: wireError(err, 'finalize') });
        }
      })();
      break;
  }
}

function makeContext(config: ModelConfigJson): ModelContext {
  const f = init.facts!;
  return {
    modelName: f.modelName,
    modelVersion: f.modelVersion,
    instanceName: f.instanceName,
    instanceKind: f.instanceKind,
    deviceId: f.deviceId,
    modelDir: f.modelDir,
    modelPath: init.modelPath,
    config,
    decoupled: f.decoupled,
    log: logger,
    infer: (r) => new InferenceRequest(r).exec(),
    inferStream: (r) => new InferenceRequest(r).stream(),
  };
}

async function serve(): Promise<void> {
  const f = init.facts!;
  decoupled = f.decoupled;
  modelName = f.modelName;
  modelVersion = String(f.modelVersion);
  const args: ModelInitializeArgs = {
    model_config: init.configJson,
    model_instance_kind: f.instanceKind,
    model_instance_name: f.instanceName,
    model_instance_device_id: String(f.deviceId),
    model_repository: f.modelDir,
    model_version: String(f.modelVersion),
    model_name: f.modelName,
  };
  const config = JSON.parse(init.configJson) as ModelConfigJson;
  const context = makeContext(config);
  const declared = (config as { output?: unknown }).output;
  if (Array.isArray(declared)) {
    setDeclaredOutputs(declared.map((o) => String((o as { name?: unknown }).name)));
  }
  const loaded = await importModel();
  phase = 'initialize';
  if (loaded.kind === 'class') model = new loaded.ctor();
  else if (loaded.kind === 'factory') model = await loaded.fn(args, context);
  else model = loaded.model;
  if (typeof model?.execute !== 'function')
    throw new Error(`the model in '${init.modelPath}' has no execute() method`);
  generatorForm = isGeneratorFunction((model as { execute: unknown }).execute);
  await model.initialize?.(args, context);
  port.on('message', onMessage);
  post({ kind: 'ready', definesIsReady: typeof model.isReady === 'function' });
}

(init.mode === 'autocomplete' ? autocomplete() : serve()).catch((err: unknown) => {
  post({ kind: 'init-error', error: wireError(err, phase) });
});
