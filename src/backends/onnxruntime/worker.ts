/**
 * The worker thread of one ONNX Runtime instance. onnxruntime-node's session.run() and session creation
 * do their work synchronously on the calling thread (the Promise only defers the start to setImmediate),
 * so each instance owns one of these threads and its own InferenceSession; the main event loop only
 * posts inputs and receives outputs. Runs arrive one at a time (the core never overlaps execute() on an
 * instance), and are handled in order.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { InferenceSession } from 'onnxruntime-node';
import { NereidError } from '../../common/errors.js';
import {
  packResult,
  unpackRun,
  type OrtFromWorker,
  type RunMessage,
  type RunResult,
  type OrtToWorker,
  type OrtWorkerInit,
} from './protocol.js';
import { openSession, runSession, sessionIo } from './session.js';

function post(message: OrtFromWorker, transfer: ArrayBuffer[] = []): void {
  parentPort!.postMessage(message, transfer);
}

let crashArmed = false;

async function run(session: InferenceSession, msg: RunMessage): Promise<void> {
  let result: RunResult;
  try {
    result = await runSession(session, msg.feeds, msg.fetches);
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
    packResult(msg.id, result),
    result.outputs.map((o) => o.data),
  );
}

async function main(): Promise<void> {
  const init = workerData as OrtWorkerInit;
  let session: InferenceSession;
  try {
    session = await openSession(init);
  } catch (err) {
    const e = NereidError.from(err);
    post({ kind: 'load-error', code: e.code, message: e.message });
    return;
  }
  const io = sessionIo(session);
  post({ kind: 'ready', inputs: io.inputs, outputs: io.outputs });

  // Serialise runs even if messages arrive back to back: one session, one run at a time.
  let queue = Promise.resolve();
  parentPort!.on('message', (msg: OrtToWorker) => {
    if (!Array.isArray(msg)) {
      if (msg.kind === 'crash-next-run') crashArmed = true;
      return;
    }
    const next = unpackRun(msg);
    queue = queue.then(() => run(session, next));
  });
}

void main();
