// On-demand mode and a JavaScript model that calls another model (BLS): the model it calls stays loaded
// while the caller runs, as for Python BLS callers and ensembles (docs/model-repository.md). With room for
// two models, a request for a third one arrives between the caller's two calls: the callee, idle at that
// moment but used by a busy caller, must not be the one evicted.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeRepository, post, removeRepository, startServer, waitFor, type TestServer } from './harness.js';

const identity = (name: string): string => `
name: "${name}"
backend: "javascript"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;
const IDENTITY = `export default class Identity {
  execute(requests) {
    return requests.map((r) => ({ outputs: [r.input('INPUT0').withName('OUTPUT0')] }));
  }
}
`;
/** Calls callee_js, waits PAUSE_MS, calls it again; OUTPUT0 is the second call's answer. */
const CALLER = `import { InferenceRequest } from 'nereid-server';
const PAUSE_MS = 2000;
export default class Caller {
  async execute(requests) {
    const r = requests[0];
    const call = () =>
      new InferenceRequest({ modelName: 'callee_js', inputs: [r.input('INPUT0')] }).exec();
    await call();
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
    const second = await call();
    return [{ outputs: [second.output('OUTPUT0').withName('OUTPUT0')] }];
  }
}
`;
const body = { inputs: [{ name: 'INPUT0', shape: [3], datatype: 'FP32', data: [1, 2, 3] }] };

describe('on-demand mode: a JavaScript BLS caller keeps the model it calls loaded', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({
      caller_js: { config: identity('caller_js'), files: { '1/model.mjs': CALLER } },
      callee_js: { config: identity('callee_js'), files: { '1/model.mjs': IDENTITY } },
      other_js: { config: identity('other_js'), files: { '1/model.mjs': IDENTITY } },
    });
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=on-demand',
      '--max-loaded-models=2',
      '--model-load-wait-secs=120',
      '--log-verbose=0',
    ]);
  });
  after(async () => {
    await s?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  const loadsOf = (name: string): number => s.logs.filter((l) => l.includes(`loading: ${name}:1`)).length;
  const evictionsOf = (name: string): number =>
    s.logs.filter((l) => l.includes(`unloading least recently used model '${name}'`)).length;
  const ready = (name: string): boolean =>
    s.running.server.repositoryIndex(true).some((e) => e.name === name && e.state === 'READY');

  it('evicts neither the busy caller nor its callee for a third model, which waits for room', async () => {
    const caller = post(`${s.url}/v2/models/caller_js/infer`, body);
    // The caller's first call has loaded the callee: both slots are taken, the caller is in its pause.
    await waitFor(() => ready('callee_js'), 120_000);
    const other = post(`${s.url}/v2/models/other_js/infer`, body);
    const [c, o] = await Promise.all([caller, other]);
    assert.equal(c.status, 200, c.body.toString());
    assert.deepEqual(c.json<{ outputs: { data: number[] }[] }>().outputs[0].data, [1, 2, 3]);
    assert.equal(o.status, 200, o.body.toString());
    // Loaded once, never evicted while its caller ran: the caller's second call found it loaded.
    assert.equal(loadsOf('callee_js'), 1, s.logs.filter((l) => /loading|unloading/.test(l)).join('\n'));
    assert.equal(evictionsOf('callee_js'), 0);
    assert.equal(evictionsOf('caller_js') + evictionsOf('callee_js'), 1, 'room for other_js was made after');
  });
});

/**
 * Calls callee_js, then waits (polling) for the file GATE to exist, then calls callee_js again; OUTPUT0 is
 * the second call's answer. The test holds the caller between its two calls for as long as it needs.
 */
const gatedCaller = (gate: string): string => `import { existsSync } from 'node:fs';
import { InferenceRequest } from 'nereid-server';
const GATE = ${JSON.stringify(gate)};
export default class GatedCaller {
  async execute(requests) {
    const r = requests[0];
    const call = () =>
      new InferenceRequest({ modelName: 'callee_js', inputs: [r.input('INPUT0')] }).exec();
    await call();
    while (!existsSync(GATE)) await new Promise((resolve) => setTimeout(resolve, 20));
    const second = await call();
    return [{ outputs: [second.output('OUTPUT0').withName('OUTPUT0')] }];
  }
}
`;

// The same rule without any pause in the model: the caller is held between its two calls until the test
// opens a gate. Both slots are taken (caller and callee, loaded through the repository API, so neither is
// pinned); a request for a third model while the caller is held can only be answered by evicting one of
// them, so it must wait for room and give up (a 1 s wait here), and the callee must never be unloaded while
// its caller runs. Without the caller's name on its calls the idle callee was evicted for it (answered 200).
describe('on-demand mode: a held JavaScript BLS caller, and a request for a third model', () => {
  let s: TestServer;
  let repo: string;
  let gate: string;
  before(async () => {
    repo = makeRepository({
      caller_js: { config: identity('caller_js'), files: { '1/model.mjs': '' } },
      callee_js: { config: identity('callee_js'), files: { '1/model.mjs': IDENTITY } },
      other_js: { config: identity('other_js'), files: { '1/model.mjs': IDENTITY } },
    });
    gate = path.join(repo, 'gate-open');
    writeFileSync(path.join(repo, 'caller_js/1/model.mjs'), gatedCaller(gate));
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=on-demand',
      '--max-loaded-models=2',
      '--model-load-wait-secs=1',
      '--log-verbose=0',
    ]);
    for (const name of ['callee_js', 'caller_js']) {
      const r = await post(`${s.url}/v2/repository/models/${name}/load`, {});
      assert.equal(r.status, 200, r.body.toString());
    }
  });
  after(async () => {
    await s?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  const lifecycle = (): string => s.logs.filter((l) => /loading|unloading/.test(l)).join('\n');
  const evictionsOf = (name: string): number =>
    s.logs.filter((l) => l.includes(`unloading least recently used model '${name}'`)).length;
  const ready = (name: string): boolean =>
    s.running.server.repositoryIndex(true).some((e) => e.name === name && e.state === 'READY');
  const calls = (name: string): number =>
    s.running.server.modelStatistics(name).reduce((n, m) => n + m.inference_count, 0);

  it('keeps the callee while its caller is held, and makes room only after the caller is done', async () => {
    const caller = post(`${s.url}/v2/models/caller_js/infer`, body);
    // The caller's first call has been answered: it is held at the gate now, the callee idle.
    await waitFor(() => calls('callee_js') === 1, 120_000);
    const refused = await post(`${s.url}/v2/models/other_js/infer`, body);
    assert.equal(refused.status, 503, `${refused.status} ${refused.body.toString()}\n${lifecycle()}`);
    // No room could be made (both loaded models in use), so no load began: the 503 says that, whichever
    // of the two waits (the request's, the load's for room) ran out first, and never "still loading".
    assert.match(
      refused.body.toString(),
      /cannot load model 'other_js': .*none can be unloaded to make room: .* \(waited 1 s for room/,
    );
    assert.doesNotMatch(refused.body.toString(), /did not finish loading/);
    assert.equal(evictionsOf('callee_js'), 0, lifecycle());
    assert.ok(ready('callee_js') && ready('caller_js'), lifecycle());

    writeFileSync(gate, '');
    const c = await caller;
    assert.equal(c.status, 200, c.body.toString());
    assert.deepEqual(c.json<{ outputs: { data: number[] }[] }>().outputs[0].data, [1, 2, 3]);
    assert.equal(calls('callee_js'), 2);
    assert.equal(evictionsOf('callee_js'), 0, lifecycle());

    // The caller is done: now there is an idle model to unload for other_js.
    const o = await post(`${s.url}/v2/models/other_js/infer`, body);
    assert.equal(o.status, 200, o.body.toString());
    assert.equal(evictionsOf('caller_js') + evictionsOf('callee_js'), 1, lifecycle());
  });
});
