// Back-pressure from a slow reader into a decoupled Python model (issue 33 item 2), with a real stub
// process and a real model.py: a request's queue of undelivered responses never holds more than its bound,
// the model's sends block while the queue is full (it has not sent everything though nothing stops it
// but the host not reading), and once the reader takes responses every one arrives, in order. The hold is
// the request's own (its credit, credit.ts): another request of the same stub, sent from a thread of its
// own, gets all of its responses meanwhile, and a held stream that ends is cancelled on the stub, which
// stops the model's thread. The queue is counted; nothing asserts on memory figures or on how long
// anything took.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import type { BackendRequest, ResponseSender, SendOptions } from '../../backend-api/backend.js';
import { cancelled, type NereidError } from '../../common/errors.js';
import { silentLogger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import { PythonInstance } from './instance.js';
import { PACKAGE_ROOT } from './interpreter.js';

const PYTHON = path.join(PACKAGE_ROOT, '.venv/bin/python');

// Decoupled: sends IN[0] responses of 16 KiB each (OUT = 4096 copies of the response's index), writing
// how many sends have returned into the file named by the "progress" parameter, then the final flag.
const MODEL_PY = `
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            progress = json.loads(request.parameters())["progress"]
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            for i in range(n):
                out = pb_utils.Tensor("OUT", np.full([4096], i, dtype=np.int32))
                sender.send(pb_utils.InferenceResponse([out]))
                with open(progress, "w") as f:
                    f.write(str(i + 1))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
`;

// The same with a thread per request (as repeat_int32_python does): each writes how many sends returned,
// and "cancelled" once it saw the request cancelled.
const THREADED_PY = `
import json
import threading

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            progress = json.loads(request.parameters())["progress"]
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            threading.Thread(target=self.respond, args=(sender, progress, n), daemon=True).start()
        return None

    def respond(self, sender, progress, n):
        sent = 0
        for i in range(n):
            if sender.is_cancelled():
                break
            out = pb_utils.Tensor("OUT", np.full([4096], i, dtype=np.int32))
            sender.send(pb_utils.InferenceResponse([out]))
            sent = i + 1
            with open(progress, "w") as f:
                f.write(str(sent))
        with open(progress, "w") as f:
            f.write(f"{sent} cancelled" if sender.is_cancelled() else str(sent))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
`;

// The same as an `async def execute`: every request's coroutine runs on the stub's one asyncio thread.
const ASYNC_PY = `
import asyncio
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            progress = json.loads(request.parameters())["progress"]
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            for i in range(n):
                out = pb_utils.Tensor("OUT", np.full([4096], i, dtype=np.int32))
                sender.send(pb_utils.InferenceResponse([out]))
                with open(progress, "w") as f:
                    f.write(str(i + 1))
                await asyncio.sleep(0)
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
`;

const CAP = 8;
/** credit.ts: a request's window and the overdraft a send on the stub's asyncio thread may take. */
const WINDOW = 32;
const OVERDRAFT = 256;
const COUNT = 400; // 400 x 16 KiB: far more than any socket buffer holds

/** A response queue with the core's contract (full at CAP, whenWritable waits for room) that the test drains. */
class BoundedQueue implements ResponseSender {
  readonly queue: { outputs: readonly Tensor[]; final: boolean }[] = [];
  maxQueued = 0;
  error: NereidError | undefined;
  done = false;
  private writers: (() => void)[] = [];
  private arrived: (() => void) | undefined;

  get full(): boolean {
    return !this.done && this.queue.length >= CAP;
  }
  whenWritable(): Promise<void> {
    if (!this.full) return Promise.resolve();
    return new Promise((resolve) => this.writers.push(resolve));
  }
  send(outputs: readonly Tensor[], options: SendOptions): void {
    if (this.done) return;
    this.queue.push({ outputs, final: options.final });
    this.maxQueued = Math.max(this.maxQueued, this.queue.length);
    if (options.final) this.done = true;
    this.wake();
  }
  fail(error: NereidError): void {
    this.error = error;
    this.done = true;
    this.wake();
    for (const w of this.writers.splice(0)) w();
  }
  /** The reader takes everything queued; resolves once something is there. */
  async takeAll(): Promise<{ outputs: readonly Tensor[]; final: boolean }[]> {
    while (this.queue.length === 0 && this.error === undefined) {
      await new Promise<void>((resolve) => (this.arrived = resolve));
    }
    const taken = this.queue.splice(0);
    for (const w of this.writers.splice(0)) w();
    return taken;
  }
  private wake(): void {
    const a = this.arrived;
    this.arrived = undefined;
    a?.();
  }
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'nereid-back-pressure-'));
const instances: PythonInstance[] = [];
after(async () => {
  for (const i of instances) await i.close().catch(() => undefined);
  rmSync(tmp, { recursive: true, force: true });
});

async function instance(source = MODEL_PY, folder = 'model'): Promise<PythonInstance> {
  const dir = path.join(tmp, folder);
  mkdirSync(path.join(dir, '1'), { recursive: true });
  const modelPath = path.join(dir, '1', 'model.py');
  writeFileSync(modelPath, source);
  const name = 'back_pressure_0';
  const log = silentLogger();
  const created = await PythonInstance.create({
    spec: { name, groupName: 'back_pressure_0', index: 0, kind: 'KIND_CPU', deviceId: 0 },
    modelName: 'back_pressure',
    launch: { name, interpreter: { executable: PYTHON, env: {}, origin: 'test' }, shm: undefined, log },
    init: {
      model_path: modelPath,
      model_config: JSON.stringify({ name: 'back_pressure', output: [{ name: 'OUT' }] }),
      model_repository: dir,
      model_version: '1',
      shm_initial: 1 << 20,
      shm_growth: 1 << 20,
    },
    decoupled: true,
    timeoutMs: 30_000,
    // A short execution timeout: a paused socket must not count as a hung stub.
    executionTimeoutMs: 2_000,
    shmThreshold: 1 << 30,
    log,
    serverInfer: undefined,
  });
  instances.push(created);
  return created;
}

function progressText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function readProgress(file: string): number {
  return Number.parseInt(progressText(file), 10) || 0;
}

function slowRequest(id: string, count: number, progress: string, queue: BoundedQueue): BackendRequest {
  return {
    id,
    inputs: new Map([
      [
        'IN',
        { name: 'IN', datatype: 'INT32', shape: [1], data: Buffer.from(new Int32Array([count]).buffer) },
      ],
    ]),
    requestedOutputs: new Set(['OUT']),
    parameters: { progress },
    correlationId: 0n,
    flags: 0,
    batchSize: 1,
    signal: new AbortController().signal,
    sender: queue,
  };
}

/** Waits until the model's progress stops moving with the queue full (the reader reads nothing). */
async function stalled(progress: string, queue: BoundedQueue): Promise<number> {
  let last = -1;
  for (let stable = 0; stable < 5;) {
    await sleep(600);
    const now = readProgress(progress);
    stable = now === last && queue.queue.length >= CAP ? stable + 1 : 0;
    last = now;
  }
  return last;
}

/** Takes responses until the final one; the first int32 of each response's OUT, in order. */
async function drain(queue: BoundedQueue): Promise<number[]> {
  const seen: number[] = [];
  let final = false;
  while (!final && queue.error === undefined) {
    for (const r of await queue.takeAll()) {
      if (r.outputs.length > 0) seen.push(new Int32Array(Uint8Array.from(r.outputs[0].data).buffer)[0]);
      final ||= r.final;
    }
  }
  return seen;
}

describe('a decoupled Python model and a reader that does not read', { timeout: 60_000 }, () => {
  it('waits in its send while the queue is full, then delivers every response in order', async () => {
    const model = await instance();
    const progress = path.join(tmp, 'progress');
    const queue = new BoundedQueue();
    const request: BackendRequest = {
      id: 'slow-reader',
      inputs: new Map([
        [
          'IN',
          { name: 'IN', datatype: 'INT32', shape: [1], data: Buffer.from(new Int32Array([COUNT]).buffer) },
        ],
      ]),
      requestedOutputs: new Set(['OUT']),
      parameters: { progress },
      correlationId: 0n,
      flags: 0,
      batchSize: 1,
      signal: new AbortController().signal,
      sender: queue,
    };
    const executed = model.execute([request]);

    // The reader reads nothing: the queue fills to its bound, and the model's progress comes to a stop
    // (waited for, with a generous bound, past the 2 s execution timeout).
    let last = -1;
    for (let stable = 0; stable < 5;) {
      await sleep(600);
      const now = readProgress(progress);
      stable = now === last && queue.queue.length >= CAP ? stable + 1 : 0;
      last = now;
    }
    assert.equal(queue.maxQueued, CAP, 'the queue never held more than its bound');
    assert.ok(last < COUNT, `the model's sends block while nobody reads (it sent ${last} of ${COUNT})`);
    assert.equal(queue.error, undefined, 'a paused socket is not a hung stub');

    // The reader takes everything now: every response arrives, in order, the last one final.
    const seen: number[] = [];
    let final = false;
    while (!final) {
      for (const r of await queue.takeAll()) {
        if (r.outputs.length > 0) seen.push(new Int32Array(Uint8Array.from(r.outputs[0].data).buffer)[0]);
        final ||= r.final;
      }
    }
    assert.equal(queue.error, undefined);
    assert.deepEqual(
      seen,
      Array.from({ length: COUNT }, (_, i) => i),
    );
    assert.ok(queue.maxQueued <= CAP, `at most ${CAP} responses were ever queued (saw ${queue.maxQueued})`);
    assert.equal(readProgress(progress), COUNT);
    await executed;
  });
  it('holds back only the unread request: another request of the same stub gets all of its responses', async () => {
    const model = await instance(THREADED_PY, 'threaded');
    const slowProgress = path.join(tmp, 'slow-progress');
    const slow = new BoundedQueue();
    await model.execute([slowRequest('unread', COUNT, slowProgress, slow)]);
    const held = await stalled(slowProgress, slow);
    assert.ok(held < COUNT, `the unread request's thread waits (it sent ${held} of ${COUNT})`);

    const fast = new BoundedQueue();
    await model.execute([slowRequest('read', COUNT, path.join(tmp, 'fast-progress'), fast)]);
    assert.deepEqual(
      await drain(fast),
      Array.from({ length: COUNT }, (_, i) => i),
    );
    assert.equal(fast.error, undefined);
    assert.ok(fast.maxQueued <= CAP && slow.maxQueued <= CAP, 'no queue held more than its bound');
    assert.equal(readProgress(slowProgress), held, 'the unread request stayed where it was');

    // Read now, the held request finishes too, in order.
    assert.deepEqual(
      await drain(slow),
      Array.from({ length: COUNT }, (_, i) => i),
    );
  });

  it('cancels a held request on the stub when its stream ends, which stops the model', async () => {
    const model = await instance(THREADED_PY, 'threaded-cancel');
    const progress = path.join(tmp, 'cancel-progress');
    const queue = new BoundedQueue();
    await model.execute([slowRequest('abandoned', COUNT, progress, queue)]);
    const held = await stalled(progress, queue);
    // The stream fails as --response-idle-timeout fails it (the client took nothing for too long).
    queue.fail(cancelled('the client took no response'));
    while (!progressText(progress).includes('cancelled')) await sleep(100);
    const sent = readProgress(progress);
    assert.ok(sent < COUNT, `the model stopped at ${sent} of ${COUNT} (held at ${held})`);
  });

  it("an async execute: a send past its credit does not stall the stub's other coroutines, and past the overdraft fails", async () => {
    const model = await instance(ASYNC_PY, 'async');
    const heldProgress = path.join(tmp, 'async-held');
    const held = new BoundedQueue();
    await model.execute([slowRequest('async-unread', COUNT, heldProgress, held)]);
    // Another request of the same stub, read as it comes: it is served although the first one's client
    // takes nothing (a send that waited for credit on the loop would stall this coroutine too).
    const read = new BoundedQueue();
    await model.execute([slowRequest('async-read', COUNT, path.join(tmp, 'async-read'), read)]);
    assert.deepEqual(
      await drain(read),
      Array.from({ length: COUNT }, (_, i) => i),
    );
    assert.equal(read.error, undefined);
    // The unread request went past its credit by the overdraft, then its send failed; read now, its
    // responses come in order, then the error, which says what to do.
    const sent = readProgress(heldProgress);
    assert.equal(sent, WINDOW + OVERDRAFT, `the unread request's sends returned ${sent} times`);
    assert.deepEqual(
      await drain(held),
      Array.from({ length: sent }, (_, i) => i),
    );
    assert.match(held.error?.message ?? '', /asyncio event loop cannot wait.*run_in_executor/);
    assert.ok(held.maxQueued <= CAP, `its queue held at most ${CAP} (saw ${held.maxQueued})`);
  });
});
