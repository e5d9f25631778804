import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NereidError, internal } from '../../common/errors.js';
import { splitBytesElements } from '../../common/tensor.js';
import {
  FakeMember,
  FakeRepository,
  deferred,
  drain,
  ensembleConfig,
  flush,
  floats,
  fp32,
  memberConfig,
  type Behaviour,
  type EnsembleSpec,
} from './ensemble.testkit.js';
import type { EnsembleVersion } from './ensemble-version.js';
import { loadEnsembleVersion } from './load.js';

/** I → O = I + k, answered at once or when `gate` opens. */
function adder(k: number, gate?: Promise<void>): Behaviour {
  return (req, reply) => {
    const input = req.inputs.find((i) => i.name === 'I')!;
    const out = fp32(
      'O',
      floats(input).map((v) => v + k),
      input.shape,
    );
    if (gate) void gate.then(() => reply.send([out]));
    else reply.send([out]);
  };
}

/** I0, I1 → O = I0 * I1. */
const multiply: Behaviour = (req, reply) => {
  const [a, b] = ['I0', 'I1'].map((n) => floats(req.inputs.find((i) => i.name === n)!));
  reply.send([
    fp32(
      'O',
      a.map((v, i) => v * b[i]),
    ),
  ]);
};

const unary = (name: string, decoupled = false) =>
  memberConfig({ name, inputs: ['I'], outputs: ['O'], decoupled });
const binary = (name: string) => memberConfig({ name, inputs: ['I0', 'I1'], outputs: ['O'] });

/** IN → left (+1) → p; IN → right (+2) → q; (p, q) → join (×) → OUT; left's p is also output P. */
const fork: EnsembleSpec = {
  inputs: ['IN'],
  outputs: ['OUT', 'P'],
  steps: [
    { model: 'left', inputs: { I: 'IN' }, outputs: { O: 'p' } },
    { model: 'right', inputs: { I: 'IN' }, outputs: { O: 'q' } },
    { model: 'join', inputs: { I0: 'p', I1: 'q' }, outputs: { O: 'OUT' } },
    { model: 'copy', inputs: { I: 'p' }, outputs: { O: 'P' } },
  ],
};

function setup(
  spec: EnsembleSpec,
  members: Record<string, { config: ReturnType<typeof unary>; behaviour: Behaviour }>,
): { repo: FakeRepository; ensemble: EnsembleVersion; m: Record<string, FakeMember> } {
  const repo = new FakeRepository();
  const m: Record<string, FakeMember> = {};
  for (const [name, { config, behaviour }] of Object.entries(members)) {
    m[name] = repo.add(new FakeMember(config, behaviour));
  }
  const ensemble = loadEnsembleVersion(ensembleConfig(spec), {
    version: 1,
    members: repo,
    labels: new Map(),
  });
  return { repo, ensemble, m };
}

const request = (values = [1, 2, 3, 4], extra: Partial<Parameters<EnsembleVersion['infer']>[0]> = {}) => ({
  modelName: 'ens',
  id: 'req-7',
  inputs: [{ ...fp32('IN', values) }],
  ...extra,
});

describe('EnsembleVersion: data flow', () => {
  it('writes the decoupled-ness it computed into its config, as Triton does, even when undeclared', () => {
    const { ensemble } = setup(fork, {
      left: { config: unary('left'), behaviour: adder(1) },
      right: { config: unary('right'), behaviour: adder(2) },
      join: { config: binary('join'), behaviour: multiply },
      copy: { config: unary('copy'), behaviour: adder(0) },
    });
    assert.deepEqual(ensemble.config.model_transaction_policy, { decoupled: false });
    assert.ok(Object.isFrozen(ensemble.config.model_transaction_policy));
  });

  it('chains steps, returns only what was asked for, and passes id and parameters to each step', async () => {
    const { ensemble, m } = setup(fork, {
      left: { config: unary('left'), behaviour: adder(1) },
      right: { config: unary('right'), behaviour: adder(2) },
      join: { config: binary('join'), behaviour: multiply },
      copy: { config: unary('copy'), behaviour: adder(0) },
    });
    const { responses, error } = await drain(
      ensemble.infer(
        request([1, 2, 3, 4], { outputs: [{ name: 'OUT' }], parameters: { priority: 2, custom: 'x' } }),
      ),
    );
    assert.equal(error, undefined);
    assert.equal(responses.length, 1);
    const [r] = responses;
    assert.equal(r.final, true);
    assert.equal(r.modelName, 'ens');
    assert.equal(r.id, 'req-7');
    assert.deepEqual(
      r.outputs.map((o) => o.name),
      ['OUT'],
    );
    assert.deepEqual(floats(r.outputs[0]), [2 * 3, 3 * 4, 4 * 5, 5 * 6]);
    assert.equal(m.copy.requests.length, 0, 'P was not asked for, so its step did not run');
    for (const name of ['left', 'right', 'join']) {
      const [stepRequest] = m[name].requests;
      assert.equal(stepRequest.id, 'req-7');
      assert.deepEqual(stepRequest.parameters, { priority: 2, custom: 'x' });
    }
    assert.deepEqual(
      m.join.requests[0].inputs.map((i) => i.name),
      ['I0', 'I1'],
    );
  });

  it('starts independent branches together and the join only after both', async () => {
    const leftGate = deferred();
    const rightGate = deferred();
    const { ensemble, m } = setup(fork, {
      left: { config: unary('left'), behaviour: adder(1, leftGate.promise) },
      right: { config: unary('right'), behaviour: adder(2, rightGate.promise) },
      join: { config: binary('join'), behaviour: multiply },
      copy: { config: unary('copy'), behaviour: adder(0) },
    });
    const done = drain(ensemble.infer(request()));
    await flush();
    assert.equal(m.left.active, 1);
    assert.equal(m.right.active, 1, 'both branches are in flight at once');
    leftGate.resolve();
    await flush();
    assert.equal(m.copy.requests.length, 1, 'copy needs only p and runs as soon as it exists');
    assert.equal(m.join.requests.length, 0, 'join still waits for q');
    rightGate.resolve();
    const { responses } = await done;
    assert.deepEqual(
      responses[0].outputs.map((o) => o.name),
      ['OUT', 'P'],
    );
    assert.deepEqual(floats(responses[0].outputs[1]), [2, 3, 4, 5]);
  });

  it('looks members up per request, so a reloaded member serves the next request', async () => {
    const spec: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [{ model: 'm', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
    };
    const { repo, ensemble } = setup(spec, { m: { config: unary('m'), behaviour: adder(1) } });
    assert.deepEqual(floats((await drain(ensemble.infer(request()))).responses[0].outputs[0]), [2, 3, 4, 5]);
    repo.add(new FakeMember(unary('m'), adder(100), 2));
    assert.deepEqual(
      floats((await drain(ensemble.infer(request()))).responses[0].outputs[0]),
      [101, 102, 103, 104],
    );
  });

  it('applies classification to an ensemble output', async () => {
    const spec: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [{ model: 'm', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
    };
    const { ensemble } = setup(spec, { m: { config: unary('m'), behaviour: adder(0) } });
    const { responses } = await drain(
      ensemble.infer(
        request([1, 5, 3, 2], { outputs: [{ name: 'OUT', parameters: { classification: 2 } }] }),
      ),
    );
    const out = responses[0].outputs[0];
    assert.equal(out.datatype, 'BYTES');
    assert.deepEqual(
      splitBytesElements(out.data).map((b) => b.toString()),
      ['5.000000:1', '3.000000:2'],
    );
  });
});

describe('EnsembleVersion: failures and cancellation', () => {
  it('fails with the step named, keeps the member’s code, and cancels the sibling branch', async () => {
    const { ensemble, m } = setup(fork, {
      left: {
        config: unary('left'),
        behaviour: (_req, reply) => {
          setImmediate(() => reply.fail(new NereidError('INVALID_ARG', 'bad pixels')));
        },
      },
      // Never answers on its own: only the cancellation ends it.
      right: {
        config: unary('right'),
        behaviour: (req, reply) => {
          req.signal?.addEventListener('abort', () => reply.fail(new NereidError('CANCELLED', 'cancelled')));
        },
      },
      join: { config: binary('join'), behaviour: multiply },
      copy: { config: unary('copy'), behaviour: adder(0) },
    });
    const { responses, error } = await drain(ensemble.infer(request()));
    assert.equal(responses.length, 0);
    assert.equal(error?.code, 'INVALID_ARG');
    assert.equal(error?.message, "in ensemble 'ens', step 0 (model 'left'): bad pixels");
    await flush();
    assert.equal(m.right.requests[0].signal?.aborted, true, 'the running sibling was cancelled');
    assert.equal(m.right.active, 0);
    assert.equal(m.join.requests.length, 0);
    const stats = ensemble.stats.snapshot();
    assert.equal(stats.inference_stats.fail.count, 1);
    assert.equal(stats.inference_stats.success.count, 0);
    assert.equal(ensemble.pendingRequests, 0);
  });

  it('reports a member that refuses the step request synchronously, with the step named', async () => {
    const spec: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [{ model: 'm', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
    };
    const { repo, ensemble } = setup(spec, { m: { config: unary('m'), behaviour: adder(1) } });
    repo.versions.delete('m');
    const { error } = await drain(ensemble.infer(request()));
    assert.equal(error?.code, 'NOT_FOUND');
    assert.equal(
      error?.message,
      "in ensemble 'ens', step 0 (model 'm'): Request for unknown model: 'm' is not found",
    );
  });

  it('propagates the client’s cancellation to the running steps', async () => {
    const { ensemble, m } = setup(fork, {
      left: { config: unary('left'), behaviour: adder(1, new Promise(() => undefined)) },
      right: {
        config: unary('right'),
        behaviour: (req, reply) => {
          req.signal?.addEventListener('abort', () => reply.fail(new NereidError('CANCELLED', 'cancelled')));
        },
      },
      join: { config: binary('join'), behaviour: multiply },
      copy: { config: unary('copy'), behaviour: adder(0) },
    });
    const client = new AbortController();
    const done = drain(ensemble.infer(request([1, 2, 3, 4], { signal: client.signal })));
    await flush();
    client.abort();
    const { error } = await done;
    assert.equal(error?.code, 'CANCELLED');
    assert.equal(m.left.requests[0].signal?.aborted, true);
    assert.equal(m.right.requests[0].signal?.aborted, true);
    assert.equal(ensemble.stats.snapshot().inference_stats.fail.count, 1);
  });

  it('in a plain chain, steps carry the client’s own signal, and its cancellation ends the request', async () => {
    const chain: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [
        { model: 'first', inputs: { I: 'IN' }, outputs: { O: 'mid' } },
        { model: 'second', inputs: { I: 'mid' }, outputs: { O: 'OUT' } },
      ],
    };
    const { ensemble, m } = setup(chain, {
      first: { config: unary('first'), behaviour: adder(1) },
      second: {
        config: unary('second'),
        behaviour: (req, reply) => {
          req.signal?.addEventListener('abort', () =>
            reply.fail(new NereidError('CANCELLED', 'request cancelled')),
          );
        },
      },
    });
    const client = new AbortController();
    const done = drain(ensemble.infer(request([1, 2, 3, 4], { signal: client.signal })));
    await flush();
    assert.equal(m.second.requests.length, 1);
    assert.equal(m.first.requests[0].signal, client.signal, 'no signal of its own for a chain');
    client.abort();
    const { error } = await done;
    assert.equal(error?.code, 'CANCELLED');
    assert.equal(error?.message, "in ensemble 'ens', step 1 (model 'second'): request cancelled");
    assert.equal(ensemble.pendingRequests, 0);
  });

  it('ends a request cancelled while its step waits for a max_inflight_requests slot', async () => {
    const gate = deferred();
    const spec: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['OUT'],
      maxInflight: 1,
      steps: [{ model: 'm', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
    };
    const { ensemble, m } = setup(spec, { m: { config: unary('m'), behaviour: adder(1, gate.promise) } });
    const first = drain(ensemble.infer(request()));
    const client = new AbortController();
    const second = drain(ensemble.infer(request([1, 2, 3, 4], { signal: client.signal })));
    await flush();
    client.abort();
    const { error } = await second;
    assert.equal(error?.code, 'CANCELLED');
    assert.equal(m.m.requests.length, 1, 'the waiting step never reached the member');
    gate.resolve();
    assert.equal((await first).responses.length, 1);
    assert.equal(ensemble.pendingRequests, 0);
  });

  it('refuses requests after unload, and unload waits for the accepted ones', async () => {
    const gate = deferred();
    const spec: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [{ model: 'm', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
    };
    const { ensemble } = setup(spec, { m: { config: unary('m'), behaviour: adder(1, gate.promise) } });
    const inFlight = drain(ensemble.infer(request()));
    let unloaded = false;
    const unloading = ensemble.unload().then(() => (unloaded = true));
    await flush();
    assert.equal(unloaded, false, 'an accepted request is still running');
    assert.equal(ensemble.isReady(), false);
    assert.throws(() => ensemble.infer(request()), { code: 'UNAVAILABLE' });
    gate.resolve();
    assert.equal((await inFlight).responses.length, 1);
    await unloading;
    assert.equal(unloaded, true);
  });

  it('is not ready while a member cannot serve', () => {
    const spec: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [{ model: 'm', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
    };
    const { repo, ensemble, m } = setup(spec, { m: { config: unary('m'), behaviour: adder(1) } });
    assert.equal(ensemble.isReady(), true);
    m.m.ready = false;
    assert.equal(ensemble.isReady(), false);
    m.m.ready = true;
    repo.versions.delete('m');
    assert.equal(ensemble.isReady(), false);
  });
});

describe('EnsembleVersion: decoupled steps', () => {
  const stream: EnsembleSpec = {
    inputs: ['IN'],
    outputs: ['OUT'],
    steps: [
      { model: 'gen', inputs: { I: 'IN' }, outputs: { O: 'piece' } },
      { model: 'post', inputs: { I: 'piece' }, outputs: { O: 'OUT' } },
    ],
  };
  /** Sends one response per element of IN (O = [v, v, v, v]), then a flag-only final. */
  const generator: Behaviour = (req, reply) => {
    const values = floats(req.inputs[0]);
    let i = 0;
    const next = (): void => {
      if (i < values.length) {
        reply.send([fp32('O', [values[i], values[i], values[i], values[i]])], false);
        i++;
        setImmediate(next);
      } else {
        reply.close();
      }
    };
    setImmediate(next);
  };

  it('loads as decoupled and streams one answer per upstream response, final flag last', async () => {
    const { ensemble, m } = setup(stream, {
      gen: { config: unary('gen', true), behaviour: generator },
      post: { config: unary('post'), behaviour: adder(10) },
    });
    assert.equal(ensemble.config.model_transaction_policy?.decoupled, true);
    const { responses, error } = await drain(ensemble.infer(request([1, 2, 3, 4])));
    assert.equal(error, undefined);
    const withData = responses.filter((r) => r.outputs.length > 0);
    assert.deepEqual(
      withData.map((r) => floats(r.outputs[0])[0]),
      [11, 12, 13, 14],
    );
    assert.equal(m.post.requests.length, 4, 'each piece ran the downstream step on its own');
    assert.equal(responses.filter((r) => r.final).length, 1);
    assert.equal(responses[responses.length - 1].final, true);
    assert.equal(ensemble.stats.snapshot().inference_stats.success.count, 1);
  });

  it('answers with only the final flag when the decoupled step sends nothing', async () => {
    const { ensemble, m } = setup(stream, {
      gen: { config: unary('gen', true), behaviour: (_req, reply) => setImmediate(() => reply.close()) },
      post: { config: unary('post'), behaviour: adder(10) },
    });
    const { responses, error } = await drain(ensemble.infer(request()));
    assert.equal(error, undefined);
    assert.equal(responses.length, 1);
    assert.equal(responses[0].final, true);
    assert.equal(responses[0].outputs.length, 0);
    assert.equal(m.post.requests.length, 0);
  });

  it('fails mid-stream with the step named after earlier answers went out', async () => {
    let calls = 0;
    const { ensemble } = setup(stream, {
      gen: { config: unary('gen', true), behaviour: generator },
      post: {
        config: unary('post'),
        behaviour: (req, reply) => {
          if (++calls === 3) reply.fail(internal('post broke'));
          else adder(10)(req, reply);
        },
      },
    });
    const { responses, error } = await drain(ensemble.infer(request()));
    assert.equal(responses.length, 2);
    assert.equal(error?.message, "in ensemble 'ens', step 1 (model 'post'): post broke");
  });
});

describe('EnsembleVersion: max_inflight_requests and statistics', () => {
  it('holds a step back while max_inflight_requests of it are running', async () => {
    const gates = [deferred(), deferred()];
    let call = 0;
    const spec: EnsembleSpec = {
      inputs: ['IN'],
      outputs: ['OUT'],
      maxInflight: 1,
      steps: [{ model: 'm', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
    };
    const { ensemble, m } = setup(spec, {
      m: {
        config: unary('m'),
        behaviour: (req, reply) => adder(1, gates[call++].promise)(req, reply),
      },
    });
    const first = drain(ensemble.infer(request()));
    const second = drain(ensemble.infer(request()));
    await flush();
    assert.equal(m.m.requests.length, 1, 'the second request waits for the step slot');
    gates[0].resolve();
    await first;
    await flush();
    assert.equal(m.m.requests.length, 2);
    gates[1].resolve();
    assert.equal((await second).responses.length, 1);
  });

  it('counts requests like Triton: success with batch-expanded inference_count, one execution each', async () => {
    const spec: EnsembleSpec = {
      maxBatch: 4,
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [{ model: 'm', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
    };
    const { ensemble, m } = setup(spec, {
      m: {
        config: memberConfig({ name: 'm', maxBatch: 4, inputs: ['I'], outputs: ['O'] }),
        behaviour: adder(1),
      },
    });
    const twoRows = { ...fp32('IN', [1, 2, 3, 4, 5, 6, 7, 8], [2, 4]) };
    const { responses } = await drain(ensemble.infer({ modelName: 'ens', inputs: [twoRows] }));
    assert.deepEqual(responses[0].outputs[0].shape, [2, 4]);
    await drain(ensemble.infer(request([1, 2, 3, 4], { inputs: [fp32('IN', [1, 2, 3, 4], [1, 4])] })));
    const s = ensemble.stats.snapshot();
    assert.equal(s.inference_stats.success.count, 2);
    assert.equal(s.inference_count, 3);
    assert.equal(s.execution_count, 2);
    assert.equal(s.inference_stats.queue.count, 2);
    assert.ok(s.inference_stats.compute_infer.ns > 0, 'the steps’ time counts as compute');
    assert.deepEqual(
      s.batch_stats.map((b) => b.batch_size),
      [1, 2],
    );
    assert.equal(m.m.requests.length, 2, 'the member saw its own requests');
  });
});

describe('loadEnsembleVersion', () => {
  it('names the step whose model is missing', () => {
    const repo = new FakeRepository();
    const config = ensembleConfig({
      inputs: ['IN'],
      outputs: ['OUT'],
      steps: [{ model: 'gone', inputs: { I: 'IN' }, outputs: { O: 'OUT' } }],
    });
    assert.throws(() => loadEnsembleVersion(config, { version: 1, members: repo, labels: new Map() }), {
      code: 'INVALID_ARG',
      message: "in ensemble 'ens', step 0 (model 'gone'): Request for unknown model: 'gone' is not found",
    });
  });
});
