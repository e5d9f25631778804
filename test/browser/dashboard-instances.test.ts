// The dashboard's instance health and on-demand views in a real headless browser (Debian's chromium
// through playwright-core) against a real server process (docs/dashboard.md):
//   - a Python model's restarts and stub memory (RSS) in the models table, next to busy/idle, equal to the
//     metrics the server exports (nereid_model_instance_restarts_total / _resident_bytes), and a restart
//     seen when the model kills its own stub;
//   - in on-demand mode, each model's resident bytes, loads and evictions and the budget line, equal to
//     the on-demand metrics, before and after an eviction.
// Memory moves between two reads: the page and the metrics are compared within a margin, never exactly.
import assert from 'node:assert/strict';
import { cpSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { EXAMPLES, ROOT, makeRepository, post, removeRepository, request } from '../integration/harness.js';
import { pythonFlags } from '../integration/python-support.js';
import { spawnServer, type SpawnedServer } from '../integration/spawned-server.js';
import { openDashboard, setupBrowser } from './browser.testkit.js';

const setup = setupBrowser();
const WAIT = { timeout: 90_000 };
const MIB = 1024 * 1024;

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + WAIT.timeout;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The models table's cells of one model's row, by column heading (the sort marks left out), from one read
 * of the table's text, so the headings and the cells come from the same render.
 */
async function cellsOf(page: Page, model: string): Promise<Record<string, string>> {
  const lines = (await page.locator('#models-table').innerText()).split('\n').map((l) => l.split('\t'));
  const heads = (lines[0] ?? []).map((h) => h.trim().replace(/ [▲▼]$/, ''));
  const cells = lines.find((l) => l[0]?.trim() === model) ?? [];
  return Object.fromEntries(heads.map((h, i) => [h, (cells[i] ?? '').trim()]));
}

/** One sample of the server's metrics (the dashboard's own metrics route), or undefined. */
async function metric(server: SpawnedServer, family: string, model?: string): Promise<number | undefined> {
  const text = (await request(`${server.url}/dashboard/api/metrics`)).body.toString();
  const labels = model === undefined ? '' : `\\{[^}]*model="${model}"[^}]*\\}`;
  const m = new RegExp(`^${family}${labels} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

/** |a - b| within `share` of the larger. */
const near = (a: number, b: number, share = 0.25): boolean => Math.abs(a - b) <= share * Math.max(a, b);

const fp32Body = (n: number) =>
  JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1, n], datatype: 'FP32', data: Array(n).fill(1) }] });
const faultsBody = (mode: number) =>
  JSON.stringify({
    inputs: [
      { name: 'MODE', shape: [1], datatype: 'INT32', data: [mode] },
      { name: 'DATA', shape: [2], datatype: 'FP32', data: [1, 2] },
    ],
  });

describe('the dashboard: instance health of a Python model', { skip: setup.skip }, () => {
  let repo: string;
  let server: SpawnedServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    repo = makeRepository({});
    cpSync(path.join(ROOT, 'test/fixtures/python/faults'), path.join(repo, 'faults'), { recursive: true });
    server = await spawnServer([
      `--model-repository=${EXAMPLES}`,
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=faults',
      '--load-model=identity_fp32',
      '--allow-metrics=true',
      '--metrics-port=0',
      '--metrics-address=127.0.0.1',
      ...pythonFlags(`nereid_dash_${process.pid}_`),
    ]);
    browser = await setup.launch();
    page = await openDashboard(browser, server.url, { width: 1600, ...WAIT });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  it("shows the stub's memory and no restart, as the metrics say; nothing of the kind for an ONNX model", async () => {
    await until(
      'the stub memory column',
      async () => (await cellsOf(page, 'faults'))['stub MiB'] !== undefined,
    );
    const cells = await cellsOf(page, 'faults');
    assert.equal(cells.restarts, '0');
    const shown = Number(cells['stub MiB']) * MIB;
    const exported = await metric(server, 'nereid_model_instance_resident_bytes', 'faults');
    assert.ok(exported !== undefined && exported > 5 * MIB, `exported ${exported}`);
    // A Python interpreter with numpy holds tens of MiB; the page's figure is the metric's, read a poll apart.
    assert.ok(shown > 5 * MIB && near(shown, exported), `page ${shown} B, metrics ${exported} B`);
    await until('busy or idle', async () => /^1 (idle|busy)/.test((await cellsOf(page, 'faults')).instances));
    // The ONNX model runs in the server's process: no stub, no restarts to count.
    const onnx = await cellsOf(page, 'identity_fp32');
    assert.equal(onnx.restarts, '–');
    assert.equal(onnx['stub MiB'], '–');
  });

  it('counts a restart when the model kills its stub, and shows the new stub’s memory', async () => {
    for (const expected of [1, 2]) {
      // MODE 1: the model calls os._exit: the request fails and the stub is replaced.
      const r = await post(`${server.url}/v2/models/faults/infer`, faultsBody(1));
      assert.notEqual(r.status, 200);
      await until(
        `restart ${expected} on the page`,
        async () => (await cellsOf(page, 'faults')).restarts === String(expected),
      );
      assert.equal(await metric(server, 'nereid_model_instance_restarts_total', 'faults'), expected);
    }
    // The new stub answers, and its memory is shown.
    assert.equal((await post(`${server.url}/v2/models/faults/infer`, faultsBody(0))).status, 200);
    await until(
      'the new stub’s memory',
      async () => Number((await cellsOf(page, 'faults'))['stub MiB']) * MIB > 5 * MIB,
    );
  });
});

describe(
  'the dashboard in on-demand mode: resident bytes, loads, evictions and the budget',
  { skip: setup.skip },
  () => {
    let repo: string;
    let server: SpawnedServer;
    let browser: Browser;
    let page: Page;

    before(async () => {
      repo = makeRepository({});
      for (const name of ['py_a', 'py_b', 'py_c']) {
        const dir = path.join(repo, name);
        cpSync(path.join(ROOT, 'test/fixtures/python/identity_fp32_python'), dir, { recursive: true });
        const config = path.join(dir, 'config.pbtxt');
        writeFileSync(
          config,
          `name: "${name}"\nbackend: "python"\nmax_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\ninstance_group [ { kind: KIND_CPU count: 1 } ]\n`,
        );
      }
      server = await spawnServer([
        `--model-repository=${repo}`,
        '--model-control-mode=on-demand',
        '--max-loaded-models=2',
        '--model-memory-budget=4GiB',
        '--model-load-wait-secs=120',
        '--allow-metrics=true',
        '--metrics-port=0',
        '--metrics-address=127.0.0.1',
        ...pythonFlags(`nereid_dash_od_${process.pid}_`),
      ]);
      browser = await setup.launch();
      page = await openDashboard(browser, server.url, { width: 1600, ...WAIT });
    });

    after(async () => {
      await browser?.close();
      await server?.stop();
      if (repo !== undefined) removeRepository(repo);
    });

    it('shows the budget line, and per model its resident MiB and loads, as the metrics say', async () => {
      for (const m of ['py_a', 'py_b'])
        assert.equal((await post(`${server.url}/v2/models/${m}/infer`, fp32Body(4))).status, 200);
      await until('both loads on the page', async () => {
        const [a, b] = await Promise.all([cellsOf(page, 'py_a'), cellsOf(page, 'py_b')]);
        return a.loads === '1' && b.loads === '1' && a['resident MiB'] !== '–' && b['resident MiB'] !== '–';
      });
      const budget = await page.locator('#budget').innerText();
      assert.match(budget, /On-demand: 2 models loaded of at most 2 \(--max-loaded-models\)/);
      assert.match(budget, /of a 4096\.0 MiB budget \(--model-memory-budget\)/);
      for (const m of ['py_a', 'py_b']) {
        const cells = await cellsOf(page, m);
        const shown = Number(cells['resident MiB']) * MIB;
        const exported = await metric(server, 'nereid_model_resident_bytes', m);
        assert.ok(exported !== undefined && exported > 5 * MIB, `${m}: exported ${exported}`);
        assert.ok(near(shown, exported), `${m}: page ${shown} B, metrics ${exported} B`);
        assert.equal(cells.evictions, '0');
        assert.ok(Number(cells['cold start s']) > 0, cells['cold start s']);
      }
      // py_c was never asked for: nothing resident, no loads.
      const c = await cellsOf(page, 'py_c');
      assert.equal(c['resident MiB'], '–');
      assert.equal(c.loads, '–');
      const total = Number(/; ([\d.]+) MiB resident/.exec(budget)?.[1]) * MIB;
      const sum =
        ((await metric(server, 'nereid_model_resident_bytes', 'py_a')) ?? 0) +
        ((await metric(server, 'nereid_model_resident_bytes', 'py_b')) ?? 0);
      assert.ok(near(total, sum), `budget line ${total} B, metrics ${sum} B`);
    });

    it('shows the eviction a third model causes, and the evicted model no longer resident', async () => {
      assert.equal((await post(`${server.url}/v2/models/py_c/infer`, fp32Body(4))).status, 200);
      // py_a is the least recently used: it makes room.
      await until('the eviction on the page', async () => (await cellsOf(page, 'py_a')).evictions === '1');
      assert.equal(await metric(server, 'nereid_model_evictions_total', 'py_a'), 1);
      await until(
        'py_a no longer resident',
        async () => (await cellsOf(page, 'py_a'))['resident MiB'] === '–',
      );
      const a = await cellsOf(page, 'py_a');
      assert.equal(a.loads, '1');
      const c = await cellsOf(page, 'py_c');
      assert.equal(c.loads, '1');
      assert.equal(c.evictions, '0');
      assert.match(await page.locator('#budget').innerText(), /On-demand: 2 models loaded/);
    });
  },
);
