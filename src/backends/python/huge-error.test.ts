// A Python model's huge exception message is capped before it reaches the client or the log (issue 33):
// a model that raises, or answers with an error response, whose message is 1 MB long gives its client a
// message of about 4 KiB saying how much was cut, with a real stub process and a real model.py.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { BackendRequest, ResponseSender } from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import { Logger } from '../../common/logger.js';
import { MAX_MODEL_MESSAGE, ModelErrorLog } from '../model-errors.js';
import { PythonInstance } from './instance.js';
import { PACKAGE_ROOT } from './interpreter.js';

const PYTHON = path.join(PACKAGE_ROOT, '.venv/bin/python');

// IN[0] == 1: raises with a 1 MB message; IN[0] == 2: answers with a 1 MB error response.
const MODEL_PY = `
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            mode = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            if mode == 1:
                raise ValueError("x" * 1_000_000)
            responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("y" * 1_000_000)))
        return responses
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

const tmp = mkdtempSync(path.join(os.tmpdir(), 'nereid-huge-error-'));
const logged: string[] = [];
let model: PythonInstance | undefined;
after(async () => {
  await model?.close().catch(() => undefined);
  rmSync(tmp, { recursive: true, force: true });
});

async function start(): Promise<PythonInstance> {
  const dir = path.join(tmp, 'huge');
  mkdirSync(path.join(dir, '1'), { recursive: true });
  const modelPath = path.join(dir, '1', 'model.py');
  writeFileSync(modelPath, MODEL_PY);
  const log = new Logger({}, (line) => logged.push(line));
  const name = 'huge_0';
  return PythonInstance.create({
    spec: { name, groupName: 'huge_0', index: 0, kind: 'KIND_CPU', deviceId: 0 },
    modelName: 'huge',
    launch: { name, interpreter: { executable: PYTHON, env: {}, origin: 'test' }, shm: undefined, log },
    init: {
      model_path: modelPath,
      model_config: JSON.stringify({ name: 'huge', output: [{ name: 'OUT' }] }),
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

function request(mode: number, sender: ResponseSender): BackendRequest {
  return {
    id: `mode-${mode}`,
    inputs: new Map([
      ['IN', { name: 'IN', datatype: 'INT32', shape: [1], data: Buffer.from(new Int32Array([mode]).buffer) }],
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

describe('a Python model with a 1 MB error message', { timeout: 60_000 }, () => {
  for (const [mode, what, char] of [
    [1, 'raised', 'x'],
    [2, 'sent as an error response', 'y'],
  ] as const) {
    it(`${what}: the client gets it capped, and the log does not hold it whole`, async () => {
      model ??= await start();
      const sender = new ErrorRecorder();
      await model.execute([request(mode, sender)]);
      await sender.ended;
      const message = sender.error?.message ?? '';
      assert.ok(message.includes(char.repeat(100)), message.slice(0, 200));
      assert.ok(message.length < MAX_MODEL_MESSAGE + 1024, `${message.length} characters`);
      assert.match(message, /more characters cut/);
      for (const line of logged) assert.ok(line.length < 100_000, `a log line of ${line.length} characters`);
    });
  }
});
