// A model's own readiness end to end: a JavaScript model whose isReady() follows files in its folder, on a
// real server polling every 100 ms under strict readiness. Model ready, versioned ready, the repository
// index and server readiness go not ready and back; requests are still served meanwhile; one instance not
// ready is enough; an unloaded model is no longer asked (no worker left, no poll, no log line).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  waitFor,
  type TestServer,
} from './harness.js';

const config = (name: string): string => `
name: "${name}"
backend: "javascript"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
`;

// Not ready while <model dir>/not_ready or <model dir>/not_ready_<instance name> exists; every ask is
// counted in <model dir>/polls.log.
const FLAKY_MODEL = `
import { appendFileSync, existsSync } from 'node:fs';
import path from 'node:path';

export default class {
  initialize(args) {
    this.dir = args.model_repository;
    this.instance = args.model_instance_name;
  }
  isReady() {
    appendFileSync(path.join(this.dir, 'polls.log'), 'x');
    return !existsSync(path.join(this.dir, 'not_ready')) &&
      !existsSync(path.join(this.dir, 'not_ready_' + this.instance));
  }
  execute(reqs) {
    return reqs.map((r) => ({ outputs: [r.input('IN').withName('OUT')] }));
  }
}
`;

const threadCount = (): number => readdirSync('/proc/self/task').length;

describe('a model that reports its own readiness', () => {
  let s: TestServer;
  let repo: string;

  const status = async (p: string): Promise<number> => (await request(`${s.url}${p}`)).status;
  const index = async (
    ready = false,
  ): Promise<{ name: string; version?: string; state?: string; reason?: string }[]> =>
    (await post(`${s.url}/v2/repository/index`, ready ? { ready: true } : {})).json();
  const infer = async (model: string): Promise<number> =>
    (
      await post(`${s.url}/v2/models/${model}/infer`, {
        inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [5] }],
      })
    ).status;
  const polls = (model: string): number => {
    const f = path.join(repo, model, 'polls.log');
    return existsSync(f) ? readFileSync(f, 'utf8').length : 0;
  };

  before(async () => {
    repo = makeRepository({
      flaky: { config: config('flaky'), files: { '1/model.mjs': FLAKY_MODEL } },
      flaky_late: { config: config('flaky_late'), files: { '1/model.mjs': FLAKY_MODEL } },
    });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=flaky',
      '--model-readiness-poll-ms=100',
      '--strict-readiness=true',
    ]);
  });
  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  it('is ready, and asked again and again', async () => {
    assert.equal(await status('/v2/models/flaky/ready'), 200);
    assert.equal(await status('/v2/health/ready'), 200);
    const seen = polls('flaky');
    await waitFor(() => polls('flaky') >= seen + 4, 20_000);
  });

  it('false makes the model, the index and the server not ready; requests are still served; true undoes it', async () => {
    writeFileSync(path.join(repo, 'flaky', 'not_ready'), '');
    await waitFor(async () => (await status('/v2/models/flaky/ready')) === 400, 20_000);
    assert.equal(await status('/v2/models/flaky/versions/1/ready'), 400);
    assert.equal(await status('/v2/health/ready'), 400, 'strict readiness follows');
    assert.equal(await status('/v2/health/live'), 200);
    assert.deepEqual(
      (await index()).find((e) => e.name === 'flaky'),
      { name: 'flaky', version: '1', state: 'UNAVAILABLE', reason: 'model reported not ready' },
    );
    assert.equal(
      (await index(true)).some((e) => e.name === 'flaky'),
      false,
      'left out of a ready-only index',
    );
    assert.equal(await infer('flaky'), 200, 'a readiness probe does not refuse requests');

    rmSync(path.join(repo, 'flaky', 'not_ready'));
    await waitFor(async () => (await status('/v2/models/flaky/ready')) === 200, 20_000);
    assert.equal(await status('/v2/health/ready'), 200);
    assert.deepEqual(
      (await index()).find((e) => e.name === 'flaky'),
      { name: 'flaky', version: '1', state: 'READY' },
    );
    assert.equal(
      s.logs.filter((l) => l.includes("model 'flaky' version 1 is not ready: model reported not ready"))
        .length,
      1,
    );
    assert.equal(s.logs.filter((l) => l.includes("model 'flaky' version 1 is ready again")).length, 1);
  });

  it('one instance not ready is enough', async () => {
    writeFileSync(path.join(repo, 'flaky', 'not_ready_flaky_0_1'), '');
    await waitFor(async () => (await status('/v2/models/flaky/ready')) === 400, 20_000);
    rmSync(path.join(repo, 'flaky', 'not_ready_flaky_0_1'));
    await waitFor(async () => (await status('/v2/models/flaky/ready')) === 200, 20_000);
  });

  it('an unloaded model is no longer asked: its workers are gone and no poll runs', async () => {
    const threadsBefore = threadCount();
    assert.equal((await post(`${s.url}/v2/repository/models/flaky_late/load`, {})).status, 200);
    assert.ok(threadCount() > threadsBefore, 'the instances run in worker threads');
    await waitFor(() => polls('flaky_late') >= 2, 20_000);
    assert.equal((await post(`${s.url}/v2/repository/models/flaky_late/unload`, {})).status, 200);
    await waitFor(() => threadCount() === threadsBefore, 20_000);
    const after = polls('flaky_late');
    const logsAfter = s.logs.length;
    // Ten poll intervals: a poll still running would ask a model with no instance, which answers false.
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(polls('flaky_late'), after);
    assert.deepEqual(
      s.logs.slice(logsAfter).filter((l) => l.includes("'flaky_late'") && l.includes('not ready')),
      [],
    );
    assert.equal(await status('/v2/models/flaky_late/ready'), 400);
    assert.equal(await status('/v2/health/ready'), 200, 'an unloaded model does not hold strict readiness');
  });
});
