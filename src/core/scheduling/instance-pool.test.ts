// The instance pool with decoupled models: an instance is free when execute() settles while its requests
// stay open; whenStreamsEnded() waits for them; close() fails what a backend left open; a model that is
// not decoupled still cannot leave a request open.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BackendRequest, InstanceHandle } from '../../backend-api/backend.js';
import { NereidError, unavailable } from '../../common/errors.js';
import { silentLogger } from '../../common/logger.js';
import {
  freezeModelConfig,
  normalizeModelConfig,
  parseModelConfigText,
  validateModelConfig,
} from '../../model-config/index.js';
import { prepareRequest } from '../inference.js';
import { JobSender } from './job-sender.js';
import { ResponseStream } from '../response-stream.js';
import { ModelStats } from '../stats/model-stats.js';
import type { InferenceResponse } from '../types.js';
import { InstancePool } from './instance-pool.js';
import type { Job } from './scheduler.js';

function config(decoupled: boolean) {
  const c = normalizeModelConfig(
    parseModelConfigText(
      `name: "m"
       backend: "scripted"
       max_batch_size: 0
       input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
       output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
       model_transaction_policy { decoupled: ${decoupled} }`,
      'config.pbtxt',
    ),
    { backend: 'scripted' },
  );
  validateModelConfig(c);
  return freezeModelConfig(c);
}

interface Setup {
  readonly pool: InstancePool;
  readonly instance: InstanceHandle;
  readonly stats: ModelStats;
  readonly seen: BackendRequest[];
  job(): { job: Job; stream: ResponseStream<InferenceResponse> };
}

function setup(decoupled: boolean): Setup {
  const cfg = config(decoupled);
  const stats = new ModelStats('m', '1');
  const seen: BackendRequest[] = [];
  const instance: InstanceHandle = {
    name: 'm_0',
    execute: (requests) => {
      seen.push(...requests);
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
  const pool = new InstancePool([instance], stats, silentLogger(), undefined, { decoupled });
  let n = 0;
  const job = () => {
    const prepared = prepareRequest(cfg, {
      modelName: 'm',
      id: `r${n++}`,
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: Buffer.alloc(4) }],
    });
    const stream = new ResponseStream<InferenceResponse>();
    const record = stats.startRequest(process.hrtime.bigint(), 1);
    const sender = new JobSender(
      { config: cfg, version: '1', labels: new Map(), stats },
      prepared,
      stream,
      record,
      decoupled,
    );
    const j: Job = {
      request: prepared,
      sender,
      signal: new AbortController().signal,
      acceptedAt: record.queueStart,
    };
    return { job: j, stream };
  };
  return { pool, instance, stats, seen, job };
}

async function drain(stream: ResponseStream<InferenceResponse>): Promise<InferenceResponse[]> {
  const got: InferenceResponse[] = [];
  for await (const r of stream) got.push(r);
  return got;
}

const OUT = { name: 'OUT', datatype: 'INT32' as const, shape: [1], data: Buffer.alloc(4) };

describe('instance pool', () => {
  it('frees a decoupled instance when execute() settles; the open request ends later', async () => {
    const t = setup(true);
    const a = t.job();
    const taken = t.pool.take()!;
    await t.pool.run(taken, [a.job]);
    assert.equal(t.pool.freeCount, 1, 'the instance is free again');
    assert.equal(t.pool.openCount, 1);
    let ended = false;
    const quiet = t.pool.whenStreamsEnded().then(() => (ended = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(ended, false);
    t.seen[0].sender.send([OUT], { final: false });
    t.seen[0].sender.send([], { final: true });
    assert.equal((await drain(a.stream)).length, 2);
    await quiet;
    assert.equal(t.pool.openCount, 0);
    assert.equal(t.stats.snapshot().inference_stats.success.count, 1);
  });

  it('close() fails a request its backend left open, with the reason', async () => {
    const t = setup(true);
    const a = t.job();
    await t.pool.run(t.pool.take()!, [a.job]);
    await t.pool.close();
    await assert.rejects(drain(a.stream), (e: NereidError) => {
      assert.equal(e.code, 'UNAVAILABLE');
      assert.equal(e.message, "model 'm' version 1 was unloaded before request 'r0' ended");
      return true;
    });
    assert.equal(t.pool.openCount, 0);
    assert.equal(t.stats.snapshot().inference_stats.fail.count, 1);
  });

  it('a model that is not decoupled gets its open request failed when execute() settles', async () => {
    const t = setup(false);
    const a = t.job();
    await t.pool.run(t.pool.take()!, [a.job]);
    assert.equal(t.pool.openCount, 0);
    await assert.rejects(drain(a.stream), /backend returned without a response for request 'r0'/);
  });

  it('abort() ends a hung execution through InstanceHandle.abort and fails what is queued after it', async () => {
    const t = setup(false);
    let aborted: NereidError | undefined;
    let release: () => void = () => undefined;
    const hung: InstanceHandle = {
      name: 'm_0',
      execute: (requests) =>
        new Promise<void>((resolve) => {
          release = () => {
            for (const r of requests) r.sender.fail(aborted!);
            resolve();
          };
        }),
      abort: (error) => {
        aborted = error;
        release();
      },
      close: () => Promise.resolve(),
    };
    const pool = new InstancePool([hung], t.stats, silentLogger());
    const a = t.job();
    const running = pool.run(pool.take()!, [a.job]);
    const error = unavailable('gave up');
    pool.abort(error);
    await running;
    assert.equal(aborted, error);
    await assert.rejects(drain(a.stream), /gave up/);
    // Work handed over later fails at once, without reaching the instance.
    const b = t.job();
    await pool.run(pool.take()!, [b.job]);
    await assert.rejects(
      drain(b.stream),
      (e: NereidError) => e.code === 'UNAVAILABLE' && e.message === 'gave up',
    );
    assert.equal(pool.freeCount, 1);
  });

  it('abort() fails the streams a decoupled model left open', async () => {
    const t = setup(true);
    const a = t.job();
    await t.pool.run(t.pool.take()!, [a.job]);
    assert.equal(t.pool.openCount, 1);
    t.pool.abort(unavailable('gave up'));
    await assert.rejects(drain(a.stream), /gave up/);
    await t.pool.whenStreamsEnded();
    assert.equal(t.pool.openCount, 0);
  });

  it('hands a pipelined instance up to its depth, idle instances first, then the least loaded', async () => {
    const t = setup(false);
    const calls: string[] = [];
    const finishers = new Map<string, (() => void)[]>();
    const pipelined = (name: string): InstanceHandle => ({
      name,
      pipelineDepth: 2,
      execute: (requests) =>
        new Promise<void>((resolve) => {
          calls.push(name);
          const list = finishers.get(name) ?? [];
          list.push(() => {
            for (const r of requests) r.sender.send([OUT], { final: true });
            resolve();
          });
          finishers.set(name, list);
        }),
      close: () => Promise.resolve(),
    });
    const a = pipelined('a');
    const b = pipelined('b');
    const pool = new InstancePool([a, b], t.stats, silentLogger());
    const takes = [pool.take(), pool.take(), pool.take(), pool.take(), pool.take()];
    assert.deepEqual(
      takes.map((i) => i?.name),
      ['a', 'b', 'a', 'b', undefined],
      'both idle instances first, then one more each, then none (depth 2)',
    );
    assert.deepEqual(
      takes.slice(0, 4).map((i) => pool.ahead(i!)),
      [1, 1, 1, 1],
    );
    const runs = takes.slice(0, 4).map((i) => pool.run(i!, [t.job().job]));
    assert.deepEqual(calls, ['a', 'b', 'a', 'b'], 'execute() was called before earlier ones settled');
    assert.equal(pool.take(a), undefined, 'a named instance is only handed out idle');
    assert.equal(pool.freeCount, 0);
    finishers.get('a')!.shift()!();
    await runs[0];
    const next = pool.take();
    assert.equal(next, a, 'a now holds fewer executions than b');
    assert.equal(pool.ahead(a), 1);
    pool.putBack(a);
    assert.equal(pool.freeCount, 0, 'putting back a pipelined slot leaves the instance busy');
    finishers.get('a')!.shift()!();
    await runs[2];
    assert.equal(pool.freeCount, 1);
    const idle = pool.take();
    assert.equal(idle, a);
    assert.equal(pool.ahead(a), 0, 'an idle instance is preferred over a slot behind b');
    pool.putBack(a);
    for (const f of finishers.get('b')!.splice(0)) f();
    await Promise.all(runs);
    assert.equal(pool.freeCount, 2);
    assert.equal(t.stats.snapshot().execution_count, 4);
    assert.equal(t.stats.snapshot().inference_stats.success.count, 4);
  });

  it('abort() reaches an instance once however many executions it holds', async () => {
    const t = setup(false);
    const aborts: NereidError[] = [];
    const held: BackendRequest[][] = [];
    const inst: InstanceHandle = {
      name: 'm_0',
      pipelineDepth: 2,
      execute: (requests) =>
        new Promise<void>((resolve) => {
          held.push([...requests]);
          const timer = setInterval(() => {
            if (aborts.length === 0) return;
            clearInterval(timer);
            for (const r of requests) r.sender.fail(aborts[0]);
            resolve();
          }, 1);
        }),
      abort: (error) => aborts.push(error),
      close: () => Promise.resolve(),
    };
    const pool = new InstancePool([inst], t.stats, silentLogger());
    const jobs = [t.job(), t.job()];
    const runs = jobs.map((j) => pool.run(pool.take()!, [j.job]));
    assert.equal(held.length, 2);
    pool.abort(unavailable('gave up'));
    await Promise.all(runs);
    assert.equal(aborts.length, 1);
    for (const j of jobs) await assert.rejects(drain(j.stream), /gave up/);
    assert.equal(pool.freeCount, 1);
  });
});
