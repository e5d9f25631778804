/**
 * The worker thread of one ONNX Runtime instance. onnxruntime-node's session.run() and session creation
 * do their work synchronously on the calling thread (the Promise only defers the start to setImmediate),
 * so each instance owns one of these threads and its own InferenceSession; the main event loop only
 * posts inputs and receives outputs. Runs arrive one at a time (the core never overlaps execute() on an
 * instance), and are handled in order.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { InferenceSession, type Tensor as OrtTensor } from 'onnxruntime-node';
import { NereidError } from '../../common/errors.js';
import { fromOrtTensor, toOrtTensor } from './codec.js';
import type { FromWorker, IoMeta, RunMessage, ToWorker, WireTensor, WorkerInit } from './protocol.js';

function post(message: FromWorker, transfer: ArrayBuffer[] = []): void {
  parentPort!.postMessage(message, transfer);
}

function describe(meta: readonly InferenceSession.ValueMetadata[]): IoMeta[] {
  return meta.map((m) =>
    m.isTensor
      ? {
          name: m.name,
          isTensor: true,
          ortType: m.type,
          // Symbolic dims arrive as their names ('' when anonymous); Triton spells every one of them -1.
          shape: m.shape.map((d) => (typeof d === 'number' ? d : -1)),
        }
      : { name: m.name, isTensor: false, ortType: '', shape: [] },
  );
}

function toSessionOptions(init: WorkerInit): InferenceSession.SessionOptions {
  const s = init.settings;
  const options: InferenceSession.SessionOptions = {
    executionProviders: ['cpu'],
    intraOpNumThreads: s.intraOpNumThreads,
    executionMode: s.executionMode,
    graphOptimizationLevel: s.graphOptimizationLevel,
    logSeverityLevel: s.logSeverityLevel,
    extra: s.configEntries,
  };
  if (s.interOpNumThreads !== undefined) options.interOpNumThreads = s.interOpNumThreads;
  if (s.enableCpuMemArena !== undefined) options.enableCpuMemArena = s.enableCpuMemArena;
  if (s.enableMemPattern !== undefined) options.enableMemPattern = s.enableMemPattern;
  return options;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

let crashArmed = false;

async function run(session: InferenceSession, msg: RunMessage): Promise<void> {
  let outputs: WireTensor[];
  try {
    const feeds: Record<string, OrtTensor> = {};
    for (const f of msg.feeds) feeds[f.name] = toOrtTensor(f);
    let result: InferenceSession.ReturnType;
    try {
      result = await session.run(feeds, msg.fetches);
    } catch (err) {
      // Triton reports ORT failures as INTERNAL "onnx runtime error <code>: <message>".
      throw new NereidError('INTERNAL', `onnx runtime error: ${messageOf(err)}`);
    }
    outputs = msg.fetches.map((name) => {
      const value = result[name];
      if (value === undefined)
        throw new NereidError('INTERNAL', `onnx runtime did not produce output '${name}'`);
      return fromOrtTensor(name, value);
    });
  } catch (err) {
    const e = NereidError.from(err);
    post({ kind: 'run-error', id: msg.id, code: e.code, message: e.message });
    return;
  }
  if (crashArmed) {
    // Outside the promise chain, so it is a real uncaught exception that ends this thread.
    setImmediate(() => {
      throw new Error('worker crash requested by a test');
    });
    return;
  }
  post(
    { kind: 'result', id: msg.id, outputs },
    outputs.map((o) => o.data),
  );
}

async function main(): Promise<void> {
  const init = workerData as WorkerInit;
  let session: InferenceSession;
  try {
    session = await InferenceSession.create(init.modelPath, toSessionOptions(init));
  } catch (err) {
    const text = messageOf(err);
    // onnxruntime-node 1.30 maps ONNX element type 16 (bfloat16) to nothing and refuses the session.
    if (/Unsupported data type: 16\b/.test(text)) {
      post({
        kind: 'load-error',
        code: 'UNSUPPORTED',
        message: `onnxruntime-node does not support BF16 (bfloat16) model inputs or outputs: ${init.modelPath}`,
      });
    } else {
      post({ kind: 'load-error', code: 'INTERNAL', message: `onnx runtime error: ${text}` });
    }
    return;
  }
  post({ kind: 'ready', inputs: describe(session.inputMetadata), outputs: describe(session.outputMetadata) });

  // Serialise runs even if messages arrive back to back: one session, one run at a time.
  let queue = Promise.resolve();
  parentPort!.on('message', (msg: ToWorker) => {
    if (msg.kind === 'crash-next-run') crashArmed = true;
    else queue = queue.then(() => run(session, msg));
  });
}

void main();
