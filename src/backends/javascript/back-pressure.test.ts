// Back-pressure from a slow reader into a decoupled JavaScript model (issue 33 item 2), with a real worker
// thread and a real model module: a model that awaits sender.whenWritable() before each send, and one whose
// execute is a generator, stay a bounded number of responses ahead of a reader that reads nothing (the
// response queue holds at most its bound plus the worker's RESPONSE_WINDOW), and once the reader takes
// responses every one arrives, in order. The queue is counted; nothing asserts on memory or on time.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import type { BackendRequest, ResponseSender, SendOptions } from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import { silentLogger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import { ModelErrorLog } from '../model-errors.js';
import { JsInstance } from './instance.js';
import { RESPONSE_WINDOW } from './protocol.js';

const CAP = 8;
const COUNT = 2000;

// Sender form: sends IN[0] responses (OUT = [index]), awaiting whenWritable() before each, and writes how
// many it sent into the file named by the "progress" parameter.
const SENDER_MJS = `
import { writeFileSync } from 'node:fs';
import { RESPONSE_COMPLETE_FINAL, Tensor } from 'nereid-server';

export default class SenderModel {
  execute(requests) {
    for (const request of requests) void this.stream(request);
  }
  async stream(request) {
    const sender = request.getResponseSender();
    const n = request.input('IN').int32()[0];
    const progress = String(request.parameters.progress);
    for (let i = 0; i < n; i++) {
      await sender.whenWritable();
      if (request.isCancelled()) break;
      sender.send({ outputs: [Tensor.from('OUT', new Int32Array([i]))] });
      writeFileSync(progress, String(i + 1));
    }
    sender.send(undefined, RESPONSE_COMPLETE_FINAL);
  }
}
`;

// Generator form: yields IN[0] responses; the driver waits on whenWritable() by itself.
const GENERATOR_MJS = `
import { writeFileSync } from 'node:fs';
import { Tensor } from 'nereid-server';

export default class GeneratorModel {
  async *execute(request) {
    const n = request.input('IN').int32()[0];
    const progress = String(request.parameters.progress);
    for (let i = 0; i < n; i++) {
      writeFileSync(progress, String(i + 1));
      yield { outputs: [Tensor.from('OUT', new Int32Array([i]))] };
    }
  }
}
`;

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

const tmp = mkdtempSync(path.join(os.tmpdir(), 'nereid-js-back-pressure-'));
const instances: JsInstance[] = [];
after(async () => {
  for (const i of instances) await i.close().catch(() => undefined);
  rmSync(tmp, { recursive: true, force: true });
});

async function instance(label: string, source: string): Promise<JsInstance> {
  const dir = path.join(tmp, label);
  mkdirSync(path.join(dir, '1'), { recursive: true });
  const modelPath = path.join(dir, '1', 'model.mjs');
  writeFileSync(modelPath, source);
  const log = silentLogger();
  const name = `${label}_0`;
  const created = await JsInstance.create({
    spec: { name, groupName: `${label}_0`, index: 0, kind: 'KIND_CPU', deviceId: 0 },
    modelName: label,
    init: {
      mode: 'instance',
      modelPath,
      configJson: JSON.stringify({
        name: label,
        output: [{ name: 'OUT', data_type: 'TYPE_INT32', dims: [1] }],
      }),
      facts: {
        modelName: label,
        modelVersion: 1,
        instanceName: name,
        instanceKind: 'CPU',
        deviceId: 0,
        modelDir: dir,
        decoupled: true,
      },
    },
    // A short execution timeout: a model waiting for its reader must not count as a stuck one.
    options: { executionTimeoutMs: 2_000, initializeTimeoutMs: 30_000, maxOldGenerationSizeMb: undefined },
    decoupled: true,
    outputTypes: new Map([['OUT', 'INT32']]),
    log,
    serverApi: undefined,
    failures: { version: 1, modelDirs: [dir], errors: new ModelErrorLog({ log }), log },
  });
  instances.push(created);
  return created;
}

function readProgress(file: string): number {
  try {
    return Number(readFileSync(file, 'utf8')) || 0;
  } catch {
    return 0;
  }
}

async function slowReader(label: string, source: string): Promise<void> {
  const model = await instance(label, source);
  const progress = path.join(tmp, `${label}.progress`);
  const queue = new BoundedQueue();
  const request: BackendRequest = {
    id: label,
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

  // The reader reads nothing until the model's progress has stopped (waited for past the 2 s timeout).
  let last = -1;
  for (let stable = 0; stable < 5;) {
    await sleep(600);
    const now = readProgress(progress);
    stable = now === last && queue.queue.length >= CAP ? stable + 1 : 0;
    last = now;
  }
  const bound = CAP + RESPONSE_WINDOW;
  assert.ok(queue.maxQueued <= bound, `at most ${bound} responses queued (saw ${queue.maxQueued})`);
  assert.ok(last <= bound + 1, `the model waits for the reader (it sent ${last} of ${COUNT})`);
  assert.equal(queue.error, undefined, 'a model waiting for its reader is not a stuck one');

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
  assert.ok(queue.maxQueued <= bound, `at most ${bound} responses were ever queued (saw ${queue.maxQueued})`);
  await executed;
}

describe('a decoupled JavaScript model and a reader that does not read', { timeout: 90_000 }, () => {
  it('a model awaiting sender.whenWritable() waits for the reader', async () => {
    await slowReader('js_sender', SENDER_MJS);
  });
  it('a generator execute is driven at the reader’s pace', async () => {
    await slowReader('js_generator', GENERATOR_MJS);
  });
});
