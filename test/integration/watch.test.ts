/**
 * `nereid --watch` as a developer uses it: the real command on a repository made by `nereid init`, with
 * no poll timer (--repository-poll-secs=0), so every reload here comes from a file event. An edit to the
 * TypeScript model changes the answer without a restart; a broken edit leaves the last good version
 * serving, is reported once, and is not tried again until the files change; the fix is picked up. Waits
 * are for answers and log lines with generous deadlines; nothing measures how fast.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, post, request, waitFor } from './harness.js';
import { spawnServer } from './spawned-server.js';

const run = promisify(execFile);
const DEADLINE_MS = 90_000;

async function answer(url: string, model: string): Promise<number[] | string> {
  const res = await post(`${url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'INPUT0', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }],
  });
  if (res.status !== 200) return `${res.status} ${res.body.toString()}`;
  return res.json<{ outputs: { data: number[] }[] }>().outputs[0].data;
}

const count = (text: string, re: RegExp): number => text.match(new RegExp(re, 'g'))?.length ?? 0;

void test('--watch: an edited JavaScript model reloads; a broken edit keeps the last good one and waits for the next change', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-watch-'));
  const nereid = path.join(ROOT, 'bin/nereid.js');
  const repo = path.join(dir, 'model_repository');
  await run(process.execPath, [nereid, 'init', 'm', '--backend=javascript', `--repository=${repo}`]);
  const modelFile = path.join(repo, 'm', '1', 'model.ts');
  const original = readFileSync(modelFile, 'utf8');
  assert.match(original, /v \* 2/);
  const server = await spawnServer([`--model-repository=${repo}`, '--watch', '--repository-poll-secs=0']);
  try {
    assert.match(server.log(), /watching \d+ folder\(s\) of the model repositories/);
    assert.deepEqual(await answer(server.url, 'm'), [2, 4, 6, 8]);

    // An edit: the answer changes, the server is the same process.
    writeFileSync(modelFile, original.replace('v * 2', 'v * 3'));
    await waitFor(async () => JSON.stringify(await answer(server.url, 'm')) === '[3,6,9,12]', DEADLINE_MS);

    // A broken edit: reported once, the last good version keeps answering and stays ready.
    writeFileSync(modelFile, original.replace('v * 2', 'v * ;'));
    await waitFor(() => count(server.log(), /--watch: 'm' failed to load/) === 1, DEADLINE_MS);
    assert.match(server.log(), /failed to load 'm' version 1: /);
    assert.match(server.log(), /the last good version keeps serving/);
    assert.deepEqual(await answer(server.url, 'm'), [3, 6, 9, 12]);
    assert.equal((await request(`${server.url}/v2/models/m/ready`)).status, 200);
    const failuresSoFar = count(server.log(), /failed to load 'm'/);

    // Another model appears: the poll that loads it also looks at 'm', whose files have not changed since
    // they failed, so 'm' is neither loaded again nor reported again.
    await run(process.execPath, [nereid, 'init', 'other', '--backend=javascript', `--repository=${repo}`]);
    await waitFor(
      async () => (await request(`${server.url}/v2/models/other/ready`)).status === 200,
      DEADLINE_MS,
    );
    assert.equal(count(server.log(), /failed to load 'm'/), failuresSoFar, 'no retry of unchanged files');
    assert.deepEqual(await answer(server.url, 'm'), [3, 6, 9, 12]);

    // The fix is picked up.
    writeFileSync(modelFile, original.replace('v * 2', 'v * 4'));
    await waitFor(async () => JSON.stringify(await answer(server.url, 'm')) === '[4,8,12,16]', DEADLINE_MS);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('--watch starts with a broken model (no exit), and loads it once it is fixed', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-watch-'));
  const nereid = path.join(ROOT, 'bin/nereid.js');
  const repo = path.join(dir, 'model_repository');
  await run(process.execPath, [nereid, 'init', 'm', '--backend=javascript', `--repository=${repo}`]);
  const modelFile = path.join(repo, 'm', '1', 'model.ts');
  const original = readFileSync(modelFile, 'utf8');
  writeFileSync(modelFile, original.replace('v * 2', 'v * ;'));
  const server = await spawnServer([`--model-repository=${repo}`, '--watch', '--repository-poll-secs=0']);
  try {
    assert.match(String(await answer(server.url, 'm')), /^(400|404|503) /);
    writeFileSync(modelFile, original);
    await waitFor(async () => JSON.stringify(await answer(server.url, 'm')) === '[2,4,6,8]', DEADLINE_MS);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
