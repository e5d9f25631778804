import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import { residentBytes, watchMemory } from './memory-watch.js';

void test('residentBytes reads VmRSS, and nothing for a process that is not there', async () => {
  const rss = await residentBytes(process.pid);
  assert.ok(rss !== undefined && rss > 1024 * 1024, `rss ${rss}`);
  assert.equal(await residentBytes(2 ** 30), undefined);
});

void test('the watch reports a process over its limit once, and never with a limit of 0', async () => {
  // The watch's timer does not hold the event loop open; this one does while the test waits.
  const keepAlive = setInterval(() => undefined, 1000);
  const seen: number[] = [];
  await new Promise<void>((resolve) => {
    watchMemory(
      process.pid,
      1024,
      (rss) => {
        seen.push(rss);
        resolve();
      },
      10,
    );
  });
  // Stopped after the first report: give it a few more intervals to prove it.
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(seen.length, 1);
  assert.ok(seen[0] > 1024);
  const stop = watchMemory(process.pid, 0, () => assert.fail('a limit of 0 watches nothing'), 10);
  await new Promise((r) => setTimeout(r, 50));
  stop();
  clearInterval(keepAlive);
});

void test('the watch holds one descriptor, and gives it back when its process is gone', async () => {
  const openFds = (): number => readdirSync('/proc/self/fd').length;
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 200)'], { stdio: 'ignore' });
  const exited = new Promise((r) => child.once('exit', r));
  const before = openFds();
  watchMemory(child.pid, 1024 ** 4, () => assert.fail('far under its limit'), 10);
  assert.equal(openFds(), before + 1, 'one descriptor for the whole watch');
  await exited;
  // The next reads after the exit fail; the watch ends and closes it (waited for, not timed).
  for (let i = 0; i < 200 && openFds() > before; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(openFds(), before);
});
