// A stub that writes a malformed EXECUTE_DONE (its binary header cut short) is stopped with a protocol
// error that says so, and the batch's request fails with it: a real stub process whose model.py writes the
// broken frame on the stub's own control socket, then waits to be killed.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { BackendRequest, ResponseSender } from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import { Logger } from '../../common/logger.js';
import { ModelErrorLog } from '../model-errors.js';
import { PythonInstance } from './instance.js';
import { PACKAGE_ROOT } from './interpreter.js';

const PYTHON = path.join(PACKAGE_ROOT, '.venv/bin/python');

// u32 batch 1, then nothing: a header of 4 bytes where the layout needs 32 before the first response.
const MODEL_PY = `
import time

from nereid_stub import channel, messages


class TritonPythonModel:
    def execute(self, requests):
        channel._current._writer.send_bytes(messages.EXECUTE_DONE, b"\\x01\\x00\\x00\\x00")
        time.sleep(60)
`;

class ErrorRecorder implements ResponseSender {
  error: NereidError | undefined;
  done = false;
  private end!: () => void;
  readonly ended = new Promise<void>((resolve) => (this.end = resolve));
  send(): void {
    this.done = true;
    this.end();
  }
  fail(error: NereidError): void {
    this.error = error;
    this.done = true;
    this.end();
  }
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'nereid-bad-done-'));
const logged: string[] = [];
let model: PythonInstance | undefined;
after(async () => {
  await model?.close().catch(() => undefined);
  rmSync(tmp, { recursive: true, force: true });
});

async function start(): Promise<PythonInstance> {
  const dir = path.join(tmp, 'bad_done');
  mkdirSync(path.join(dir, '1'), { recursive: true });
  const modelPath = path.join(dir, '1', 'model.py');
  writeFileSync(modelPath, MODEL_PY);
  const log = new Logger({}, (line) => logged.push(line));
  const name = 'bad_done_0';
  return PythonInstance.create({
    spec: { name, groupName: 'bad_done_0', index: 0, kind: 'KIND_CPU', deviceId: 0 },
    modelName: 'bad_done',
    launch: { name, interpreter: { executable: PYTHON, env: {}, origin: 'test' }, shm: undefined, log },
    init: {
      model_path: modelPath,
      model_config: JSON.stringify({ name: 'bad_done', output: [{ name: 'OUT' }] }),
      model_repository: dir,
      model_version: '1',
      shm_initial: 1 << 20,
      shm_growth: 1 << 20,
    },
    decoupled: false,
    timeoutMs: 30_000,
    shmThreshold: 1 << 30,
    log,
    serverInfer: undefined,
    failures: { version: 1, modelDirs: [dir], errors: new ModelErrorLog({ log }), log },
  });
}

function request(sender: ResponseSender): BackendRequest {
  return {
    id: 'bad',
    inputs: new Map([
      ['IN', { name: 'IN', datatype: 'INT32', shape: [1], data: Buffer.from(new Int32Array([1]).buffer) }],
    ]),
    requestedOutputs: new Set(['OUT']),
    parameters: {},
    correlationId: 0n,
    flags: 0,
    batchSize: 1,
    signal: new AbortController().signal,
    sender,
  };
}

describe('a stub that sends a truncated EXECUTE_DONE', { timeout: 60_000 }, () => {
  it('is stopped with a protocol error that names it, and its request fails with that error', async () => {
    model = await start();
    const sender = new ErrorRecorder();
    await model.execute([request(sender)]);
    await sender.ended;
    assert.match(
      sender.error?.message ?? '',
      /protocol error: malformed EXECUTE_DONE from the Python stub: header truncated/,
    );
  });
});
