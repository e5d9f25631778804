// On-demand mode's memory budget (--model-memory-budget, measured per model) and "unload gives the
// memory back": real onnxruntime sessions and Python stubs, RSS read from /proc.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { residentBytesOf } from '../../src/core/model/memory.js';
import { post, removeRepository, startServer, type TestServer } from './harness.js';
import { inferBody, makeManyModels, type ManyModels } from './many-models.js';
import { pythonFlags, stubPids } from './python-support.js';

const MB = 1024 * 1024;
const BUDGET = 160 * MB;

describe('on-demand mode under --model-memory-budget', () => {
  let s: TestServer;
  let many: ManyModels;
  before(async () => {
    many = makeManyModels(2, 10);
    s = await startServer([
      `--model-repository=${many.repo}`,
      '--model-control-mode=on-demand',
      `--model-memory-budget=${BUDGET}`,
      ...pythonFlags(`nereid_odm_${process.pid}_`),
    ]);
  });
  after(async () => {
    await s?.stop();
    removeRepository(many.repo);
  });

  it('keeps the measured memory of loaded models within the budget, evicting as needed', async () => {
    let maxTotal = 0;
    let evicted = 0;
    for (let round = 0; round < 2; round++) {
      for (const name of many.names) {
        const r = await post(`${s.url}/v2/models/${name}/infer`, inferBody(7));
        assert.equal(r.status, 200, `${name}: ${r.body.toString()}`);
        const status = s.running.server.onDemandStatus()!;
        const total = status.models.reduce((sum, m) => sum + (m.residentBytes ?? 0), 0);
        maxTotal = Math.max(maxTotal, total);
        evicted = status.models.reduce((sum, m) => sum + m.evictions, 0);
      }
    }
    const status = s.running.server.onDemandStatus()!;
    const python = status.models.filter((m) => many.backendOf.get(m.model) === 'python');
    const measured = python.map((m) => m.residentBytes).filter((b): b is number => b !== undefined);
    assert.ok(
      measured.length > 0 && measured.every((b) => b > 5 * MB),
      `a stub's RSS was measured: ${measured.join(', ')}`,
    );
    assert.ok(maxTotal <= BUDGET, `measured total ${maxTotal} stayed within ${BUDGET}`);
    assert.ok(evicted > 0, 'the budget made the server evict');
    const metrics = await (await fetch(`http://127.0.0.1:${s.running.metrics!.port}/metrics`)).text();
    assert.match(metrics, new RegExp(`^nereid_model_memory_budget_bytes ${BUDGET}$`, 'm'));
    assert.match(metrics, /^nereid_model_evictions_total\{model="m\d+"\} [1-9]/m);
    assert.match(metrics, /^nereid_model_resident_bytes\{model="m\d+"\} [1-9]/m);
    assert.match(metrics, /^nereid_model_on_demand_loads_total\{model="m002"\} 2$/m);
  });
});

describe('unload gives the memory back', () => {
  let s: TestServer;
  let many: ManyModels;
  before(async () => {
    many = makeManyModels(1, 1);
    s = await startServer([
      `--model-repository=${many.repo}`,
      '--model-control-mode=explicit',
      ...pythonFlags(`nereid_odr_${process.pid}_`),
    ]);
  });
  after(async () => {
    await s?.stop();
    removeRepository(many.repo);
  });

  const cycle = async (name: string): Promise<void> => {
    assert.equal((await post(`${s.url}/v2/repository/models/${name}/load`, '{}')).status, 200);
    assert.equal((await post(`${s.url}/v2/models/${name}/infer`, inferBody(3))).status, 200);
    assert.equal((await post(`${s.url}/v2/repository/models/${name}/unload`, '{}')).status, 200);
  };

  const rss = (): number => {
    global.gc?.();
    return residentBytesOf('self') ?? 0;
  };

  for (const [backend, name, warm, total, marginMb] of [
    ['onnxruntime', 'm000', 5, 40, 32],
    ['python', 'm001', 3, 15, 20],
  ] as const) {
    it(`${backend}: ${total} load/unload cycles leave RSS within ${marginMb} MiB of the level after ${warm}`, async () => {
      for (let i = 0; i < warm; i++) await cycle(name);
      const base = rss();
      for (let i = warm; i < total; i++) await cycle(name);
      await new Promise((r) => setTimeout(r, 200));
      const end = rss();
      console.log(
        `# ${backend}: RSS after ${warm} cycles ${(base / MB).toFixed(1)} MiB, after ${total} ${(end / MB).toFixed(1)} MiB`,
      );
      assert.ok(end - base < marginMb * MB, `RSS grew ${((end - base) / MB).toFixed(1)} MiB`);
      assert.deepEqual(stubPids(), [], 'no stub process is left');
    });
  }
});
