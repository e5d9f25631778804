import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import type { BackendRequest, InstanceHandle, ResponseSender } from '../../backend-api/backend.js';
import type { NereidError } from '../../common/errors.js';
import { silentLogger } from '../../common/logger.js';
import type { PreparedRequest } from '../inference.js';
import { ModelStats } from '../stats/model-stats.js';
import { DefaultScheduler } from './default-scheduler.js';
import { InstancePool } from './instance-pool.js';
import type { Job } from './scheduler.js';

/** An instance that answers every request at once. */
class EchoInstance implements InstanceHandle {
  executed = 0;
  constructor(readonly name: string) {}
  execute(requests: readonly BackendRequest[]): Promise<void> {
    this.executed++;
    for (const r of requests) r.sender.send([], { final: true });
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

class Sender implements ResponseSender {
  done = false;
  error: NereidError | undefined;
  send(): void {
    this.done = true;
  }
  fail(error: NereidError): void {
    this.done = true;
    this.error = error;
  }
}

function job(signal: AbortSignal): Job & { sender: Sender } {
  const request = {
    id: '',
    inputs: new Map(),
    outputs: [],
    batchSize: 1,
    correlationId: 0n,
    flags: 0,
    priority: 0,
    timeoutUs: 0,
    parameters: {},
  } satisfies PreparedRequest;
  return { request, sender: new Sender(), signal, acceptedAt: process.hrtime.bigint() };
}

test('a signal shared by many requests keeps no listener once they were dispatched', async () => {
  const instance = new EchoInstance('m_0');
  const scheduler = new DefaultScheduler(
    new InstancePool([instance], new ModelStats('m', '1'), silentLogger()),
  );
  const shared = new AbortController().signal;
  const jobs = Array.from({ length: 50 }, () => job(shared));
  for (const j of jobs) scheduler.enqueue(j);
  await scheduler.drain();
  assert.equal(instance.executed, 50);
  assert.ok(jobs.every((j) => j.sender.done && j.sender.error === undefined));
  assert.equal(getEventListeners(shared, 'abort').length, 0);
});

test('aborting a queued request removes it and fails it CANCELLED; running ones are untouched', async () => {
  const blocker = new AbortController();
  let release!: () => void;
  const slow: InstanceHandle = {
    name: 'm_0',
    execute: (requests) =>
      new Promise<void>((resolve) => {
        release = () => {
          for (const r of requests) r.sender.send([], { final: true });
          resolve();
        };
      }),
    close: () => Promise.resolve(),
  };
  const scheduler = new DefaultScheduler(new InstancePool([slow], new ModelStats('m', '1'), silentLogger()));
  const first = job(new AbortController().signal);
  const queued = job(blocker.signal);
  scheduler.enqueue(first);
  scheduler.enqueue(queued);
  assert.equal(scheduler.queued, 1);
  blocker.abort();
  assert.equal(scheduler.queued, 0);
  assert.equal(queued.sender.error?.code, 'CANCELLED');
  release();
  await scheduler.drain();
  assert.equal(first.sender.error, undefined);
});

test('a request meeting a free instance runs at once without a listener; later ones queue in order', async () => {
  const releases: (() => void)[] = [];
  const order: string[] = [];
  const gated: InstanceHandle = {
    name: 'm_0',
    execute: (requests) =>
      new Promise<void>((resolve) => {
        order.push(requests[0].id);
        releases.push(() => {
          for (const r of requests) r.sender.send([], { final: true });
          resolve();
        });
      }),
    close: () => Promise.resolve(),
  };
  const scheduler = new DefaultScheduler(new InstancePool([gated], new ModelStats('m', '1'), silentLogger()));
  const signal = new AbortController().signal;
  const named = (id: string): Job & { sender: Sender } => {
    const j = job(signal);
    return { ...j, request: { ...j.request, id } };
  };
  scheduler.enqueue(named('a'));
  assert.equal(getEventListeners(signal, 'abort').length, 0, 'dispatched at once: no listener');
  assert.deepEqual(order, ['a']);
  scheduler.enqueue(named('b'));
  scheduler.enqueue(named('c'));
  assert.equal(getEventListeners(signal, 'abort').length, 2, 'queued requests listen for cancellation');
  releases.shift()!();
  await new Promise((r) => setImmediate(r));
  scheduler.enqueue(named('d'));
  releases.shift()!();
  await new Promise((r) => setImmediate(r));
  releases.shift()!();
  await new Promise((r) => setImmediate(r));
  releases.shift()!();
  await scheduler.drain();
  assert.deepEqual(order, ['a', 'b', 'c', 'd']);
  assert.equal(getEventListeners(signal, 'abort').length, 0);
});

test('a pipelined instance gets the next request before the previous one returned, never more than its depth', async () => {
  const finish: (() => void)[] = [];
  let started = 0;
  const instance: InstanceHandle = {
    name: 'm_0',
    pipelineDepth: 2,
    execute: (requests) => {
      started++;
      return new Promise<void>((resolve) =>
        finish.push(() => {
          for (const r of requests) r.sender.send([], { final: true });
          resolve();
        }),
      );
    },
    close: () => Promise.resolve(),
  };
  const scheduler = new DefaultScheduler(
    new InstancePool([instance], new ModelStats('m', '1'), silentLogger()),
  );
  const jobs = Array.from({ length: 3 }, () => job(new AbortController().signal));
  for (const j of jobs) scheduler.enqueue(j);
  assert.equal(started, 2, 'two executions open at once');
  assert.equal(scheduler.queued, 1);
  finish.shift()!();
  await new Promise((r) => setImmediate(r));
  assert.equal(started, 3, 'the third went as soon as the first returned');
  for (const f of finish.splice(0)) f();
  await scheduler.drain();
  assert.ok(jobs.every((j) => j.sender.done && j.sender.error === undefined));
});
