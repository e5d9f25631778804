// On-demand model control with LRU eviction under --max-loaded-models (docs/model-repository.md): real
// onnxruntime and Python models made in the test, a Zipf request stream from concurrent HTTP clients.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { FIXTURES, post, removeRepository, request, startServer, type TestServer } from './harness.js';
import { inferBody, makeManyModels, rankOrder, zipfSampler, type ManyModels } from './many-models.js';
import { pythonFlags } from './python-support.js';
import { GrpcClient, InferInput } from '../../src/client/index.js';

const MAX_LOADED = 6;
const ONNX = 20;
const PYTHON = 10;

/** Model names whose state in the index is READY, LOADING or UNLOADING (they hold a slot). */
function loadedNow(s: TestServer): { resident: Set<string>; ready: Set<string> } {
  const resident = new Set<string>();
  const ready = new Set<string>();
  for (const e of s.running.server.repositoryIndex(false)) {
    if (e.state === 'READY' || e.state === 'LOADING' || e.state === 'UNLOADING') resident.add(e.name);
    if (e.state === 'READY') ready.add(e.name);
  }
  return { resident, ready };
}

const loadsOf = (s: TestServer, name: string): number =>
  s.logs.filter((l) => l.includes(`loading: ${name}:1`)).length;
const evictionsOf = (s: TestServer, name: string): number =>
  s.logs.filter((l) => l.includes(`unloading least recently used model '${name}'`)).length;

describe(`on-demand mode: ${ONNX} ONNX + ${PYTHON} Python models, --max-loaded-models=${MAX_LOADED}`, () => {
  let s: TestServer;
  let many: ManyModels;
  const prefix = `nereid_od_${process.pid}_`;
  before(async () => {
    // m000 is pinned by --load-model, m001 by its config's nereid.pinned parameter.
    many = makeManyModels(ONNX, PYTHON, ['m001']);
    const broken = path.join(many.repo, 'broken');
    mkdirSync(path.join(broken, '1'), { recursive: true });
    writeFileSync(
      path.join(broken, 'config.pbtxt'),
      'name: "broken"\nbackend: "onnxruntime"\nmax_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]\n',
    );
    cpSync(path.join(FIXTURES, 'corrupt.onnx'), path.join(broken, '1', 'model.onnx'));
    s = await startServer([
      `--model-repository=${many.repo}`,
      '--model-control-mode=on-demand',
      `--max-loaded-models=${MAX_LOADED}`,
      '--load-model=m000',
      '--model-load-wait-secs=120',
      '--log-verbose=0',
      ...pythonFlags(prefix),
    ]);
  });
  after(async () => {
    await s?.stop();
    removeRepository(many.repo);
  });

  it('indexes every model at start and loads only the pinned one', () => {
    const index = s.running.server.repositoryIndex(false);
    assert.equal(index.length, ONNX + PYTHON + 1);
    assert.deepEqual([...loadedNow(s).ready], ['m000']);
    assert.ok(index.filter((e) => e.name !== 'm000').every((e) => e.state === 'UNKNOWN'));
  });

  it('concurrent first requests for a model trigger exactly one load, and all are answered', async () => {
    const target = 'm005';
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => post(`${s.url}/v2/models/${target}/infer`, inferBody(i))),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      Array(10).fill(200),
    );
    assert.deepEqual(
      results.map((r) => r.json<{ outputs: { data: number[] }[] }>().outputs[0].data[0]),
      [...Array(10).keys()],
    );
    assert.equal(loadsOf(s, target), 1);
    // The cold start is counted as queue time in the statistics API.
    const stats = (await request(`${s.url}/v2/models/${target}/stats`)).json<{
      model_stats: { inference_stats: { queue: { count: number; ns: number } } }[];
    }>();
    assert.equal(stats.model_stats[0].inference_stats.queue.count, 10);
  });

  it('a model whose load fails answers with the load error, and is not loaded again at once', async () => {
    const a = await post(`${s.url}/v2/models/broken/infer`, inferBody(1));
    const b = await post(`${s.url}/v2/models/broken/infer`, inferBody(1));
    assert.equal(a.status, 400);
    assert.match(a.json<{ error: string }>().error, /load failed for model 'broken'/);
    assert.equal(b.status, 400);
    assert.equal(b.json<{ error: string }>().error, a.json<{ error: string }>().error);
    assert.equal(loadsOf(s, 'broken'), 1, 'the second request did not start another load');
    const entry = s.running.server.repositoryIndex(false).find((e) => e.name === 'broken');
    assert.equal(entry?.state, 'UNAVAILABLE');
    // And the server keeps serving.
    assert.equal((await post(`${s.url}/v2/models/m000/infer`, inferBody(3))).status, 200);
  });

  it('an unknown model is 404, as in the other modes', async () => {
    const r = await post(`${s.url}/v2/models/nope/infer`, inferBody(1));
    assert.equal(r.status, 404);
    assert.match(r.json<{ error: string }>().error, /unknown model: 'nope'/);
  });

  it('a Zipf stream from 6 clients: every request answered, the limit held, busy and pinned models kept', async () => {
    const order = rankOrder(
      many.names.filter((n) => n !== 'm000'),
      11,
    );
    const pick = zipfSampler(order.length, 1.1, 42);
    const TOTAL = 160;
    const CLIENTS = 6;
    const statuses: number[] = [];
    let wrong = 0;
    let maxResident = 0;
    let pinnedLost = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { resident, ready } = loadedNow(s);
        maxResident = Math.max(maxResident, resident.size);
        if (!ready.has('m000')) pinnedLost++;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    // A long request keeps one Python model busy through the stream: it must not be unloaded meanwhile.
    const busyModel = many.names.find((n) => many.backendOf.get(n) === 'python')!;
    assert.equal((await post(`${s.url}/v2/models/${busyModel}/infer`, inferBody(1))).status, 200);
    const evictionsBefore = evictionsOf(s, busyModel);
    // Its model sleeps 4 s, so it is surely still running 3 s after it was sent: count evictions then.
    let evictionsWhileBusy = -1;
    const long = post(`${s.url}/v2/models/${busyModel}/infer`, inferBody(-4000));
    const probe = new Promise<void>((resolve) =>
      setTimeout(() => {
        evictionsWhileBusy = evictionsOf(s, busyModel) - evictionsBefore;
        resolve();
      }, 3000),
    );
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < TOTAL) {
          next++;
          const name = order[pick()];
          const v = next;
          const r = await post(`${s.url}/v2/models/${name}/infer`, inferBody(v));
          statuses.push(r.status);
          if (r.status === 200 && r.json<{ outputs: { data: number[] }[] }>().outputs[0].data[0] !== v)
            wrong++;
        }
      }),
    );
    const longResult = await long;
    await probe;
    sampling = false;
    await sampler;
    assert.equal(longResult.status, 200);
    assert.equal(statuses.length, TOTAL);
    assert.deepEqual(
      statuses.filter((c) => c !== 200),
      [],
      'every request answered 200',
    );
    assert.equal(wrong, 0);
    assert.ok(maxResident <= MAX_LOADED, `at most ${MAX_LOADED} models held a slot (saw ${maxResident})`);
    assert.equal(pinnedLost, 0, 'the pinned model stayed READY');
    assert.equal(evictionsOf(s, 'm000'), 0);
    assert.equal(evictionsOf(s, 'm001'), 0, 'pinned by its config parameter');
    assert.equal(evictionsWhileBusy, 0, 'the busy model was not unloaded while its request ran');
    const evictions = s.logs.filter((l) => l.includes('unloading least recently used model')).length;
    assert.ok(evictions > 0, 'the stream made the server evict');
  });

  it('gRPC ModelInfer, a ModelStreamInfer stream (in request order) and the in-process API load on demand', async () => {
    const grpc = new GrpcClient(`127.0.0.1:${s.running.grpc!.port}`);
    const input = (v: number): InferInput[] => [
      new InferInput('INPUT0', [1, 1], 'INT32').setData(Int32Array.of(v)),
    ];
    try {
      const cold = ['m010', 'm021'];
      // The Zipf stream may have left them loaded: unload them first.
      for (const name of [...cold, 'm011']) await s.running.server.unloadModel(name);
      for (const name of [...cold, 'm011']) assert.equal(s.running.server.isModelReady(name), false);
      const unary = await grpc.infer('m010', input(41));
      assert.deepEqual([...unary.asArray('OUTPUT0', 'INT32')], [41]);
      // A stream whose first request needs a load (Python m021) and whose second is warm (m000): the
      // answers come back in request order.
      const stream = grpc.streamInfer();
      stream.send({ model: 'm021', inputs: input(1) });
      stream.send({ model: 'm000', inputs: input(2) });
      stream.end();
      const got: number[] = [];
      for await (const r of stream.results()) got.push(r.asArray('OUTPUT0', 'INT32')[0]);
      assert.deepEqual(got, [1, 2]);
      const inProcess = await s.running.server.inferOnce({
        modelName: 'm011',
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 1], data: Buffer.from(Int32Array.of(9).buffer) },
        ],
      });
      assert.equal(inProcess.outputs[0].name, 'OUTPUT0');
      assert.equal(s.running.server.isModelReady('m011'), true);
    } finally {
      grpc.close();
    }
  });

  it('explicit unload and load still work in on-demand mode', async () => {
    await post(`${s.url}/v2/models/m003/infer`, inferBody(1));
    assert.equal((await post(`${s.url}/v2/repository/models/m003/unload`, '{}')).status, 200);
    assert.equal(loadedNow(s).ready.has('m003'), false);
    assert.equal((await post(`${s.url}/v2/repository/models/m003/load`, '{}')).status, 200);
    assert.equal(loadedNow(s).ready.has('m003'), true);
  });
});
