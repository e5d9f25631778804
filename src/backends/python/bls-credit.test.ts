// Flow control of BLS responses from the host to the stub (issue 33), with a real stub process and a real
// model.py: a model that calls a decoupled model by BLS and then holds its ResponseIterator gets at most
// the call's window of responses ahead of what it read — the producer on the host (the server's
// inference stream, here a generator standing in for the decoupled target) is not asked for more, so
// nothing is buffered for it — and once the model reads on, every response arrives, in order. Counted:
// responses the producer yielded against responses the model read; nothing is timed.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import type {
  BackendRequest,
  ResponseSender,
  SendOptions,
  ServerInferRequest,
  ServerInferResponse,
} from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import { silentLogger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import { PythonInstance } from './instance.js';
import { PACKAGE_ROOT } from './interpreter.js';

const PYTHON = path.join(PACKAGE_ROOT, '.venv/bin/python');
/** The stub's BLS_WINDOW (python/nereid_stub/runtime.py). */
const WINDOW = 32;
const COUNT = 2000;
const READ_FIRST = 4;

// Calls `many` by BLS for COUNT responses, reads READ_FIRST, says so in the "read" file and holds the
// iterator until the "go" file exists; then reads the rest and answers with every value it got, in order.
const CALLER_PY = `
import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            files = json.loads(request.parameters())
            count = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            call = pb_utils.InferenceRequest(
                model_name="many",
                requested_output_names=["OUT"],
                inputs=[pb_utils.Tensor("IN", np.array([count], dtype=np.int32))],
            )
            seen = []
            iterator = call.exec(decoupled=True)
            for response in iterator:
                if response.has_error():
                    raise pb_utils.TritonModelException(response.error().message())
                out = pb_utils.get_output_tensor_by_name(response, "OUT")
                if out is not None:
                    seen.append(int(out.as_numpy()[0]))
                if files.get("drop") and seen:
                    break
                if len(seen) == ${READ_FIRST}:
                    with open(files["read"], "w") as f:
                        f.write(str(len(seen)))
                    while not os.path.exists(files["go"]):
                        time.sleep(0.05)
            del iterator  # dropped: a call not read to its end is cancelled
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array(seen, dtype=np.int32))]))
        return responses
`;

/** The decoupled target: `count` responses, OUT = its index; counts what it was asked for. */
class Producer {
  produced = 0;
  /** The stream was closed from this side (read to its end, or abandoned). */
  closed = false;
  infer = async function* (this: Producer, r: ServerInferRequest): AsyncIterable<ServerInferResponse> {
    const input = r.inputs[0];
    const count = new Int32Array(Uint8Array.from(input.data).buffer)[0];
    try {
      for (let i = 0; i < count; i++) {
        await Promise.resolve(); // an inference stream's next response arrives later
        this.produced++;
        const out: Tensor = {
          name: 'OUT',
          datatype: 'INT32',
          shape: [1],
          data: Buffer.from(new Int32Array([i]).buffer),
        };
        yield { modelName: 'many', modelVersion: '1', id: '', outputs: [out], parameters: {}, final: false };
      }
      yield { modelName: 'many', modelVersion: '1', id: '', outputs: [], parameters: {}, final: true };
    } finally {
      this.closed = true;
    }
  };
}

class Answer implements ResponseSender {
  outputs: readonly Tensor[] | undefined;
  error: NereidError | undefined;
  done = false;
  send(outputs: readonly Tensor[], options: SendOptions): void {
    this.outputs = outputs;
    if (options.final) this.done = true;
  }
  fail(error: NereidError): void {
    this.error = error;
    this.done = true;
  }
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'nereid-bls-credit-'));
const instances: PythonInstance[] = [];
after(async () => {
  for (const i of instances) await i.close().catch(() => undefined);
  rmSync(tmp, { recursive: true, force: true });
});

function callRequest(parameters: Record<string, string>, sender: ResponseSender): BackendRequest {
  return {
    id: 'holds',
    inputs: new Map([
      [
        'IN',
        { name: 'IN', datatype: 'INT32', shape: [1], data: Buffer.from(new Int32Array([COUNT]).buffer) },
      ],
    ]),
    requestedOutputs: new Set(['OUT']),
    parameters,
    correlationId: 0n,
    flags: 0,
    batchSize: 1,
    signal: new AbortController().signal,
    sender,
  };
}

async function caller(producer: Producer, folder: string): Promise<PythonInstance> {
  const dir = path.join(tmp, folder);
  mkdirSync(path.join(dir, '1'), { recursive: true });
  const modelPath = path.join(dir, '1', 'model.py');
  writeFileSync(modelPath, CALLER_PY);
  const name = 'caller_0';
  const log = silentLogger();
  const created = await PythonInstance.create({
    spec: { name, groupName: name, index: 0, kind: 'KIND_CPU', deviceId: 0 },
    modelName: 'caller',
    launch: { name, interpreter: { executable: PYTHON, env: {}, origin: 'test' }, shm: undefined, log },
    init: {
      model_path: modelPath,
      model_config: JSON.stringify({ name: 'caller', output: [{ name: 'OUT' }] }),
      model_repository: dir,
      model_version: '1',
      shm_initial: 1 << 20,
      shm_growth: 1 << 20,
    },
    decoupled: false,
    timeoutMs: 30_000,
    executionTimeoutMs: 120_000,
    shmThreshold: 1 << 30,
    log,
    serverInfer: (r) => producer.infer(r),
  });
  instances.push(created);
  return created;
}

describe('BLS responses to a model that holds its iterator', { timeout: 120_000 }, () => {
  it('are sent at most a window ahead of what it read, the producer paused; then all arrive in order', async () => {
    const producer = new Producer();
    const model = await caller(producer, 'holds');
    const files = { read: path.join(tmp, 'read'), go: path.join(tmp, 'go') };
    const answer = new Answer();
    const executed = model.execute([callRequest(files, answer)]);

    // The model has read READ_FIRST and holds the iterator; wait until the producer stops moving.
    while (!existsSync(files.read)) await sleep(50);
    assert.equal(readFileSync(files.read, 'utf8'), String(READ_FIRST));
    let last = -1;
    for (let stable = 0; stable < 5;) {
      await sleep(300);
      stable = producer.produced === last ? stable + 1 : 0;
      last = producer.produced;
    }
    // In flight: what the producer yielded minus what the model read — the window, and the one response
    // waiting on this side for credit.
    assert.ok(
      producer.produced - READ_FIRST <= WINDOW + 1,
      `responses in flight while the model holds its iterator: ${producer.produced - READ_FIRST} (window ${WINDOW})`,
    );
    assert.ok(producer.produced < COUNT, `the producer waits (it made ${producer.produced} of ${COUNT})`);

    // Read on: every response arrives, in order.
    writeFileSync(files.go, '');
    await executed;
    assert.equal(answer.error, undefined);
    const out = answer.outputs?.[0];
    assert.ok(out !== undefined);
    assert.deepEqual(
      Array.from(new Int32Array(Uint8Array.from(out.data).buffer)),
      Array.from({ length: COUNT }, (_, i) => i),
    );
    assert.equal(producer.produced, COUNT);
  });

  it('a call whose iterator the model drops before the end is cancelled: the producer stops', async () => {
    const producer = new Producer();
    const model = await caller(producer, 'drops');
    const answer = new Answer();
    await model.execute([callRequest({ read: path.join(tmp, 'read-drop'), go: '', drop: '1' }, answer)]);
    assert.equal(answer.error, undefined);
    assert.deepEqual(Array.from(new Int32Array(Uint8Array.from(answer.outputs![0].data).buffer)), [0]);
    // Without the cancellation the call would wait for credit for good, the producer held open.
    while (!producer.closed) await sleep(50);
    assert.ok(producer.produced < COUNT, `the producer stopped at ${producer.produced} of ${COUNT}`);
  });
});
