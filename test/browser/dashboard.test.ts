// The operator's dashboard in a real headless browser (Debian's chromium through playwright-core) against
// a real server process on the example repository plus a repository of awkward models (one that fails to
// load, one whose folder name is markup). Every figure the page shows is compared with what the public
// API says; the page is driven only as an operator would (clicks, the confirm dialog). With
// NEREID_DASHBOARD_SCREENSHOTS=<folder> it also writes the screenshots docs/dashboard.md shows
// (scripts/dashboard-screenshots.sh).
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { EXAMPLES, ROOT, makeRepository, removeRepository, request } from '../integration/harness.js';
import { spawnServer, type SpawnedServer } from '../integration/spawned-server.js';
import { openDashboard, setupBrowser } from './browser.testkit.js';

const setup = setupBrowser();
const SHOTS = process.env.NEREID_DASHBOARD_SCREENSHOTS;
/** A folder name that is markup: the page must show it as text and run nothing. */
const HOSTILE = `evil<img src=x onerror="window.__pwned=1">&amp;'`;
/** Generous caps for waits on a loaded shared machine; nothing asserts on how long anything took. */
const WAIT = { timeout: 90_000 };

interface IndexEntry {
  name: string;
  version?: string;
  state?: string;
  reason?: string;
}

/** identity_fp32 under another folder name (its config's name line dropped, so the folder names it). */
function copyIdentity(repo: string, name: string): string {
  const dir = path.join(repo, name);
  cpSync(path.join(EXAMPLES, 'identity_fp32'), dir, { recursive: true });
  const config = readFileSync(path.join(dir, 'config.pbtxt'), 'utf8');
  writeFileSync(path.join(dir, 'config.pbtxt'), config.replace(/^name: .*$/m, ''));
  return dir;
}

function awkwardRepository(): string {
  const repo = makeRepository({});
  // A config that reads, and a model file onnxruntime refuses: UNAVAILABLE with the runtime's reason.
  const broken = copyIdentity(repo, 'broken_model');
  writeFileSync(path.join(broken, '1', 'model.onnx'), 'this is not an onnx model');
  copyIdentity(repo, HOSTILE);
  // A model that fails requests on demand (MODE=throw), so failures are counted with their reason.
  cpSync(path.join(ROOT, 'test/fixtures/javascript/faults_js'), path.join(repo, 'faults_js'), {
    recursive: true,
  });
  // The same model with one instance and a queue of one: a burst is partly refused before it runs.
  const queued = path.join(repo, 'queued_js');
  cpSync(path.join(ROOT, 'test/fixtures/javascript/faults_js'), queued, { recursive: true });
  const config = readFileSync(path.join(queued, 'config.pbtxt'), 'utf8')
    .replace('name: "faults_js"', 'name: "queued_js"')
    .replace('count: 2', 'count: 1');
  writeFileSync(
    path.join(queued, 'config.pbtxt'),
    `${config}\ndynamic_batching { default_queue_policy { max_queue_size: 1 } }\n`,
  );
  return repo;
}

/** Keeps `concurrency` request loops going until stopped (or for `forMs`, 3 minutes by default); counts statuses. */
function keepSending(
  url: string,
  body: string,
  concurrency = 2,
  forMs = 180_000,
): { stop: () => Promise<Map<number, number>> } {
  const statuses = new Map<number, number>();
  const end = Date.now() + forMs;
  let stopped = false;
  const loop = async (): Promise<void> => {
    while (!stopped && Date.now() < end) {
      const r = await request(url, { body });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      return statuses;
    },
  };
}

const SIMPLE_BODY = JSON.stringify({
  inputs: ['INPUT0', 'INPUT1'].map((name) => ({
    name,
    shape: [1, 16],
    datatype: 'INT32',
    data: Array.from({ length: 16 }, (_, i) => i),
  })),
});
/** A streaming toy_llm request, a pause before each word as a model's decoding would take. */
const TOY_LLM_BODY = JSON.stringify({
  text_input: 'What is machine learning?',
  stream: true,
  sampling_parameters: JSON.stringify({ max_tokens: 12, delay_ms: 25 }),
});
const modeBody = (mode: string): string =>
  JSON.stringify({ inputs: [{ name: 'MODE', shape: [1], datatype: 'BYTES', data: [mode] }] });

/** The models table's cells of one model's row, by column heading (the sort marks left out). */
async function cellsOf(page: Page, model: string): Promise<Record<string, string>> {
  const heads = (await page.locator('#models-table thead th').allTextContents()).map((h) =>
    h.replace(/ [▲▼]$/, ''),
  );
  const cells = await row(page, model).first().locator('td').allTextContents();
  return Object.fromEntries(heads.map((h, i) => [h, cells[i] ?? '']));
}

const num = (text: string | undefined): number => (text === undefined || text === '–' ? NaN : Number(text));

/** Asks `check` again (every 100 ms, up to WAIT's cap) until it holds; for page state the page's CSP
 * keeps playwright's waitForFunction from reading (it evaluates strings, which script-src forbids). */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + WAIT.timeout;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const attr = async (page: Page, selector: string, name: string): Promise<number> =>
  Number(await page.locator(selector).getAttribute(name));

async function index(server: SpawnedServer): Promise<IndexEntry[]> {
  const r = await request(`${server.url}/v2/repository/index`, { method: 'POST', body: '{}' });
  assert.equal(r.status, 200);
  return r.json<IndexEntry[]>();
}

/** The models table as the page shows it: one row per cell list (name, version, state, reason). */
async function shownRows(page: Page): Promise<string[][]> {
  const rows = page.locator('#models-table tbody tr');
  const out: string[][] = [];
  for (let i = 0; i < (await rows.count()); i++) {
    const cells = await rows.nth(i).locator('td').allTextContents();
    out.push(cells.slice(0, 4));
  }
  return out;
}

/** The row of one model, by the exact name its button shows. */
const row = (page: Page, model: string) =>
  page
    .locator('#models-table tbody tr')
    .filter({ has: page.getByRole('button', { name: model, exact: true }) });

/** Waits until the page's row for `model` shows `state`. */
async function waitForState(page: Page, model: string, state: string): Promise<void> {
  await row(page, model).locator('.state', { hasText: state }).waitFor(WAIT);
}

/** A screenshot for the docs: of the section holding `inside`, or of the window. */
async function shot(page: Page, name: string, inside?: string): Promise<void> {
  if (SHOTS === undefined) return;
  mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `dashboard-${name}.png`);
  if (inside === undefined) await page.screenshot({ path: file });
  else await page.locator('section', { has: page.locator(inside) }).screenshot({ path: file });
}

describe('the dashboard in a browser', { skip: setup.skip }, () => {
  let repo: string;
  let server: SpawnedServer;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  before(async () => {
    repo = awkwardRepository();
    server = await spawnServer([
      `--model-repository=${EXAMPLES}`,
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--load-model=identity_fp32',
      '--load-model=broken_model',
      '--load-model=faults_js',
      '--load-model=queued_js',
      '--load-model=simple_ensemble',
      '--load-model=toy_llm',
      '--load-model=densenet_onnx',
      `--load-model=${HOSTILE}`,
      '--exit-on-error=false',
      '--allow-metrics=true',
      '--metrics-port=0',
      '--metrics-address=127.0.0.1',
      '--metrics-config=summary_latencies=true',
    ]);
    browser = await setup.launch();
    page = await openDashboard(browser, server.url, { errors: pageErrors, ...WAIT });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  it('shows every model of the repository index with its version, state and reason', async () => {
    // Both reads happen after the page's last poll has drawn: compare once they agree on the count.
    const want = (await index(server)).map((m) => [m.name, m.version ?? '', m.state ?? '', m.reason ?? '']);
    await until('the table to list every model', async () => (await shownRows(page)).length === want.length);
    assert.deepEqual(await shownRows(page), want);
    assert.ok(want.some(([name, , state]) => name === 'simple' && state === 'READY'));
  });

  it("shows a failed model's reason, as the index gives it", async () => {
    const broken = (await index(server)).find((m) => m.name === 'broken_model');
    assert.equal(broken?.state, 'UNAVAILABLE');
    assert.ok(broken.reason !== undefined && broken.reason.length > 0);
    const cells = await row(page, 'broken_model').locator('td').allTextContents();
    assert.equal(cells[2], 'UNAVAILABLE');
    assert.equal(cells[3], broken.reason);
    // Its panel leads with that reason, not with the config API's "has no available versions".
    await page.getByRole('button', { name: 'broken_model', exact: true }).click();
    const why = page.locator('#detail [data-reason]');
    await why.waitFor(WAIT);
    assert.ok((await why.innerText()).includes(broken.reason), await why.innerText());
    assert.ok(!(await page.locator('#detail').innerText()).includes('no available versions'));
  });

  it('shows a name that is markup as text, and runs none of it', async () => {
    const button = page.getByRole('button', { name: HOSTILE, exact: true });
    assert.equal(await button.textContent(), HOSTILE);
    assert.equal(await page.locator('#models img').count(), 0);
    await button.click();
    await page.locator('#detail-title code', { hasText: HOSTILE }).waitFor(WAIT);
    assert.equal(await page.locator('#detail img, #tester img').count(), 0);
    assert.equal(await page.evaluate('window.__pwned'), undefined);
    assert.deepEqual(pageErrors, []);
  });

  it("shows the server's identity, uptime, repositories and options", async () => {
    const meta = (await request(`${server.url}/v2`)).json<{ name: string; version: string }>();
    const facts = await page.locator('#server table.facts').first().innerText();
    assert.match(facts, new RegExp(`Name \\(--id\\)\\s+${meta.name}`));
    assert.match(facts, /Model control\s+explicit/);
    assert.match(facts, /Uptime\s+\d+m \d+s/);
    for (const r of [EXAMPLES, repo]) assert.ok(facts.includes(r), r);
    await page.locator('#options summary').click();
    const options = await page.locator('#options table').innerText();
    // Named by the flags an operator types, not by internal field names.
    assert.match(options, /--model-control-mode\s+explicit/);
    assert.match(options, /--allow-dashboard\s+true/);
    assert.match(options, /--model-repository\s/);
    assert.ok(!/modelControlMode|allowDashboard/.test(options), options);
  });

  it('unloads a model only after the dialog is confirmed, then loads it again', async () => {
    await waitForState(page, 'identity_fp32', 'READY');
    // Cancel: nothing is sent.
    await row(page, 'identity_fp32').locator('button[data-action="unload"]').click();
    const dialog = page.locator('dialog#confirm');
    await dialog.waitFor({ state: 'visible', ...WAIT });
    assert.match(await page.locator('#confirm-text').innerText(), /Unload identity_fp32\?/);
    await page.locator('#confirm-cancel').click();
    await dialog.waitFor({ state: 'hidden', ...WAIT });
    const polls = await attr(page, 'body', 'data-polls');
    await until('two more polls', async () => (await attr(page, 'body', 'data-polls')) > polls + 1);
    assert.equal((await index(server)).find((m) => m.name === 'identity_fp32')?.state, 'READY');

    // Confirm: unloaded, as the page and the API both say.
    await row(page, 'identity_fp32').locator('button[data-action="unload"]').click();
    await page.locator('#confirm-ok').click();
    await waitForState(page, 'identity_fp32', 'UNAVAILABLE');
    assert.equal((await index(server)).find((m) => m.name === 'identity_fp32')?.state, 'UNAVAILABLE');
    assert.match(await page.locator('#action-status').innerText(), /unload identity_fp32: done/);

    // Load needs no confirmation.
    await row(page, 'identity_fp32').locator('button[data-action="load"]').click();
    await waitForState(page, 'identity_fp32', 'READY');
    assert.equal((await index(server)).find((m) => m.name === 'identity_fp32')?.state, 'READY');
  });

  it("shows a model's config, tensors and instance groups as the config route serves them", async () => {
    await page.getByRole('button', { name: 'simple', exact: true }).click();
    await page.locator('#config-json').waitFor({ state: 'attached', ...WAIT });
    const config = (await request(`${server.url}/v2/models/simple/config`)).json<object>();
    assert.deepEqual(JSON.parse((await page.locator('#config-json').textContent()) ?? ''), config);
    const detail = await page.locator('#detail').innerText();
    for (const tensor of ['INPUT0', 'INPUT1', 'OUTPUT0', 'OUTPUT1'])
      assert.ok(detail.includes(tensor), tensor);
    assert.match(detail, /KIND_CPU/);
  });

  it('runs an inference from the tester and shows the right output', async () => {
    await page.locator('#tester-send').waitFor(WAIT);
    // The form is prefilled with 0..15 for both inputs: simple answers their sum and difference.
    await page.locator('#tester-send').click();
    await page.locator('#tester-response').waitFor(WAIT);
    const response = JSON.parse((await page.locator('#tester-response').textContent()) ?? '') as {
      outputs: { name: string; data: number[] }[];
    };
    const out = Object.fromEntries(response.outputs.map((o) => [o.name, o.data]));
    const inputs = Array.from({ length: 16 }, (_, i) => i);
    assert.deepEqual(
      out.OUTPUT0,
      inputs.map((i) => i + i),
    );
    assert.deepEqual(
      out.OUTPUT1,
      inputs.map(() => 0),
    );
    assert.match(await page.locator('#tester-latency').innerText(), /^200 OK in \d+\.\d ms/);

    // Typed values that do not fit the shape are refused in the page, before anything is sent.
    await page.locator('fieldset[data-input="INPUT1"] textarea.values').fill('1, 2, 3');
    await page.locator('#tester-send').click();
    assert.match(
      await page.locator('#tester-result').innerText(),
      /INPUT1: shape \[1, 16\] holds 16 values, 3 given/,
    );
    await shot(page, 'tester', '#tester');
    await shot(page, 'model', '#detail');
  });

  it('prefills every element of a large input, so the first click is answered (densenet_onnx)', async () => {
    await page.getByRole('button', { name: 'densenet_onnx', exact: true }).click();
    await page.locator('#tester-send').waitFor(WAIT);
    await page.locator('#tester-send').click();
    await page.locator('#tester-response').waitFor(WAIT);
    const response = JSON.parse((await page.locator('#tester-response').textContent()) ?? '') as {
      outputs: { name: string; shape: number[] }[];
    };
    assert.deepEqual(
      response.outputs.map((o) => [o.name, o.shape]),
      [['fc6_1', [1000]]],
    );
  });

  it('sends a decoupled model its request through generate_stream and shows every response (toy_llm)', async () => {
    await page.getByRole('button', { name: 'toy_llm', exact: true }).click();
    await page.locator('#tester-send').waitFor(WAIT);
    assert.match(await page.locator('#tester').innerText(), /decoupled: POST .*generate_stream/);
    // Optional inputs start empty and are left out; text_input is prefilled.
    assert.equal(await page.locator('fieldset[data-input="sampling_parameters"] textarea').inputValue(), '');
    await page.locator('#tester-send').click();
    await page.locator('#tester-response').waitFor(WAIT);
    const events = JSON.parse((await page.locator('#tester-response').textContent()) ?? '') as {
      text_output?: string;
    }[];
    assert.ok(events.length >= 1, JSON.stringify(events));
    assert.ok(events.some((e) => typeof e.text_output === 'string' && e.text_output.length > 0));
    assert.match(await page.locator('#tester-latency').innerText(), new RegExp(`${events.length} responses`));
  });

  it('moves the throughput chart and the batch table when requests arrive', async () => {
    await page.getByRole('button', { name: 'simple', exact: true }).click();
    const body = JSON.stringify({
      inputs: ['INPUT0', 'INPUT1'].map((name) => ({
        name,
        shape: [1, 16],
        datatype: 'INT32',
        data: Array.from({ length: 16 }, (_, i) => i),
      })),
    });
    // Requests keep arriving until the page has drawn a non-zero rate (one poll must see them in its window);
    // the tester's single request earlier may already be in simple's history, so the rate must pass 1/s.
    let sent = 0;
    await until('the throughput chart to show requests', async () => {
      const r = await request(`${server.url}/v2/models/simple/infer`, { body });
      assert.equal(r.status, 200);
      sent++;
      return (await attr(page, '#chart-throughput', 'data-max')) > 1;
    });
    assert.ok((await attr(page, '#chart-throughput', 'data-points')) > 0);
    const stats = (await request(`${server.url}/v2/models/simple/stats`)).json<{
      model_stats: { inference_stats: { success: { count: number } } }[];
    }>();
    const succeeded = stats.model_stats[0].inference_stats.success.count;
    assert.ok(succeeded >= sent);
    await until('the totals to count every request', async () => {
      const shown = /^(\d+) succeeded/.exec(await page.locator('#totals').innerText());
      return shown !== null && Number(shown[1]) >= succeeded;
    });
    assert.ok((await page.locator('#batches-table tbody tr').count()) > 0);
    await shot(page, 'live', '#charts');
  });

  it("keeps a model's chart history across selections", async () => {
    await page.getByRole('button', { name: 'simple', exact: true }).click();
    const points = await attr(page, '#chart-throughput', 'data-points');
    const max = await attr(page, '#chart-throughput', 'data-max');
    assert.ok(points > 0 && max > 0);
    await page.locator('#all-models').click();
    await until(
      'all models to be shown',
      async () => (await page.locator('#chart-scope').innerText()) === 'all models',
    );
    await page.getByRole('button', { name: 'simple', exact: true }).click();
    await until(
      'simple to be shown',
      async () => (await page.locator('#chart-scope').innerText()) === 'simple',
    );
    // Its points are still there (a poll may have added one, and none can have aged out in 5 minutes).
    assert.ok((await attr(page, '#chart-throughput', 'data-points')) >= points);
    assert.ok((await attr(page, '#chart-throughput', 'data-max')) >= max);
  });

  it('gives a model with no traffic a time axis over the last five minutes', async () => {
    await page.getByRole('button', { name: 'identity_fp32', exact: true }).click();
    const polls = await attr(page, 'body', 'data-polls');
    await until('a poll', async () => (await attr(page, 'body', 'data-polls')) > polls);
    const now = Date.now() / 1000;
    const xMin = await attr(page, '#chart-throughput', 'data-x-min');
    const xMax = await attr(page, '#chart-throughput', 'data-x-max');
    assert.equal(xMax - xMin, 300);
    // The axis ends at the page's last poll: within the test's own clock, not years away.
    assert.ok(Math.abs(xMax - now) < 600, `axis ends at ${new Date(xMax * 1000).toISOString()}`);
    assert.equal(await attr(page, '#chart-throughput', 'data-max'), 0);
  });

  it("draws no p99 for all models from the models' own p99s (summaries cannot be added up)", async () => {
    const seriesMax = async (): Promise<(number | null)[]> =>
      JSON.parse((await page.locator('#chart-latency').getAttribute('data-series-max')) ?? '[]') as (
        number | null
      )[];
    await page.getByRole('button', { name: 'simple', exact: true }).click();
    await until(
      'simple to be shown',
      async () => (await page.locator('#chart-scope').innerText()) === 'simple',
    );
    // One model: its own summary quantiles (this server has summaries on).
    assert.equal(typeof (await seriesMax())[3], 'number');
    await page.locator('#all-models').click();
    await until(
      'all models to be shown',
      async () => (await page.locator('#chart-scope').innerText()) === 'all models',
    );
    // All models, no histograms on this server: no p50/p99 line at all rather than a wrong one.
    const all = await seriesMax();
    assert.equal(all[2], null);
    assert.equal(all[3], null);
  });

  it('counts requests refused before they reach a model', async () => {
    const bad = JSON.stringify({
      inputs: ['INPUT0', 'INPUT1'].map((name) => ({
        name,
        shape: [1, 3],
        datatype: 'INT32',
        data: [1, 2, 3],
      })),
    });
    const before = async (): Promise<number> => {
      const m = /(\d+) HTTP answers 4xx\/5xx/.exec(await page.locator('#totals').innerText());
      return m === null ? -1 : Number(m[1]);
    };
    await until('the totals to show edge failures', async () => (await before()) >= 0);
    const start = await before();
    for (let i = 0; i < 3; i++)
      assert.equal((await request(`${server.url}/v2/models/simple/infer`, { body: bad })).status, 400);
    await until('three more refused requests on the page', async () => (await before()) >= start + 3);
    assert.match(await page.locator('#totals').innerText(), /failed in the model since load/);
  });

  it('shows failures by reason from the metrics', async () => {
    // The model throws: a failure the server counts, with its reason.
    for (let i = 0; i < 3; i++) {
      const bad = await request(`${server.url}/v2/models/faults_js/infer`, {
        body: JSON.stringify({ inputs: [{ name: 'MODE', shape: [1], datatype: 'BYTES', data: ['throw'] }] }),
      });
      assert.equal(bad.status, 400);
    }
    await page.getByRole('button', { name: 'faults_js', exact: true }).click();
    await page.locator('#failures-table').waitFor(WAIT);
    const metrics = (await request(`${server.url}/dashboard/api/metrics`)).body.toString();
    const failures = [
      ...metrics.matchAll(
        /^nv_inference_request_failure\{model="faults_js",reason="(\w+)",version="1"\} (\d+)/gm,
      ),
    ];
    assert.ok(
      failures.some((m) => Number(m[2]) > 0),
      metrics,
    );
    for (const m of failures) {
      await page
        .locator('#failures-table tbody tr')
        .filter({ has: page.locator('td', { hasText: m[1] }) })
        .locator('td', { hasText: new RegExp(`^${m[2]}$`) })
        .waitFor(WAIT);
    }
  });

  it("shows each model's rate, p50/p99, failure share and queue time under load", async () => {
    const load = keepSending(`${server.url}/v2/models/simple/infer`, SIMPLE_BODY);
    const failing = keepSending(`${server.url}/v2/models/faults_js/infer`, modeBody('throw'), 1);
    try {
      await until('simple to show a rate, quantiles and a queue time', async () => {
        const c = await cellsOf(page, 'simple');
        return num(c['req/s']) > 0 && num(c['p99 ms']) >= 0 && num(c['queue ms']) >= 0;
      });
      await until(
        'faults_js to show its failures',
        async () => num((await cellsOf(page, 'faults_js'))['failed %']) > 0,
      );
    } finally {
      const [ok, bad] = [await load.stop(), await failing.stop()];
      assert.ok((ok.get(200) ?? 0) > 0, JSON.stringify([...ok]));
      assert.ok((bad.get(400) ?? 0) > 0, JSON.stringify([...bad]));
    }
    const simple = await cellsOf(page, 'simple');
    assert.ok(num(simple['p50 ms']) <= num(simple['p99 ms']), JSON.stringify(simple));
    // The bad-shape requests an earlier test sent simple were refused before it: not failures of the model.
    assert.equal(num(simple['failed %']), 0, JSON.stringify(simple));
    // faults_js failed every request it was sent in the window.
    assert.equal(num((await cellsOf(page, 'faults_js'))['failed %']), 100);
    // toy_llm reports vLLM's metrics and has answered the tester by now, so the LLM columns show; simple
    // is no LLM: '–' in each of them (test/browser/dashboard-llm.test.ts has the figures of LLMs).
    for (const head of ['tokens/s', 'TTFT p50 ms', 'TTFT p99 ms']) assert.equal(simple[head], '–', head);
  });

  it('shows requests refused before they reach the model, labelled as such', async () => {
    // One instance, a queue of one: of a burst of slow requests some are refused (REJECTED).
    const burst = await Promise.all(
      Array.from({ length: 6 }, () =>
        request(`${server.url}/v2/models/queued_js/infer`, { body: modeBody('burn:400') }),
      ),
    );
    const refused = burst.filter((r) => r.status !== 200).length;
    assert.ok(refused > 0, JSON.stringify(burst.map((r) => r.status)));
    const metrics = (await request(`${server.url}/dashboard/api/metrics`)).body.toString();
    assert.match(
      metrics,
      /^nv_inference_request_failure\{model="queued_js",reason="REJECTED",version="1"\} [1-9]/m,
    );
    await until(
      'queued_js to show refused requests',
      async () => num((await cellsOf(page, 'queued_js'))['refused/s']) > 0,
    );
    const title = await page.locator('#models-table thead button[data-sort="refused"]').getAttribute('title');
    assert.match(title ?? '', /refused before they reached the model/);
  });

  it('sorts the models table by a column and filters it by name and state', async () => {
    const sorted = async (): Promise<string[]> => (await shownRows(page)).map((r) => r[0]);
    await page.locator('#models-table button[data-sort="name"]').click();
    await until('names in descending order', async () => {
      const names = await sorted();
      return names.length > 1 && names.every((n, i) => i === 0 || names[i - 1] >= n);
    });
    assert.equal(
      await page.locator('#models-table button[data-sort="name"]').getAttribute('aria-sort'),
      'descending',
    );
    await page.locator('#models-table button[data-sort="state"]').click();
    await until('states in ascending order', async () => {
      const states = (await shownRows(page)).map((r) => r[2]);
      return states.every((st, i) => i === 0 || states[i - 1] <= st);
    });
    // Sorting survives the next polls (the table is redrawn each one).
    const polls = await attr(page, 'body', 'data-polls');
    await until('two more polls', async () => (await attr(page, 'body', 'data-polls')) > polls + 1);
    assert.equal(
      await page.locator('#models-table button[data-sort="state"]').getAttribute('aria-sort'),
      'ascending',
    );

    await page.locator('#models-filter').fill('simp');
    await until('only names with "simp"', async () => {
      const names = await sorted();
      return names.length > 0 && names.every((n) => n.includes('simp'));
    });
    assert.ok((await sorted()).includes('simple_ensemble'));
    await page.locator('#models-filter').fill('');
    await page.locator('#models-state').selectOption('UNAVAILABLE');
    await until('only UNAVAILABLE rows', async () => {
      const rows = await shownRows(page);
      return rows.length > 0 && rows.every((r) => r[2] === 'UNAVAILABLE');
    });
    assert.ok((await sorted()).includes('broken_model'));
    assert.match(await page.locator('#models-hidden').innerText(), /hidden by the filter/);
    await page.locator('#models-state').selectOption('');
    await page.locator('#models-table button[data-sort="name"]').click();
    const want = (await index(server)).length;
    await until('every row back', async () => (await shownRows(page)).length === want);
  });

  it("shows each model's instances, busy under load and idle after", async () => {
    const metrics = (await request(`${server.url}/dashboard/api/metrics`)).body.toString();
    const instances = /^nereid_model_instances\{model="faults_js",version="1"\} (\d+)/m.exec(metrics);
    assert.ok(instances !== null, metrics);
    const health = row(page, 'faults_js').locator('.health');
    const load = keepSending(`${server.url}/v2/models/faults_js/infer`, modeBody('burn:50'), 2);
    try {
      await until('faults_js to be busy', async () => (await health.getAttribute('data-busy')) === 'true');
      assert.match(await health.innerText(), new RegExp(`^${instances[1]} busy`));
    } finally {
      await load.stop();
    }
    await until('faults_js to be idle', async () =>
      (await health.innerText()).startsWith(`${instances[1]} idle`),
    );
  });

  it("draws an ensemble's steps with each step's model, tensors and time", async () => {
    const load = keepSending(`${server.url}/v2/models/simple_ensemble/infer`, SIMPLE_BODY);
    try {
      await page.getByRole('button', { name: 'simple_ensemble', exact: true }).click();
      await page.locator('#ensemble-table').waitFor(WAIT);
      const steps = page.locator('#ensemble-table tbody tr');
      assert.equal(await steps.count(), 2);
      const config = (await request(`${server.url}/v2/models/simple_ensemble/config`)).json<{
        ensemble_scheduling: { step: { model_name: string }[] };
      }>();
      for (let i = 0; i < 2; i++) {
        const cells = await steps.nth(i).locator('td').allTextContents();
        assert.equal(cells[0], String(i + 1));
        assert.ok(cells[1].startsWith(config.ensemble_scheduling.step[i].model_name), cells[1]);
      }
      // The second step reads what the first made.
      assert.match(await steps.nth(1).locator('td').nth(2).innerText(), /sum → INPUT0 \(from step 1\)/);
      await until("the steps' time per request", async () => {
        const ms = await steps.nth(0).locator('td').nth(4).innerText();
        return num(ms) > 0;
      });
    } finally {
      const statuses = await load.stop();
      assert.ok((statuses.get(200) ?? 0) > 0, JSON.stringify([...statuses]));
    }
    // A step's model is a button that selects it.
    await page.locator('#ensemble-table button[data-model="simple"]').first().click();
    await until(
      'simple to be shown',
      async () => (await page.locator('#chart-scope').innerText()) === 'simple',
    );
  });

  it("shows the server's recent log lines as text, filterable by level and model", async () => {
    const api = (await request(`${server.url}/dashboard/api/logs`)).json<{
      lines: { level: string; message: string }[];
    }>();
    assert.ok(api.lines.length > 0 && api.lines.length <= 500);
    // The markup model's name is in the log (it was loaded): shown as text, never run.
    assert.ok(
      api.lines.some((l) => l.message.includes(HOSTILE)),
      'the log names the markup model',
    );
    await page.locator('#logs-table').waitFor(WAIT);
    await page.locator('#logs-model').selectOption(HOSTILE);
    await until(
      'lines naming the markup model',
      async () => (await attr(page, '#logs-table', 'data-lines')) > 0,
    );
    for (const m of await page.locator('#logs-table td .message').allTextContents())
      assert.ok(m.includes(HOSTILE), m);
    assert.equal(await page.locator('#logs img').count(), 0);
    assert.equal(await page.evaluate('window.__pwned'), undefined);

    // Errors only: broken_model's failed load is one, and every line shown is an error.
    await page.locator('#logs-model').selectOption('broken_model');
    await page.locator('#logs-level').selectOption('ERROR');
    await until('broken_model errors', async () => (await attr(page, '#logs-table', 'data-lines')) > 0);
    const levels = await page.locator('#logs-table td .level').allTextContents();
    assert.ok(
      levels.every((l) => l === 'ERROR'),
      levels.join(),
    );
    const wanted = api.lines.filter((l) => l.level === 'ERROR' && l.message.includes('broken_model')).length;
    assert.ok((await attr(page, '#logs-table', 'data-lines')) >= wanted);
    await page.locator('#logs-model').selectOption('');
    await page.locator('#logs-level').selectOption('INFO');
    assert.deepEqual(pageErrors, []);
  });
});

// The docs' whole-window pictures come from the example repository alone: no test fixture (a failing
// model, a folder named as markup) in a picture a user reads as "what Nereid looks like". The server runs
// from the project's folder with the repository's relative path, as `npm start` does, so no checkout's
// path (a worktree, a CI folder) shows in the Server panel; and they are taken under traffic (a steady
// request stream, an ensemble, streaming toy_llm, bad requests), so the figures are not all zeros.
describe(
  "the dashboard on the example repository (the docs' pictures)",
  { skip: setup.skip ?? (SHOTS === undefined ? 'only with NEREID_DASHBOARD_SCREENSHOTS' : undefined) },
  () => {
    let server: SpawnedServer;
    let browser: Browser;
    let traffic: { stop: () => Promise<Map<number, number>> }[] = [];
    /** The pictures' traffic runs through both tests (stopped after them). */
    const TRAFFIC_MS = 15 * 60_000;

    before(async () => {
      const repository = path.relative(ROOT, EXAMPLES);
      assert.ok(!path.isAbsolute(repository) && !repository.startsWith('..'), repository);
      server = await spawnServer(
        [
          `--model-repository=${repository}`,
          '--model-control-mode=explicit',
          ...[
            'simple',
            'identity_fp32',
            'densenet_onnx',
            'simple_string',
            'toy_llm',
            'add_sub_python',
            'simple_ensemble',
          ].map((m) => `--load-model=${m}`),
          '--allow-metrics=true',
          '--metrics-port=0',
          '--metrics-address=127.0.0.1',
          '--metrics-config=summary_latencies=true',
        ],
        { cwd: ROOT },
      );
      browser = await setup.launch();
      traffic = [
        keepSending(`${server.url}/v2/models/simple/infer`, SIMPLE_BODY, 1, TRAFFIC_MS),
        keepSending(`${server.url}/v2/models/simple_ensemble/infer`, SIMPLE_BODY, 1, TRAFFIC_MS),
        keepSending(`${server.url}/v2/models/toy_llm/generate_stream`, TOY_LLM_BODY, 1, TRAFFIC_MS),
        keepSending(`${server.url}/v2/models/identity_fp32/infer`, 'not json', 1, TRAFFIC_MS),
      ];
    });

    after(async () => {
      for (const t of traffic) await t.stop();
      await browser?.close();
      await server?.stop();
    });

    it('shows the example models, and asks before an unload', async () => {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      page.setDefaultTimeout(WAIT.timeout);
      await page.goto(`${server.url}/dashboard/`);
      await waitForState(page, 'simple', 'READY');
      const want = (await index(server)).map((m) => [m.name, m.version ?? '', m.state ?? '', m.reason ?? '']);
      await until(
        'the table to list every model',
        async () => (await shownRows(page)).length === want.length,
      );
      assert.ok(!want.some(([name]) => name === HOSTILE || name === 'broken_model'));
      const repositories = await page.locator('#server').innerText();
      assert.ok(!repositories.includes(ROOT), `the checkout's path shows: ${repositories}`);
      assert.match(repositories, /examples\/model_repository/);
      await until('the charts and the LLM figures to show the traffic', async () => {
        const [simple, llm] = [await cellsOf(page, 'simple'), await cellsOf(page, 'toy_llm')];
        return (
          num(simple['req/s']) > 0 &&
          num(llm['TTFT p50 ms']) > 0 &&
          (await attr(page, '#chart-throughput', 'data-points')) >= 30
        );
      });
      await shot(page, 'overview');
      await row(page, 'identity_fp32').locator('button[data-action="unload"]').click();
      await page.locator('dialog#confirm').waitFor({ state: 'visible', ...WAIT });
      await shot(page, 'confirm');
      await page.locator('#confirm-cancel').click();
    });

    it('shows the models table, an ensemble and the log under load', async () => {
      // Wide enough for every column of the table, the LLM and Python ones included.
      const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
      page.setDefaultTimeout(WAIT.timeout);
      await page.goto(`${server.url}/dashboard/`);
      await until('simple, the ensemble and toy_llm to show their figures', async () => {
        const [a, b, c] = [
          await cellsOf(page, 'simple'),
          await cellsOf(page, 'simple_ensemble'),
          await cellsOf(page, 'toy_llm'),
        ];
        return num(a['req/s']) > 0 && num(b['p99 ms']) > 0 && num(c['tokens/s']) > 0;
      });
      await page.locator('#models-table button[data-sort="rate"]').click();
      await page.locator('#models-table button[data-sort="rate"]').click();
      // The loaded models only (the others have no figures), busiest first.
      await page.locator('#models-state').selectOption('READY');
      await until('the table to hide the models not loaded', async () =>
        (await shownRows(page)).every((r) => r[2] === 'READY'),
      );
      await shot(page, 'models', '#models-table');
      await page.locator('#models-state').selectOption('');
      await page.getByRole('button', { name: 'simple_ensemble', exact: true }).click();
      await until('the steps to show their time', async () => {
        const ms = page.locator('#ensemble-table tbody tr td:nth-child(5)').first();
        return (await ms.count()) > 0 && num(await ms.innerText()) > 0;
      });
      await shot(page, 'ensemble', '#ensemble-table');
      await page.locator('#logs-table').waitFor(WAIT);
      await shot(page, 'logs', '#logs');
    });
  },
);

describe('the dashboard when its server goes away', { skip: setup.skip }, () => {
  let repo: string;
  let server: SpawnedServer;
  let browser: Browser;

  before(async () => {
    repo = makeRepository({});
    cpSync(path.join(EXAMPLES, 'simple'), path.join(repo, 'simple'), { recursive: true });
    server = await spawnServer([`--model-repository=${repo}`]);
    browser = await setup.launch();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  it('says the connection is lost and freezes the figures, instead of drawing zeros', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(WAIT.timeout);
    await page.goto(`${server.url}/dashboard/`);
    await until('two polls', async () => (await attr(page, 'body', 'data-polls')) >= 2);
    assert.equal(await page.locator('#connection').isVisible(), false);
    await server.stop();
    await page.locator('#connection').waitFor({ state: 'visible', ...WAIT });
    assert.match(await page.locator('#connection').innerText(), /Connection to the server lost at/);
    const points = await attr(page, '#chart-throughput', 'data-points');
    const updated = await page.locator('#updated').innerText();
    const polls = await attr(page, 'body', 'data-polls');
    await until('two more polls', async () => (await attr(page, 'body', 'data-polls')) >= polls + 2);
    assert.equal(await attr(page, '#chart-throughput', 'data-points'), points);
    assert.equal(await page.locator('#updated').innerText(), updated);
  });
});

describe('the dashboard where model control is not allowed', { skip: setup.skip }, () => {
  let browser: Browser;
  let repo: string;
  const servers: SpawnedServer[] = [];

  before(async () => {
    repo = makeRepository({});
    cpSync(path.join(EXAMPLES, 'simple'), path.join(repo, 'simple'), { recursive: true });
    browser = await setup.launch();
  });

  after(async () => {
    await browser?.close();
    for (const s of servers) await s.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  async function open(args: string[]): Promise<{ server: SpawnedServer; page: Page }> {
    const server = await spawnServer([`--model-repository=${repo}`, ...args]);
    servers.push(server);
    const page = await browser.newPage();
    page.setDefaultTimeout(WAIT.timeout);
    await page.goto(`${server.url}/dashboard/`);
    return { server, page };
  }

  it('gives the models table the whole width in explicit mode, and breaks no heading inside a word', async () => {
    const { page } = await open(['--model-control-mode=explicit', '--load-model=simple']);
    await page.locator('#models-table button.action').first().waitFor(WAIT);
    // Measured in the page (a string, so no DOM types are needed here): the models section's width against
    // the grid's, and for each heading the number of distinct line tops its text occupies.
    const measured = await page.evaluate<{
      section: number;
      main: number;
      lines: [string, number][];
    }>(`(() => {
      const table = document.querySelector('#models-table');
      const section = table.closest('section').getBoundingClientRect().width;
      const main = table.closest('main').clientWidth;
      const lines = [...table.querySelectorAll('th')].map((th) => {
        const range = document.createRange();
        range.selectNodeContents(th);
        return [th.textContent, new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size];
      });
      return { section, main, lines };
    })()`);
    assert.ok(measured.section > measured.main * 0.8, JSON.stringify(measured));
    const lines = measured.lines;
    for (const [text, n] of lines) assert.equal(n, 1, `heading "${String(text)}" is on one line`);
  });

  it('has no model control buttons when the server is not in explicit mode', async () => {
    const { page } = await open(['--model-control-mode=none']);
    await page.locator('#models-table').waitFor(WAIT);
    await page.locator('#models .note', { hasText: 'Model control is off' }).waitFor(WAIT);
    assert.equal(await page.locator('button.action').count(), 0);
    const heads = (await page.locator('#models-table thead th').allTextContents()).map((h) =>
      h.replace(/ [▲▼]$/, ''),
    );
    assert.deepEqual(heads.slice(0, 4), ['Model', 'Version', 'State', 'Reason']);
    assert.ok(!heads.includes('Actions'), heads.join());
  });

  it('has no buttons where the repository API is restricted, and never shows a header value', async () => {
    const { page } = await open([
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--http-restricted-api=model-repository,inference:Admin-Key=secret-value',
    ]);
    await page.locator('#models .error', { hasText: "expecting header 'Admin-Key'" }).waitFor(WAIT);
    assert.equal(await page.locator('button.action').count(), 0);
    // The server section names the restricted categories and the header, never its value.
    const server = await page.locator('#server').innerText();
    assert.match(server, /model-repository: header Admin-Key/);
    assert.ok(!server.includes('secret-value'));
    await page.locator('#options summary').click();
    assert.ok(!(await page.locator('#options').innerText()).includes('secret-value'));
    assert.ok(!(await page.content()).includes('secret-value'));
  });
});
