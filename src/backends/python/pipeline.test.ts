// Pipelined batches on one Python instance, with a real stub process and a real model.py: several
// execute() calls open at once run in call order with the right outputs (inline and through /dev/shm);
// a stub killed with two batches in it fails both with the unhealthy error and one replacement serves; a
// batch that arrives while the model waits for a BLS answer runs after that execute returned, not inside
// it; the phases a batch reports fit within its execute() call; and the execution timeout counts from when
// the stub starts a batch, not while it waits behind a long one. The tests wait for events (gate files the
// test creates, responses); nothing asserts on how long anything took.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import type {
  BackendRequest,
  PhaseTimings,
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

// IN INT32 [n]; OUT = [sum(IN) + 1, the how-many-th execute call this is, the stub's pid, whether the
// request was cancelled]. A request with a "gate" parameter waits until that file exists; one with "bls"
// asks the model "target" first and adds its answer; one with "await_cancel" reads the socket (as
// is_cancelled() does) until a cancellation for a batch that has not started yet has arrived.
const MODEL_PY = `
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.calls = 0

    def execute(self, requests):
        self.calls += 1
        responses = []
        for request in requests:
            params = __import__("json").loads(request.parameters())
            gate = params.get("gate")
            if gate:
                while not os.path.exists(gate):
                    time.sleep(0.002)
            if params.get("await_cancel"):
                from nereid_stub import channel

                runtime = channel.current()
                while not runtime._early_cancels:
                    request.is_cancelled()
                    time.sleep(0.002)
            value = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().astype(np.int64).sum()) + 1
            if params.get("bls"):
                call = pb_utils.InferenceRequest(
                    model_name="target",
                    requested_output_names=["OUT"],
                    inputs=[pb_utils.Tensor("IN", np.array([7], dtype=np.int32))],
                )
                answer = call.exec()
                if answer.has_error():
                    raise pb_utils.TritonModelException(answer.error().message())
                value += int(pb_utils.get_output_tensor_by_name(answer, "OUT").as_numpy()[0])
            out = np.array([value, self.calls, os.getpid(), request.is_cancelled()], dtype=np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
        return responses
`;

// Decoupled: a request with "gate" sends a non-final response every few milliseconds (progress) until the
// gate file exists; every request ends with a final response [sum(IN) + 1].
const STREAMING_PY = `
import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            gate = json.loads(request.parameters()).get("gate")
            value = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().sum()) + 1
            out = pb_utils.Tensor("OUT", np.array([value], dtype=np.int32))
            while gate and not os.path.exists(gate):
                sender.send(pb_utils.InferenceResponse([out]))
                time.sleep(0.05)
            sender.send(pb_utils.InferenceResponse([out]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
`;

const tmp = mkdtempSync(path.join(os.tmpdir(), 'nereid-pipeline-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
let models = 0;

const int32 = (values: number[]): Tensor => ({
  name: 'IN',
  datatype: 'INT32',
  shape: [values.length],
  data: Buffer.from(new Int32Array(values).buffer),
});
const ints = (b: Buffer): number[] => Array.from(new Int32Array(Uint8Array.from(b).buffer));

/** One request's stream as the test sees it: every send, the final outputs or the error. */
class Recorder implements ResponseSender {
  readonly sends: Tensor[][] = [];
  error: NereidError | undefined;
  done = false;
  timings: PhaseTimings | undefined;
  endedAt = 0n;
  private readonly ended: Promise<void>;
  private end!: () => void;
  constructor(
    private readonly log: string[],
    readonly label: string,
  ) {
    this.ended = new Promise((resolve) => (this.end = resolve));
  }
  send(outputs: readonly Tensor[], options: SendOptions): void {
    this.sends.push([...outputs]);
    if (options.final) this.close();
  }
  fail(error: NereidError): void {
    this.error = error;
    this.close();
  }
  private close(): void {
    this.done = true;
    this.endedAt = process.hrtime.bigint();
    this.log.push(this.label);
    this.end();
  }
  whenDone(): Promise<void> {
    return this.ended;
  }
  /** OUT of the final response. */
  out(): number[] {
    assert.equal(this.error, undefined, this.error?.message);
    return ints(this.sends.at(-1)![0].data);
  }
}

let rid = 0;
function request(
  recorder: Recorder,
  values: number[],
  parameters: Record<string, string> = {},
): BackendRequest {
  return {
    id: `r${rid++}`,
    inputs: new Map([['IN', int32(values)]]),
    requestedOutputs: new Set(['OUT']),
    parameters,
    correlationId: 0n,
    flags: 0,
    batchSize: 1,
    signal: new AbortController().signal,
    sender: recorder,
    reportTiming: (t) => (recorder.timings = t),
  };
}

interface Setup {
  readonly decoupled?: boolean;
  readonly executionTimeoutMs?: number;
  readonly shm?: boolean;
  readonly serverInfer?: (r: ServerInferRequest) => AsyncIterable<ServerInferResponse>;
}

async function instance(source: string, setup: Setup = {}): Promise<PythonInstance> {
  const dir = path.join(tmp, `m${models++}`);
  mkdirSync(path.join(dir, '1'), { recursive: true });
  const modelPath = path.join(dir, '1', 'model.py');
  writeFileSync(modelPath, source);
  const name = `pipe_${path.basename(dir)}_0`;
  const log = silentLogger();
  return PythonInstance.create({
    spec: { name, groupName: 'pipe_0', index: 0, kind: 'KIND_CPU', deviceId: 0 },
    modelName: 'pipe',
    launch: {
      name,
      interpreter: { executable: PYTHON, env: {}, origin: 'test' },
      shm: setup.shm
        ? { prefix: `nereid_pipeline_test_${process.pid}_`, initialSize: 1 << 20, growth: 1 << 20 }
        : undefined,
      log,
    },
    init: {
      model_path: modelPath,
      model_config: JSON.stringify({ name: 'pipe', output: [{ name: 'OUT' }] }),
      model_repository: dir,
      model_version: '1',
      shm_initial: 1 << 20,
      shm_growth: 1 << 20,
    },
    decoupled: setup.decoupled === true,
    timeoutMs: 30_000,
    executionTimeoutMs: setup.executionTimeoutMs ?? 0,
    shmThreshold: setup.shm ? 1024 : 1 << 30,
    log,
    serverInfer: setup.serverInfer,
    pipelineDepth: 2,
  });
}

/** Stub processes of `name` that are children of this process. */
function stubsOf(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (ppid === process.pid && cmd.includes(name) && cmd.some((a) => a.endsWith('nereid_python_stub.py')))
        pids.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

const gatePath = (): string => path.join(tmp, `gate${rid++}`);
const open = (gate: string): void => writeFileSync(gate, '');

describe('pipelined batches on a Python instance', () => {
  it('declares its depth, runs batches in call order and answers each correctly', async () => {
    const inst = await instance(MODEL_PY);
    try {
      assert.equal(inst.pipelineDepth, 2);
      const order: string[] = [];
      const gate = gatePath();
      const recs = [0, 1, 2, 3].map((i) => new Recorder(order, `b${i}`));
      // The first batch holds the model until the gate opens; the others are all sent meanwhile.
      const runs = recs.map((r, i) => inst.execute([request(r, [10 * i, 1], i === 0 ? { gate } : {})]));
      open(gate);
      const results = await Promise.all(runs);
      for (const result of results) assert.deepEqual(result, { executed: true });
      assert.deepEqual(order, ['b0', 'b1', 'b2', 'b3']);
      const outs = recs.map((r) => r.out());
      assert.deepEqual(
        outs.map((o) => o[0]),
        [2, 12, 22, 32],
      );
      // One execute call each, in the order execute() was called, all on the same stub.
      assert.deepEqual(
        outs.map((o) => o[1]),
        [1, 2, 3, 4],
      );
      assert.equal(new Set(outs.map((o) => o[2])).size, 1);
    } finally {
      await inst.close();
    }
  });

  it('pipelined batches with inputs in /dev/shm each read their own inputs', async () => {
    const inst = await instance(MODEL_PY, { shm: true });
    try {
      const order: string[] = [];
      const gate = gatePath();
      // 4 KiB inputs (over the 1 KiB threshold): written into the host->stub file while earlier batches
      // still hold theirs.
      const inputs = [1, 2, 3].map((k) => Array.from({ length: 1024 }, (_, i) => (i % 7) * k));
      const recs = inputs.map((_, i) => new Recorder(order, `b${i}`));
      const runs = recs.map((r, i) => inst.execute([request(r, inputs[i], i === 0 ? { gate } : {})]));
      open(gate);
      await Promise.all(runs);
      assert.deepEqual(
        recs.map((r) => r.out()[0]),
        inputs.map((v) => v.reduce((a, b) => a + b, 0) + 1),
      );
      // A later batch after all of them ended (the file is reset then) still reads the right bytes.
      const later = new Recorder(order, 'later');
      await inst.execute([request(later, inputs[2])]);
      assert.equal(later.out()[0], inputs[2].reduce((a, b) => a + b, 0) + 1);
    } finally {
      await inst.close();
    }
  });

  it('a stub killed with two batches in it fails both as unhealthy, and one new stub serves', async () => {
    const inst = await instance(MODEL_PY);
    try {
      const order: string[] = [];
      const gate = gatePath();
      const first = new Recorder(order, 'first');
      const second = new Recorder(order, 'second');
      const warm = new Recorder(order, 'warm');
      await inst.execute([request(warm, [1])]);
      const pid = warm.out()[2];
      const runs = [inst.execute([request(first, [1], { gate })]), inst.execute([request(second, [2])])];
      process.kill(pid, 'SIGKILL');
      await Promise.all(runs);
      for (const r of [first, second]) {
        assert.match(r.error?.message ?? '', /Stub process 'pipe_m\d+_0' is not healthy/);
      }
      const next = new Recorder(order, 'next');
      await inst.execute([request(next, [41])]);
      assert.equal(next.out()[0], 42);
      assert.notEqual(next.out()[2], pid);
      assert.deepEqual(stubsOf(inst.name), [next.out()[2]]);
    } finally {
      await inst.close();
    }
  });

  it('a batch that arrives while the model waits for a BLS answer runs after that execute returned', async () => {
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    let called!: () => void;
    const calling = new Promise<void>((resolve) => (called = resolve));
    let caller: string | undefined;
    const serverInfer = async function* (r: ServerInferRequest): AsyncIterable<ServerInferResponse> {
      caller = r.callerModel;
      called();
      await answered;
      const seven = ints(r.inputs[0].data)[0];
      yield {
        modelName: r.modelName,
        modelVersion: '1',
        id: '',
        outputs: [{ name: 'OUT', datatype: 'INT32', shape: [1], data: int32([seven * 100]).data }],
        parameters: {},
        final: true,
      };
    };
    const inst = await instance(MODEL_PY, { serverInfer });
    try {
      const order: string[] = [];
      const callerRecorder = new Recorder(order, 'caller');
      const behind = new Recorder(order, 'behind');
      const first = inst.execute([request(callerRecorder, [1], { bls: '1' })]);
      await calling; // the model is now blocked in call.exec(), reading frames for its answer
      // Written to the socket before the BLS answer, so the stub reads this EXECUTE while it waits.
      const second = inst.execute([request(behind, [5])]);
      answer();
      await Promise.all([first, second]);
      assert.deepEqual(order, ['caller', 'behind']);
      // The call names its caller (on-demand mode keeps the callee loaded while the caller is busy).
      assert.equal(caller, 'pipe');
      assert.deepEqual(callerRecorder.out().slice(0, 2), [702, 1]);
      assert.deepEqual(behind.out().slice(0, 2), [6, 2]);
    } finally {
      await inst.close();
    }
  });

  it('a pipelined batch cancelled before the stub starts it is seen cancelled by the model', async () => {
    const inst = await instance(MODEL_PY);
    try {
      const order: string[] = [];
      const first = new Recorder(order, 'first');
      const behind = new Recorder(order, 'behind');
      const abort = new AbortController();
      const runs = [inst.execute([request(first, [1], { await_cancel: '1' })])];
      const r = request(behind, [2]);
      runs.push(inst.execute([{ ...r, signal: abort.signal }]));
      // The host tells the stub with a CANCEL frame, which arrives while the first batch still runs.
      abort.abort();
      await Promise.all(runs);
      assert.equal(first.out()[3], 0);
      assert.equal(behind.out()[3], 1, 'request.is_cancelled() in the batch that waited');
    } finally {
      await inst.close();
    }
  });

  it('the phases a pipelined batch reports fit within its execute() call', async () => {
    const inst = await instance(MODEL_PY);
    try {
      const order: string[] = [];
      const gate = gatePath();
      const recs = [0, 1, 2].map((i) => new Recorder(order, `b${i}`));
      const calls = recs.map((r, i) => {
        const at = process.hrtime.bigint();
        const run = inst.execute([request(r, [i], i === 0 ? { gate } : {})]);
        return { at, run };
      });
      open(gate);
      await Promise.all(calls.map((c) => c.run));
      recs.forEach((r, i) => {
        const t = r.timings!;
        assert.ok(t, `batch ${i} reported its timings`);
        const sum = BigInt(t.computeInputNs + t.computeInferNs + t.computeOutputNs);
        assert.ok(sum <= r.endedAt - calls[i].at, `batch ${i}: ${JSON.stringify(t)}`);
        assert.ok(t.computeInferNs > 0, `batch ${i}: the stub's own work is compute_infer`);
      });
    } finally {
      await inst.close();
    }
  });

  it('the execution timeout of a batch counts from when the stub starts it', async () => {
    const timeoutMs = 1000;
    const inst = await instance(STREAMING_PY, { decoupled: true, executionTimeoutMs: timeoutMs });
    try {
      const order: string[] = [];
      const gate = gatePath();
      const long = new Recorder(order, 'long');
      const waiting = new Recorder(order, 'waiting');
      // The long batch shows progress (a response every 50 ms) for more than two timeouts; the batch
      // behind it waits all that time without running.
      const runs = [inst.execute([request(long, [1], { gate })]), inst.execute([request(waiting, [2])])];
      await sleep(timeoutMs * 2.5);
      open(gate);
      await Promise.all(runs);
      await Promise.all([long.whenDone(), waiting.whenDone()]);
      assert.equal(long.error, undefined, long.error?.message);
      assert.equal(waiting.error, undefined, waiting.error?.message);
      assert.deepEqual(ints(waiting.sends.at(-1)![0].data), [3]);
    } finally {
      await inst.close();
    }
  });
});
